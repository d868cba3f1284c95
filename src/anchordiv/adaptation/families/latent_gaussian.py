"""The latent Gaussian family: matrix Bingham prior on the principal subspace (docs/mathematics.md, "Latent Gaussian: matrix Bingham") —
its explicit NumPyro model, the exact posterior :class:`BinghamPosterior`, the PPCA likelihood,
the prior object :class:`BinghamPrior` — and :class:`LatentFamily`, what the latent spherical
family shares with it (sites, options, ``from_anchors``, PPCA likelihood, lift, quantities).

    prior = ad.BinghamPrior.from_anchors(broad [N, d], rank=8)      # B₀ = c·n₀·Cov(B)
    post = prior.update(targets [n, d])                              # Bₙ = B₀ + c·S_T

Site: ``U [d, k]`` (orthonormal frame), prior ``p(U) ∝ etr(Uᵀ B₀ U)``.  The PPCA likelihood
``t_i ~ N(t̄, σ² I + ℓ U Uᵀ)`` (ℓ, σ² the broad PPCA fit at rank k) depends on U through
``c · tr(Uᵀ S_T U)``, ``c = ℓ/(2σ²(σ² + ℓ))``: conjugate, ``Bₙ = B₀ + c · S_T``, the MAP the
top-k eigenvectors of Bₙ.  With the target weight ``β = n / (n₀ + n)``,
``Bₙ = c · m · [(1 − β) Cov(B) + β Cov(T)]``, ``m = n/β`` capped at ``n + n_broad`` (which
tempers the likelihood).  ``prior="isotropic"`` replaces Cov(B) by ``tr(Cov(B))/d · I``.  The
latent mean ``(1 − β) mean(B) + β t̄`` is not part of the Bingham posterior.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..._tolerance import PROJECTOR_ATOL
from ...anchors import LatentGaussian
from ...anchors.base import as_tau, jax_dtype
from ...anchors.gaussian import moments
from ...anchors.latent import principal_subspace
from ...anchors.linalg import eigh_descending
from ...errors import AnchorDivError, check_covariance, in_unit_interval, integer, positive
from .. import statistics as recipe
from ...threads import limited_blas
from ..statistics import as_anchors, broad_moments, cached, sandwich
from ..distributions import MatrixBingham, bingham_chains, stiefel_site
from ..protocol import Family, Hooks, principal_angles
from ..registry import check_prior_mode, family
from ..model import Likelihood
from .gaussian import isotropic_cov

#: default prior strength of the latent kinds, in pseudo-anchors (sets β = n / (n + n₀))
PRIOR_ANCHORS = 10.0
#: Gibbs burn-in sweeps per chain of exact latent draws (chains start at the mode; lag-1
#: autocorrelation of the sweeps is ≈ 0.1, so 10 sweeps forget the start)
BURN_IN = 10
#: Gibbs burn-in of a single exact latent draw (SBC's truth: longer than a posterior chain's)
PRIOR_BURN_IN = 30


def latent_gaussian_model(
    targets, *, prior_parameter, mean, signal, noise, rank, target_weight=1.0
):
    """The explicit NumPyro model of the latent-gaussian kind (copy and change it for a custom prior).

    Sites: ``U [d, k]`` (deterministic, from ``U_raw``), observed ``targets``.

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    prior_parameter : array_like, shape [d, d]
        B₀.
    mean : array_like, shape [d]
        PPCA mean.
    signal, noise : float
        PPCA signal ℓ and noise σ².
    rank : int
        k.
    target_weight : float, default 1.0
        Tempers the likelihood (1 = Bayes).

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    d = targets.shape[1]
    u = stiefel_site("U", d, rank)
    numpyro.factor("U_prior", MatrixBingham(prior_parameter, rank).log_prob(u))
    cov = noise * jnp.eye(d) + signal * u @ u.T
    with numpyro.plate("anchors", targets.shape[0]), numpyro.handlers.scale(scale=target_weight):
        numpyro.sample("targets", dist.MultivariateNormal(mean, cov), obs=targets)


def top_frame(m: np.ndarray, k: int) -> np.ndarray:
    """The top-k eigenvectors ``[d, k]`` of the symmetric ``m [d, d]`` (canonical signs)."""
    return np.ascontiguousarray(eigh_descending(m)[1][:, :k])


