"""The registry of adaptable families (kind -> family class, :func:`family`) and the
capabilities a method asks of a prior (:class:`Conjugate` for ``Exact()``, :class:`Projectable`
for ``subspace=``).  The posterior types and the methods consult it; it sits below them, and
:mod:`.protocol` (the :class:`~.protocol.Family` base, whose ``update`` runs a method) above."""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast, dataclass_transform, runtime_checkable

import jax
import numpy as np

from ..errors import AnchorDivError, user_stacklevel
from ..provenance import AnchorDivWarning

#: kind -> family class (a :class:`.protocol.Family` subclass), filled by :func:`family`
FAMILIES: dict[str, type[Any]] = {}
#: the protocol class every registered family subclasses (:func:`protocol` names it)
PROTOCOL: list[type[Any]] = []


def protocol(base: type) -> type:
    """Class decorator of the protocol class (:class:`~anchordiv.Family`): :func:`family` then
    registers only its subclasses, and only those its ``missing_members()`` finds complete."""
    PROTOCOL[:] = [base]
    return base


def is_builtin(cls: type) -> bool:
    """Whether ``cls`` is one of the library's own families (defined inside anchordiv)."""
    return cls.__module__.split(".")[0] == "anchordiv"


def check_kind(kind) -> None:
    """Refuse a kind that is not a non-empty string (a class: ``@ad.family`` written without
    its kind, which would otherwise replace the class by the decorator, silently)."""
    if isinstance(kind, type):
        raise AnchorDivError(
            f"family: the kind must be a non-empty string, got the class {kind.__qualname__}; "
            f'write @ad.family("my-kind") above the class, not @ad.family'
        )
    if not isinstance(kind, str) or not kind.strip():
        raise AnchorDivError(f"family: the kind must be a non-empty string, got {kind!r}")


def check_family(cls: Any, kind, replace: bool) -> None:
    """Refuse what :func:`family` must not register: a kind that is not a non-empty string, a
    class that is not a :class:`~anchordiv.Family` subclass, one missing a required member
    (named), and — unless ``replace`` — a class that would replace a built-in family's kind."""
    check_kind(kind)
    name = getattr(cls, "__qualname__", None) or repr(cls)
    (base,) = PROTOCOL
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise AnchorDivError(
            f"family {kind!r}: {name} is not a subclass of anchordiv.Family (define it as "
            f"`class {getattr(cls, '__name__', 'MyPrior')}(ad.Family)`)"
        )
    missing = cast(Any, cls).missing_members()  # a Family subclass (checked above)
    if missing:
        raise AnchorDivError(
            f"family {kind!r}: {name} does not define {', '.join(missing)} (required members "
            f"of an anchordiv.Family: {', '.join(base.required_members())})"
        )
    old = FAMILIES.get(kind)
    if old is not None and old is not cls and is_builtin(old) and not replace:
        raise AnchorDivError(
            f"family {kind!r}: the kind of the built-in {old.__name__}; register {name} under "
            f"a kind of its own, or replace the built-in with ad.family({kind!r}, replace=True)"
        )
    if old is not None and not replace and _origin(old) != _origin(cls):
        # the same file's class again (its module imported anew) replaces it without a word
        warnings.warn(
            f"family {kind!r}: {_where(cls)} replaces {_where(old)}, registered under this kind "
            f"before; give one of them a kind of its own (or pass replace=True to mean it)",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )


