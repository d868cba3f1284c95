"""Posterior uncertainty: ArviZ data of each family's interpretable quantities (its
``quantities`` hook, :mod:`.families`), retrieval stability across posterior draws, and
InferenceData persistence.  Exact posteriors give two chains, so ESS and R-hat are honest.
"""

from __future__ import annotations

import dataclasses
import tempfile
import warnings
from pathlib import Path

import numpy as np
from ..progress import tqdm

from ..errors import AnchorDivError, as_matrix, in_unit_interval, integer, user_stacklevel
from ..retrieval.metrics import LEVEL
from .._safeio import check_hdf5
from ..io import expect_type, read_bundle, write_bundle
from ..threads import limited_blas
from . import arviz as adz
from ..adaptation.protocol import own_sites
from .families import checks_of
from .sbc import SBCResult, sbc  # noqa: F401
from ..anchors.linalg import canonical_signs


# ---- interpretable quantities ----------------------------------------------------------------

#: NUTS's sample statistics -> ArviZ's names
STATS = dict(potential_energy="lp", diverging="diverging", num_steps="n_steps")
STATS.update(accept_prob="acceptance_rate", energy="energy")


#: default number of draws of :func:`inference_data`
DEFAULT_DRAWS = 200
#: Gibbs budget of the default draw count, in units of k·q³ (≈ 30 s per chain on one core)
GIBBS_BUDGET = 6e10
CHAINS = 2
#: memory for the default number of exact covariance draws (Σ or Σ_k, float64)
DRAW_BYTES = 256 * 2**20
#: largest d at which inference_data adds the prior group by default
PRIOR_MAX_D = 64


