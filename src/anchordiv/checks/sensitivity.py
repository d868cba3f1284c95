"""Power-scaling prior and likelihood sensitivity, and how much the prior drives the ranking
(Kallioinen, Paananen, Bürkner & Vehtari 2023; docs/mathematics.md, "Power-scaling").

The prior (or the likelihood) is raised to a power α near 1: the diagnostic per posterior
quantity is the cumulative Jensen–Shannon distance per unit log₂ α (ArviZ's ``psens``, priorsense's
``powerscale_sensitivity``; above :data:`THRESHOLD` the quantity is sensitive to that component),
and the two together give priorsense's diagnosis (:func:`diagnosis`).  Beside the family's raw
quantities come scale-free ones (:func:`geometry_quantities`: the mean's direction, the
covariance's shape and its share in the prior's leading subspace), which are what change a
ranking.  The α curve gives each site's posterior mean under the power-scaled prior (and
likelihood) and the retrieval of the posterior-mean scorer: robustness to the prior's
*strength*.  Whether the prior drives the ranking at all is :func:`prior_influence`: the
posterior-mean scorer against the prior-only model and a target-only fit, and for conjugate
families the exact prior share of each parameter.  ``method="exact"`` updates the power-scaled
conjugate prior (likelihood: the scaled sufficient statistics) in closed form; ``"psis"``
Pareto-smooths weights ``p(θ_s)^(α − 1)`` on the draws.  Every reweighted number carries its
Pareto k and ESS.  Details: ``docs/guides/model-criticism.md``.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import scipy.special

from ..errors import AnchorDivError, check_choice, integer, positive, user_stacklevel
from ..threads import limited_blas
from . import arviz as adz
from .criticism import k_threshold
from .families import checks_of

#: a quantity whose sensitivity exceeds this is prior-sensitive (Kallioinen et al. 2023)
THRESHOLD = 0.05
#: priorsense's diagnosis: both components sensitive
CONFLICT = "potential prior-data conflict"
#: priorsense's diagnosis: the prior sensitive, the likelihood not
STRONG_PRIOR = "potential strong prior / weak likelihood"
#: the α curve keeps at least this share of the top-k: the ranking is robust to the prior's strength
ROBUST = 0.9
#: the α curve's default powers (those that leave an exact family's prior improper are left out)
DEFAULT_ALPHAS = (0.8, 0.9, 1.0, 1.1, 1.25)
#: the diagnostic's finite difference: α = 1/(1 + δ) and 1 + δ (ArviZ's default)
DELTA = 0.01
METHODS = ("auto", "exact", "psis")


def _cjs(p, q, width) -> np.ndarray:
    """The cumulative Jensen–Shannon distance of the CDFs ``p`` and ``q`` ``[G, m]`` on
    intervals of ``width [G, m]`` (ArviZ's ``_cjs_dist``; 0 where the support is empty)."""

    def log2(v):
        return np.log2(v, out=np.zeros_like(v), where=v > 0)

    ip, iq = (p * width).sum(0), (q * width).sum(0)
    mid = log2(0.5 * (p + q))
    pq = (width * p * (log2(p) - mid)).sum(0) + 0.5 / np.log(2) * (iq - ip)
    qp = (width * q * (log2(q) - mid)).sum(0) + 0.5 / np.log(2) * (ip - iq)
    bound = ip + iq
    ok = bound > 0
    out = np.sqrt((np.maximum(pq, 0) + np.maximum(qp, 0)) / np.where(ok, bound, 1.0))
    return np.where(ok, out, 0.0)


def cjs_distance(x, weights) -> np.ndarray:
    """The cumulative Jensen–Shannon distance ``[m]`` between the columns of ``x [S, m]`` and the
    same draws weighted by ``weights [S]`` (ArviZ's ``_cjs_dist``; 0 for a constant column)."""
    x = np.asarray(x, np.float64)
    s = len(x)
    order = np.argsort(x, axis=0, kind="stable")
    width = np.diff(np.take_along_axis(x, order, 0), axis=0)
    w = np.asarray(weights, np.float64)[order]
    p = np.linspace(1 / s, 1 - 1 / s, s - 1)[:, None]
    q = np.cumsum(w / w.sum(0), axis=0)[:-1]
    return _cjs(p, q, width)


#: grid points of the smoothed CDFs of :func:`coupled_sensitivity`
GRID = 256


def coupled_sensitivity(x1, scaled: tuple, delta: float) -> np.ndarray:
    """Power-scaling sensitivity ``[m]`` from exact draws: ``x1 [S, m]`` of the posterior and
    ``scaled`` (``[S, m]`` each) of the posteriors at α = 1/(1 + δ) and 1 + δ drawn with the
    same random numbers (common random numbers: each draw moves smoothly with α).  Each
    marginal's CDF is smoothed with a Gaussian kernel (Silverman's bandwidth of ``x1``) so that
    a shift far below the draws' spacing still registers; the CJS distance of the two CDFs (and
    of the survival functions, as ArviZ's ``psens`` takes both signs) per unit log₂ α, summed
    over the two sides like :func:`sensitivity_values`.  No weights: nothing to Pareto-smooth."""
    x1 = np.asarray(x1, np.float64)
    s = len(x1)
    sd = x1.std(0)
    iqr = np.subtract(*np.percentile(x1, [75, 25], axis=0))
    h = 0.9 * np.minimum(sd, np.where(iqr > 0, iqr / 1.34, sd)) * s ** (-0.2)
    live = h > 1e-12 * np.maximum(np.abs(x1).max(0), 1e-300)
    h = np.where(live, h, 1.0)
    lo = np.min([x.min(0) for x in (x1, *scaled)], axis=0) - 4 * h
    hi = np.max([x.max(0) for x in (x1, *scaled)], axis=0) + 4 * h
    edges = np.linspace(lo, hi, GRID + 1)  # [G + 1, m]
    z, width = 0.5 * (edges[1:] + edges[:-1]), np.diff(edges, axis=0)

    def cdf(x):
        return scipy.special.ndtr((z[None] - np.asarray(x, np.float64)[:, None]) / h).mean(0)

    f1 = cdf(x1)
    total = np.zeros(x1.shape[1])
    for x in scaled:
        fa = cdf(x)
        total = total + np.maximum(_cjs(f1, fa, width), _cjs(1 - f1, 1 - fa, width))
    return np.where(live, total / (2 * np.log2(1 + delta)), 0.0)


def sensitivity_values(x, log_weights: tuple, delta: float) -> np.ndarray:
    """The power-scaling sensitivity ``[m]`` of the columns of ``x [S, m]`` given the log
    weights ``[S]`` of α = 1/(1 + δ) and 1 + δ: the larger CJS distance of x and −x at each,
    summed and divided by 2·log₂(1 + δ) (ArviZ's ``psens``)."""
    total = 0.0
    for lw in log_weights:
        w = np.exp(lw - lw.max())
        total = total + np.maximum(cjs_distance(x, w), cjs_distance(-np.asarray(x), w))
    return total / (2 * np.log2(1 + delta))


def diagnosis(prior: float, likelihood: float, threshold: float = THRESHOLD) -> str:
    """priorsense's diagnosis of one quantity from its prior and likelihood sensitivity:
    :data:`CONFLICT` (both above ``threshold``), :data:`STRONG_PRIOR` (the prior above, the
    likelihood not), ``"-"`` otherwise (the prior at or below: the data dominate).  A NaN
    likelihood sensitivity (unknown) leaves only ``"prior-sensitive"`` to say.

    Examples
    --------
    >>> from anchordiv.checks.sensitivity import diagnosis
    >>> diagnosis(0.3, 0.01), diagnosis(0.3, 0.2), diagnosis(0.01, 0.2)
    ('potential strong prior / weak likelihood', 'potential prior-data conflict', '-')
    """
    if not prior > threshold:
        return "-"
    if not np.isfinite(likelihood):
        return "prior-sensitive"
    return CONFLICT if likelihood > threshold else STRONG_PRIOR


def robust_to_strength(overlaps, level: float = ROBUST) -> bool:
    """Whether the α curve keeps at least ``level`` of the α = 1 scorer's top-k at every α
    (``overlaps``: the mean overlap per α).  Robustness to the prior's *strength* only: a
    dominant prior whose power mostly rescales the covariance keeps the ranking too, so this
    never says whether the prior matters (:func:`prior_drives_ranking` does).

    Examples
    --------
    >>> from anchordiv.checks.sensitivity import robust_to_strength
    >>> robust_to_strength([0.95, 1.0, 0.92]), robust_to_strength([0.6, 1.0])
    (True, False)
    """
    return bool(np.all(np.asarray(overlaps, np.float64) >= level))


def prior_drives_ranking(overlap_prior_only: float, overlap_target_only: float) -> bool:
    """Whether the posterior-mean scorer's top-k is closer to the prior-only model's than to the
    target-only fit's (the endpoints of :func:`prior_influence`): the prior decides the ranking.

    Examples
    --------
    >>> from anchordiv.checks.sensitivity import prior_drives_ranking
    >>> prior_drives_ranking(0.9, 0.1), prior_drives_ranking(0.2, 0.7)
    (True, False)
    """
    return bool(overlap_prior_only > overlap_target_only)


def weight_check(log_ratios, smooth: bool) -> tuple[np.ndarray, float, float]:
    """``(normalised log weights [S], Pareto k, ESS)`` of the log importance ratios ``[S]``: the
    raw ratios (``smooth=False``, exact draws) or Pareto-smoothed ones; k of the raw ratios'
    tail either way, ESS ``1/Σw²`` of the weights used."""
    r = np.asarray(log_ratios, np.float64)
    smoothed, karr = adz.psis_log_weights(r[None])
    lw = smoothed[0] if smooth else r - scipy.special.logsumexp(r)
    w = np.exp(lw - scipy.special.logsumexp(lw))
    return lw, float(karr[0]), float(1.0 / np.sum(w**2))


def _covariance(draws: dict):
    """``(covariance draws [S, d, d] or variances [S, d], is_diagonal)`` or None."""
    if "Sigma" in draws and np.ndim(draws["Sigma"]) == 3:
        return np.asarray(draws["Sigma"], np.float64), False
    if "sigma2" in draws and np.ndim(draws["sigma2"]) == 2:
        return np.asarray(draws["sigma2"], np.float64), True
    return None


def effective_rank(cov) -> int:
    """The participation ratio ``(tr C)² / tr C²`` of ``cov [d, d]`` (or variances ``[d]``),
    rounded and kept in ``[1, d − 1]``: the size of its leading subspace."""
    c = np.asarray(cov, np.float64)
    w = c if c.ndim == 1 else np.linalg.eigvalsh(0.5 * (c + c.T))
    w = np.clip(w, 0.0, None)
    d = len(w)
    pr = w.sum() ** 2 / max(float(np.sum(w**2)), 1e-300)
    return int(min(max(round(pr), 1), max(d - 1, 1)))


def geometry_quantities(draws: dict, prior_point: dict) -> dict[str, np.ndarray]:
    """Scale-free quantities ``{name: [S]}`` of flat draws ``{site: [S, ...]}`` against the
    prior-only point ``prior_point`` — what changes a ranking, where a covariance's overall scale
    does not: ``mean_direction`` (the cosine of μ to the prior's mean), ``cov_shape`` (the
    Frobenius cosine of Σ to the prior's covariance: Σ/tr Σ against C₀/tr C₀) and
    ``cov_prior_subspace`` (the share of tr Σ in the prior covariance's leading subspace, of
    :func:`effective_rank` dimensions).  A site the family lacks is left out."""
    out: dict[str, np.ndarray] = {}
    if "mu" in draws and "mu" in prior_point and np.ndim(draws["mu"]) == 2:
        m0 = np.asarray(prior_point["mu"], np.float64)
        if np.linalg.norm(m0) > 1e-12:
            mu = np.asarray(draws["mu"], np.float64)
            out["mean_direction"] = (mu @ m0) / np.maximum(
                np.linalg.norm(mu, axis=1) * np.linalg.norm(m0), 1e-300
            )
    cov = _covariance(draws)
    c0 = _covariance({k: np.asarray(v)[None] for k, v in prior_point.items()})
    if cov is None or c0 is None or cov[1] != c0[1]:
        return out
    (x, diag), c = cov, c0[0][0]
    if diag:
        out["cov_shape"] = (x @ c) / np.maximum(
            np.linalg.norm(x, axis=1) * np.linalg.norm(c), 1e-300
        )
        lead = np.argsort(c)[::-1][: effective_rank(c)]
        out["cov_prior_subspace"] = x[:, lead].sum(1) / np.maximum(x.sum(1), 1e-300)
        return out
    c = 0.5 * (c + c.T)
    flat = x.reshape(len(x), -1)
    out["cov_shape"] = (flat @ c.ravel()) / np.maximum(
        np.linalg.norm(flat, axis=1) * np.linalg.norm(c), 1e-300
    )
    u = np.linalg.eigh(c)[1][:, ::-1][:, : effective_rank(c)]
    inside = (u[None] * (x @ u)).sum(axis=(1, 2))  # tr(UᵀΣU) per draw
    out["cov_prior_subspace"] = inside / np.maximum(np.trace(x, axis1=1, axis2=2), 1e-300)
    return out


def conjugate_parameters(prior):
    """The prior's own conjugate parameters (an NIW or Normal–inverse-gamma), or None."""
    for name in ("niw", "nig"):
        make = getattr(prior, name, None)
        if callable(make):
            return make()
    return None


def likelihood_scaled_posterior(prior, targets, alpha: float):
    """The exact posterior under the likelihood raised to the power ``alpha`` (≥ 0): the
    conjugate update with the sufficient statistics scaled (n → αn, the scatter → α·scatter,
    the targets' mean unchanged); ``alpha = 0`` gives the prior itself.  None where the
    prior's family is not an NIW or Normal–inverse-gamma one.

    Examples
    --------
    >>> from anchordiv.checks.sensitivity import likelihood_scaled_posterior
    >>> prior = ad.NIWPrior.from_anchors(np.eye(4), kappa0=2.0, nu0=8.0)
    >>> likelihood_scaled_posterior(prior, np.eye(4)[:2], 0.5).kappa   # κ₀ + αn
    3.0
    """
    from ..adaptation.families.diagonal import NormalInverseGamma
    from ..adaptation.families.gaussian import NIW
    from ..adaptation.statistics import scatter

    a = positive("alpha", alpha, allow_zero=True)
    p = conjugate_parameters(prior)
    t = np.asarray(targets, np.float64)
    if isinstance(p, NIW):
        n, tbar, s = scatter(t)
        return p.update_stats(a * n, tbar, a * s)
    if isinstance(p, NormalInverseGamma):
        n, tbar = len(t), t.mean(0)
        s = ((t - tbar) ** 2).sum(0)
        kn = p.kappa + a * n
        b = p.b + 0.5 * a * s + p.kappa * a * n * (tbar - p.mu) ** 2 / (2 * kn)
        return NormalInverseGamma((p.kappa * p.mu + a * n * tbar) / kn, kn, p.a + a * n / 2, b)
    return None


def prior_shares(prior, targets) -> dict[str, float] | None:
    """The exact prior share of each parameter of a conjugate posterior (docs/mathematics.md,
    "Power-scaling"), or None for another family:

    - ``mean``: κ₀ / (κ₀ + n), the prior's weight in the posterior mean;
    - ``covariance_count``: ν₀ / (ν₀ + n) (NIW; Normal–inverse-gamma: a₀ / (a₀ + n/2));
    - ``covariance_prior``, ``covariance_scatter``, ``covariance_mean_shift``: the split of the
      posterior scale Ψₙ = Ψ₀ + S + κ₀n/(κ₀ + n)·(t̄ − μ₀)(t̄ − μ₀)ᵀ by trace (Normal–inverse-gamma:
      of Σ bₙ) — the prior's share of the posterior covariance's *shape*, which is what a
      Gaussian divergence ranks by.

    Examples
    --------
    >>> from anchordiv.checks.sensitivity import prior_shares
    >>> prior = ad.NIWPrior.from_anchors(np.eye(4), kappa0=2.0, nu0=8.0)
    >>> round(prior_shares(prior, np.eye(4)[:2])["mean"], 3)
    0.5
    """
    from ..adaptation.families.diagonal import NormalInverseGamma
    from ..adaptation.families.gaussian import NIW

    p = conjugate_parameters(prior)
    t = np.asarray(targets, np.float64)
    n, tbar = len(t), t.mean(0)
    if isinstance(p, NIW):
        s = (t - tbar).T @ (t - tbar)
        total = float(np.trace(p.update(t).psi))
        prior_part, scatter_part = float(np.trace(p.psi)), float(np.trace(s))
        count = p.nu / (p.nu + n)
    elif isinstance(p, NormalInverseGamma):
        total = float(np.sum(p.update(t).b))
        prior_part, scatter_part = float(np.sum(p.b)), float(0.5 * np.sum((t - tbar) ** 2))
        count = p.a / (p.a + n / 2)
    else:
        return None
    return {
        "mean": float(p.kappa / (p.kappa + n)),
        "covariance_count": float(count),
        "covariance_prior": prior_part / total,
        "covariance_scatter": scatter_part / total,
        "covariance_mean_shift": max(1.0 - (prior_part + scatter_part) / total, 0.0),
    }


@dataclasses.dataclass
class PriorInfluence:
    """How much the prior drives a posterior's ranking: endpoints, not a local derivative
    (:func:`prior_influence`).

    Parameters
    ----------
    k : int
        The top-k size.
    overlap_prior_only : numpy.ndarray, shape [Q]
        Per query, the share of the posterior-mean scorer's top-k that the prior-only model's
        top-k holds.
    overlap_target_only : numpy.ndarray, shape [Q]
        The same against the target-only fit.
    relevance : dict of str to numpy.ndarray, or None
        Given relevance: per query the AUPRC of ``"posterior"``, ``"prior_only"`` and
        ``"target_only"`` (NaN for a query without a relevant item).
    shares : dict of str to float, or None
        The exact prior share of each parameter (:func:`prior_shares`; None: not a conjugate
        family).
    target_only : str
        Which target-only fit.
    num_targets : int
        The posterior's target anchors.
    """

    k: int
    overlap_prior_only: np.ndarray
    overlap_target_only: np.ndarray
    relevance: dict | None
    shares: dict | None
    target_only: str
    num_targets: int

    @property
    def prior_decides(self) -> bool:
        """:func:`prior_drives_ranking` of the mean overlaps."""
        return prior_drives_ranking(
            float(np.mean(self.overlap_prior_only)), float(np.mean(self.overlap_target_only))
        )

    def summary(self) -> dict[str, float]:
        """Mean overlaps, mean AUPRCs (``auprc_<model>``, given relevance) and the shares
        (``share_<parameter>``) in one flat dict."""
        out = {
            "overlap_prior_only": float(np.mean(self.overlap_prior_only)),
            "overlap_target_only": float(np.mean(self.overlap_target_only)),
        }
        for name, v in (self.relevance or {}).items():
            out[f"auprc_{name}"] = _mean_auprc(v)
        for name, v in (self.shares or {}).items():
            out[f"share_{name}"] = float(v)
        return out

    def __repr__(self) -> str:
        rows = [f"PriorInfluence(top-{self.k}, {self.num_targets} targets)"]
        rows += [f"  {n}: {v:.3f}" for n, v in self.summary().items()]
        return "\n".join(rows)

    def describe(self) -> str:
        """The endpoints in words (the claim from :func:`prior_drives_ranking`)."""
        s = self.summary()
        words = (
            f"The posterior-mean scorer's top-{self.k} overlaps the prior-only model's by "
            f"{s['overlap_prior_only']:.2f} and the target-only fit's ({self.target_only}) by "
            f"{s['overlap_target_only']:.2f}: "
            + (
                "the prior decides the ranking."
                if self.prior_decides
                else "the targets decide the ranking more than the prior."
            )
        )
        if self.relevance is not None:
            words += (
                f" AUPRC: posterior {s['auprc_posterior']:.3f}, prior-only "
                f"{s['auprc_prior_only']:.3f}, target-only {s['auprc_target_only']:.3f}."
            )
        if self.shares is not None:
            words += (
                f" Exact prior shares: {100 * s['share_mean']:.0f} % of the mean, "
                f"{100 * s['share_covariance_prior']:.0f} % of the covariance's scale matrix "
                f"(its shape)."
            )
        return words


def coupled_draws(params, base: dict) -> dict[str, np.ndarray] | None:
    """Exact draws ``{site: [S, ...]}`` of NIW or Normal–inverse-gamma ``params`` from fixed
    random numbers ``base`` (:func:`coupling_base`): the gamma and χ² variates by their inverse
    CDF, so that each draw moves smoothly with the parameters (common random numbers across the
    power-scaled posteriors); None for another family."""
    from ..adaptation.families.diagonal import NormalInverseGamma
    from ..adaptation.families.gaussian import NIW

    u, z, tri = base["uniform"], base["normal"], base["lower"]
    if isinstance(params, NIW):
        d = params.dim
        chi2 = 2.0 * scipy.special.gammaincinv(0.5 * (params.nu - np.arange(d)), u)
        # the Bartlett factor A: its diagonal is rewritten in place at every call (base's own
        # strictly lower part is all the calls share), sparing a copy of [S, d, d]
        tri[:, np.arange(d), np.arange(d)] = np.sqrt(chi2)
        chol = np.linalg.cholesky(params.psi)
        f = np.swapaxes(np.linalg.solve(tri, np.broadcast_to(chol.T, tri.shape)), 1, 2)
        sigma = f @ np.swapaxes(f, 1, 2)
        mu = params.mu + (f @ z[:, :, None])[:, :, 0] / np.sqrt(params.kappa)
        del f
        sigma += np.swapaxes(sigma, 1, 2).copy()
        sigma *= 0.5
        return {"mu": mu, "Sigma": sigma}
    if isinstance(params, NormalInverseGamma):
        s2 = params.b / scipy.special.gammaincinv(params.a, u)
        return {"mu": params.mu + np.sqrt(s2 / params.kappa) * z, "sigma2": s2}
    return None


def coupling_base(num_draws: int, d: int, seed: int) -> dict[str, np.ndarray]:
    """The fixed random numbers of :func:`coupled_draws`: uniforms ``[S, d]``, normals
    ``[S, d]`` and lower-triangular normals ``[S, d, d]`` (the diagonal is the sampler's to
    fill)."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=(num_draws, d))
    return {
        "uniform": np.clip(u, 1e-12, 1 - 1e-12),
        "normal": rng.normal(size=(num_draws, d)),
        "lower": np.tril(rng.normal(size=(num_draws, d, d)), -1),
    }


def _exact_diagnostic(post, exact_at, num_draws: int, seed: int, delta: float):
    """The diagnostic of a conjugate posterior from exact draws of the power-scaled posteriors
    (prior: the family's ``power_scaled_posterior``; likelihood:
    :func:`likelihood_scaled_posterior`) with common random numbers (:func:`coupled_sensitivity`):
    ``(prior {name: [...]}, likelihood {name: [...]}, scale-free names)``, or None where the
    family has no coupled sampler or a side's α leaves the prior improper (then the draws are
    reweighted)."""
    prior, targets = post.prior, post.fixed["targets"]
    base = coupling_base(num_draws, post.dim, seed)
    sides = (1 / (1 + delta), 1 + delta)
    try:
        params = {
            "one": exact_at(1.0),
            "prior": [exact_at(a) for a in sides],
            "likelihood": [likelihood_scaled_posterior(prior, targets, a) for a in sides],
        }
    except AnchorDivError:
        return None
    one = coupled_draws(params["one"], base)
    if one is None or any(p is None for p in params["likelihood"]):
        return None
    ref = post.params("mean")
    quantities = checks_of(post.family_class).quantities
    prior_point = _prior_only_params(post, seed)

    def measure(draws):
        out = {
            name: np.asarray(v, np.float64).reshape((num_draws, -1))
            for name, v in quantities({k: v[None] for k, v in draws.items()}, ref).items()
        }
        out.update({n: v[:, None] for n, v in geometry_quantities(draws, prior_point).items()})
        return out

    x1 = measure(one)
    shapes = {
        name: np.shape(v)[2:]
        for name, v in quantities({k: v[None, :1] for k, v in one.items()}, ref).items()
    }
    result = []
    for component in ("prior", "likelihood"):
        scaled = [measure(coupled_draws(p, base)) for p in params[component]]
        result.append(
            {
                name: coupled_sensitivity(x, tuple(m[name] for m in scaled), delta).reshape(
                    shapes.get(name, ())
                )
                for name, x in x1.items()
            }
        )
    free = [n for n in SCALE_FREE_NAMES if n in x1] + [n for n in x1 if n not in shapes]
    return result[0], result[1], free


def _prior_only_params(post, seed: int) -> dict:
    """The prior-only point: the conjugate prior's mean, else the mean of prior draws."""
    p = conjugate_parameters(post.prior) if post.prior is not None else None
    if p is not None:
        return {k: np.asarray(v, np.float64) for k, v in p.mean().items()}
    draws = post.likelihood().prior_draws(np.random.default_rng(seed + 7), 400)
    summarise = post.family_class.likelihood_type.summarise
    return summarise({k: np.asarray(v) for k, v in draws.items()}, "mean", None)


