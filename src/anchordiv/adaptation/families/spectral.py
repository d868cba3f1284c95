"""The spectral shrinkage family: a Gaussian anchor model whose covariance lives in the broad
eigenbasis, with one shrinkage scale per leading direction (the math and the explicit model are
:mod:`anchordiv.adaptation.priors.spectral`; MATH.md round 3).

    prior = ad.SpectralPrior.from_anchors(broad [N, d], rank=64)
    post = ad.infer(prior, targets [n, d], ad.SVI(guide="normal"))    # or ad.NUTS(...)
    post.point("mean")         # E[μ], E[Σ] = V_k diag(E[v]) V_kᵀ + E[σ²](I − V_k V_kᵀ)

The broad prior supplies the directions V_k and their variances λ; the targets decide, through
the posterior of the scales, how much each direction matters.  There is no closed-form update:
run NUTS or SVI (both in full d, O(n·d·k) per step).  Sites: ``mu [d]``, ``variances`` v
``[k]``, ``noise`` σ², and the scales ``global_scale``, ``local_scales [k]``, ``noise_scale``;
the directions are the posterior's ``fixed["directions"] [d, k]``.  Point summaries: ``"mean"``
averages μ, v and σ² over the draws, which is exactly E[μ] and E[Σ] (Σ is linear in v and σ²);
``"map"`` is the draw of highest density of (μ, g, ℓ, h) (NUTS, SVI guide draws) or, with a
delta guide, the joint mode of those parameters — whose "mean" is not offered (no closed form).

Inference at d = 384 (benchmarks/bench_spectral.py): NUTS is the method of choice (≈ 1 s per
fit once compiled, no divergences); SVI's convergence check is conservative here — the
mean-field guide's locations of the non-centred μ coordinate sit at 0 and jitter, and a delta
guide drifts along the flat g ↔ ℓ ridge after Σ has settled — so judge SVI fits by their ELBO
trace (``post.plot_elbo``) or raise ``learning_rate``/``num_steps``.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from ...anchors import Gaussian
from ...anchors.base import as_tau, jax_dtype
from ...anchors.gaussian import moments
from ...errors import AnchorDivError, integer, positive
from ..family import Family, check_prior_mode
from ..priors import spectral
from ..priors.cache import cached
from ..quantities import SMALL_D, cosine
from ..registry import family

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
    posterior_types = ()
    static_fields = ("shrinkage", "noise", "prior", "origin")
    dims = {
        "variances": ["spectral_direction"],
        "local_scales": ["spectral_direction"],
        "relative_scales": ["spectral_direction"],
    }
    model = staticmethod(spectral.spectral_model)
    no_subspace = (
        "the spectral family is already low-rank (k scales in the broad eigenbasis, "
        "O(n·d·k) per step); run it at full d without subspace="
    )
    joint_mode = "joint mode of (μ, g, ℓ, h) of the full-d model (μ in place of mu_raw)"

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        rank: int | None = None,
        kappa0: float = 1.0,
        shrinkage: str = "horseshoe",
        global_scale: float = 1.0,
        gamma_shape: float = 2.0,
        noise: str = "free",
        reg: float = 1e-3,
        prior: str = "broad",
    ) -> "SpectralPrior":
        """The prior from ``broad [N, d]``: mean, the ``rank`` (default min(:data:`DEFAULT_RANK`,
        d)) leading eigenpairs of the (ridged, relative ``reg``) covariance — capped at the broad
        covariance's numerical rank —
        and the mean discarded eigenvalue as σ²_B.  ``targets`` are not used (no strength is
        chosen from them: the scales' posterior does that)."""
        b = np.asarray(broad)
        d = b.shape[1]
        rank = min(DEFAULT_RANK, d) if rank is None else integer("rank", rank, low=1, high=d)
        if shrinkage not in spectral.SHRINKAGE:
            raise AnchorDivError(
                f"shrinkage: one of {', '.join(spectral.SHRINKAGE)}, got {shrinkage!r}"
            )
        if noise not in NOISE:
            raise AnchorDivError(
                f"noise: one of {', '.join(NOISE)} (σ² learnt or held at the "
                f"broad residual variance), got {noise!r}"
            )
        mu, cov = cached(moments, b, positive("reg", reg, allow_zero=True))
        rank = min(rank, max(1, int(np.linalg.matrix_rank(np.asarray(cov, np.float64)))))
        vec, lam, s2 = spectral.broad_spectrum(cov, rank)
        out = cls(
            np.asarray(mu, np.float64),
            vec,
            lam,
            s2,
            positive("kappa0", kappa0),
            shrinkage,
            positive("global_scale", global_scale),
            positive("gamma_shape", gamma_shape),
            noise,
        )
        return out.isotropic() if check_prior_mode(prior) == "isotropic" else out

    @property
    def dim(self) -> int:
        return int(np.shape(self.mu0)[0])

    @property
    def rank(self) -> int:
        return int(np.shape(self.eigenvalues)[0])

    def law(self) -> spectral.SpectralLaw:
        return spectral.SpectralLaw.from_kwargs(self.prior_kwargs())

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
        return {
            "mu0": np.asarray(self.mu0, np.float64),
            "directions": np.asarray(self.directions, np.float64),
            "eigenvalues": np.asarray(self.eigenvalues, np.float64),
            "noise0": float(self.noise0),
            "kappa0": float(self.kappa0),
            "shrinkage": self.shrinkage,
            "global_scale": float(self.global_scale),
            "gamma_shape": float(self.gamma_shape),
            "free_noise": self.noise == "free",
        }

    def prepare(self, method, broad):
        from ..inference import Exact

        if isinstance(method, Exact):
            raise AnchorDivError(
                "method: the spectral prior has no closed-form update; use "
                "ad.SVI(...) or ad.NUTS(...) (both run in full d, "
                "O(n·d·k) per step)"
            )
        return self, method

    @classmethod
    def sbc_options(cls, d):
        return {"rank": 2, "shrinkage": "gamma", "gamma_shape": 4.0, "kappa0": 2.0}

    def model_inputs(self, targets):
        """No conjugate update: the model's hyperparameters, the prior's choices and the
        directions every draw shares."""
        info = {
            "kappa0": float(self.kappa0),
            "rank": self.rank,
            "shrinkage": self.shrinkage,
            "noise": self.noise,
        }
        return self.prior_kwargs(), info, self.predictive_fixed()

    def predictive_fixed(self) -> dict:
        return {"directions": np.asarray(self.directions, np.float64)}

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        dt = jax_dtype(dtype)  # float64 is float32 unless JAX runs in float64
        f = dense_factor(np.asarray(fixed["directions"], np.float64), p["variances"], p["noise"])
        return Gaussian(jnp.asarray(p["mu"], dt), jnp.asarray(f, dt), as_tau(tau, dt))

    @classmethod
    def log_likelihood(cls, draws, targets, fixed):
        return spectral.gaussian_logpdf(
            targets, draws["mu"], fixed["directions"], draws["variances"], draws["noise"]
        )

    @classmethod
    def predictive(cls, draws, n, fixed, rng):
        mu = np.asarray(draws["mu"], np.float64)
        z = rng.normal(size=(len(mu), n, mu.shape[-1]))
        v = np.asarray(draws["variances"], np.float64)[:, None]
        s2 = np.asarray(draws["noise"], np.float64)[:, None]
        return mu[:, None] + spectral.sqrt_apply(
            np.asarray(fixed["directions"], np.float64), v, s2, z, np
        )

    @classmethod
    def log_joint(cls, targets, kwargs, draws):
        law = spectral.SpectralLaw.from_kwargs(kwargs)
        v, s2 = spectral.variances(law, draws)
        d = {**draws, "variances": v, "noise": s2}
        return law.log_prior(d) + spectral.gaussian_loglik_sum(
            targets, d["mu"], law.directions, v, s2
        )

    @classmethod
    def prior_posterior(cls, kwargs):
        return spectral.SpectralLaw.from_kwargs(kwargs)

    @classmethod
    def quantities(cls, s, ref):
        d = s["mu"].shape[-1]
        k = s["variances"].shape[-1]
        trace = s["variances"].sum(-1) + (d - k) * s["noise"]
        out = {
            "mean_cosine": cosine(s["mu"], ref["mu"]),
            "mean_norm": np.linalg.norm(s["mu"], axis=-1),
            "cov_trace": trace,
            "noise": s["noise"],
            "global_scale": s["global_scale"],
            "local_scales": s["local_scales"],
            "variances": s["variances"],
            "relative_scales": np.sqrt(s["variances"] / np.asarray(ref["variances"])),
        }
        if d <= SMALL_D:
            out["mu"] = s["mu"]
        return out

    @classmethod
    def sbc_quantities(cls, d, rng):
        w = rng.normal(size=d)
        w /= np.linalg.norm(w)
        return {
            "log v₁": lambda p: np.log(p["variances"][:, 0]),
            "log v_k": lambda p: np.log(p["variances"][:, -1]),
            "log σ²": lambda p: np.log(p["noise"]),
            "log g": lambda p: np.log(p["global_scale"]),
            "μ·w": lambda p: p["mu"] @ w,
        }

    @classmethod
    def site_shapes(cls, d, shapes):
        k = tuple(shapes.get("local_scales", (0,)))[-1:] or (0,)
        return {
            "mu": (d,),
            "variances": k,
            "noise": (),
            "global_scale": (),
            "local_scales": k,
            "noise_scale": (),
        }


__all__ = ["CONTROL_SEED", "DEFAULT_RANK", "NOISE", "SpectralPrior", "dense_factor"]
