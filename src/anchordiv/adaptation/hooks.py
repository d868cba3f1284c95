"""What a family knows of itself beyond its model, for the checks and the adaptation curves: a
:class:`Hooks` object that the family declares as its class attribute ``hooks``
(:attr:`anchordiv.adaptation.family.Family.hooks`) — its ArviZ quantities and their dims, its
SBC problem, how its exact draws form chains, its PSIS caveat, the broad scale its predictive
checks project on, its measured calibration and how it runs in an adaptation curve.

Every field is optional: ``None`` means the generic default, or the value a base class declares
(the hooks of a family are read field by field along its class's MRO by
:func:`anchordiv.checks.families.checks_of`, which fills in the defaults).  A family of one's
own needs none of them::

    @ad.family("mine")
    class MyPrior(ad.Family):
        hooks = Hooks(quantities=my_quantities, dims={"radius": ["component"]})

The helpers below (:func:`cosine`, :func:`principal_angles`, :func:`own_sites`) are what the
families' own quantities are built from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

#: the Gaussian quantities include ``mu`` and ``Sigma`` themselves up to this d
SMALL_D = 8
#: leading covariance eigenvalues reported
N_EIGEN = 5
#: a model's own sites reach the posterior group up to this many values per draw
OWN_SITE_MAX = 1024


@dataclasses.dataclass(frozen=True)
class Hooks:
    """A family's hooks (module docstring); ``None``: the default or a base class's.

    Parameters
    ----------
    quantities : callable
        ``(draws {site: [chains, draws, ...]}, ref {site: ...}) -> {name: [chains, draws,
        ...]}``: interpretable quantities of draws against the point summary ``ref`` (ArviZ's
        posterior and prior groups).
    dims : dict
        ArviZ dims of the quantities beyond (chain, draw).
    sbc_broad : callable
        ``(d, rng, separation) -> broad [400, d]``: the fixed broad anchors of the SBC problem.
    sbc_options : callable
        ``d -> dict``: fixed strengths of the SBC problem (``from_anchors`` keywords; empirical
        Bayes would make the prior depend on the data).
    sbc_quantities : callable
        ``(d, rng) -> {name: f}``, each ``f`` a scalar function of parameters with a leading
        draw axis ``[S, ...] -> [S]``.
    prior_draw : callable
        ``(params, rng) -> {site: ...}``: one exact draw of exact parameters (SBC's truth).
    chain_draws : callable
        ``(params, rng, chains, n) -> {site: [chains, n, ...]}``: exact draws as chains.
    draw_size : callable
        ``params -> int or None``: float64 values of the largest covariance of one exact draw
        (memory budget of the default draw count).
    gibbs_cost : callable
        ``params -> (relative cost of a sweep, burn-in sweeps) or None``: exact draws that are
        Gibbs chains.
    psis_caveat : callable
        ``post -> str or None``: why PSIS-LOO over the draws of ``post`` would not estimate
        its leave-one-out refits.
    prior_scale : callable
        ``(model kwargs, mean params) -> [d, d] or None``: the broad scale whose leading
        eigenvectors the posterior predictive checks project on.
    student_t_predictive : bool
        The model's posterior predictive is the NIW Student-t (exact LOO).
    conditional_predictive : callable
        ``(model kwargs, draws {site: [S, ...]}, train [n, d], test [m, d], rng) -> log p
        [R, m]``: the family's predictive of held-out targets given the training targets in
        closed form — exact (``R = 1``: the diagonal family's product of Student-t's), or
        given each draw's latent structure (``R = S``, draw order: the mixture's Student-t
        mixture given the assignments, Rao-Blackwellized).  K-fold scores each fold by it
        (:func:`anchordiv.checks.criticism.kfold_loo`).
    exact_calibration : str, optional
        Measured calibration of approximate exact draws (InferenceData attributes).
    svi_coverage : dict, optional
        ``{SBC quantity: 90 % interval coverage}`` the low-rank SVI guide's draws reached in
        simulation-based calibration (d = 4, n = 8, 200 simulations).
    svi_note : str, optional
        What :attr:`svi_coverage` does not say.
    curve_method : object, optional
        The inference method of the family's ``posterior-<kind>`` / ``isotropic-<kind>``
        adaptation-curve models (an ``ad.Exact()``, ``ad.NUTS(...)`` or ``ad.SVI(...)``;
        default: exact where the family is conjugate, else a short NUTS run).

    Examples
    --------
    >>> from anchordiv.adaptation.hooks import Hooks
    >>> ad.NIWPrior.hooks.dims["mu"], Hooks().quantities is None
    (['dim'], True)
    """

    quantities: Callable | None = None
    dims: Mapping[str, list[str]] | None = None
    sbc_broad: Callable | None = None
    sbc_options: Callable | None = None
    sbc_quantities: Callable | None = None
    prior_draw: Callable | None = None
    chain_draws: Callable | None = None
    draw_size: Callable | None = None
    gibbs_cost: Callable | None = None
    psis_caveat: Callable | None = None
    prior_scale: Callable | None = None
    student_t_predictive: bool | None = None
    conditional_predictive: Callable | None = None
    exact_calibration: str | None = None
    svi_coverage: Mapping[str, float] | None = None
    svi_note: str | None = None
    curve_method: object | None = None


def declared_hooks(cls: type) -> Hooks:
    """The hooks ``cls`` declares, merged field by field along its MRO (a subclass's own
    non-``None`` fields over its bases'); ``None`` where no class declares a field."""
    found: dict = {}
    for base in reversed(cls.__mro__):
        own = base.__dict__.get("hooks")
        if isinstance(own, Hooks):
            for f in dataclasses.fields(own):
                value = getattr(own, f.name)
                if value is not None:
                    found[f.name] = value
    return Hooks(**found)


# ---- helpers of the families' quantities --------------------------------------------------------
def principal_angles(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Principal angles in degrees, ascending, between two subspaces.

    Parameters
    ----------
    u, v : numpy.ndarray, shape [..., d, k]
        Bases of the subspaces (orthonormal columns).

    Returns
    -------
    numpy.ndarray, shape [..., k]
        The angles in degrees.

    Examples
    --------
    >>> from anchordiv.adaptation.hooks import principal_angles
    >>> principal_angles(np.eye(3)[:, :1], np.eye(3)[:, 1:2]).round(1)
    array([90.])
    """
    s = np.linalg.svd(np.swapaxes(u, -1, -2) @ v, compute_uv=False)
    return np.degrees(np.arccos(np.clip(s, -1.0, 1.0)))


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine between the last axes of two arrays (broadcast).

    Parameters
    ----------
    a, b : numpy.ndarray, shape [..., d]
        The vectors.

    Returns
    -------
    numpy.ndarray, shape [...]
        cos(a, b).

    Examples
    --------
    >>> from anchordiv.adaptation.hooks import cosine
    >>> float(cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])).round(3))
    0.707
    """
    return (a * b).sum(-1) / np.maximum(
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-300
    )


def own_sites(sites, draws: dict, taken: dict) -> dict:
    """A model's own parameters ``{site: [chains, draws, ...]}`` beyond the family's ``sites``
    (a custom or structured model's loadings, scales, ...) for az.summary / az.plot_trace: every
    stored site but ``sites``, those in ``taken``, auxiliary ``*_raw`` coordinates and sites of
    more than :data:`OWN_SITE_MAX` values per draw."""
    return {
        k: v
        for k, v in draws.items()
        if k not in sites
        and k not in taken
        and not k.endswith("_raw")
        and int(np.prod(v.shape[2:], dtype=int)) <= OWN_SITE_MAX
    }


def unit_vector(d: int, rng) -> np.ndarray:
    """A random unit vector ``[d]`` (a fixed direction of an SBC quantity)."""
    v = rng.normal(size=d)
    return v / np.linalg.norm(v)


__all__ = [
    "Hooks",
    "N_EIGEN",
    "OWN_SITE_MAX",
    "SMALL_D",
    "cosine",
    "declared_hooks",
    "own_sites",
    "principal_angles",
    "unit_vector",
]