@dataclass(frozen=True)
class BinghamPosterior:
    """Exact latent posterior ``U ~ MatrixBingham(parameter)`` at rank k.

    Parameters
    ----------
    parameter : numpy.ndarray, shape [d, d]
        The symmetric Bingham parameter Bₙ.
    rank : int
        k.
    location : numpy.ndarray, shape [d]
        The fixed latent mean (latent Gaussian; zeros for the latent spherical model).
    """

    parameter: np.ndarray
    rank: int
    location: np.ndarray

    def mode(self) -> dict[str, np.ndarray]:
        """``{"U": top-k eigenvectors of B [d, k]}`` (also the principal subspace of E[UUᵀ])."""
        return {"U": top_frame(self.parameter, self.rank)}

    def mean(self) -> dict[str, np.ndarray]:
        """Same as :meth:`mode`: the principal subspace of E[UUᵀ] is the top-k eigenvectors of B
        (a mean of frames is not a frame)."""
        return self.mode()

    def sample_chains(self, rng: np.random.Generator, chains: int, n: int) -> dict[str, np.ndarray]:
        """``{"U": [chains, n, d, k]}``: independent Gibbs chains run in parallel
        (:func:`~anchordiv.adaptation.distributions.bingham_chains`, :data:`BURN_IN` sweeps each)."""
        u = bingham_chains(self.parameter, self.rank, n, rng, chains=chains, burn_in=BURN_IN)
        return {"U": u}

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``{"U": [n, d, k]}``: two independent chains of ⌈n/2⌉ draws, concatenated."""
        u = self.sample_chains(rng, 2 if n > 1 else 1, -(-n // 2) if n > 1 else 1)["U"]
        return {"U": u.reshape((-1,) + u.shape[2:])[:n]}

    def sweep_cost(self) -> float:
        """Relative cost of one Gibbs sweep, k·q³ (q = d − k + 1)."""
        d = self.parameter.shape[0]
        return float(self.rank * (d - self.rank + 1) ** 3)


def broad_eigenvalues(broad: np.ndarray) -> np.ndarray:
    """Descending eigenvalues ``[d]`` of the (unridged) broad covariance."""
    return np.linalg.eigvalsh(moments(broad)[1])[::-1]


def ppca_noise(eigvals: np.ndarray, rank: int) -> float:
    """PPCA σ² at rank k: the mean discarded eigenvalue, floored at 1e-3 × the mean one."""
    noise = float(np.mean(eigvals[rank:])) if rank < len(eigvals) else 0.0
    return max(noise, 1e-3 * float(np.mean(eigvals)), 1e-300)


def ppca_scale(eigvals: np.ndarray, rank: int) -> tuple[float, float, float]:
    """``(c, ℓ, σ²)`` of the PPCA likelihood at rank k from descending eigenvalues ``[d]``."""
    noise = ppca_noise(eigvals, rank)
    signal = max(float(np.mean(eigvals[:rank])) - noise, noise)
    return signal / (2 * noise * (noise + signal)), signal, noise


def target_weight(n: int, n_broad: int, beta: float) -> float:
    """Total pseudo-count ``m = min(n/β, n + n_broad)`` for target weight β."""
    return n + n_broad if beta == 0 else min(n / beta, n + n_broad)


def latent_gaussian_update(
    broad: np.ndarray, targets: np.ndarray, *, rank: int, beta: float, prior: str = "broad"
) -> tuple[BinghamPosterior, dict]:
    """Exact update of the latent-gaussian kind.

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    rank : int
        k.
    beta : float
        Target weight in [0, 1].
    prior : {"broad", "isotropic"}, default "broad"
        The broad covariance or the isotropic control.

    Returns
    -------
    posterior : BinghamPosterior
        The exact posterior.
    info : dict
        The explicit model's hyperparameters (``model_kwargs``) and the pseudo-count m.
    """
    fam = BinghamPrior.build(np.asarray(broad), rank, beta, PRIOR_ANCHORS, prior)
    return fam.posterior(targets, beta)[:2]


def ppca_logpdf(t, u, mean, signal, noise):
    """``log N(t_i | m, σ² I + ℓ U_s U_sᵀ)`` via Woodbury: ``u [S, d, k]`` -> ``[S, n]``."""
    d, k = u.shape[-2:]
    x = t - mean  # [n, d]
    proj = np.einsum("nd,sdk->snk", x, u)  # [S, n, k]
    quad = (x * x).sum(-1)[None] / noise - signal / (noise * (noise + signal)) * (proj**2).sum(-1)
    logdet = d * np.log(noise) + k * np.log1p(signal / noise)
    return -0.5 * (quad + logdet + d * np.log(2 * np.pi))


def broad_stable_rank(broad: np.ndarray) -> float:
    """:func:`stable_rank` of the broad anchors' covariance ``[d, d]`` (cached per broad
    array: a curve's cells share it)."""
    _, cov_b = broad_moments(broad)
    return recipe.stable_rank(np.linalg.eigvalsh(cov_b))