@limited_blas
def prior_influence(
    post, queries, gallery, *, relevance=None, k: int = 10, target_only=None, seed: int = 0
) -> PriorInfluence:
    """How much the prior drives the posterior-mean scorer's ranking: its top-k against the
    prior-only model's and a target-only fit's (and their AUPRCs), with the exact prior shares
    of a conjugate family (:func:`prior_shares`).  Unlike the α curve of
    :func:`prior_sensitivity`, these are endpoints: they say whether the prior matters, not
    how robust the ranking is to the prior's strength.

    Parameters
    ----------
    post : Posterior
        An adapted posterior that kept its targets and its prior (not a user's NumPyro model).
    queries : array_like, shape [Q, d]
        The queries.
    gallery : array_like, shape [G, d]
        The gallery.
    relevance : array_like of bool, shape [Q, G], optional
        Binary relevance (adds the three AUPRCs).
    k : int, default 10
        Top-k size (≤ G).
    target_only : AnchorModel, optional
        The target-only fit; default ``ad.fit(kind, targets, tau=post.tau)`` with the
        posterior's kind where it is an anchor kind, else ``"gaussian"``.
    seed : int, default 0
        Seed of the prior draws (a family without a conjugate prior).

    Returns
    -------
    PriorInfluence

    Raises
    ------
    AnchorDivError
        A posterior without targets or prior model, bad shapes.

    Examples
    --------
    >>> broad = np.random.default_rng(0).normal(size=(40, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> post = ad.adapt("gaussian", broad, broad[:6], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> infl = ad.checks.prior_influence(post, broad[:3], broad, k=5)
    >>> 0 <= infl.summary()["overlap_prior_only"] <= 1, round(infl.shares["mean"], 3)
    (True, 0.455)
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    from ..anchors import KINDS, fit
    from ..retrieval.divergence import top_k
    from .uncertainty import model_auprc, no_log_prior, overlap, posterior_argument
    from .uncertainty import retrieval_arguments

    post = posterior_argument(post, "prior_influence")
    why = no_log_prior(post)
    if why is not None:
        raise AnchorDivError(f"prior_influence: the prior of this posterior is unknown: {why}")
    targets = post.fixed.get("targets")
    if targets is None:
        raise AnchorDivError("prior_influence: the posterior kept no targets (no target-only fit)")
    q, g, k = retrieval_arguments(queries, gallery, k, relevance, dim=post.dim)
    t = np.asarray(targets)
    mean_model = post.point("mean")
    if target_only is None:
        # the target-only fit is the anchor model of the posterior's own point (a family of
        # Gaussians, whatever its prior, is scored by a Gaussian fitted to the targets)
        kind = post.kind if post.kind in KINDS else mean_model.kind
        if kind not in KINDS:
            raise AnchorDivError(
                f"prior_influence: no anchor-model fit for a {mean_model.kind!r} point; pass "
                "target_only= (an anchor model fitted to the targets)"
            )
        name = f"ad.fit({kind!r}) on the {len(t)} targets"
        with warnings.catch_warnings():  # the posterior's own targets: their norm is its business
            warnings.simplefilter("ignore")
            target_only = fit(kind, t, tau=post.tau)
    else:
        name = type(target_only).__name__
    models = {
        "posterior": mean_model,
        "prior_only": post.to_model(_prior_only_params(post, seed)),
        "target_only": target_only,
    }
    idx = {m: top_k(model, q, g, k)[0] for m, model in models.items()}
    rel = None
    if relevance is not None:
        rel = {m: np.asarray(model_auprc(model, q, g, relevance)) for m, model in models.items()}
    shares = prior_shares(post.prior, t) if post.prior is not None else None
    return PriorInfluence(
        k,
        np.asarray(overlap(idx["prior_only"], idx["posterior"], k)),
        np.asarray(overlap(idx["target_only"], idx["posterior"], k)),
        rel,
        shares,
        name,
        len(t),
    )


@dataclasses.dataclass
class PriorSensitivity:
    """The result of :func:`prior_sensitivity`.

    Parameters
    ----------
    method : str
        ``"exact"`` (the closed-form power-scaled posterior) or ``"psis"`` (reweighted draws).
    alphas : numpy.ndarray, shape [A]
        The powers of the α curve (1 among them).
    sensitivity : dict of str to numpy.ndarray
        Per quantity of the posterior, the prior diagnostic of each of its elements (CJS
        distance per unit log₂ α); :meth:`table` gives each quantity's largest.
    site_means : list of dict
        Per α, each site's posterior mean under the power-scaled prior.
    mcse : list of dict or None
        Per α, the Monte-Carlo standard error of each site mean (``"psis"``; None: exact).
    pareto_k : numpy.ndarray or None
        Per α, the Pareto k of the smoothed weights (``"psis"``; None: exact).
    topk_overlap : numpy.ndarray, shape [A, Q], or None
        Per α and query, the fraction of the α = 1 scorer's top-k the power-scaled
        posterior-mean scorer keeps (given queries and a gallery).
    auprc : numpy.ndarray, shape [A, Q], or None
        Per α and query, the scorer's AUPRC (given relevance).
    k : int or None
        The top-k size.
    num_draws : int
        Draws the diagnostic ran on.
    delta : float
        Its finite difference (α = 1/(1 + δ), 1 + δ).
    note : str
        What was left out and why (α values that leave the prior improper).
    threshold : float
        :data:`THRESHOLD`.
    likelihood : dict of str to numpy.ndarray
        Per quantity, the likelihood diagnostic (the likelihood power-scaled; empty without
        the diagnostic, NaN where the posterior kept no targets).
    scale_free : tuple of str
        The quantities that do not change with the covariance's overall scale
        (:func:`geometry_quantities` and the family's own angles and cosines): those that can
        change a ranking.
    weights : list of dict
        Every reweighting the diagnostic and the α curve did: ``component`` (``"prior"`` or
        ``"likelihood"``), ``alpha``, ``use`` (``"diagnostic"`` or ``"curve"``), ``pareto_k``,
        ``ess`` and ``ok`` (k at most :func:`~.criticism.k_threshold` of the draws); the
        exact path's reweighted diagnostic included.
    likelihood_means : list of dict
        Per α, each site's posterior mean under the likelihood raised to α (exact: the scaled
        sufficient statistics; PSIS: reweighted, its k and ESS in ``weights``).
    """

    method: str
    alphas: np.ndarray
    sensitivity: dict
    site_means: list
    mcse: list | None
    pareto_k: np.ndarray | None
    topk_overlap: np.ndarray | None
    auprc: np.ndarray | None
    k: int | None
    num_draws: int
    delta: float
    note: str = ""
    threshold: float = THRESHOLD
    likelihood: dict = dataclasses.field(default_factory=dict)
    scale_free: tuple = ()
    weights: list = dataclasses.field(default_factory=list)
    likelihood_means: list = dataclasses.field(default_factory=list)
    _influence_args: dict | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def worst(self) -> dict[str, float]:
        """Each quantity's largest prior sensitivity over its elements."""
        return {n: float(np.max(v)) for n, v in self.sensitivity.items()}

    @property
    def worst_likelihood(self) -> dict[str, float]:
        """Each quantity's largest likelihood sensitivity (NaN: unknown)."""
        return {
            n: float(np.max(self.likelihood[n])) if n in self.likelihood else float("nan")
            for n in self.sensitivity
        }

    @property
    def diagnoses(self) -> dict[str, str]:
        """Per quantity, :func:`diagnosis` of its prior and likelihood sensitivity."""
        lik = self.worst_likelihood
        return {n: diagnosis(v, lik[n], self.threshold) for n, v in self.worst.items()}

    @property
    def ranking_sensitivity(self) -> float:
        """The largest prior sensitivity among the :attr:`scale_free` quantities (NaN: none):
        the diagnostic of what can change a ranking."""
        vals = [self.worst[n] for n in self.scale_free if n in self.worst]
        return max(vals) if vals else float("nan")

    @property
    def unreliable(self) -> list[float]:
        """The α of the prior's curve whose Pareto k exceeds ArviZ's threshold for
        :attr:`num_draws` draws (:func:`~.criticism.k_threshold`; PSIS only): their means and
        scorers are not trustworthy."""
        if self.pareto_k is None:
            return []
        t = k_threshold(self.num_draws)
        return [float(a) for a, k in zip(self.alphas, self.pareto_k) if not k <= t]

    @property
    def unreliable_weights(self) -> list[dict]:
        """The entries of :attr:`weights` whose Pareto k exceeds the threshold."""
        return [w for w in self.weights if not w["ok"]]

    @property
    def sensitive(self) -> list[str]:
        """The quantities above :attr:`threshold` (prior-sensitive)."""
        return [n for n, v in self.worst.items() if v > self.threshold]

    def table(self):
        """``pandas.DataFrame``, one row per quantity: its largest ``prior`` and ``likelihood``
        sensitivity, priorsense's ``diagnosis`` (:func:`diagnosis`), whether it is
        ``scale_free`` (can change a ranking) and the element ``at`` which the prior's is
        largest (an index tuple; ``()`` for a scalar)."""
        import pandas as pd

        rows, lik, diag = {}, self.worst_likelihood, self.diagnoses
        for name, v in self.sensitivity.items():
            v = np.asarray(v)
            at = np.unravel_index(int(np.argmax(v)), v.shape) if v.ndim else ()
            rows[name] = {
                "prior": float(np.max(v)),
                "likelihood": lik[name],
                "diagnosis": diag[name],
                "scale_free": name in self.scale_free,
                "at": str(tuple(map(int, at))),
            }
        columns = ["prior", "likelihood", "diagnosis", "scale_free", "at"]
        return pd.DataFrame.from_dict(rows, orient="index", columns=columns)

    def curve(self):
        """``pandas.DataFrame``, one row per α: each site's mean shift from α = 1 relative to
        its size under the power-scaled prior (``shift_<site>``: ‖m_α − m₁‖ / ‖m₁‖) and
        likelihood (``likelihood_shift_<site>``), the Pareto k (``"psis"``) and the mean top-k
        overlap and AUPRC over queries (given them)."""
        import pandas as pd

        one = self.site_means[self.reference]
        rows = []
        for i, a in enumerate(self.alphas):
            row = {"alpha": float(a)}
            for site, m in self.site_means[i].items():
                shift = np.linalg.norm(m - one[site]) / max(np.linalg.norm(one[site]), 1e-300)
                row[f"shift_{site}"] = float(shift)
            if self.likelihood_means:
                lone = self.likelihood_means[self.reference]
                for site, m in self.likelihood_means[i].items():
                    shift = np.linalg.norm(m - lone[site]) / max(np.linalg.norm(lone[site]), 1e-300)
                    row[f"likelihood_shift_{site}"] = float(shift)
            if self.pareto_k is not None:
                row["pareto_k"] = float(self.pareto_k[i])
            if self.topk_overlap is not None:
                row["topk_overlap"] = float(self.topk_overlap[i].mean())
            if self.auprc is not None:
                row["auprc"] = _mean_auprc(self.auprc[i])
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def reference(self) -> int:
        """The index of α = 1 in :attr:`alphas`."""
        return int(np.flatnonzero(self.alphas == 1.0)[0])

    def influence(
        self, queries=None, gallery=None, *, relevance=None, k=None, target_only=None
    ) -> PriorInfluence:
        """:func:`prior_influence` of the posterior this result measured: whether the prior
        drives its ranking (the endpoints; the α curve says only how robust the ranking is to
        the prior's strength).  ``queries``, ``gallery``, ``relevance`` and ``k`` default to
        those given to :func:`prior_sensitivity`.

        Raises
        ------
        AnchorDivError
            No queries and gallery here or in the call that made this result, or a result
            built by hand (no posterior).
        """
        args = self._influence_args
        if args is None:
            raise AnchorDivError(
                "influence: this result holds no posterior (build it with ad.prior_sensitivity)"
            )
        q = args.get("queries") if queries is None else queries
        g = args.get("gallery") if gallery is None else gallery
        if q is None or g is None:
            raise AnchorDivError(
                "influence: give queries and gallery (here or to ad.prior_sensitivity)"
            )
        if relevance is None and queries is None:
            relevance = args.get("relevance")
        if k is None:
            k = self.k or 10
        return prior_influence(
            args["post"], q, g, relevance=relevance, k=k, target_only=target_only
        )

    def __repr__(self) -> str:
        head = (
            f"PriorSensitivity({self.method}, {self.num_draws} draws, alphas "
            f"{self.alphas.min():g}–{self.alphas.max():g}, threshold {self.threshold:g})"
        )
        lik, diag = self.worst_likelihood, self.diagnoses
        rows = []
        for n, v in self.worst.items():
            line = f"  {n}: prior {v:.3f}"
            if np.isfinite(lik[n]):
                line += f", likelihood {lik[n]:.3f}"
            if n in self.scale_free:
                line += " (scale-free)"
            if diag[n] != "-":
                line += f"  {diag[n]}"
            rows.append(line)
        if self.topk_overlap is not None:
            au = self.auprc
            parts = [
                f"α {a:g}: overlap {self.topk_overlap[i].mean():.3f}"
                + ("" if au is None else f", AUPRC {_mean_auprc(au[i]):.3f}")
                for i, a in enumerate(self.alphas)
                if i != self.reference
            ]
            base = "" if au is None else f" (AUPRC {_mean_auprc(au[self.reference]):.3f} at α 1)"
            rows.append(f"  prior strength, top-{self.k}{base}: " + "; ".join(parts))
        bad = self.unreliable_weights
        if bad:
            rows.append(f"  Pareto k above threshold: {_weights_words(bad)}")
        if self.note:
            rows.append(f"  note: {self.note}")
        return "\n".join([head, *rows])

    def describe(self) -> str:
        """The result in words (for reports and the CLI).  The α curve is described as
        robustness to the prior's strength (:func:`robust_to_strength`); whether the prior
        matters is :meth:`influence`'s."""
        how = (
            "the closed-form power-scaled posterior (exact)"
            if self.method == "exact"
            else "Pareto-smoothed importance weights on the draws (PSIS)"
        )
        words = f"Power-scaling the prior and the likelihood by α (Kallioinen et al. 2023; {how}): "
        if self.sensitivity:
            diag = self.diagnoses
            free = [n for n in self.sensitivity if n in self.scale_free]
            flagged = {n: diag[n] for n in free if diag[n] != "-"}
            if free:
                words += (
                    f"of the {len(free)} scale-free quantities (those that can change a "
                    f"ranking), "
                    + (
                        "; ".join(f"{n}: {d}" for n, d in flagged.items())
                        if flagged
                        else f"none is prior-sensitive (largest {self.ranking_sensitivity:.3f}, "
                        f"threshold {self.threshold:g})"
                    )
                    + "."
                )
            raw = [n for n in self.sensitive if n not in self.scale_free]
            if raw:
                words += (
                    f" {len(raw)} quantities that are not scale-free are prior-sensitive "
                    f"({', '.join(raw)}): norms, traces and eigenvalues move with an overall "
                    f"scale, and a Gaussian divergence ranks the same under any scalar multiple "
                    f"of Σ."
                )
        else:
            words += "no per-quantity diagnostic (diagnostic=False)."
        lo, hi = int(np.argmin(self.alphas)), int(np.argmax(self.alphas))
        if self.topk_overlap is not None:
            means = [float(v.mean()) for v in self.topk_overlap]
            words += (
                f" Prior strength α from {self.alphas[lo]:g} to {self.alphas[hi]:g}: the "
                f"posterior-mean scorer keeps {100 * means[lo]:.0f} % and "
                f"{100 * means[hi]:.0f} % of its top-{self.k}"
            )
            if self.auprc is not None:
                a = [_mean_auprc(self.auprc[i]) for i in (lo, self.reference, hi)]
                words += f" (AUPRC {a[0]:.3f}, {a[1]:.3f} at α = 1, {a[2]:.3f})"
            words += (
                ": the ranking is robust to the prior's strength"
                if robust_to_strength(means)
                else ": the ranking changes with the prior's strength"
            ) + (
                ". This does not say whether the prior matters: a dominant prior's power mostly "
                "rescales the covariance, which leaves the ranking as it is (influence() "
                "compares it with the prior-only and target-only models)."
            )
        bad = self.unreliable_weights
        if bad:
            words += (
                f" Pareto k above {k_threshold(self.num_draws):.2f} ({_weights_words(bad)}): "
                f"those reweighted draws do not represent the power-scaled posterior."
            )
        if self.note:
            words += f" {self.note}"
        return words

    def plot(self, path=None):
        """The diagnostic per quantity (bars, prior and likelihood, the threshold dashed) beside
        the α curve (mean shifts of the sites and, given queries, the top-k overlap and AUPRC);
        saved to ``path`` when given."""
        import matplotlib.pyplot as plt

        from ..plots import finish

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
        names = list(self.worst)
        y = np.arange(len(names))
        ax1.barh(y + 0.2, [self.worst[n] for n in names], height=0.4, color="C0", label="prior")
        lik = self.worst_likelihood
        ax1.barh(y - 0.2, [lik[n] for n in names], height=0.4, color="C1", label="likelihood")
        ax1.set_yticks(y, names)
        ax1.axvline(self.threshold, color="k", ls="--", lw=0.8, label=f"{self.threshold:g}")
        ax1.set_xlabel("sensitivity (CJS distance per unit log₂ α)")
        ax1.legend(fontsize=8)
        table = self.curve()
        for col in table.columns:
            if col.startswith("shift_") or col in ("topk_overlap", "auprc"):
                ax2.plot(table["alpha"], table[col], marker="o", label=col)
        ax2.set_xscale("log")
        ax2.set_xlabel("α (prior power)")
        ax2.legend(fontsize=8)
        ax2.set_title(self.method)
        return finish(fig, path)


