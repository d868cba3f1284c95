"""The registry of adaptable families: kind -> family class (:mod:`.family` is the protocol).
Modules below the families (posterior, densities, subspace lift, model checks) find a kind's
family here without importing the families themselves."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Callable, cast, dataclass_transform

import jax

from ..errors import AnchorDivError

#: kind -> family class, filled by :func:`family` (``type[Any]``: a :class:`.family.Family`
#: subclass, which this module must not import)
FAMILIES: dict[str, type[Any]] = {}


#: the protocol class every registered family subclasses, with its members' check:
#: :class:`.family.Family` names itself here with :func:`protocol` (this module sits below it)
PROTOCOL: list[type[Any]] = []


def protocol(base: type) -> type:
    """Class decorator of the protocol class (:class:`.family.Family`): :func:`family` then
    registers only its subclasses, and only those its ``missing_members()`` finds complete."""
    PROTOCOL[:] = [base]
    return base


def is_builtin(cls: type) -> bool:
    """Whether ``cls`` is one of the library's own families (defined inside anchordiv)."""
    return cls.__module__.split(".")[0] == "anchordiv"


def check_family(cls: Any, kind, replace: bool) -> None:
    """Refuse what :func:`family` must not register: a kind that is not a non-empty string, a
    class that is not a :class:`~.family.Family` subclass, one missing a required member
    (named), and — unless ``replace`` — a class that would replace a built-in family's kind."""
    if not isinstance(kind, str) or not kind.strip():
        raise AnchorDivError(f"family: the kind must be a non-empty string, got {kind!r}")
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


def with_origin(cls) -> None:
    """Give ``cls`` the static field ``origin: str = ""`` where it declares none (where a prior
    came from: :func:`~anchordiv.adaptation.load_prior` sets it, ``Family.card`` reads it), so
    that every registered family has it.  A default field goes last, after any other."""
    declared = any("origin" in inspect.get_annotations(c) for c in cls.__mro__)
    if not declared:
        cls.__annotations__ = {**inspect.get_annotations(cls), "origin": str}
        cls.origin = ""
    if "origin" not in cls.static_fields:
        cls.static_fields = (*cls.static_fields, "origin")


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
        registered again, e.g. its module imported anew, replaces its entry either way).

    Returns
    -------
    callable
        The decorator: takes a :class:`~anchordiv.adaptation.family.Family` subclass and
        returns it as a registered frozen dataclass.

    Raises
    ------
    AnchorDivError
        (From the decorator) a class that is not a ``Family`` subclass, a missing required
        member (named), or a built-in kind without ``replace=True``.

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

    def wrap(cls):
        check_family(cls, kind, replace)
        with_origin(cls)
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
    """The registered kinds in registration order, read live (a tuple-like view of
    :data:`FAMILIES`)."""

    def __getitem__(self, i):
        return tuple(FAMILIES)[i]

    def __len__(self) -> int:
        return len(FAMILIES)

    def __contains__(self, kind) -> bool:
        return kind in FAMILIES

    def __eq__(self, other) -> bool:
        return (
            tuple(self) == tuple(other)
            if isinstance(other, (tuple, list, Sequence))
            else NotImplemented
        )

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(FAMILIES))


def unknown_kind(kind) -> AnchorDivError:
    return AnchorDivError(f"kind: unknown {kind!r}; adaptation supports {', '.join(FAMILIES)}")


def is_prior(obj) -> bool:
    """Whether ``obj`` is a prior object of a registered family.

    Parameters
    ----------
    obj : object
        Anything.

    Returns
    -------
    bool
        True for an instance of a registered family.

    Examples
    --------
    >>> from anchordiv.adaptation.registry import is_prior
    >>> is_prior(ad.NIWPrior.from_anchors(np.eye(3), kappa0=1.0, nu0=5.0)), is_prior(np.eye(3))
    (True, False)
    """
    fam = FAMILIES.get(getattr(obj, "kind", None))
    return fam is not None and isinstance(obj, fam)


__all__ = [
    "FAMILIES",
    "PROTOCOL",
    "LiveKinds",
    "LiveMapping",
    "check_family",
    "family",
    "get_family",
    "is_builtin",
    "is_prior",
    "protocol",
    "unknown_kind",
]