@limited_blas
def recipe_rank(broad, targets, *, novelty: float) -> int:
    """The recipe's latent rank ``round(ν·k_prior + (1 − ν)·k_target)``: ν the targets'
    held-out novelty, ``k_prior`` the stable rank of Cov(B) (its leading directions, not the
    100+ that hold 95 % of a broad text prior's variance), ``k_target`` the target-only fit's
    (95 % of the targets' variance; ``targets=None``: k_prior), capped at d − 1 and N − 1 —
    as ν → 0 the posterior converges to the target-only fit (``benchmarks/bench_recipe.py``)."""
    b = as_anchors("broad_anchors", broad, min_rows=2)
    v = in_unit_interval("novelty", novelty)
    k = cached(broad_stable_rank, b)
    t = (
        None
        if targets is None
        else as_anchors("target_anchors", targets, dim=b.shape[1]).astype(np.float64)
    )
    if t is not None and len(t) > 1 and v < 1 and np.ptp(t, axis=0).max() > 0:
        k_target = principal_subspace(t)[1].shape[1]
        k = v * k + (1 - v) * k_target
    return max(1, min(int(round(k)), b.shape[1] - 1, len(b) - 1))


@limited_blas
def latent_options(
    broad,
    targets,
    *,
    strengths: dict | None = None,
    reg: float = 1e-3,
    grid=recipe.STRENGTH_GRID,
    max_folds: int = recipe.MAX_FOLDS,
) -> dict:
    """The recipe's ``{"rank", "beta", "strength", "novelty"}`` for
    ``ad.adapt("latent-gaussian" | "latent-spherical", …, rank=, beta=)`` and their isotropic
    controls; ``strengths``: the output of :func:`gaussian_strengths` for the same anchors
    (computed when omitted).  latent-spherical needs rank ≥ 2: raise a rank of 1 there."""
    t = as_anchors("target_anchors", targets)
    if strengths is None:
        strengths = recipe.gaussian_strengths(broad, t, reg=reg, grid=grid, max_folds=max_folds)
    n = integer("n", len(t), low=1)
    return {
        "rank": recipe_rank(broad, t, novelty=strengths["novelty"]),
        "beta": n / (n + positive("strength", strengths["strength"])),
        "strength": float(strengths["strength"]),
        "novelty": float(strengths["novelty"]),
    }


def held_out_options(broad: np.ndarray, targets, rank, beta, prior_anchors, *, low: int) -> tuple:
    """``(rank, beta, prior_anchors)`` with each ``"auto"`` replaced by the recipe's choice
    (:func:`anchordiv.adaptation.families.latent_gaussian.latent_options`): the rank between the prior's stable
    rank and the target-only rank by the targets' held-out novelty; ``beta="auto"`` makes the
    prior worth the recipe's strength s, ``prior_anchors = s`` and β = n/(n + s) at the update
    (``beta=None`` with that strength).  Without targets (a prior on its own) ``"auto"`` is
    the recipe's choice for novel targets: the rank is the broad covariance's stable rank and
    the prior is worth :data:`~anchordiv.adaptation.families.latent_gaussian.PRIOR_ANCHORS`.  A given
    ``prior_anchors`` (a number) keeps β = n/(n + prior_anchors).  ``rank="variance"`` (or
    None): 95 % of the broad variance.  The isotropic control gets the same numbers, computed
    from the broad anchors."""
    for name, value in (("rank", rank), ("beta", beta), ("prior_anchors", prior_anchors)):
        words = ("auto", "variance") if name == "rank" else ("auto",)
        if isinstance(value, str) and value not in words:
            raise AnchorDivError(
                f"{name}: a number, None or {' or '.join(map(repr, words))}, got {value!r}"
            )
    rank = None if rank == "variance" else rank
    strength_wanted = beta == "auto" and prior_anchors == "auto"
    fit = targets is not None and (rank == "auto" or strength_wanted)
    lat = latent_options(broad, targets) if fit else None
    if rank == "auto":
        rank = max(low, lat["rank"] if lat else recipe_rank(broad, None, novelty=1.0))
    if prior_anchors == "auto":
        prior_anchors = lat["strength"] if strength_wanted and lat else PRIOR_ANCHORS
    return rank, (None if beta == "auto" else beta), prior_anchors