def _where(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _origin(cls) -> tuple:
    """What makes two class objects the same user's class: its name and the file that defines
    it (one file imported under two module names, by path and by package, is one class)."""
    module = sys.modules.get(cls.__module__)
    where = getattr(module, "__file__", None) or cls.__module__
    return cls.__qualname__, os.path.realpath(where) if module else where


@dataclass_transform(frozen_default=True, eq_default=False)
def family(kind: str, *, replace: bool = False):
    """Class decorator: frozen dataclass + JAX pytree (array and number fields are leaves,
    ``static_fields`` static) + registry entry under ``kind``.

    The class is checked first: it must subclass :class:`~anchordiv.Family` and define the
    protocol's required members (``sites``, ``model``, ``from_anchors``, ``isotropic``,
    ``prior_kwargs``, ``to_model``); a class registered under a built-in family's kind
    (``"gaussian"``, ...) replaces it only with ``replace=True``.  A class without an ``origin``
    field gets one (``origin: str = ""``, static), where :func:`anchordiv.load_prior` records
    the saved model a prior was built from.

    Parameters
    ----------
    kind : str
        The kind the family is registered under (``ad.adapt(kind, ...)``, the CLI, saved
        priors and posteriors name it).
    replace : bool, default False
        Allow replacing a built-in family registered under ``kind`` (a family of one's own
        registered again, e.g. its module imported anew, replaces its entry either way; a
        different class — another name or file — replacing it warns unless ``replace``).

    Returns
    -------
    callable
        The decorator: takes a :class:`~anchordiv.Family` subclass and
        returns it as a registered frozen dataclass.

    Raises
    ------
    AnchorDivError
        A ``kind`` that is not a non-empty string (a class: ``@ad.family`` without its kind);
        (from the decorator) a class that is not a ``Family`` subclass, a missing required
        member (named), or a built-in kind without ``replace=True``.

    Warns
    -----
    AnchorDivWarning
        (From the decorator) another class — another name or file — replaces the family of
        one's own registered under ``kind`` before, without ``replace=True``.

    Examples
    --------
    >>> import dataclasses
    >>> @ad.family("doc-example")
    ... class Example(ad.NIWPrior):
    ...     pass
    >>> Example.kind, dataclasses.is_dataclass(Example)
    ('doc-example', True)
    >>> from anchordiv.adaptation.registry import FAMILIES
    >>> _ = FAMILIES.pop("doc-example")
    >>> ad.family("gaussian")(Example)
    Traceback (most recent call last):
    ...
    anchordiv.errors.AnchorDivError: family 'gaussian': the kind of the built-in NIWPrior; ...
    """

    check_kind(kind)  # `@ad.family` without a kind: the class arrives here, said at once

    def wrap(cls):
        check_family(cls, kind, replace)
        if not any("origin" in inspect.get_annotations(c) for c in cls.__mro__):
            cls.__annotations__ = {**inspect.get_annotations(cls), "origin": str}  # last field
            cls.origin = ""
        if "origin" not in cls.static_fields:
            cls.static_fields = (*cls.static_fields, "origin")
        cls = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)  # Family.__repr__
        fields = dataclasses.fields(cls)
        static = [f.name for f in fields if f.name in cls.static_fields]
        data = [f.name for f in fields if f.name not in cls.static_fields]
        jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=static)
        cls.kind = kind
        FAMILIES[kind] = cls
        return cls

    return wrap


def get_family(kind: str) -> type[Any]:
    """The family class registered under ``kind``."""
    if kind not in FAMILIES:
        raise unknown_kind(kind)
    return FAMILIES[kind]


class LiveMapping(Mapping):
    """A read-only mapping recomputed from the registry on every access (``build()`` returns
    the current dict), so that a family registered late — from a user's module, after
    anchordiv was imported — appears in every table derived from :data:`FAMILIES`."""

    def __init__(
        self, build: Callable[[], dict], missing: Callable[[object], Exception] | None = None
    ):
        self._build, self._missing = build, missing

    def __getitem__(self, key):
        table = self._build()
        if key not in table and self._missing is not None:
            raise self._missing(key)
        return table[key]

    def __iter__(self):
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())

    def __repr__(self) -> str:
        return repr(self._build())


class LiveKinds(Sequence):
    """The registered kinds in registration order, read live (a tuple-like view)."""

    def __getitem__(self, i):
        return tuple(FAMILIES)[i]

    def __len__(self) -> int:
        return len(FAMILIES)

    def __contains__(self, kind) -> bool:
        return kind in FAMILIES

    def __eq__(self, other) -> bool:
        if not isinstance(other, (tuple, list, Sequence)):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(FAMILIES))


def unknown_kind(kind) -> AnchorDivError:
    return AnchorDivError(f"kind: unknown {kind!r}; adaptation supports {', '.join(FAMILIES)}")


