"""The spectral shrinkage family: a Gaussian anchor model whose covariance lives in the broad
eigenbasis, with one shrinkage scale per leading direction (docs/mathematics.md, "The spectral shrinkage prior") — its explicit
NumPyro model, the prior law :class:`SpectralLaw`, O(n·d·k) densities and the prior object
:class:`SpectralPrior`.

    prior = ad.SpectralPrior.from_anchors(broad [N, d], rank=64)
    post = ad.infer(prior, targets [n, d], ad.SVI(guide="normal"))    # or ad.NUTS(...)
    post.point("mean")         # E[μ], E[Σ] = V_k diag(E[v]) V_kᵀ + E[σ²](I − V_k V_kᵀ)

The model (docs/guides/spectral-prior.md), in the broad eigenbasis ``Cov(B) = V Λ Vᵀ``::

    Σ = V_k diag(v) V_kᵀ + σ² (I − V_k V_kᵀ),   v_j = λ_j s_j²,   s_j = g · ℓ_j
    μ | Σ ~ N(μ_B, Σ/κ₀),   t_i ~ N(μ, Σ)

with ``"horseshoe"`` or ``"gamma"`` shrinkage of the scales and ``σ² = σ²_B h²``.  No closed-form
update: NUTS or SVI, O(n·d·k) per step.  The directions are the posterior's
``fixed["directions"]``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import scipy.special
from numpyro.distributions import constraints
from numpyro.distributions.util import validate_sample

from ..._tolerance import numerical_rank
from ...anchors import Gaussian
from ...anchors.base import as_tau, jax_dtype
from ...anchors.gaussian import moments
from ...anchors.linalg import canonical_signs
from ...errors import check_choice, integer, positive
from ..statistics import cached
from ..protocol import SMALL_D, Family, Hooks, unit_vector
from ..registry import check_prior_mode, family
from ..methods import NUTS
from ..model import Likelihood
from .gaussian import mean_quantities
from .latent_gaussian import ppca_noise

#: shrinkage hierarchies of the scales
SHRINKAGE = ("horseshoe", "gamma")


def scale_law(shrinkage: str, scale, shape):
    """The law of one positive scale: HalfCauchy(scale) (horseshoe) or the square root of
    Gamma(shape, shape) (gamma hierarchy; ``scale`` unused)."""
    if shrinkage == "horseshoe":
        return dist.HalfCauchy(scale)
    return dist.TransformedDistribution(
        dist.Gamma(shape, shape), dist.transforms.PowerTransform(0.5)
    )


def log_scale_density(shrinkage: str, x: np.ndarray, scale: float, shape: float) -> np.ndarray:
    """float64 log density of :func:`scale_law` at ``x > 0`` (elementwise)."""
    x = np.asarray(x, np.float64)
    if shrinkage == "horseshoe":
        return np.log(2 / (np.pi * scale)) - np.log1p((x / scale) ** 2)
    y = x * x
    return (
        shape * np.log(shape)
        - scipy.special.gammaln(shape)
        + (shape - 1) * np.log(y)
        - shape * y
        + np.log(2 * x)
    )


# ---- low-rank-plus-isotropic algebra (jax and numpy alike: ``xp`` is the array module) -----


def quad_inv(x, proj, v, s2):
    """``xᵀΣ⁻¹x`` ``[...]`` from ``x [..., d]``, its projections ``proj = x V_k [..., k]``,
    ``v [..., k]`` and ``s2 [...]`` (leading axes broadcast)."""
    p2 = proj * proj
    return (p2 / v).sum(-1) + ((x * x).sum(-1) - p2.sum(-1)) / s2


def logdet(v, s2, d: int, xp=jnp):
    """``log|Σ|`` ``[...]``."""
    return xp.log(v).sum(-1) + (d - v.shape[-1]) * xp.log(s2)


def sqrt_apply(directions, v, s2, z, xp=jnp):
    """``Σ^{1/2} z`` ``[..., d]`` for ``z [..., d]`` (``Σ^{1/2}`` the symmetric square root)."""
    proj = z @ directions
    s = xp.sqrt(s2)[..., None]
    return s * z + ((xp.sqrt(v) - s) * proj) @ directions.T


class TargetSummary(NamedTuple):
    """What :func:`spectral_model`'s likelihood reads of a target set ``T [n, d]`` (a JAX
    pytree whose shapes do not depend on n, so one compiled sampler serves every target count):
    the count ``n`` (a scalar array), the mean ``mean [d]``, ``proj2 [k]`` = diag(V_kᵀ S V_k)
    and ``total`` = tr S, S the scatter about the mean."""

    n: Any
    mean: Any
    proj2: Any
    total: Any


def summarise(targets, directions) -> TargetSummary:
    """:class:`TargetSummary` of ``targets [n, d]`` in the basis ``directions`` V_k ``[d, k]``
    (JAX or NumPy arrays, the targets' dtype): O(n·d·k), once per fit."""
    xp = jnp if isinstance(targets, jax.Array) else np
    mean = targets.mean(0)
    x = targets - mean
    n = xp.asarray(targets.shape[0], targets.dtype)
    return TargetSummary(n, mean, ((x @ directions) ** 2).sum(0), (x * x).sum())


def trace_inv_scatter(t: TargetSummary, v, s2):
    """``tr Σ⁻¹S`` ``[...]`` of a :class:`TargetSummary` (``v [..., k]``, ``s2 [...]``)."""
    return (t.proj2 / v).sum(-1) + (t.total - t.proj2.sum(-1)) / s2


def marginal_loglik(targets, mu0, directions, v, s2, kappa0, xp=jnp):
    """``log p(T | Σ)`` with μ ~ N(μ₀, Σ/κ₀) integrated out (scalar; ``targets [n, d]`` or
    their :class:`TargetSummary`):
    ``−nd/2 log 2π − n/2 log|Σ| + d/2 log(κ₀/κₙ) − ½ tr Σ⁻¹[S + κ₀n/κₙ (t̄−μ₀)(t̄−μ₀)ᵀ]``, where
    ``tr Σ⁻¹S = Σ_j (V_kᵀSV_k)_jj/v_j + (tr S − Σ_j (V_kᵀSV_k)_jj)/σ²``: O(d·k) per call on a
    summary."""
    t = targets if isinstance(targets, TargetSummary) else summarise(targets, directions)
    d = mu0.shape[-1]
    kn = kappa0 + t.n
    dev = t.mean - mu0
    scatter = trace_inv_scatter(t, v, s2)
    shift = quad_inv(dev, dev @ directions, v, s2) * (kappa0 * t.n / kn)
    return (
        -0.5 * t.n * d * np.log(2 * np.pi)
        - 0.5 * t.n * logdet(v, s2, d, xp)
        + 0.5 * d * xp.log(kappa0 / kn)
        - 0.5 * (scatter + shift)
    )


def posterior_mean(targets, mu0, kappa0):
    """``(μₙ [d], κₙ)``: the conditional posterior of μ given Σ is ``N(μₙ, Σ/κₙ)``
    (``targets [n, d]`` or their :class:`TargetSummary`)."""
    if isinstance(targets, TargetSummary):
        n, total = targets.n, targets.n * targets.mean
    else:
        n, total = targets.shape[0], targets.sum(0)
    kn = kappa0 + n
    return (kappa0 * mu0 + total) / kn, kn


def gaussian_logpdf(t, mu, directions, v, s2) -> np.ndarray:
    """float64 ``log N(t_i | μ_s, Σ_s)`` ``[S, n]``: ``t [n, d]``, ``mu [S, d]``, ``v [S, k]``,
    ``s2 [S]`` — O(S·n·d·k)."""
    t, mu, vv, ss = (np.asarray(a, np.float64) for a in (t, mu, v, s2))
    x = t[None] - mu[:, None]  # [S, n, d]
    q = quad_inv(x, x @ directions, vv[:, None], ss[:, None])
    d = t.shape[1]
    return -0.5 * (q + logdet(vv, ss, d, np)[:, None] + d * np.log(2 * np.pi))


def gaussian_loglik_sum(t, mu, directions, v, s2) -> np.ndarray:
    """float64 ``Σᵢ log N(t_i | μ_s, Σ_s)`` ``[S]`` (arguments as :func:`gaussian_logpdf`) from
    the targets' :class:`TargetSummary`: ``Σᵢ (tᵢ−μ)ᵀΣ⁻¹(tᵢ−μ) = tr Σ⁻¹S + n (t̄−μ)ᵀΣ⁻¹(t̄−μ)``,
    O(n·d·k) once and O(S·d·k) for the draws instead of O(S·n·d·k)."""
    t, mu, vv, ss = (np.asarray(a, np.float64) for a in (t, mu, v, s2))
    n, d = t.shape
    summary = summarise(t, directions)
    dev = summary.mean - mu  # [S, d]
    q = trace_inv_scatter(summary, vv, ss) + n * quad_inv(dev, dev @ directions, vv, ss)
    return -0.5 * (q + n * logdet(vv, ss, d, np) + n * d * np.log(2 * np.pi))


class MarginalTargets(dist.Distribution):
    """The target set ``T [n, d]`` with μ ~ N(μ₀, Σ/κ₀) integrated out (one event; Σ in
    low-rank-plus-isotropic form)."""

    support = constraints.real_matrix
    arg_constraints = {}

    def __init__(self, mu0, directions, v, s2, kappa0, n: int, *, validate_args=None):
        self.mu0, self.directions, self.v, self.s2 = mu0, directions, v, s2
        self.kappa0, self.n = kappa0, n
        super().__init__(
            batch_shape=(), event_shape=(n, mu0.shape[-1]), validate_args=validate_args
        )

    def sample(self, key, sample_shape=()):
        d = self.mu0.shape[-1]
        k1, k2 = jax.random.split(key)
        z = jax.random.normal(k1, sample_shape + (1, d), self.mu0.dtype)
        e = jax.random.normal(k2, sample_shape + (self.n, d), self.mu0.dtype)
        mu = self.mu0 + sqrt_apply(self.directions, self.v, self.s2, z) / jnp.sqrt(self.kappa0)
        return mu + sqrt_apply(self.directions, self.v, self.s2, e)

    @validate_sample
    def log_prob(self, value):
        """``value [..., n, d] -> [...]``: batched like every NumPyro distribution (its own
        ``sample(key, (S,))`` draws included)."""
        args = (self.mu0, self.directions, self.v, self.s2, self.kappa0)
        if value.ndim == 2:
            return marginal_loglik(value, *args)
        out = jax.vmap(lambda t: marginal_loglik(t, *args))(value.reshape((-1,) + value.shape[-2:]))
        return out.reshape(value.shape[:-2])


def spectral_model(
    targets,
    *,
    mu0,
    directions,
    eigenvalues,
    noise0,
    kappa0,
    shrinkage="horseshoe",
    global_scale=1.0,
    gamma_shape=2.0,
    free_noise=True,
    map_jacobian=False,
):
    """The explicit NumPyro model (copy and change it): broad mean ``mu0 [d]``, ``directions``
    V_k ``[d, k]``, ``eigenvalues`` λ ``[k]``, residual variance ``noise0`` σ²_B, ``kappa0`` and
    the shrinkage options (module docstring).  Sites: latent ``global_scale``, ``local_scales``,
    ``noise_scale`` (deterministic 1 unless ``free_noise``), ``mu_raw``; deterministic
    ``variances``, ``noise``, ``mu``; observed ``targets`` [n, d] or their
    :class:`TargetSummary` (the same density: ``spectral_model.model_data``).
    ``map_jacobian=True`` (a delta guide) profiles μ at its conditional mode μₙ and adds
    ``−½ log|Σ/κₙ|``: the guide finds the joint mode of (μ, g, ℓ, h).

    Parameters
    ----------
    targets : array_like, shape [n, d], or TargetSummary
        The observed target anchors (or their sufficient summary: the same density).
    mu0 : jax.Array, shape [d]
        The broad mean μ_B.
    directions : jax.Array, shape [d, k]
        V_k, the broad covariance's k leading eigenvectors (orthonormal columns).
    eigenvalues : jax.Array, shape [k]
        λ, their eigenvalues.
    noise0 : float
        σ²_B, the broad residual variance outside the k directions.
    kappa0 : float
        The mean's strength: μ | Σ ~ N(μ_B, Σ/κ₀).
    shrinkage : {"horseshoe", "gamma"}, default "horseshoe"
        The law of the local scales ℓ_j.
    global_scale : float, default 1.0
        Scale of the global shrinkage g.
    gamma_shape : float, default 2.0
        Shape of the local scales under ``"gamma"``.
    free_noise : bool, default True
        Sample the residual scale h (else h = 1: σ² = σ²_B).
    map_jacobian : bool, default False
        As above (a delta guide's joint mode).

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    d, dtype = mu0.shape[-1], mu0.dtype
    k = eigenvalues.shape[-1]
    g = numpyro.sample("global_scale", scale_law(shrinkage, global_scale, gamma_shape))
    ell = numpyro.sample(
        "local_scales", scale_law(shrinkage, 1.0, gamma_shape).expand((k,)).to_event(1)
    )
    if free_noise:
        h = numpyro.sample("noise_scale", scale_law(shrinkage, 1.0, gamma_shape))
    else:
        h = numpyro.deterministic("noise_scale", jnp.ones((), dtype))
    v = numpyro.deterministic("variances", eigenvalues * (g * ell) ** 2)
    s2 = numpyro.deterministic("noise", noise0 * h * h)
    if isinstance(targets, TargetSummary):  # the same density, as a factor (observed) site
        numpyro.factor("targets", marginal_loglik(targets, mu0, directions, v, s2, kappa0))
    else:
        law = MarginalTargets(mu0, directions, v, s2, kappa0, targets.shape[0])
        numpyro.sample("targets", law, obs=targets)
    mean, kn = posterior_mean(targets, mu0, kappa0)
    if map_jacobian:  # μ profiled at its conditional mode: the joint mode's μ
        numpyro.deterministic("mu", mean)
        numpyro.factor("map_jacobian", -0.5 * (logdet(v, s2, d) - d * jnp.log(kn)))
        return
    z = numpyro.sample("mu_raw", dist.Normal(jnp.zeros((d,), dtype), 1.0).to_event(1))
    numpyro.deterministic("mu", mean + sqrt_apply(directions, v, s2, z) / jnp.sqrt(kn))


def model_data(targets, kwargs: dict) -> TargetSummary:
    """What the library's samplers pass :func:`spectral_model` for ``targets [n, d]`` under the
    hyperparameters ``kwargs``: their :class:`TargetSummary`."""
    return summarise(targets, kwargs["directions"])


spectral_model.model_data = model_data


def broad_spectrum(cov: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(V_k [d, k], λ [k], σ²_B)`` of a broad covariance ``[d, d]``: the k leading
    eigenpairs and the mean discarded eigenvalue, floored at 1e-3 × the mean eigenvalue (as the
    latent kinds' PPCA noise)."""
    w, vec = np.linalg.eigh(np.asarray(cov, np.float64))
    w, vec = w[::-1], vec[:, ::-1]
    floor = max(1e-3 * float(np.mean(w)), 1e-300)
    vk = canonical_signs(np.ascontiguousarray(vec[:, :rank]))
    return vk, np.maximum(w[:rank], floor), ppca_noise(w, rank)


@dataclass(frozen=True)
class SpectralLaw:
    """The prior of :func:`spectral_model` as a sampler (float64): its keyword arguments."""

    mu0: np.ndarray
    directions: np.ndarray
    eigenvalues: np.ndarray
    noise0: float
    kappa0: float
    shrinkage: str
    global_scale: float
    gamma_shape: float
    free_noise: bool

    def scales(self, rng: np.random.Generator, size) -> np.ndarray:
        """Draws of :func:`scale_law` ``[*size]`` (unit scale)."""
        if self.shrinkage == "horseshoe":
            return np.abs(rng.standard_cauchy(size))
        return np.sqrt(rng.gamma(self.gamma_shape, 1.0 / self.gamma_shape, size))

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` prior draws of every site but ``mu_raw`` ``{site: [n, ...]}``."""
        k, d = len(self.eigenvalues), len(self.mu0)
        g = self.scales(rng, n) * (self.global_scale if self.shrinkage == "horseshoe" else 1.0)
        ell = self.scales(rng, (n, k))
        h = self.scales(rng, n) if self.free_noise else np.ones(n)
        v = self.eigenvalues * (g[:, None] * ell) ** 2
        s2 = self.noise0 * h * h
        z = rng.normal(size=(n, d))
        mu = self.mu0 + sqrt_apply(self.directions, v, s2, z, np) / np.sqrt(self.kappa0)
        return dict(global_scale=g, local_scales=ell, noise_scale=h, variances=v, noise=s2, mu=mu)

    def log_prior(self, draws: dict) -> np.ndarray:
        """``log p(g, ℓ, h, μ)`` ``[S]`` (float64; h only when free)."""
        lp = log_scale_density(
            self.shrinkage, draws["global_scale"], self.global_scale, self.gamma_shape
        ) + log_scale_density(self.shrinkage, draws["local_scales"], 1.0, self.gamma_shape).sum(-1)
        if self.free_noise:
            lp = lp + log_scale_density(self.shrinkage, draws["noise_scale"], 1.0, self.gamma_shape)
        v, s2 = variances(self, draws)
        return lp + _mu_logpdf(self, draws["mu"], v, s2, len(self.mu0))

    def model_kwargs(self) -> dict:
        """:func:`spectral_model`'s keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_kwargs(cls, kw: dict) -> "SpectralLaw":
        """From :func:`spectral_model`'s keyword arguments (float64 copies)."""
        check_choice("shrinkage", kw.get("shrinkage", "horseshoe"), SHRINKAGE)
        mu0, vec, lam = (
            np.asarray(kw[k], np.float64) for k in ("mu0", "directions", "eigenvalues")
        )
        noise0, kappa0 = float(kw["noise0"]), float(kw["kappa0"])
        shrinkage, scale = str(kw.get("shrinkage", "horseshoe")), float(kw.get("global_scale", 1.0))
        shape, free = float(kw.get("gamma_shape", 2.0)), bool(kw.get("free_noise", True))
        return cls(mu0, vec, lam, noise0, kappa0, shrinkage, scale, shape, free)


def variances(law: SpectralLaw, draws: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(v [S, k], σ² [S])`` recomputed from the scale draws (float64)."""
    g = np.asarray(draws["global_scale"], np.float64)
    ell = np.asarray(draws["local_scales"], np.float64)
    h = np.asarray(draws["noise_scale"], np.float64)
    return law.eigenvalues * (g[:, None] * ell) ** 2, law.noise0 * h * h


def _mu_logpdf(law: SpectralLaw, mu, v, s2, d: int) -> np.ndarray:
    """``log N(μ_s | μ₀, Σ_s/κ₀)`` ``[S]``."""
    x = np.asarray(mu, np.float64) - law.mu0
    v0, s0 = v / law.kappa0, s2 / law.kappa0
    return -0.5 * (
        quad_inv(x, x @ law.directions, v0, s0) + logdet(v0, s0, d, np) + d * np.log(2 * np.pi)
    )


#: default number of leading broad directions that get their own scale
DEFAULT_RANK = 64
#: residual variance σ²: learnt (its own scale) or held at the broad value
NOISE = ("free", "fixed")
#: seed of the random orthonormal directions of the isotropic control
CONTROL_SEED = 0


def dense_factor(directions: np.ndarray, v: np.ndarray, s2: float) -> np.ndarray:
    """The symmetric square root ``Σ^{1/2} = V_k diag(√v − σ) V_kᵀ + σ I`` ``[d, d]`` (float64;
    formed once per anchor model, never factorised)."""
    sd = np.sqrt(float(s2))
    d = directions.shape[0]
    return (directions * (np.sqrt(np.asarray(v, np.float64)) - sd)) @ directions.T + sd * np.eye(d)


class SpectralLikelihood(Likelihood):
    """The spectral Gaussian likelihood ``t_i ~ N(μ, V_k diag(v) V_kᵀ + σ²(I − V_k V_kᵀ))`` (the
    directions in ``fixed``) under the shrinkage prior :class:`SpectralLaw`, all in closed form
    and O(n·d·k)."""

    def log_density(self, draws, targets):
        return gaussian_logpdf(
            targets, draws["mu"], self.fixed["directions"], draws["variances"], draws["noise"]
        )

    def sample(self, draws, n, rng):
        mu = np.asarray(draws["mu"], np.float64)
        z = rng.normal(size=(len(mu), n, mu.shape[-1]))
        v = np.asarray(draws["variances"], np.float64)[:, None]
        s2 = np.asarray(draws["noise"], np.float64)[:, None]
        directions = np.asarray(self.fixed["directions"], np.float64)
        return mu[:, None] + sqrt_apply(directions, v, s2, z, np)

    def log_joint(self, targets, draws):
        law = SpectralLaw.from_kwargs(self.kwargs)
        v, s2 = variances(law, draws)
        d = {**draws, "variances": v, "noise": s2}
        return law.log_prior(d) + gaussian_loglik_sum(targets, d["mu"], law.directions, v, s2)

    def exact_prior(self):
        return SpectralLaw.from_kwargs(self.kwargs)

    @classmethod
    def site_shapes(cls, d, shapes):
        k = tuple(shapes.get("local_scales", (0,)))[-1:] or (0,)
        out = {"mu": (d,), "variances": k, "noise": (), "global_scale": ()}
        return {**out, "local_scales": k, "noise_scale": ()}


# ---- what the checks know of the family (:class:`~anchordiv.adaptation.protocol.Hooks`) ----------
def spectral_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """Mean cosine and norm, covariance trace, the scales and variances, and each direction's
    scale relative to the point summary's; ``mu`` at d ≤ 8."""
    d = s["mu"].shape[-1]
    k = s["variances"].shape[-1]
    trace = s["variances"].sum(-1) + (d - k) * s["noise"]
    own = {k: s[k] for k in ("noise", "global_scale", "local_scales", "variances")}
    out = {**mean_quantities(s, ref), "cov_trace": trace, **own}
    out["relative_scales"] = np.sqrt(s["variances"] / np.asarray(ref["variances"]))
    if d <= SMALL_D:
        out["mu"] = s["mu"]
    return out


def spectral_sbc_quantities(d: int, rng) -> dict:
    """The log variances of the first and last direction, log σ², log g and μ·w."""
    w = unit_vector(d, rng)
    return {
        "log v₁": lambda p: np.log(p["variances"][:, 0]),
        "log v_k": lambda p: np.log(p["variances"][:, -1]),
        "log σ²": lambda p: np.log(p["noise"]),
        "log g": lambda p: np.log(p["global_scale"]),
        "μ·w": lambda p: p["mu"] @ w,
    }


#: NUTS in full d for the adaptation curves (≈ 1 s per fit at d = 384 once compiled;
#: benchmarks/bench_spectral.py)
CURVE_NUTS = NUTS(**{"num_warmup": 300, "num_samples": 300, "num_chains": 1, "progress": False})


def leading(directions, k: int) -> np.ndarray | None:
    """The first ``k`` of the eigenbasis ``directions [d, K]`` (None where there is none)."""
    return None if directions is None else np.asarray(directions, np.float64)[:, :k]


@family("spectral")
class SpectralPrior(Family):
    """Spectral shrinkage prior of the spectral kind (module docstring); NUTS or SVI only.

    Build with :meth:`from_anchors`.

    Parameters
    ----------
    mu0 : numpy.ndarray, shape [d]
        The broad mean.
    directions : numpy.ndarray, shape [d, k]
        V_k, the leading broad eigenvectors.
    eigenvalues : numpy.ndarray, shape [k]
        λ, their eigenvalues.
    noise0 : float
        σ²_B, the mean discarded eigenvalue.
    kappa0 : float, default 1.0
        Pseudo-anchors of the prior mean.
    shrinkage : {"horseshoe", "gamma"}, default "horseshoe"
        The hierarchy of the per-direction scales.
    global_scale : float, default 1.0
        The horseshoe's g ~ HalfCauchy scale.
    gamma_shape : float, default 2.0
        a of the gamma hierarchy (g², ℓ² ~ Gamma(a, a)).
    noise : {"free", "fixed"}, default "free"
        σ² learnt, or held at the broad residual variance.
    prior : {"broad", "isotropic"}, default "broad"
        The broad spectrum or the isotropic control.
    origin : str, default ""
        Where the prior came from.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> ad.SpectralPrior.from_anchors(broad, rank=2).directions.shape
    (4, 2)
    """

    axes = {"mu0": "d", "directions": "dk", "eigenvalues": "k"}
    model_axes = axes

    mu0: np.ndarray
    directions: np.ndarray
    eigenvalues: np.ndarray
    noise0: float
    kappa0: float = 1.0
    shrinkage: str = "horseshoe"
    global_scale: float = 1.0
    gamma_shape: float = 2.0
    noise: str = "free"
    prior: str = "broad"
    origin: str = ""

    sites = ("mu", "variances", "noise", "global_scale", "local_scales", "noise_scale")
    static_fields = ("shrinkage", "noise", "prior", "origin")
    hooks = Hooks(
        quantities=spectral_quantities,
        dims={
            "variances": ["spectral_direction"],
            "local_scales": ["spectral_direction"],
            "relative_scales": ["spectral_direction"],
        },
        sbc_options=lambda d: {"rank": 2, "shrinkage": "gamma", "gamma_shape": 4.0, "kappa0": 2.0},
        sbc_quantities=spectral_sbc_quantities,
        curve_method=CURVE_NUTS,
        ppc_directions=lambda post, k: leading(post.fixed.get("directions"), k),
    )
    model = staticmethod(spectral_model)
    likelihood_type = SpectralLikelihood
    descriptions = {
        "joint_mode": "joint mode of (μ, g, ℓ, h) of the full-d model (μ in place of mu_raw)"
    }

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        rank: int | None = None,
        kappa0: float = 1.0,
        shrinkage: Literal["horseshoe", "gamma"] = "horseshoe",
        global_scale: float = 1.0,
        gamma_shape: float = 2.0,
        noise: Literal["free", "fixed"] = "free",
        reg: float = 1e-3,
        prior: str = "broad",
    ) -> "SpectralPrior":
        """The prior from ``broad [N, d]``: mean, the ``rank`` leading eigenpairs of the (ridged)
        covariance — capped at the broad covariance's numerical rank — and the mean discarded
        eigenvalue as σ²_B.

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Not used (no strength is chosen from them: the scales' posterior does that).
        rank : int, optional
            Leading broad directions with a scale of their own (default min(64, d)).
        kappa0 : float, default 1.0
            Prior mean strength, in pseudo-anchors.
        shrinkage : {"horseshoe", "gamma"}, default "horseshoe"
            The hierarchy of the per-direction scales.
        global_scale : float, default 1.0
            Scale of the horseshoe's global HalfCauchy.
        gamma_shape : float, default 2.0
            Shape a of the gamma hierarchy (g², ℓ² ~ Gamma(a, a)).
        noise : {"free", "fixed"}, default "free"
            The residual variance σ² learnt, or held at the broad value.
        reg : float, default 1e-3
            Relative ridge of the broad covariance.
        prior : {"broad", "isotropic"}, default "broad"
            The broad spectrum or the isotropic control.

        Returns
        -------
        SpectralPrior
            The prior."""
        b = np.asarray(broad)
        d = b.shape[1]
        rank = min(DEFAULT_RANK, d) if rank is None else integer("rank", rank, low=1, high=d)
        check_choice("shrinkage", shrinkage, SHRINKAGE)
        check_choice("noise", noise, NOISE, " (σ² learnt or held at the broad residual variance)")
        mu, cov = cached(moments, b, positive("reg", reg, allow_zero=True))
        rank = min(rank, max(1, numerical_rank(cov)))
        vec, lam, s2 = broad_spectrum(cov, rank)
        k0, g = positive("kappa0", kappa0), positive("global_scale", global_scale)
        a = positive("gamma_shape", gamma_shape)
        out = cls(np.asarray(mu, np.float64), vec, lam, s2, k0, shrinkage, g, a, noise)
        return out.isotropic() if check_prior_mode(prior) == "isotropic" else out

    @property
    def rank(self) -> int:
        return int(np.shape(self.eigenvalues)[0])

    def law(self) -> SpectralLaw:
        """The prior of :func:`spectral_model` as a sampler (its fields, float64)."""
        own = [f.name for f in dataclasses.fields(SpectralLaw) if f.name != "free_noise"]
        kw = {name: getattr(self, name) for name in own}
        return SpectralLaw.from_kwargs({**kw, "free_noise": self.noise == "free"})

    def isotropic(self) -> "SpectralPrior":
        """The control: every variance (λ and σ²_B) replaced by tr(C)/d and the directions by a
        seeded random orthonormal k-frame (:data:`CONTROL_SEED`) — the same number of free
        scales, no broad direction or ordering."""
        lam = np.asarray(self.eigenvalues, np.float64)
        d, k = self.dim, self.rank
        mean = (lam.sum() + (d - k) * float(self.noise0)) / d
        frame = np.linalg.qr(np.random.default_rng(CONTROL_SEED).normal(size=(d, k)))[0]
        return dataclasses.replace(
            self, directions=frame, eigenvalues=np.full(k, mean), noise0=mean, prior="isotropic"
        )

    def prior_kwargs(self) -> dict:
        return self.law().model_kwargs()

    @classmethod
    def check_model_inputs(cls, kwargs, fixed, d):
        """As :meth:`Family.check_model_inputs`, and the constructor's rules: a known
        shrinkage, positive noise, strength, global scale and shape, eigenvalues ≥ 0."""
        super().check_model_inputs(kwargs, fixed, d)
        if kwargs is not None:
            check_choice("model_kwargs.shrinkage", kwargs.get("shrinkage", "horseshoe"), SHRINKAGE)
            for k in ("noise0", "kappa0", "global_scale", "gamma_shape"):
                if k in kwargs:
                    positive(f"model_kwargs.{k}", kwargs[k])
            lam = np.asarray(kwargs["eigenvalues"], np.float64)
            if lam.size:
                positive("model_kwargs.eigenvalues (smallest)", lam.min(), allow_zero=True)

    @classmethod
    def model_extras(cls, kwargs: dict, *, map_density: bool) -> dict:
        """``map_jacobian=True`` for a delta guide: μ profiled (:func:`spectral_model`)."""
        return {"map_jacobian": True} if map_density else {}

    def model_inputs(self, targets):
        """No conjugate update: the model's hyperparameters, the prior's choices and the
        directions every draw shares."""
        info = {"kappa0": float(self.kappa0), "rank": self.rank}
        info.update(shrinkage=self.shrinkage, noise=self.noise)
        return self.prior_kwargs(), info, self.predictive_fixed()

    def predictive_fixed(self) -> dict:
        return {"directions": np.asarray(self.directions, np.float64)}

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        dt = jax_dtype(dtype)  # float64 is float32 unless JAX runs in float64
        f = dense_factor(np.asarray(fixed["directions"], np.float64), p["variances"], p["noise"])
        return Gaussian(jnp.asarray(p["mu"], dt), jnp.asarray(f, dt), as_tau(tau, dt))