def latent_rank(broad: np.ndarray, rank, *, low: int) -> int:
    """The latent rank k: given, or 95 % of the broad variance (at least ``low``, < d)."""
    d = broad.shape[1]
    if rank is None:
        _, u, _ = cached(principal_subspace, broad)
        rank = min(max(u.shape[1], low), d - 1)
    else:
        rank = integer("rank", rank, low=low)
    if rank >= d:
        raise AnchorDivError(
            f"rank: must be < d = {d} (a rank-d subspace is the whole space), got {rank}"
        )
    if rank > len(broad) - 1:
        raise AnchorDivError(
            f"rank: {rank} is larger than the broad anchors allow: at most "
            f"n_broad − 1 = {len(broad) - 1}"
        )
    return rank


class PPCALikelihood(Likelihood):
    """The latent kinds' PPCA likelihood ``t_i ~ N(t̄, σ² I + ℓ U Uᵀ)`` in closed form (site
    ``U [d, k]``; the constants ``ppca_mean``, ``ppca_count``, ``ppca_signal``, ``ppca_noise``
    are in ``fixed``)."""

    def log_density(self, draws, targets):
        """Leave-one-out-correct pointwise ``log p(t_i | T₋ᵢ, U_s)`` ``[S, n]``: the PPCA mean
        is not known but estimated from the fit's targets T (a flat prior on it, integrated
        out), so each anchor is scored given the *other* targets —

        * the fit's own targets (same count and mean as ``fixed``): ``N(t_i | t̄₋ᵢ, C·n/(n−1))``
          with ``C = σ² I + ℓ U Uᵀ`` and t̄₋ᵢ the mean of the others;
        * other anchors (held out, K-fold): ``N(t | t̄, C·(n+1)/n)``.

        These are ``p(T | U)/p(T₋ᵢ | U)`` of the mean-marginalised likelihood, whose U-part is
        the conjugate ``c·tr(Uᵀ S_T U)`` of the update (:func:`latent_gaussian_posterior`), so
        PSIS-LOO on them estimates the refits' ``log p(t_i | T₋ᵢ)`` (Bürkner, Gabry & Vehtari
        2021 on non-factorised models).  A subset of the fit's targets counts as other
        anchors."""
        fixed = self.fixed
        missing = [
            k for k in ("ppca_mean", "ppca_count", "ppca_signal", "ppca_noise") if k not in fixed
        ]
        if missing:
            raise AnchorDivError(
                f"post.fixed: the latent likelihood needs {', '.join(missing)} "
                f"(posteriors adapted before this version lack them)"
            )
        t = np.asarray(targets, np.float64)
        mean, n = np.asarray(fixed["ppca_mean"], np.float64), int(fixed["ppca_count"])
        own = len(t) == n and np.allclose(
            t.mean(0), mean, rtol=1e-9, atol=1e-12 * max(np.abs(mean).max(initial=0), 1.0)
        )
        if own and n < 2:
            raise AnchorDivError(
                "targets: the leave-one-out likelihood of a latent fit needs "
                "at least 2 target anchors (one leaves no mean to centre on)"
            )
        # own targets: t_i − t̄₋ᵢ = n/(n−1)·(t_i − t̄), covariance n/(n−1)·C; others (n+1)/n·C
        shift, inflate = (n / (n - 1), n / (n - 1)) if own else (1.0, (n + 1) / n)
        return ppca_logpdf(
            shift * (t - mean),
            np.asarray(draws["U"], np.float64),
            np.zeros_like(mean),
            inflate * float(fixed["ppca_signal"]),
            inflate * float(fixed["ppca_noise"]),
        )

    def sample(self, draws, n, rng):
        u = np.asarray(draws["U"], np.float64)
        s, d, k = u.shape
        z = rng.normal(size=(s, n, k)) * np.sqrt(float(self.fixed["ppca_signal"]))
        e = rng.normal(size=(s, n, d)) * np.sqrt(float(self.fixed["ppca_noise"]))
        return np.asarray(self.fixed["ppca_mean"]) + np.einsum("sdk,snk->snd", u, z) + e

    @classmethod
    def site_shapes(cls, d, shapes):
        k = shapes["U"][-1] if len(shapes["U"]) == 2 else 1
        return {"U": (d, k)}

    @classmethod
    def summarise(cls, s, which, lp):
        """The MAP draw, or the principal subspace of the mean projector (a mean of frames is
        not a frame)."""
        if which == "map":
            return super().summarise(s, which, lp)
        u = s["U"]
        return {"U": top_frame(np.einsum("sik,sjk->ij", u, u) / len(u), u.shape[-1])}

    def prior_parameter(self) -> np.ndarray:
        """The prior's Bingham parameter ``[d, d]`` (the explicit model's)."""
        return np.asarray(self.kwargs["prior_parameter"])

    def exact_prior(self):
        b0 = self.prior_parameter()
        return BinghamPosterior(b0, int(self.kwargs["rank"]), np.zeros(b0.shape[0]))

    def prior_draw(self, rng):
        """One Gibbs chain burnt in for :data:`PRIOR_BURN_IN` sweeps (an exact draw for SBC)."""
        rank = int(self.kwargs["rank"])
        u = bingham_chains(self.prior_parameter(), rank, 1, rng, chains=1, burn_in=PRIOR_BURN_IN)
        return {"U": u[0, 0]}