def _weights_words(bad: list[dict]) -> str:
    """``"prior α 1.01 (diagnostic): k 0.66, ESS 37"; …``."""
    return "; ".join(
        f"{w['component']} α {w['alpha']:g} ({w['use']}): k {w['pareto_k']:.2f}, ESS {w['ess']:.0f}"
        for w in bad
    )


def _mean_auprc(values) -> float:
    """The mean AUPRC over queries with a relevant item (NaN rows left out)."""
    v = np.asarray(values, np.float64)
    ok = np.isfinite(v)
    return float(v[ok].mean()) if ok.any() else float("nan")


def _alphas(alphas, exact_at) -> tuple[np.ndarray, str]:
    """The α grid (sorted, 1 in it) and a note: given α are checked (an α that leaves an exact
    family's prior improper is an error, from the family); of the default grid such α are left
    out, which the note says."""
    given = alphas is not None
    grid = sorted({positive("alpha", a) for a in (alphas if given else DEFAULT_ALPHAS)} | {1.0})
    kept, dropped, why = [], [], ""
    for a in grid:
        try:
            exact_at(a)
            kept.append(a)
        except AnchorDivError as err:
            if given:
                raise
            dropped.append(a)
            why = why or str(err).removeprefix("alpha: ")
    note = ""
    if dropped:
        note = f"α = {', '.join(f'{a:g}' for a in dropped)} left out of the default grid: {why}"
    return np.asarray(kept), note