@runtime_checkable
class Conjugate(Protocol):
    """Capability of a prior with a closed-form update (checked with ``isinstance``):
    ``exact(targets [n, d]) -> (posterior parameters, info, fixed)``, where the posterior
    parameters have ``mean()``, ``mode()`` and ``sample(rng, n)`` (a frozen dataclass of arrays and
    numbers, so a posterior saves and loads it), ``info`` is JSON-able and may carry the
    model's keyword arguments for these targets under ``"model_kwargs"`` (default: the prior's
    :meth:`~Family.prior_kwargs`) and, for a fit that leaves the prior < 1 pseudo-anchor of
    weight, why it is target-only under ``"target_only"``; ``fixed`` holds arrays every draw
    shares.

    Optional (declared on ``Family``, None by default): ``exact_chains(post, rng, chains,
    per_chain) -> {site: [chains, per_chain, ...]}``, exact draws of the whole posterior where
    the parameters' own ``sample`` conditions on something (the mixture's Gibbs chains sample
    the assignments too); ``power_scaled_posterior(alpha, targets)``, the exact posterior under
    the prior raised to the power α (prior sensitivity: the gaussian and diagonal-gaussian
    kinds).

    Parameters
    ----------
    targets : numpy.ndarray, shape [n, d]
        The target anchors (of :meth:`exact`).

    Returns
    -------
    tuple
        ``(posterior parameters, info, fixed)`` (of :meth:`exact`).

    Examples
    --------
    >>> issubclass(ad.NIWPrior, ad.Conjugate), issubclass(ad.SpectralPrior, ad.Conjugate)
    (True, False)
    """

    def exact(self, targets: np.ndarray) -> tuple[object, dict, dict]: ...


@runtime_checkable
class Projectable(Protocol):
    """Capability of a family that runs NUTS/SVI in a principal subspace (``subspace=r``):
    ``project(kwargs, u [d, r])`` gives its model's hyperparameters in the basis ``u``, and
    ``lift(ps, completion, basis, r, which=, rng=)`` the full-d parameters of its sites from
    subspace ones (``completion``: the exact full-d posterior of a conjugate prior, whose
    conditionals fill in the other directions).

    Optional (declared on ``Family``, None by default): ``completion(targets)`` (that exact
    posterior, for a family that is not
    :class:`Conjugate` itself), ``project_mean(mean, u)`` (posterior-mean parameters in the
    basis: a delta guide's "mean"), ``subspace_mode(point, completion, r)`` (a delta guide's
    subspace mode rescaled to the joint mode's block) and ``covariance_site`` (the site whose
    log-determinant is the subspace Jacobian of the full-d joint mode).

    Parameters
    ----------
    kwargs : dict
        The model's hyperparameters (of :meth:`project`).
    u : numpy.ndarray, shape [d, r]
        The subspace basis (of :meth:`project`).

    Returns
    -------
    dict
        The hyperparameters in the basis (:meth:`project`); :meth:`lift` returns the list of
        full-d parameter sets.

    Examples
    --------
    >>> issubclass(ad.NIWPrior, ad.Projectable), issubclass(ad.DiagonalPrior, ad.Projectable)
    (True, False)
    """

    def project(self, kwargs: dict, u: np.ndarray) -> dict: ...

    def lift(self, ps, completion, basis, r, *, which="mean", rng=None) -> list[dict]: ...


#: the optional members of the capabilities (declared on ``Family``, default "none")
OPTIONAL = {
    "exact_chains": Conjugate,
    "power_scaled_posterior": Conjugate,
    "completion": Projectable,
    "project_mean": Projectable,
    "subspace_mode": Projectable,
    "covariance_site": Projectable,
}


def is_conjugate(fam) -> bool:
    """Whether a prior object or family class has the :class:`Conjugate` capability."""
    return isinstance(fam, Conjugate) or (isinstance(fam, type) and issubclass(fam, Conjugate))


def no_subspace(fam) -> str:
    """Why ``fam`` (a family class) does not run under ``subspace=``, in words."""
    return (
        f"the {fam.kind} family has no principal-subspace projection (it does not implement "
        f"project/lift, anchordiv.adaptation.protocol.Projectable); run it at full d"
    )


def check_prior_mode(prior: str) -> str:
    if prior not in ("broad", "isotropic"):
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    return prior