class BinghamLikelihood(PPCALikelihood):
    """:class:`PPCALikelihood` under the matrix Bingham prior of
    :func:`latent_gaussian_model`, in closed form.  The log joint's likelihood term is the
    explicit model's plug-in ``Σᵢ log N(t_i | t̄, C_s)``, which has the same U-dependence as the
    mean-marginalised one (the log joint up to a constant)."""

    def log_joint(self, targets, draws):
        kw = self.kwargs
        u = np.asarray(draws["U"], np.float64)
        plug_in = ppca_logpdf(
            np.asarray(targets, np.float64),
            u,
            np.asarray(kw["mean"], np.float64),
            float(kw["signal"]),
            float(kw["noise"]),
        ).sum(-1)
        b0 = np.asarray(kw["prior_parameter"], np.float64)
        return np.einsum("sdk,de,sek->s", u, b0, u) + float(kw.get("target_weight", 1.0)) * plug_in


# ---- what the checks know of the latent families (:class:`~anchordiv.adaptation.protocol.Hooks`) --
def latent_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """Principal angles (degrees, ascending) to the point subspace and the largest."""
    ang = principal_angles(s["U"], ref["U"])
    return {"principal_angles": ang, "max_principal_angle": ang.max(-1)}


def latent_sbc_quantities(d: int, rng) -> dict:
    """Frame-invariant quantities of span(U) (functions of U Uᵀ)."""
    a = rng.normal(size=(d, d))
    a = a + a.T
    w = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    return {
        "‖WᵀU‖²": lambda p: (np.einsum("dk,sdj->skj", w, p["U"]) ** 2).sum((1, 2)),
        "tr UᵀAU": lambda p: np.einsum("sdk,de,sek->s", p["U"], a, p["U"]),
        "σ_min(WᵀU)": lambda p: np.linalg.svd(
            np.einsum("dk,sdj->skj", w, p["U"]), compute_uv=False
        )[:, -1],
    }


def latent_psis_caveat(post) -> str | None:
    """PSIS reproduces the refits only at the default β (the prior's pseudo-count n₀ is the
    same on T₋ᵢ) with the untempered likelihood (pseudo-count not capped by the broad
    anchors)."""
    w = float((post.model_kwargs or {}).get("target_weight", 1.0))
    if abs(w - 1.0) > 1e-12:
        return (
            f"the likelihood is tempered (target weight {w:.3g}: the pseudo-count is "
            f"capped by the broad anchors), so refits on T₋ᵢ are not reweighted "
            f"posteriors"
        )
    if post.prior is not None and post.prior.beta is not None:
        return (
            "a beta fixed or chosen from the targets (the recipe) makes the prior's "
            "strength m(1 − β) = n(1 − β)/β depend on the targets, so a refit on T₋ᵢ "
            "has another prior"
        )
    return None


def latent_prior_scale(key: str):
    """The prior scale hook reading the model keyword ``key`` (the prior's d × d scale; else
    the mean's projector)."""

    def scale(kwargs, mean):
        u = mean["U"]
        return np.asarray(kwargs[key] if key in kwargs else u @ u.T, np.float64)

    return scale


def latent_data_chosen(options: dict) -> list[str]:
    """``rank`` if ``"auto"``; ``prior_anchors`` if ``"auto"`` with ``beta="auto"`` (else it
    is the constant default)."""
    auto = [k for k in ("rank", "prior_anchors") if options.get(k) == "auto"]
    return [k for k in auto if k != "prior_anchors" or options.get("beta") == "auto"]


