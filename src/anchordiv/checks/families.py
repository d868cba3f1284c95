"""What the checks layer knows of each family beyond its model (ArviZ quantities and dims, the
SBC problem, exact draws, PSIS caveats, broad scale, exact LOO, measured calibration, the
curves' method), each with a generic default here, so a family needs none of them.

A family declares better ones as its ``hooks`` (:class:`~anchordiv.adaptation.protocol.Hooks`);
:func:`register_checks` sets them from outside and :func:`checks_of` reads them along the MRO
with the defaults filled in::

    from anchordiv.checks.families import register_checks
    register_checks(MyPrior, quantities=my_quantities, dims={"radius": ["component"]})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ..adaptation.registry import is_conjugate
from ..adaptation.protocol import OWN_SITE_MAX, Hooks, cosine, declared_hooks, own_sites
from ..adaptation.methods import NUTS, Exact
from ..adaptation.registry import FAMILIES, LiveMapping
from ..errors import AnchorDivError

#: the adaptation curves' method for a family not conjugate that declares none: a short NUTS run
CURVE_NUTS = NUTS(**{"num_warmup": 200, "num_samples": 200, "num_chains": 1, "progress": False})

#: registered family class -> the hooks its class itself declares (read live, read-only)
CHECKS = LiveMapping(
    lambda: {
        fam: fam.__dict__["hooks"]
        for fam in FAMILIES.values()
        if isinstance(fam.__dict__.get("hooks"), Hooks)
    }
)


# ---- the hooks and their defaults --------------------------------------------------------------
def register_checks(fam: type, **hooks) -> Hooks:
    """Set hooks of a family class from outside its definition (module docstring): the given
    fields replace the class's own, the others stay as they were (its own, a base class's or
    the defaults).

    Parameters
    ----------
    fam : type
        A family class.
    **hooks
        Fields of :class:`~anchordiv.adaptation.protocol.Hooks`.

    Returns
    -------
    Hooks
        The hooks the class now declares itself (``fam.hooks``).

    Raises
    ------
    AnchorDivError
        An unknown hook, or ``fam`` not a class.

    Examples
    --------
    >>> from anchordiv.checks.families import checks_of, register_checks
    >>> class Mine(ad.DiagonalPrior): ...
    >>> _ = register_checks(Mine, psis_caveat=lambda post: "an example")
    >>> checks_of(Mine).psis_caveat(None), checks_of(Mine).dims    # the rest: DiagonalPrior's
    ('an example', {'mu': ['dim'], 'sigma2': ['dim']})
    """
    names = {f.name for f in dataclasses.fields(Hooks)}
    unknown = sorted(set(hooks) - names)
    if unknown:
        raise AnchorDivError(
            f"register_checks: unknown hook(s) {', '.join(unknown)}; hooks: {', '.join(sorted(names))}"
        )
    if not isinstance(fam, type):
        raise AnchorDivError(f"register_checks: expected a family class, got {type(fam).__name__}")
    own = fam.__dict__.get("hooks")
    merged = dataclasses.replace(own if isinstance(own, Hooks) else Hooks(), **hooks)
    cls: Any = fam
    cls.hooks = merged
    return merged


def checks_of(fam) -> Hooks:
    """The hooks of a family class (or prior object): each field the nearest declaration along
    its MRO has (:func:`~anchordiv.adaptation.protocol.declared_hooks`), else the generic default
    (module docstring)."""
    cls: Any = fam if isinstance(fam, type) else type(fam)
    declared = declared_hooks(cls)
    values = {f.name: getattr(declared, f.name) for f in dataclasses.fields(Hooks)}
    found = {k: v for k, v in values.items() if v is not None}
    sites = cls.sites
    defaults = {
        "quantities": lambda draws, ref: site_quantities(sites, draws, ref),
        "dims": {},
        "sbc_broad": anisotropic_broad,
        "sbc_options": lambda d: {},
        "sbc_quantities": lambda d, rng: random_functionals(sites, rng),
        "draw_size": lambda params: None,
        "gibbs_cost": lambda params: None,
        "psis_caveat": lambda post: None,
        "prior_scale": lambda kwargs, mean: None,
        "student_t_predictive": False,
        "conditional_predictive": None,
        "exact_calibration": None,
        "curve_method": Exact() if is_conjugate(cls) else CURVE_NUTS,
        "sbc_fixed": lambda fixed: fixed,
        "data_chosen": lambda options: [],
        "ppc_directions": lambda post, k: None,
    }
    return Hooks(**{**defaults, **found})


def site_quantities(sites, draws: dict, ref: dict) -> dict[str, np.ndarray]:
    """The default quantities of a family: :func:`norms_and_cosines` of its ``sites``, each
    declared site itself (``[chains, draws, ...]``, up to :data:`OWN_SITE_MAX` values per draw)
    and the model's other latent sites that the draws hold (:func:`own_sites`: a NUTS or SVI
    posterior's hyperparameters and scales)."""
    out, small = {}, {}
    for site in sites:
        x = np.asarray(draws[site], np.float64)
        if x.ndim == 2:
            out[site] = x
            continue
        flat = x.reshape(x.shape[:2] + (-1,))
        out[f"{site}_norm"] = np.linalg.norm(flat, axis=-1)
        out[f"{site}_cosine"] = cosine(flat, np.asarray(ref[site], np.float64).reshape(-1))
        if flat.shape[-1] <= OWN_SITE_MAX:
            small[site] = np.asarray(draws[site])
    out.update(small)
    return {**out, **own_sites(sites, draws, out)}


def anisotropic_broad(d: int, rng, separation: float = 8.0) -> np.ndarray:
    """Default SBC broad anchors ``[400, d]``: anisotropic, with a clear rank-2 signal."""
    scales = np.r_[3.0, 2.5, np.full(d - 2, 0.3)] if d > 2 else np.array([1.5, 0.7])
    rot = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return (rng.normal(size=(400, d)) * scales) @ rot.T


def random_functionals(sites, rng) -> dict[str, Callable]:
    """Default SBC quantities: one fixed random linear functional of each site."""
    seeds = {site: int(rng.integers(2**31)) for site in sites}

    def functional(site):
        def f(p):
            x = np.asarray(p[site], np.float64)
            x = x.reshape(len(x), -1)
            return x @ np.random.default_rng(seeds[site]).normal(size=x.shape[1])

        return f

    return {f"w·{site}": functional(site) for site in sites}
