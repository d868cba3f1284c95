"""The registry of adaptable families: kind -> family class (:mod:`.family` is the protocol).
Modules below the families (posterior, densities, subspace lift, model checks) find a kind's
family here without importing the families themselves."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Callable, dataclass_transform

import jax

from ..errors import AnchorDivError

#: kind -> family class, filled by :func:`family` (``type[Any]``: a :class:`.family.Family`
#: subclass, which this module must not import)
FAMILIES: dict[str, type[Any]] = {}


@dataclass_transform(frozen_default=True, eq_default=False)
def family(kind: str):
    """Class decorator: frozen dataclass + JAX pytree (array and number fields are leaves,
    ``static_fields`` static) + registry entry under ``kind``.

    Parameters
    ----------
    kind : str
        The kind the family is registered under (``ad.adapt(kind, ...)``, the CLI, saved
        priors and posteriors name it).

    Returns
    -------
    callable
        The decorator: takes a :class:`~anchordiv.adaptation.family.Family` subclass and
        returns it as a registered frozen dataclass.

    Examples
    --------
    >>> import dataclasses
    >>> @ad.family("doc-example")
    ... class Example(ad.Family):
    ...     mu0: np.ndarray
    >>> Example.kind, dataclasses.is_dataclass(Example)
    ('doc-example', True)
    >>> from anchordiv.adaptation.registry import FAMILIES
    >>> _ = FAMILIES.pop("doc-example")
    """

    def wrap(cls):
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
    "LiveKinds",
    "LiveMapping",
    "family",
    "get_family",
    "is_prior",
    "unknown_kind",
]