class LatentFamily(Family):
    """What the latent families share (site ``U [d, k]``, the options rank/β/strength, the PPCA
    likelihood whose constants are in ``post.fixed``).  Subclasses carry ``rank``, ``beta``,
    ``prior_anchors``, ``signal``, ``noise``, ``scale`` (the PPCA c) and ``n_broad``, and define
    :meth:`build` and :meth:`posterior`."""

    exact_types = (BinghamPosterior,)
    axes = {"mean": "d", "cov": "dd"}

    sites = ("U",)
    static_fields = ("prior", "origin", "rank", "n_broad")
    model_axes = {"prior_parameter": "dd", "broad_projector": "dd", "mean": "d", "ppca_mean": "d"}
    hooks = Hooks(
        quantities=latent_quantities,
        dims={"principal_angles": ["angle"]},
        # every strength fixed: a recipe's "auto" would choose them from each simulated data
        # set, so the inference prior would not be the simulation prior
        sbc_options=lambda d: {"rank": 2, "beta": None, "prior_anchors": 10.0},
        sbc_quantities=latent_sbc_quantities,
        gibbs_cost=lambda params: (params.sweep_cost(), BURN_IN),
        psis_caveat=latent_psis_caveat,
        prior_scale=latent_prior_scale("prior_parameter"),
        # the PPCA is centred at 0 (the update uses the target scatter only)
        sbc_fixed=lambda fixed: {**fixed, "ppca_mean": np.zeros(np.shape(fixed["ppca_mean"]))},
        data_chosen=latent_data_chosen,
    )
    descriptions = {
        "exact_mean": "closed form: principal subspace of the posterior mean projector",
        "exact_map": "closed form: the posterior mode (principal subspace)",
        "mean_of_draws": "principal subspace of the mean projector E[UUᵀ] over the draws",
    }

    @classmethod
    def from_options(cls, broad, targets, rank, beta, prior_anchors, prior, *, low: int, **own):
        """``from_anchors`` of a latent kind (rank ≥ ``low``; ``own``: its other fields)."""
        broad = np.asarray(broad)
        rank, beta, n0 = held_out_options(broad, targets, rank, beta, prior_anchors, low=low)
        rank = latent_rank(broad, rank, low=low)
        beta = None if beta is None else in_unit_interval("beta", beta)
        n0 = positive("prior_anchors", n0)
        return cls.build(broad, rank, beta, n0, check_prior_mode(prior), **own)

    @classmethod
    def build(cls, broad, rank, beta, prior_anchors, prior, **own):
        """The prior of ``broad [N, d]`` with validated options."""
        raise NotImplementedError

    def posterior(self, targets, beta: float) -> tuple[BinghamPosterior, dict, dict]:
        """``(exact posterior, info, fixed)`` at target weight ``beta``."""
        raise NotImplementedError

    def check_loaded(self, dim: int | None) -> None:
        """As :meth:`Family.check_loaded`, and the constructor's rules: PPCA signal, noise and
        scale positive, ``rank`` in [1, d], ``n_broad`` ≥ 1, β in [0, 1] where given,
        ``prior_anchors`` (and a fixed concentration, radius) positive, and the matrix that
        becomes the Bingham parameter (``cov``, ``projector``) symmetric positive
        semi-definite — a ``projector``'s eigenvalues at most 1, as every projector (and its
        isotropic control, k/d·I) has (checked before the update probe, which an unbounded
        one breaks inside the Bingham sampler)."""
        for name in ("cov", "projector"):
            if getattr(self, name, None) is not None:
                m = check_covariance(f"prior: field {name}", getattr(self, name), definite=False)
                if name == "projector":
                    top = float(np.linalg.eigvalsh(m).max())
                    if top > 1.0 + PROJECTOR_ATOL:
                        raise AnchorDivError(
                            f"prior: field projector has an eigenvalue {top:.3g} > 1 (a "
                            f"projector's are in [0, 1])"
                        )
        super().check_loaded(dim)
        for name in ("signal", "noise", "scale", "prior_anchors", "radius", "concentration"):
            if getattr(self, name, None) is not None:
                positive(f"prior: field {name}", getattr(self, name))
        integer("prior: field rank", self.rank, low=1, high=self.dim)
        integer("prior: field n_broad", self.n_broad, low=1)
        if self.beta is not None:
            in_unit_interval("prior: field beta", self.beta)

    @classmethod
    def check_model_inputs(cls, kwargs, fixed, d):
        """As :meth:`Family.check_model_inputs`, and the constructors' rules: ``rank`` in
        [1, d]; PPCA signal ≥ 0, noise, strengths and target weight positive; β in [0, 1];
        Bingham parameters symmetric positive semi-definite; ``ppca_count`` ≥ 1."""
        super().check_model_inputs(kwargs, fixed, d)
        kw = kwargs or {}
        if "rank" in kw:
            integer("model_kwargs.rank", kw["rank"], low=1, high=d)
        for k in ("noise", "concentration", "target_weight"):
            if k in kw:
                positive(f"model_kwargs.{k}", kw[k])
        if "signal" in kw:
            positive("model_kwargs.signal", kw["signal"], allow_zero=True)
        if "beta" in kw:
            in_unit_interval("model_kwargs.beta", kw["beta"])
        for k in ("prior_parameter", "broad_projector"):
            if k in kw:
                check_covariance(f"model_kwargs.{k}", kw[k], dim=d, definite=False)
        if "ppca_count" in fixed:
            integer("fixed.ppca_count", fixed["ppca_count"], low=1)
        if "ppca_signal" in fixed:
            positive("fixed.ppca_signal", fixed["ppca_signal"], allow_zero=True)
        for k in ("ppca_noise", "radius"):
            if k in fixed:
                positive(f"fixed.{k}", fixed[k])

    def broad_count(self) -> int:
        """The ``n_broad`` field."""
        return int(self.n_broad)

    def exact(self, targets):
        t = np.asarray(targets, np.float64)
        n = len(t)
        beta = self.beta if self.beta is not None else n / (n + float(self.prior_anchors))
        if beta == 1 and self.rank > n - 1:
            raise AnchorDivError(
                f"rank: {self.rank} is larger than the target anchors allow "
                f"with beta = 1: at most n_targets − 1 = {n - 1}"
            )
        post, extra, fixed = self.posterior(t, beta)
        alone = {"target_only": "beta = 1 gives the broad prior no weight"} if beta >= 1 else {}
        ppca = {"ppca_mean": t.mean(0), "ppca_count": np.asarray(len(t))}
        ppca.update(ppca_signal=np.asarray(self.signal), ppca_noise=np.asarray(self.noise))
        return post, {"rank": self.rank, "beta": beta, **alone, **extra}, {**fixed, **ppca}

    def model_inputs(self, targets):
        """The model's hyperparameters are the Bingham fit to the targets (the concentration and
        the target-informed parameter the exact update computes): its parameters are dropped."""
        _, info, fixed = self.exact(targets)
        return info.pop("model_kwargs"), info, fixed

    def default_weight(self) -> float:
        """The prior's pseudo-count m(1 − β) at the default target weight (= n₀, unless the
        broad anchors cap it); the prior alone is only defined there."""
        if self.beta is not None:
            raise AnchorDivError(
                "beta: with a fixed target weight the prior strength "
                "m(1 − β) depends on the number of targets; the prior alone "
                "(sample, prior_predictive) is defined at the default beta"
            )
        return min(float(self.prior_anchors), float(self.n_broad))

    @classmethod
    def lift(cls, ps, completion, basis, r, *, which="mean", rng=None):
        """``U = U_r U_sub``: the subspace frame ``[r, k]`` in full d."""
        return [{"U": basis[:, :r] @ np.asarray(p["U"], np.float64)} for p in ps]

    def predictive_fixed(self) -> dict:
        return {
            "ppca_mean": np.asarray(self.mean, np.float64),
            "ppca_signal": np.asarray(self.signal),
            "ppca_noise": np.asarray(self.noise),
        }


