"""The registry of adaptable families: kind -> family class (:mod:`.family` is the protocol).
Modules below the families (posterior, densities, subspace lift, model checks) find a kind's
family here without importing the families themselves."""

from __future__ import annotations

import dataclasses

import jax

from ..errors import AnchorDivError

#: kind -> family class, filled by :func:`family`
FAMILIES: dict[str, type] = {}
#: posterior parameter class name -> class (exact posteriors a family's update returns; for
#: save/load)
POSTERIOR_CLASSES: dict[str, type] = {}
#: posterior parameter class -> the first family that registered it (costs of exact draws)
PARAMETER_FAMILIES: dict[type, type] = {}


def family(kind: str):
    """Class decorator: frozen dataclass + JAX pytree (array and number fields are leaves,
    ``str``/``bool``/``None``-typed fields static) + registry entry under ``kind``."""

    def wrap(cls):
        cls = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)   # Family.__repr__
        fields = dataclasses.fields(cls)
        static = [f.name for f in fields if f.name in cls.static_fields]
        data = [f.name for f in fields if f.name not in cls.static_fields]
        jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=static)
        cls.kind = kind
        FAMILIES[kind] = cls
        for p in cls.posterior_types:
            POSTERIOR_CLASSES[p.__name__] = p
            PARAMETER_FAMILIES.setdefault(p, cls)
        return cls

    return wrap


def family_of(params) -> type:
    """The (first registered) family whose exact posterior parameters ``params`` are."""
    if type(params) not in PARAMETER_FAMILIES:
        raise AnchorDivError(f"family: no registered family has posterior parameters of type "
                             f"{type(params).__name__}")
    return PARAMETER_FAMILIES[type(params)]


def get_family(kind: str) -> type:
    """The family class registered under ``kind``."""
    if kind not in FAMILIES:
        raise AnchorDivError(f"kind: unknown {kind!r}; adaptation supports "
                             f"{', '.join(FAMILIES)}")
    return FAMILIES[kind]



def is_prior(obj) -> bool:
    """Whether ``obj`` is a prior object of a registered family."""
    fam = FAMILIES.get(getattr(obj, "kind", None))
    return fam is not None and isinstance(obj, fam)


__all__ = ["FAMILIES", "PARAMETER_FAMILIES", "POSTERIOR_CLASSES", "family", "family_of",
           "get_family", "is_prior"]