#: family quantities that do not move with the covariance's overall scale
SCALE_FREE_NAMES = (
    "mean_cosine",
    "leading_axis_angle",
    "principal_angles",
    "max_principal_angle",
)


def _reweighted_means(flat_sites: dict, w: np.ndarray, reff: float) -> tuple[dict, dict]:
    """Weighted site means and their Monte-Carlo standard errors."""
    m, e = {}, {}
    for site, v in flat_sites.items():
        m[site] = np.tensordot(w, v, axes=1)
        e[site] = np.sqrt(np.tensordot(w**2, (v - m[site]) ** 2, axes=1) / reff)
    return m, e


def _reweighted_diagnostic(post, draws, flat, lp, s: int, seed: int, delta: float, smooth: bool):
    """The diagnostic by importance weights on the draws (ArviZ's ``psens``):
    ``(prior, likelihood, scale-free names, weights, log likelihood [S] or None)``."""
    targets = post.fixed.get("targets")
    if not np.all(np.isfinite(lp)):
        raise AnchorDivError(
            f"prior_sensitivity: the log prior is not finite at "
            f"{int(np.sum(~np.isfinite(lp)))} of {s} draws"
        )
    ll = None
    if targets is not None:
        ll = np.asarray(
            post.likelihood().log_density(flat, np.asarray(targets, np.float64)), np.float64
        ).sum(axis=1)
        if not np.all(np.isfinite(ll)):
            raise AnchorDivError(
                f"prior_sensitivity: the log likelihood is not finite at "
                f"{int(np.sum(~np.isfinite(ll)))} of {s} draws"
            )
    quantities = {
        name: np.asarray(v, np.float64).reshape((s,) + np.shape(v)[2:])
        for name, v in checks_of(post.family_class).quantities(draws, post.params("mean")).items()
    }
    scale_free = [q for q in SCALE_FREE_NAMES if q in quantities]
    geometry = geometry_quantities(flat, _prior_only_params(post, seed))
    quantities.update(geometry)
    scale_free += list(geometry)
    threshold_k = k_threshold(s)
    sens: dict = {}
    lik_sens: dict = {}
    weights: list[dict] = []
    for component, logp in (("prior", lp), ("likelihood", ll)):
        if logp is None:
            continue
        lws = []
        for a in (1 / (1 + delta), 1 + delta):
            lw, kk, ess = weight_check((a - 1) * logp, smooth=smooth)
            lws.append(lw)
            weights.append(
                {
                    "component": component,
                    "alpha": float(a),
                    "use": "diagnostic",
                    "pareto_k": kk,
                    "ess": ess,
                    "ok": bool(kk <= threshold_k),
                }
            )
        target = sens if component == "prior" else lik_sens
        for name, v in quantities.items():
            target[name] = sensitivity_values(v.reshape((s, -1)), lws, delta).reshape(v.shape[1:])
    return sens, lik_sens, scale_free, weights, ll