def bingham_kwargs(*values) -> dict:
    """:func:`latent_gaussian_model`'s keywords from their values, in its order."""
    names = ("prior_parameter", "mean", "signal", "noise", "rank", "target_weight")
    return dict(zip(names, values))


def ppca_fit(broad: np.ndarray, rank: int) -> tuple[float, float, float]:
    """``(c, ℓ, σ²)`` of the broad anchors' PPCA fit at ``rank``."""
    return ppca_scale(cached(broad_eigenvalues, broad), rank)


@family("latent-gaussian")
class BinghamPrior(LatentFamily):
    """Matrix Bingham prior of the latent-gaussian kind: ``p(U) ∝ etr(Uᵀ B₀ U)``, ``B₀ = c·m(1 − β)·C``.

    Build with :meth:`from_anchors`; the exact update is Bₙ = B₀ + c·S_T (docs/mathematics.md, "Latent Gaussian: matrix
    Bingham").

    Parameters
    ----------
    mean : numpy.ndarray, shape [d]
        The broad mean.
    cov : numpy.ndarray, shape [d, d]
        The broad covariance C (or the isotropic control).
    signal, noise, scale : float
        The broad PPCA signal ℓ, noise σ² and scale c at rank k.
    n_broad : int
        Number of broad anchors (caps the pseudo-count).
    rank : int
        k, the latent dimension.
    beta : float, optional
        Target weight in [0, 1] (None: ``n/(n + prior_anchors)``).
    prior_anchors : float, default 10.0
        The prior's strength in pseudo-anchors.
    prior : {"broad", "isotropic"}, default "broad"
        Which covariance C is.
    origin : str, default ""
        Where the prior came from.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.BinghamPrior.from_anchors(broad, rank=2, prior_anchors=10.0)
    >>> prior.rank, prior.dim
    (2, 4)
    >>> ad.infer(prior, broad[:3], tau=20.0).point("mean")
    LatentGaussian(mean[4], basis[4, 2], tau=20)
    """

    mean: np.ndarray
    cov: np.ndarray
    signal: float
    noise: float
    scale: float
    n_broad: int
    rank: int
    beta: float | None = None
    prior_anchors: float = PRIOR_ANCHORS
    prior: str = "broad"
    origin: str = ""

    model = staticmethod(latent_gaussian_model)
    likelihood_type = BinghamLikelihood

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        rank: int | Literal["auto", "variance"] | None = "auto",
        beta: float | Literal["auto"] | None = "auto",
        prior_anchors: float | Literal["auto"] = "auto",
        prior: str = "broad",
    ) -> "BinghamPrior":
        """Prior from the broad anchors' mean and covariance and their PPCA fit at ``rank``.

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Target anchors (needed for ``"auto"``).
        rank : int, "auto", "variance" or None, default "auto"
            Subspace dimension k: the recipe's choice from the targets (``"auto"``,
            :func:`held_out_options`) or 95 % of the broad variance (``"variance"``, None).
        beta : float, "auto" or None, default "auto"
            Target weight in [0, 1] (``"auto"``: n/(n + s), s the recipe's strength; None:
            n/(n + prior_anchors)).
        prior_anchors : float or "auto", default "auto"
            The prior's strength in pseudo-anchors (``"auto"``: the recipe's; a number makes β
            ``n/(n + prior_anchors)``).
        prior : {"broad", "isotropic"}, default "broad"
            The broad covariance or the isotropic control.

        Returns
        -------
        BinghamPrior
            The prior."""
        return cls.from_options(broad, targets, rank, beta, prior_anchors, prior, low=1)

    @classmethod
    def build(cls, broad, rank, beta, prior_anchors, prior, **own):
        mu_b, cov_b = broad_moments(broad, prior=prior)
        c, signal, noise = ppca_fit(broad, rank)
        return cls(mu_b, cov_b, signal, noise, c, len(broad), rank, beta, prior_anchors, prior)

    isotropic = isotropic_cov

    def posterior(self, targets, beta):
        c, signal, noise = float(self.scale), float(self.signal), float(self.noise)
        t = np.asarray(targets, np.float64)
        n = t.shape[0]
        tbar = t.mean(0)
        scat = (t - tbar).T @ (t - tbar)
        m = target_weight(n, int(self.n_broad), beta)
        prior_b = c * m * (1 - beta) * np.asarray(self.cov)
        weight = m * beta / n
        post = BinghamPosterior(
            prior_b + c * weight * scat, self.rank, (1 - beta) * np.asarray(self.mean) + beta * tbar
        )
        kwargs = bingham_kwargs(prior_b, tbar, signal, noise, self.rank, weight)
        info = {"model_kwargs": kwargs, "pseudo_count": m, "likelihood_scale": c}
        return post, info, {"mean": post.location}

    def prior_kwargs(self) -> dict:
        b0 = float(self.scale) * self.default_weight() * np.asarray(self.cov)
        return bingham_kwargs(b0, np.asarray(self.mean), self.signal, self.noise, self.rank, 1.0)

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        dt = jax_dtype(dtype)  # float64 is float32 unless JAX runs in float64
        return LatentGaussian(
            jnp.asarray(fixed["mean"], dt), jnp.asarray(p["U"], dt), as_tau(tau, dt)
        )

    @classmethod
    def project(cls, kwargs, u):
        return {
            **kwargs,
            "prior_parameter": sandwich(u, kwargs["prior_parameter"]),
            "mean": np.asarray(kwargs["mean"], np.float64) @ u,
        }