def default_draws(post) -> int:
    """:data:`DEFAULT_DRAWS`, or fewer within :data:`GIBBS_BUDGET` and :data:`DRAW_BYTES` for
    an exact posterior whose parameters' draws are large (``hooks.draw_size``) or slow
    (``hooks.gibbs_cost``); a posterior given by draws resamples them, so it takes the
    default."""
    if not post.closed_form or post.exact is None:
        return DEFAULT_DRAWS
    hooks = checks_of(post.family_class)
    size = hooks.draw_size(post.exact)
    if size is not None:
        fit = int(DRAW_BYTES // (8 * size))
        return int(np.clip(fit - fit % CHAINS, 2 * CHAINS, DEFAULT_DRAWS))
    cost = hooks.gibbs_cost(post.exact)
    if cost is None:
        return DEFAULT_DRAWS
    per_chain = int(GIBBS_BUDGET / cost[0]) - cost[1]
    return CHAINS * int(np.clip(per_chain, 10, DEFAULT_DRAWS // CHAINS))


def _chain_draws(post, num_draws: int, seed: int) -> tuple[dict, dict | None]:
    """Parameter draws ``[chains, draws, ...]`` and NUTS stats ``[chains, draws]``.  An SVI
    guide's draws are one chain: split into two, independent draws of one fit would show an
    R-hat of 1.00 that says nothing of whether the fit converged."""
    if post.variational or post.independent_draws:  # exact draws: CHAINS independent chains
        chains = 1 if post.variational else CHAINS
        return post.chain_draws(seed, chains, -(-num_draws // chains)), None
    n = next(iter(post.samples.values())).shape[1]
    if num_draws > n:
        warnings.warn(
            f"inference_data: num_draws={num_draws} asked, the {post.method} run holds {n} "
            f"draws per chain: all {n} are kept (run longer for more)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    idx = np.unique(np.linspace(0, n - 1, min(num_draws, n)).round().astype(int))
    stats = {
        STATS[k]: (-v if k == "potential_energy" else v)[:, idx]
        for k, v in (post.stats or {}).items()
        if k in STATS
    }
    flat, shape = _merge({k: v[:, idx] for k, v in post.samples.items()})
    # a subspace run lifts each stored draw (every site), keeping the order
    lifted = post.lift_draws(flat, np.random.default_rng(seed))
    return {k: _split(v, shape) for k, v in lifted.items()}, stats


def _merge(draws: dict) -> tuple[dict, tuple]:
    shape = next(iter(draws.values())).shape[:2]
    return {k: v.reshape((-1,) + v.shape[2:]) for k, v in draws.items()}, shape


def _split(x: np.ndarray, shape: tuple) -> np.ndarray:
    return x.reshape(shape + x.shape[1:])


def prior_draws(post, num_draws: int, seed: int) -> dict | None:
    """Prior parameter draws ``[2, ⌈num_draws/2⌉, ...]`` of the kind's default prior (None for a
    custom NumPyro model or a posterior without ``model_kwargs``)."""
    if post.model_kwargs is None or post.custom_model:
        return None
    per_chain = -(-num_draws // CHAINS)
    # the exact prior's own draws where there is one (the latent kinds': two Gibbs chains)
    draws = post.likelihood().prior_draws(np.random.default_rng(seed + 1), CHAINS * per_chain)
    return {k: v.reshape((CHAINS, -1) + v.shape[1:]) for k, v in draws.items()}


#: leading broad directions the posterior predictive checks project on
PPC_DIRECTIONS = 3


def broad_directions(post, k: int = PPC_DIRECTIONS) -> np.ndarray:
    """``[d, k]`` leading directions of the broad prior: the subspace basis of a subspace run,
    the spectral prior's own eigenbasis, else the top eigenvectors of the family's
    ``prior_scale`` (the NIW scale matrix, summed over mixture components; the latent kinds'
    Bingham parameter; from the posterior mean where the model's arguments lack it), else the
    coordinate axes."""
    hooks = checks_of(post.family_class)
    own = post.principal_directions(k)
    own = hooks.ppc_directions(post, k) if own is None else own
    if own is not None:
        return own
    scale = hooks.prior_scale(post.model_kwargs or {}, post.params("mean"))
    scale = np.eye(post.dim) if scale is None else np.asarray(scale, np.float64)
    if scale.shape != (post.dim, post.dim) or not np.all(np.isfinite(scale)):
        raise AnchorDivError(
            f"{post.kind}: the prior scale has shape {list(scale.shape)}, not [d, d] = "
            f"{[post.dim, post.dim]} finite numbers (malformed model arguments)"
        )
    return canonical_signs(np.linalg.eigh(0.5 * (scale + scale.T))[1][:, ::-1][:, :k])


def model_groups(post, draws: dict, targets: np.ndarray, seed: int) -> tuple[dict, str | None]:
    """``(groups, why)``: the ``log_likelihood``, ``observed_data`` (the targets themselves, which
    ``log_likelihood["targets"]`` scores: ArviZ's ``loo_pit`` and PPC plots read them),
    ``posterior_predictive`` and ``constant_data`` (``ppc_directions [d, k]``, the directions
    :func:`anchordiv.checks.arviz.ppc_data` projects on) groups of the draws; ``why`` the
    model's groups are left out, or None."""
    obs, v = np.asarray(targets, np.float64), broad_directions(post)
    observed = {"observed_data": {"targets": obs}, "constant_data": {"ppc_directions": v}}
    lik = post.model_likelihood()  # the model the draws come from (a user's, model=)
    if lik is None:  # refused: the user's model is not known here (likelihood_attrs says so)
        return observed, None
    flat, shape = _merge(draws)
    try:
        ll = lik.log_density(flat, targets)
    except AnchorDivError as err:
        if post.subspace is None:
            raise
        # a subspace run's own sites stay r-dimensional in its lifted draws: a traced full-d
        # model cannot take them (the family's likelihood_type, from its sites alone, can)
        return observed, (
            f"none: the {post.kind} family's likelihood is traced from its model, which cannot "
            f"score this subspace={post.subspace} run's lifted draws in full d (its own sites "
            f"stay r-dimensional: {str(err).split('(sites ')[-1].split(';')[0]}); "
            f"log_likelihood and posterior_predictive are left out — give the family a "
            f"likelihood_type that reads only its sites (as the Gaussian families' "
            f"GaussianLikelihood) or fit it in full d"
        )
    check_finite_density("log likelihood", post, lik, targets, flat, ll)
    pp = _split(lik.sample(flat, len(targets), np.random.default_rng(seed + 2)), shape)
    return {
        "log_likelihood": {"targets": _split(ll, shape)},
        **observed,
        "posterior_predictive": {"targets": pp},
    }, None


def likelihood_attrs(post, left_out: str | None = None) -> dict[str, str]:
    """``log_likelihood_model``: which model's likelihood the groups hold, or why they are left
    out (``left_out``: :func:`model_groups`'s reason)."""
    name = lambda m: getattr(m, "__qualname__", type(m).__name__)  # noqa: E731
    why = "a saved posterior" if post.subspace is None else "a subspace= run (projected targets)"
    if left_out is not None:
        what = left_out
    elif not post.custom_model:
        what = f"the {post.kind} family's model ({name(post.family_class.model)})"
    elif post.user_model is not None:
        what = f"the user's model ({name(post.user_model[0])}), traced"
    else:
        what = (
            "none: the draws come from a user's model (model=) that this posterior does not "
            f"hold ({why}); log_likelihood and posterior_predictive are left out rather than "
            f"filled with the {post.kind} family's likelihood, which is not the model sampled"
        )
    return {"log_likelihood_model": what}


def no_log_prior(post) -> str | None:
    """Why the prior density of ``post``'s draws is not known (None where it is): a user's
    NumPyro model (its prior is not kept), a posterior without model keywords, or a
    ``subspace=r`` run (its draws were sampled in r dimensions under a projected prior)."""
    if post.custom_model:
        return "its draws come from a user's NumPyro model, whose prior anchordiv does not keep"
    if post.model_kwargs is None:
        return "it has no model keywords (a posterior saved without them)"
    if post.subspace is not None:
        return (
            f"a subspace={post.subspace} run sampled r-dimensional sites under the projected "
            f"prior; its lifted draws have no full-d prior ratio (fit it in full d)"
        )
    return None


def log_prior(post, draws: dict) -> np.ndarray:
    """``log p(θ_s)`` ``[S]`` of the family's model at ``draws``: the log joint at one target less
    its log likelihood."""
    why = no_log_prior(post)
    if why is not None:
        raise AnchorDivError(f"log prior: unknown for this {post.kind} posterior: {why}")
    d, lik = post.dim, post.likelihood()
    want = lik.site_shapes(d, {k: np.shape(v)[1:] for k, v in draws.items()})
    for k, shape in want.items():  # a posterior read from a file meets its prior here
        if k in draws and np.shape(draws[k])[1:] != tuple(shape):
            raise AnchorDivError(
                f"log prior: site {k} has draws of shape {list(np.shape(draws[k])[1:])}, not "
                f"{list(shape)}"
            )
    t = post.fixed.get("targets")
    if t is not None and (np.ndim(t) != 2 or len(t) < 1 or np.shape(t)[1] != d):
        raise AnchorDivError(f"log prior: the posterior's targets are not [n, {d}]")
    one = np.asarray(t[:1], np.float64) if t is not None else np.zeros((1, d))
    lp = lik.log_joint(one, draws) - lik.log_density(draws, one)[:, 0]
    check_finite_density("log prior", post, lik, one, draws, lp)
    return lp


def check_finite_density(what: str, post, lik, targets, draws: dict, values) -> None:
    """An :class:`AnchorDivError` naming the model's site(s) whose log density is not finite
    where ``values`` (a log prior ``[S]`` or log likelihood ``[S, n]`` of ``draws`` given
    ``targets``) is not finite: never a −∞ or NaN group written silently."""
    bad = ~np.isfinite(np.asarray(values)).reshape(len(np.asarray(values)), -1).all(-1)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    sites = lik.nonfinite_sites(targets, draws, i)
    where = f"site(s) {', '.join(repr(k) for k in sites)}" if sites else "an unnamed site"
    raise AnchorDivError(
        f"{what}: not finite at {int(bad.sum())} of {len(bad)} draws of this {post.kind} "
        f"{post.method} posterior (first: draw {i}, at {where} of its model); the draws are "
        f"outside the support of the model's distributions there, or the model is not the "
        f"one they were sampled under — nothing is written for them"
    )


def log_prior_group(post, draws: dict) -> dict:
    """``{"log_prior": {"theta": [chain, draw]}}``, the prior density of each draw
    (:func:`log_prior`) that power-scaling sensitivity reweights by (``az.psens`` /
    ``arviz_stats.psense``, :func:`anchordiv.checks.prior_sensitivity`); ``{}`` where it is
    not known (:func:`no_log_prior`)."""
    if no_log_prior(post) is not None:
        return {}
    flat, shape = _merge(draws)
    return {"log_prior": {"theta": log_prior(post, flat).reshape(shape)}}


def draws_with_log_prior(post, num_draws: int, seed: int) -> tuple[dict, dict, np.ndarray]:
    """The draws :func:`inference_data` takes (``{site: [chains, draws, ...]}``), the same
    with chains merged (``{site: [S, ...]}``) and their log prior ``[S]`` (:func:`log_prior`):
    what power-scaling reweights (:func:`anchordiv.checks.prior_sensitivity`)."""
    draws, _ = _chain_draws(post, num_draws, seed)
    flat, _ = _merge(draws)
    return draws, flat, log_prior(post, flat)


#: the guide whose draws SBC measured (``benchmarks/results/bench_sbc-svi.md``)
MEASURED_GUIDE = "lowrank"
#: where the measured SVI coverage lives (the code quotes no measured number)
SVI_RESULTS = "benchmarks/results/bench_sbc-svi.md"


def svi_calibration(guide: str | None = MEASURED_GUIDE) -> str:
    """The ``calibration`` note of an SVI posterior of ``kind`` (a registered kind or a family
    class) with ``guide``: what SBC measured, per quantity (the family's ``svi_coverage`` and
    ``svi_note``, of the low-rank guide: for another guide, said to be not this one's)."""
    guide = guide or "unnamed"
    what = (
        f"SBC (d = 4, n = 8) measured the 90 % intervals of a few quantities per kind of the "
        f"{MEASURED_GUIDE} guide's draws only ({SVI_RESULTS}); other functions of the draws "
        f"(e.g. log|Σ|, retrieval scores) were not measured and may be covered less"
    )
    if guide != MEASURED_GUIDE:
        what = f"not measured by SBC for this guide ({what})"
    return (
        f"variational approximation ({guide} guide): {what}; check against NUTS or with PSIS "
        f"(ad.compare_priors reweights by log p - log q)"
    )


def calibration_notes(post) -> dict[str, str]:
    """``{"calibration", "log_likelihood_note"}`` attributes where the draws are approximate
    (the measured ``exact_calibration`` of a family's exact draws, :mod:`.families`; SVI guide draws,
    :func:`svi_calibration`) or where PSIS on the
    ``log_likelihood`` group would not estimate leave-one-out refits (the family's
    ``psis_caveat``, :mod:`.families`)."""
    hooks, out = checks_of(post.family_class), {}
    if post.closed_form and hooks.exact_calibration:
        out["calibration"] = hooks.exact_calibration
    if post.variational and not post.point_guide:
        out["calibration"] = svi_calibration(post.guide)
    caveat = hooks.psis_caveat(post)
    if caveat is not None:
        out["log_likelihood_note"] = (
            f"az.loo/az.waic on this group do not estimate leave-one-out refits: {caveat}; "
            "ad.compare_priors refits (K-fold)"
        )
    return out


#: the type names of ArviZ's data objects: 0.x's ``InferenceData``, 1.x's ``DataTree``
DATA_OBJECTS = ("InferenceData", "DataTree")


def arviz_data(x) -> bool:
    """Whether ``x`` is ArviZ data (``InferenceData``, ``DataTree``, an xarray object)."""
    return type(x).__name__ in (*DATA_OBJECTS, "Dataset", "DataArray")


def posterior_argument(post, what: str):
    """``post`` when it is a :class:`~anchordiv.adaptation.Posterior`; else an
    :class:`AnchorDivError` that says what ``what`` takes (and, for ArviZ data, that it is the
    output of :func:`inference_data`, not an input)."""
    from ..adaptation import Posterior

    if isinstance(post, Posterior):
        return post
    if arviz_data(post):
        raise AnchorDivError(
            f"{what}: takes an adapted Posterior (ad.adapt, ad.infer, ad.load_posterior), got "
            f"ArviZ data ({type(post).__name__}) — that is what ad.inference_data(post) "
            f"returns; use ArviZ's own functions on it (az.summary, az.loo)"
        )
    raise AnchorDivError(f"{what}: takes an adapted Posterior, got {type(post).__name__}")


def embeddings_argument(name: str, x, **kw) -> np.ndarray:
    """:func:`~anchordiv.errors.as_matrix` of ``x``, with a named error for ArviZ data."""
    if arviz_data(x):
        raise AnchorDivError(
            f"{name}: expected embeddings [n, d], got ArviZ data ({type(x).__name__}): pass "
            f"the embedding array itself"
        )
    return as_matrix(name, x, **kw)


@limited_blas
def inference_data(
    post, *, num_draws: int | None = None, seed: int = 0, targets=None, prior: bool | None = None
):
    """The draws of a :class:`~anchordiv.adaptation.Posterior` as the installed ArviZ's data
    object: an ``arviz.InferenceData`` on ArviZ 0.x, an ``xarray.DataTree`` on 1.x
    (:mod:`anchordiv.checks.arviz`; module docstring).

    Groups: ``posterior`` (quantities), ``sample_stats`` (NUTS), ``log_prior`` (each draw's
    prior density, for ``az.psens``: :func:`log_prior_group`; a non-finite one is an error
    naming the model's site); with the target anchors ``log_likelihood``, ``observed_data``
    (the targets ``[anchor, dim]`` it scores, so PPC plots of ``"targets"`` and
    :func:`anchordiv.checks.arviz.loo_pit`, ArviZ's on both majors, run),
    ``posterior_predictive`` and ``constant_data`` (:func:`model_groups`;
    :func:`anchordiv.checks.arviz.ppc_data` gives the per-anchor statistics' checks);
    ``prior`` (the same quantities under the kind's default prior, also with
    ``prior_predictive``).

    Parameters
    ----------
    post : Posterior
        An adapted posterior (any kind and method).
    num_draws : int, optional
        Exact posteriors draw that many (rounded up to even) in 2 chains; NUTS posteriors keep up
        to that many evenly spaced draws per chain; default :func:`default_draws` (200, fewer for
        Gibbs-sampled latent posteriors at large d).
    seed : int, default 0
        Seed of the draws.
    targets : array_like, shape [n, d], optional
        The target anchors (default ``post.fixed["targets"]`` when the posterior kept them).
    prior : bool, optional
        Add the prior groups; by default only for d ≤ :data:`PRIOR_MAX_D` (at larger d it
        doubles the cost: O(d³) per draw); ``True`` forces it.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The groups above (``"posterior" in idata``, ``idata["posterior"]["mu"]`` on both ArviZ
        majors); the posterior's ``info`` is in ``idata.attrs`` and
        ``idata["posterior"].attrs``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> post = ad.adapt("gaussian", broad, broad[:5], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> idata = ad.inference_data(post, num_draws=4, targets=broad[:5], prior=False)
    >>> from anchordiv.checks import arviz as adz
    >>> sorted(adz.groups(idata))  # doctest: +NORMALIZE_WHITESPACE
    ['constant_data', 'log_likelihood', 'log_prior', 'observed_data', 'posterior',
     'posterior_predictive']
    >>> idata["posterior"].sizes["chain"], idata["posterior"]["mu"].shape
    (2, (2, 2, 4))
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    post = posterior_argument(post, "inference_data")
    num_draws = integer("num_draws", default_draws(post) if num_draws is None else num_draws, low=2)
    draws, stats = _chain_draws(post, num_draws, seed)
    ref = post.params("mean")
    hooks = checks_of(post.family_class)
    groups = {"posterior": hooks.quantities(draws, ref), "sample_stats": stats}
    if post.custom_model:
        groups["posterior"].update(own_sites(post.family_class.sites, draws, groups["posterior"]))
    groups.update(log_prior_group(post, draws))  # prior sensitivity (az.psens)
    targets = post.fixed.get("targets") if targets is None else targets
    left_out = None
    if targets is not None:
        targets = as_matrix("targets", targets, dim=post.dim)
        model, left_out = model_groups(post, draws, targets, seed)
        groups.update(model)
    prior = post.dim <= PRIOR_MAX_D if prior is None else prior
    pdraws = prior_draws(post, num_draws, seed) if prior else None
    if pdraws is not None:
        groups["prior"] = hooks.quantities(pdraws, ref)
        if targets is not None:
            flat, shape = _merge(pdraws)
            rng = np.random.default_rng(seed + 3)
            pp = _split(post.likelihood().sample(flat, len(targets), rng), shape)
            groups["prior_predictive"] = {"targets": pp}
    info = {k: v for k, v in post.info.items() if isinstance(v, (int, float, str))}
    keep = {k: int(v) if isinstance(v, bool) else v for k, v in info.items()}  # netCDF: no bools
    attrs = {"kind": post.kind, "method": post.method, **keep, **calibration_notes(post)}
    if post.variational:
        attrs["chains_note"] = (
            "one chain of independent guide draws: R-hat does not apply (it would compare "
            "draws of one fit with themselves), and ESS says nothing of the fit's convergence"
        )
    if post.samples is not None and not post.independent_draws:
        held = next(iter(post.samples.values())).shape[1]
        if num_draws > held:
            attrs["num_draws_note"] = f"num_draws={num_draws} asked; the run holds {held} per chain"
    if targets is not None:
        attrs.update(likelihood_attrs(post, left_out))
    dims = {
        k: hooks.dims[k]
        for g in ("posterior", "prior")
        for k, v in (groups.get(g) or {}).items()
        if v.ndim > 2 and k in hooks.dims
    }
    dims.update(targets=["anchor"], ppc_directions=["dim", "direction"])
    idata = adz.from_groups(groups, dims=dims, attrs=attrs)
    for g in ("observed_data", "posterior_predictive", "prior_predictive"):
        if g in idata:  # the embedding axis is "dim" everywhere
            data = adz.dataset(idata, g)
            adz.replace_group(
                idata, g, data.rename({d: "dim" for d in data.dims if d.startswith("targets_dim")})
            )
    return idata


# ---- retrieval uncertainty ---------------------------------------------------------------------


@dataclasses.dataclass
class RetrievalUncertainty:
    """Retrieval under posterior draws (the result of :func:`retrieval_uncertainty`).

    Parameters
    ----------
    topk_overlap : numpy.ndarray, shape [S, Q]
        Fraction of the point model's top-k kept in each draw's top-k.
    auprc : numpy.ndarray, shape [S, Q], or None
        Per-draw, per-query AUPRC (None without relevance).
    point_auprc : numpy.ndarray, shape [Q], or None
        The point model's AUPRC.
    interval : float
        The central probability of the intervals.

    Examples
    --------
    >>> from anchordiv.checks import RetrievalUncertainty
    >>> ru = RetrievalUncertainty(np.full((4, 2), 0.9), None, None, 0.95)
    >>> ru
    RetrievalUncertainty(draws=4, queries=2, interval=0.95, topk_overlap=0.900 [0.900, 0.900])
    """

    topk_overlap: np.ndarray
    auprc: np.ndarray | None
    point_auprc: np.ndarray | None
    interval: float

    def __repr__(self) -> str:
        s, q = self.topk_overlap.shape
        parts = [f"draws={s}", f"queries={q}", f"interval={self.interval:g}"]
        band, fmt = self.summary(), "{mean:.3f} [{low:.3f}, {high:.3f}]"
        parts.append("topk_overlap=" + fmt.format(**band["topk_overlap"]))
        if "auprc" in band:
            parts.append("auprc=" + fmt.format(**band["auprc"]))
            parts.append(f"point_auprc={band['point_auprc']:.3f}")
        return f"RetrievalUncertainty({', '.join(parts)})"

    def _band(self, x: np.ndarray) -> dict:
        lo, hi = np.quantile(x, [(1 - self.interval) / 2, (1 + self.interval) / 2])
        return {"mean": float(np.mean(x)), "low": float(lo), "high": float(hi)}

    def summary(self) -> dict:
        """Intervals over draws of the mean top-k overlap and the mean AUPRC, and the mean
        per-query AUPRC interval width."""
        out = {"interval": self.interval, "topk_overlap": self._band(self.topk_overlap.mean(1))}
        if self.auprc is not None:
            out["auprc"] = self._band(np.nanmean(self.auprc, axis=1))
            out["point_auprc"] = float(np.nanmean(self.point_auprc))
            # queries without a relevant item (AUPRC NaN in every draw) are left out
            ok = np.isfinite(self.auprc).any(axis=0)
            q = np.nanquantile(
                self.auprc[:, ok], [(1 - self.interval) / 2, (1 + self.interval) / 2], axis=0
            )
            out["per_query_auprc_width"] = (
                float(np.nanmean(q[1] - q[0])) if ok.any() else float("nan")
            )
        return out

    def describe(self) -> str:
        """The summary in words (for reports and notebooks)."""
        s = self.summary()
        pct = round(100 * self.interval)
        per_query = self.topk_overlap.mean(0)
        o = s["topk_overlap"]
        words = (
            f"Across {len(self.topk_overlap)} posterior draws, on average "
            f"{100 * o['mean']:.0f} % of the point model's top-k stay in a draw's top-k "
            f"({pct} % interval {100 * o['low']:.0f}–{100 * o['high']:.0f} %); the least "
            f"stable query keeps {100 * per_query.min():.0f} % on average and "
            f"{int(np.sum(per_query < 0.5))} of {len(per_query)} queries keep under half."
        )
        if "auprc" in s:
            a = s["auprc"]
            words += (
                f" Mean AUPRC over queries is {a['mean']:.3f} across draws ({pct} % "
                f"interval {a['low']:.3f}–{a['high']:.3f}) against {s['point_auprc']:.3f} "
                f"for the point model; a single query's AUPRC varies over a {pct} % "
                f"interval {s['per_query_auprc_width']:.3f} wide on average."
            )
        return words

    def plot(self, path=None):
        """Per-query top-k stability (mean and central interval of the overlap across draws,
        queries sorted) and, with relevance, the distribution of the mean AUPRC across draws
        with its interval and the point model's value.  Saved to ``path`` when given."""
        import matplotlib.pyplot as plt

        lo_q, hi_q = (1 - self.interval) / 2, (1 + self.interval) / 2
        panels = 2 if self.auprc is not None else 1
        fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3.2), squeeze=False)
        ax = axes[0][0]
        mean = self.topk_overlap.mean(0)
        order = np.argsort(mean)
        lo, hi = np.quantile(self.topk_overlap[:, order], [lo_q, hi_q], axis=0)
        x = np.arange(len(order))
        label = f"{round(100 * self.interval)} % interval"
        ax.fill_between(x, lo, hi, color="C0", alpha=0.25, step="mid", label=label)
        ax.plot(x, mean[order], color="C0", drawstyle="steps-mid", label="mean")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("query (sorted by stability)")
        ax.set_ylabel("top-k overlap with the point model")
        ax.legend(fontsize=8)
        if self.auprc is not None:
            ax = axes[0][1]
            per_draw = np.nanmean(self.auprc, axis=1)
            band = self._band(per_draw)
            ax.hist(per_draw, bins=min(20, max(5, len(per_draw) // 2)), color="C1", alpha=0.7)
            ax.axvspan(band["low"], band["high"], color="C1", alpha=0.15, label=label)
            ax.axvline(float(np.nanmean(self.point_auprc)), color="k", lw=1, label="point model")
            ax.set_xlabel("mean AUPRC over queries")
            ax.set_ylabel("posterior draws")
            ax.legend(fontsize=8)
        from ..plots import finish

        return finish(fig, path)

    def to_report(
        self, report, name: str = "retrieval_uncertainty.png", *, intro: str = ""
    ) -> None:
        """Add a section with ``intro`` (what was run), :meth:`describe` and the plot to a
        :class:`~anchordiv.app.report.Report`."""
        self.plot(report.path(name))
        report.section(
            "Retrieval uncertainty across posterior draws",
            f"{intro}\n\n{self.describe()}" if intro else self.describe(),
        )
        report.figure(
            name, "Per-query top-k stability and the AUPRC interval across posterior draws"
        )


def retrieval_arguments(queries, gallery, k, relevance, dim=None) -> tuple:
    """``(queries [Q, d], gallery [G, d], k)`` checked, and ``relevance`` None or ``[Q, G]``."""
    q = embeddings_argument("queries", queries, dim=dim)
    g = embeddings_argument("gallery", gallery, dim=dim)  # the model's d, where it is known
    if g.shape[1] != q.shape[1]:
        from ..retrieval.baselines import matched

        g = matched("gallery", g, "queries", q)  # the error naming both dimensions
    k = integer("k", k, low=1, high=len(g))
    if relevance is not None and np.shape(relevance) != (len(q), len(g)):
        raise AnchorDivError(
            f"relevance: expected shape [Q, G] = {[len(q), len(g)]}, "
            f"got {list(np.shape(relevance))}"
        )
    return q, g, k


def overlap(idx, ref, k: int) -> list[float]:
    """Per query, the fraction of the reference top-k ``ref`` that the top-k ``idx`` keeps."""
    return [len(np.intersect1d(a, b)) / k for a, b in zip(idx, ref)]


def model_auprc(model, queries, gallery, relevance) -> np.ndarray:
    """Per query, the AUPRC of ``model``'s divergence ranking (NaN without a relevant item)."""
    from ..retrieval.divergence import divergence
    from ..retrieval.metrics import auprc

    return auprc(relevance, -np.asarray(divergence(model, queries, gallery)), no_positive="nan")


@limited_blas
def retrieval_uncertainty(
    post,
    queries,
    gallery,
    *,
    k: int = 10,
    relevance=None,
    num_draws: int = 20,
    seed: int = 0,
    interval: float = LEVEL,
    which: str = "mean",
) -> RetrievalUncertainty:
    """How stable top-k and AUPRC are across posterior draws.

    The reference is ``post.point(which)``: each draw's top-k is compared with the point model's.

    Parameters
    ----------
    post : Posterior
        An adapted posterior.
    queries : array_like, shape [Q, d]
        Query embeddings.
    gallery : array_like, shape [G, d]
        Gallery embeddings.
    k : int, default 10
        Top-k size (≤ G).
    relevance : array_like of bool, shape [Q, G], optional
        Binary relevance for per-draw AUPRC (remove each query from its own gallery row
        beforehand).
    num_draws : int, default 20
        Posterior draws S.
    seed : int, default 0
        Seed of the draws.
    interval : float, default 0.95
        Central probability of the reported intervals.
    which : {"mean", "map"}, default "mean"
        The reference point.

    Returns
    -------
    RetrievalUncertainty
        ``topk_overlap [S, Q]``, ``auprc [S, Q]`` (with relevance), ``summary()``, ``plot()``.

    Examples
    --------
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> ru = ad.retrieval_uncertainty(post, np.eye(4)[:3], np.eye(4), k=3, num_draws=5)
    >>> ru.topk_overlap.shape
    (5, 3)
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    from ..retrieval.divergence import top_k

    post = posterior_argument(post, "retrieval_uncertainty")
    q, g, k = retrieval_arguments(queries, gallery, k, relevance, dim=post.dim)
    interval = in_unit_interval("interval", interval)
    point = post.point(which)
    ref, _ = top_k(point, q, g, k)
    overlaps, aps = [], []
    for model in tqdm(
        post.sample(seed, integer("num_draws", num_draws, low=2)),
        desc="posterior draws",
        unit="draw",
        disable=num_draws < 20,
    ):
        idx, _ = top_k(model, q, g, k)
        overlaps.append(overlap(idx, ref, k))
        if relevance is not None:
            aps.append(model_auprc(model, q, g, relevance))
    return RetrievalUncertainty(
        np.asarray(overlaps),
        np.asarray(aps) if aps else None,
        model_auprc(point, q, g, relevance) if relevance is not None else None,
        interval,
    )


# ---- persistence ---------------------------------------------------------------------------

NETCDF = "netcdf"


def save_inference_data(idata, path, *, overwrite: bool = False, **card) -> Path:
    """Save an InferenceData as a bundle.

    Its netCDF bytes go in ``arrays.npz`` (covered by the card's data hash) and the card holds
    ``type = "inference-data"`` plus the ``card`` keywords.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        The data (e.g. from :func:`inference_data`).
    path : str or Path
        Destination directory.
    overwrite : bool, default False
        Replace an existing non-empty destination; otherwise it is refused
        (:class:`~anchordiv.errors.OutputExistsError`).
    **card
        Extra card fields.

    Returns
    -------
    Path
        The directory written.

    Raises
    ------
    AnchorDivError
        ``idata`` that is not ArviZ data (a Posterior, a dict), or an unusable ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> idata = ad.inference_data(post, num_draws=4, prior=False)
    >>> out = ad.save_inference_data(idata, pathlib.Path(tempfile.mkdtemp()) / "idata")
    >>> "posterior" in ad.load_inference_data(out)
    True
    """
    from ..adaptation import Posterior
    from ..errors import check_output

    if type(idata).__name__ not in DATA_OBJECTS:
        what = type(idata).__name__
        if isinstance(idata, Posterior):
            what += " (a posterior: ad.save_posterior saves it; this saves ad.inference_data(post))"
        raise AnchorDivError(
            f"idata: expected ArviZ data (InferenceData or DataTree, from ad.inference_data), "
            f"got {what}"
        )
    check_output(path, overwrite)
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "idata.nc"
        adz.to_netcdf(idata, f)
        data = np.frombuffer(f.read_bytes(), dtype=np.uint8)
    card = {"type": "inference-data", "groups": adz.groups(idata), **card}
    return write_bundle(path, {NETCDF: data}, card, overwrite=overwrite)


def load_inference_data(path, *, verify: bool = True, sha256: str | None = None):
    """Load an InferenceData saved by :func:`save_inference_data` (into memory).

    Parameters
    ----------
    path : str or Path
        The bundle directory.
    verify : bool, default True
        Check the bytes against the card's data hash and the card against its digest.
    sha256 : str, optional
        A pinned digest (``ad.bundle_digest``): a bundle with another one is refused.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The data, as the installed ArviZ holds it (:func:`inference_data`).

    Raises
    ------
    AnchorDivError
        ``path`` is not an inference-data bundle or fails the hash check.
    """
    arrays, card = read_bundle(path, verify=verify, sha256=sha256)
    expect_type(path, card, "inference-data", "an InferenceData")
    data = arrays.get(NETCDF)
    if data is None or data.dtype != np.uint8 or data.ndim != 1:
        raise AnchorDivError(f"{path}: malformed InferenceData bundle (no netCDF bytes)")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "idata.nc"
        f.write_bytes(data.tobytes())
        check_hdf5(f, f"{path}: its netCDF data")
        try:
            return adz.from_netcdf(f)
        except Exception as err:  # the netCDF/HDF5 readers raise many kinds on bad bytes
            raise AnchorDivError(
                f"{path}: its netCDF data do not read ({type(err).__name__}: {str(err)[:200]})"
            ) from None