@limited_blas
def prior_sensitivity(
    post,
    alphas=None,
    *,
    queries=None,
    gallery=None,
    relevance=None,
    k: int = 10,
    method: str = "auto",
    num_draws: int | None = None,
    seed: int = 0,
    delta: float = DELTA,
    diagnostic: bool = True,
) -> PriorSensitivity:
    """How much the prior drives the posterior ``post``: power-scaling of the prior and of the
    likelihood (Kallioinen et al. 2023; module docstring).

    Parameters
    ----------
    post : Posterior
        An adapted posterior (exact, NUTS or SVI; not a delta guide's point, a user's own
        NumPyro model or a ``subspace=`` run, whose prior density is not known).
    alphas : sequence of float, optional
        The powers of the α curve (1 is added); default :data:`DEFAULT_ALPHAS` less those that
        leave an exact family's prior improper (given ones that do are an error).
    queries : array_like, shape [Q, d], optional
        Queries for the retrieval part (with ``gallery``; also the default of
        :meth:`PriorSensitivity.influence`).
    gallery : array_like, shape [G, d], optional
        The gallery.
    relevance : array_like of bool, shape [Q, G], optional
        Binary relevance (adds the AUPRC per α).
    k : int, default 10
        Top-k size (≤ G).
    method : {"auto", "exact", "psis"}, default "auto"
        ``"exact"`` where the posterior is the conjugate update and its family has
        ``power_scaled_posterior``, else ``"psis"``; ``"exact"`` on a NUTS/SVI posterior of such
        a family gives the closed-form α curve of the same model (the diagnostic still
        reweights its draws, with each weight's k and ESS); ``"psis"`` on an exact posterior
        reweights its exact draws.  On an exact posterior ``"exact"`` reweights nothing: the
        diagnostic compares exact draws of the power-scaled posteriors (common random numbers,
        :func:`coupled_sensitivity`), unless a side α = 1/(1 + δ) leaves the prior improper.
    num_draws : int, optional
        Draws of the diagnostic (:func:`~.uncertainty.inference_data`'s default).
    seed : int, default 0
        Seed of the draws.
    delta : float, default 0.01
        The diagnostic's finite difference.
    diagnostic : bool, default True
        Compute the per-quantity diagnostic (draws); ``False`` with ``method="exact"`` gives the
        α curve alone, in closed form and without draws.

    Returns
    -------
    PriorSensitivity
        ``table()`` (per quantity: prior, likelihood, diagnosis), ``curve()`` (per α),
        ``influence()`` (the endpoints), ``sensitive``, ``describe()``, ``plot()``.  Every
        reweighting carries its Pareto k and ESS (``weights``); one warning per call names
        those above the threshold of the diagnostic, one those of the α curve.

    Raises
    ------
    AnchorDivError
        A posterior whose prior density is unknown, an ``alpha`` ≤ 0 or one that leaves an exact
        family's prior improper, ``method="exact"`` where there is no closed form, bad shapes.

    Examples
    --------
    >>> broad = np.random.default_rng(0).normal(size=(40, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> post = ad.adapt("gaussian", broad, broad[:6], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> res = ad.prior_sensitivity(post, alphas=(0.8, 1.25), queries=broad[:3], gallery=broad,
    ...                            k=5, num_draws=100)
    >>> res.method, res.alphas.tolist()
    ('exact', [0.8, 1.0, 1.25])
    >>> res.table().columns.tolist()
    ['prior', 'likelihood', 'diagnosis', 'scale_free', 'at']
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    from .uncertainty import default_draws, draws_with_log_prior, no_log_prior, retrieval_arguments
    from .uncertainty import posterior_argument

    post = posterior_argument(post, "prior_sensitivity")
    check_choice("method", method, METHODS)
    if post.point_guide:
        raise AnchorDivError(
            "prior_sensitivity: a delta guide's fit is a point: it has no spread to reweight "
            "(fit with ad.NUTS or another guide, or the exact update)"
        )
    why = no_log_prior(post)
    if why is not None:
        raise AnchorDivError(f"prior_sensitivity: the prior of this posterior is unknown: {why}")
    delta = positive("delta", delta)
    targets = post.fixed.get("targets")
    prior = post.prior
    closed = targets is not None and prior is not None
    closed = closed and prior.power_scaled_posterior(1.0, targets) is not None
    if method == "auto":
        method = "exact" if closed and post.closed_form else "psis"
    if method == "exact" and not closed:
        raise AnchorDivError(
            f"method='exact': the {post.kind} family has no closed-form power-scaled posterior "
            f"(its prior object defines no power_scaled_posterior"
            + ("" if targets is not None else ", or the posterior kept no targets")
            + "); use method='psis'"
        )
    if method == "psis" and not diagnostic:
        raise AnchorDivError("diagnostic=False: only with method='exact' (PSIS needs the draws)")

    def exact_at(a):  # the family's power-scaled posterior (or only a check of α)
        return prior.power_scaled_posterior(a, targets) if closed else None

    grid, note = _alphas(alphas, exact_at)
    retrieval = queries is not None or gallery is not None
    if retrieval:
        if queries is None or gallery is None:
            raise AnchorDivError("queries and gallery: give both for the retrieval part")
        q, g, k = retrieval_arguments(queries, gallery, k, relevance, dim=post.dim)
    elif relevance is not None:
        raise AnchorDivError("relevance: applies to the retrieval part (queries and gallery)")

    sens: dict = {}
    lik_sens: dict = {}
    weights: list[dict] = []
    scale_free: list[str] = []
    lp = ll = flat = None
    s = 0
    sites = post.family_class.sites
    if diagnostic:
        n = integer("num_draws", default_draws(post) if num_draws is None else num_draws, low=4)
        exact = None
        if method == "exact" and post.closed_form:  # a sampled posterior's own draws: weights
            exact = _exact_diagnostic(post, exact_at, n, seed, delta)
        if exact is not None:
            sens, lik_sens, scale_free = exact
            s = n
        else:
            draws, flat, lp = draws_with_log_prior(post, n, seed)
            shape = next(iter(draws.values())).shape[:2]
            s = int(np.prod(shape))
            sens, lik_sens, scale_free, weights, ll = _reweighted_diagnostic(
                post, draws, flat, lp, s, seed, delta, smooth=method == "psis"
            )

    means, mcse, ks, models, lik_means = [], None, None, [], []
    if method == "exact":
        for a in grid:
            m = exact_at(a).mean()
            means.append({site: np.asarray(m[site], np.float64) for site in sites if site in m})
            if retrieval:
                models.append(post.to_model(m))
            scaled = likelihood_scaled_posterior(prior, targets, a)
            if scaled is not None:
                lm = scaled.mean()
                lik_means.append(
                    {site: np.asarray(lm[site], np.float64) for site in sites if site in lm}
                )
    else:
        mcse, kvals = [], []
        flat_sites = {site: np.asarray(flat[site], np.float64) for site in sites if site in flat}
        # NUTS: the chains' relative efficiency
        reff = 1.0 if post.independent_draws else min(1.0, adz.ess(lp.reshape(shape)) / s)
        rng = np.random.default_rng(seed + 4)
        summarise = post.family_class.likelihood_type.summarise
        threshold_k = k_threshold(s)
        for a in grid:
            if a == 1.0:  # the draws themselves (PSIS of constant ratios fails on 1.x)
                w, kk = np.full(s, 1.0 / s), 0.0
            else:
                lw, kk, ess = weight_check((a - 1) * lp, smooth=True)
                w = np.exp(lw)
                weights.append(
                    {
                        "component": "prior",
                        "alpha": float(a),
                        "use": "curve",
                        "pareto_k": kk,
                        "ess": ess,
                        "ok": bool(kk <= threshold_k),
                    }
                )
            kvals.append(kk)
            m, e = _reweighted_means(flat_sites, w, reff)
            means.append(m)
            mcse.append(e)
            if ll is not None:
                if a == 1.0:
                    lik_means.append(m)
                else:
                    lw, kl, ess = weight_check((a - 1) * ll, smooth=True)
                    lik_means.append(_reweighted_means(flat_sites, np.exp(lw), reff)[0])
                    weights.append(
                        {
                            "component": "likelihood",
                            "alpha": float(a),
                            "use": "curve",
                            "pareto_k": kl,
                            "ess": ess,
                            "ok": bool(kl <= threshold_k),
                        }
                    )
            if retrieval:
                picked = flat
                if a != 1.0:  # stratified resampling of the draws by the weights
                    cw = np.cumsum(w / w.sum())
                    idx = np.minimum(np.searchsorted(cw, (rng.random() + np.arange(s)) / s), s - 1)
                    picked = {k: v[idx] for k, v in flat.items()}
                models.append(post.to_model(summarise(picked, "mean", None)))
        ks = np.asarray(kvals)
    overlap = auprc = None
    if retrieval:  # each α's scorer against α = 1's
        from ..retrieval.divergence import top_k
        from .uncertainty import model_auprc, overlap as kept

        ref = top_k(models[int(np.flatnonzero(grid == 1.0)[0])], q, g, k)[0]
        overlap = np.asarray([kept(top_k(m, q, g, k)[0], ref, k) for m in models])
        if relevance is not None:
            auprc = np.asarray([model_auprc(m, q, g, relevance) for m in models])
    fields = (method, grid, sens, means, mcse, ks, overlap, auprc, k if retrieval else None, s)
    result = PriorSensitivity(
        *fields,
        delta,
        note,
        THRESHOLD,
        lik_sens,
        tuple(scale_free),
        weights,
        lik_means,
        {"post": post, "queries": queries, "gallery": gallery, "relevance": relevance},
    )
    bad = [w for w in result.unreliable_weights if w["use"] == "diagnostic"]
    if bad:
        warnings.warn(
            f"prior_sensitivity: Pareto k above {k_threshold(s):.2f} in the diagnostic's "
            f"reweighting on {s} draws ({_weights_words(bad)}): its sensitivities come from "
            f"weights that do not represent the power-scaled posterior; use more draws or a "
            f"smaller delta",
            stacklevel=user_stacklevel(),
        )
    bad = [w for w in result.unreliable_weights if w["use"] == "curve"]
    if bad:
        warnings.warn(
            f"prior_sensitivity: Pareto k above {k_threshold(s):.2f} on the α curve "
            f"({_weights_words(bad)}; PSIS on {s} draws): the reweighted draws do not "
            f"represent the power-scaled posterior there; use α closer to 1, more draws, or a "
            f"family with a closed form (method='exact')",
            stacklevel=user_stacklevel(),
        )
    return result
