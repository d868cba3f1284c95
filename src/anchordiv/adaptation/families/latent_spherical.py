"""The latent spherical family: posterior-like Bingham ``Bₙ = (1 − β) U₀U₀ᵀ + β Ĉ_T`` with the
concentration κ derived from the PPCA likelihood (MATH.md, D.4) — its explicit NumPyro model,
exact update and the prior object :class:`PosteriorBinghamPrior`.

    prior = ad.PosteriorBinghamPrior.from_anchors(broad [N, d], rank=8)
    post = prior.update(targets [n, d])          # U ~ MatrixBingham(κ Bₙ)

Site: ``U [d, k]``; the anchor model's radius is ``radius`` (1).

``Bₙ = (1 − β) U₀U₀ᵀ + β Ĉ_T``: U₀ ``[d, k]`` is the broad principal subspace, Ĉ_T the target
covariance normalised to trace k (the projector's trace, so that both terms speak in the same
units), and β ∈ [0, 1] the target anchors' influence (β = 0: the broad subspace; β = 1: the
target subspace).  The summary is the top-k eigenvectors of Bₙ.  It is "posterior-like": Bₙ is not
a Bayes posterior of a likelihood, but ``U ~ MatrixBingham(κ Bₙ)`` gives draws whose spread is set
by the concentration κ.  ``prior="isotropic"`` replaces U₀U₀ᵀ by ``(k/d) I`` (same trace, no
direction; the MAP is then the target subspace for any β > 0).

Default concentration, derived from the likelihood (:func:`likelihood_concentration`).  The
latent spherical kind shares the latent Gaussian kind's PPCA likelihood of the targets
(:mod:`.latent_gaussian`): its posterior is ``MB(c·m·[(1 − β) Cov(B) + β Cov(T)])`` with
``c = ℓ/(2σ²(σ² + ℓ))`` and the pseudo-count ``m = min(n/β, n + n_broad)`` (``n + n₀`` at the
default β).  On the rank-k PPCA fit ``Cov(B) = σ² I + ℓ U₀U₀ᵀ``, and adding a multiple of I to a
Bingham parameter does not change the law on the Stiefel manifold (``tr(UᵀU) = k``), so the broad
term equals ``κ (1 − β) U₀U₀ᵀ`` with

    κ = c · m · ℓ = m · ℓ² / (2σ²(σ² + ℓ)),

the pseudo-count times the information one anchor carries about the subspace (it is large when
the subspace's signal ℓ stands far above the noise σ²).  κ grows linearly with n, so draws
tighten as targets are added.  The former default κ = n₀ + n (one unit per anchor) ignored that
factor: at d = 128, k = 8 it gave draws with principal angles of 61–89° to the mode, no closer
than uniformly random subspaces (65–89°); the information factor is ≈ 10–10³ on text-embedding
spectra, enough for draws that carry information at d = 384 (tests/adaptation/priors/test_bingham.py).
The draws' spread is then that of the latent Gaussian posterior's broad term — still a
posterior-*like* spread: the target term uses the trace-normalised Ĉ_T, not c·m·β·Cov(T).
Measured by simulation-based calibration under the PPCA likelihood (d = 4, n = 8, 400
simulations, ``benchmarks/bench_sbc.py``): ranks pass χ²/KS at p ≥ 0.04 but the 90 % intervals
cover 85 % — overconfident at small n.  The cause is the normalisation: the Bayes target term
is c·S_T, this one κβĈ_T = c·S_T·nkℓ/tr S_T, and E tr S_T = (n − 1)(kℓ + dσ²), so the factor
is n/(n − 1) (estimated mean) × kℓ/(kℓ + dσ²) (the noise's share of the trace) × the Jensen
excess of 1/tr S_T: ≈ 1.3 in that SBC problem (too narrow), but ≈ 0.2–0.3 at d = 384, k = 8
on text spectra (too wide).  The Gibbs draws themselves mix at once.  No κ alone fixes it (the
prior and target terms need different corrections, and changing their ratio moves the MAP),
so the draws are labelled approximate (``PosteriorBinghamPrior.exact_calibration``;
docs/guides/model-criticism.md).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax.numpy as jnp
import numpy as np
import numpyro

from ...anchors import LatentSpherical
from ...anchors.latent import principal_subspace
from ...errors import AnchorDivError, positive
from ..statistics import cached, broad_spectrum, sandwich
from ..distributions import MatrixBingham, stiefel_site
from ..protocol import check_prior_mode, Hooks, family
from .latent_gaussian import (
    PRIOR_ANCHORS,
    BinghamPosterior,
    LatentFamily,
    PPCALikelihood,
    held_out_options,
    latent_prior_scale,
    latent_rank,
    ppca_scale,
    target_weight,
)


def normalised_covariance(targets, rank: int):
    """Target covariance scaled to trace k ``[d, d]`` (zero if all targets coincide); works on
    numpy and JAX arrays."""
    xp = jnp if isinstance(targets, jnp.ndarray) else np
    c = targets - targets.mean(0)
    cov = c.T @ c / targets.shape[0]
    tr = xp.trace(cov)
    return rank * cov / xp.where(tr > 0, tr, 1.0)


def posterior_like_parameter(broad_projector, targets, *, beta, rank):
    """``Bₙ = (1 − β) P₀ + β Ĉ_T`` ``[d, d]`` (numpy or JAX)."""
    return (1 - beta) * broad_projector + beta * normalised_covariance(targets, rank)


def latent_spherical_model(targets, *, broad_projector, beta, rank, concentration):
    """The explicit NumPyro model of the latent-spherical kind (copy and change it for a custom prior).

    Site: ``U [d, k]`` (deterministic, from ``U_raw``).

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors.
    broad_projector : array_like, shape [d, d]
        U₀U₀ᵀ.
    beta : float
        Target weight in [0, 1].
    rank : int
        k.
    concentration : float
        κ.

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    b = posterior_like_parameter(broad_projector, targets, beta=beta, rank=rank)
    u = stiefel_site("U", targets.shape[1], rank)
    numpyro.factor("U_posterior_like", MatrixBingham(concentration * b, rank).log_prob(u))


def broad_projector(broad: np.ndarray, rank: int, prior: str) -> np.ndarray:
    """U₀U₀ᵀ ``[d, d]`` of the broad rank-k subspace, or ``(k/d) I`` for ``"isotropic"``."""
    d = broad.shape[1]
    if prior == "isotropic":
        return rank / d * np.eye(d)
    if prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    _, u, _ = cached(principal_subspace, broad, rank=rank)
    return u @ u.T


def likelihood_concentration(broad: np.ndarray, n: int, *, rank: int, beta: float) -> float:
    """Default κ = m ℓ²/(2σ²(σ² + ℓ)) (module docstring) from the broad PPCA fit at ``rank`` and
    the pseudo-count m of ``n`` targets at target weight ``beta``."""
    c, signal, _ = ppca_scale(cached(broad_spectrum, broad), rank)
    m, _ = target_weight(n, len(broad), beta)
    return float(c * m * signal)


def latent_spherical_update(
    broad: np.ndarray,
    targets: np.ndarray,
    *,
    rank: int,
    beta: float,
    concentration: float,
    prior: str = "broad",
) -> tuple[BinghamPosterior, dict]:
    """Exact update of the latent-spherical kind.

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    rank : int
        k ≥ 2.
    beta : float
        Target weight in [0, 1].
    concentration : float
        κ of the draws.
    prior : {"broad", "isotropic"}, default "broad"
        The broad projector or the isotropic control.

    Returns
    -------
    posterior : BinghamPosterior
        The exact posterior.
    info : dict
        The explicit model's ``model_kwargs``.
    """
    p0 = broad_projector(broad, rank, prior)
    return latent_spherical_posterior(
        p0, targets, rank=rank, beta=beta, concentration=concentration
    )


def latent_spherical_posterior(
    projector, targets, *, rank: int, beta: float, concentration: float
) -> tuple[BinghamPosterior, dict]:
    """:func:`latent_spherical_update` from the broad projector ``U₀U₀ᵀ [d, d]`` (or the
    isotropic control's)."""
    t = np.asarray(targets, np.float64)
    p0 = np.asarray(projector)
    b = posterior_like_parameter(p0, t, beta=beta, rank=rank)
    post = BinghamPosterior(concentration * b, rank, np.zeros(t.shape[1]))
    kwargs = {"broad_projector": p0, "beta": beta, "rank": rank, "concentration": concentration}
    return post, {"model_kwargs": kwargs}


class PosteriorBinghamLikelihood(PPCALikelihood):
    """:class:`~.latent_gaussian.PPCALikelihood` scoring the draws of the posterior-like
    Bingham model :func:`latent_spherical_model`, whose log joint and prior are closed form."""

    def log_joint(self, targets, draws):
        kw = self.kwargs
        u = np.asarray(draws["U"], np.float64)
        b = posterior_like_parameter(
            np.asarray(kw["broad_projector"]),
            np.asarray(targets, np.float64),
            beta=kw["beta"],
            rank=kw["rank"],
        )
        return float(kw["concentration"]) * np.einsum("sdk,de,sek->s", u, b, u)

    def exact_prior(self):
        kw = self.kwargs
        b0 = (
            float(kw["concentration"]) * (1 - float(kw["beta"])) * np.asarray(kw["broad_projector"])
        )
        return BinghamPosterior(b0, int(kw["rank"]), np.zeros(b0.shape[0]))


@family("latent-spherical")
class PosteriorBinghamPrior(LatentFamily):
    """Posterior-like Bingham prior of the latent-spherical kind.

    Build with :meth:`from_anchors` (as :meth:`BinghamPrior.from_anchors`, rank ≥ 2).

    Parameters
    ----------
    projector : numpy.ndarray, shape [d, d]
        The broad projector U₀U₀ᵀ (isotropic control: ``(k/d) I``).
    signal, noise, scale : float
        The broad PPCA signal ℓ, noise σ² and scale c.
    n_broad : int
        Number of broad anchors.
    rank : int
        k ≥ 2.
    beta : float, optional
        Target weight (None: ``n/(n + prior_anchors)``).
    prior_anchors : float, default 10.0
        The prior's strength in pseudo-anchors.
    concentration : float, optional
        κ of the draws (None: ``m ℓ²/(2σ²(σ² + ℓ))`` from the broad PPCA).
    radius : float, default 1.0
        Radius of the anchor model.
    prior : {"broad", "isotropic"}, default "broad"
        Which projector it is.
    mean : numpy.ndarray, shape [d], optional
        The broad mean.
    origin : str, default ""
        Where the prior came from.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.PosteriorBinghamPrior.from_anchors(broad, rank=2, prior_anchors=10.0)
    >>> ad.infer(prior, broad[:3], tau=20.0).point("mean").rank
    2
    """

    axes = {"projector": "dd", "mean": "d"}

    projector: np.ndarray
    signal: float
    noise: float
    scale: float
    n_broad: int
    rank: int
    beta: float | None = None
    prior_anchors: float = PRIOR_ANCHORS
    concentration: float | None = None
    radius: float = 1.0
    prior: str = "broad"
    mean: np.ndarray | None = None
    origin: str = ""

    static_fields = ("prior", "origin", "rank", "n_broad")
    hooks = Hooks(
        psis_caveat=lambda post: (
            "posterior-like: its draws are not the Bayes posterior of the PPCA likelihood "
            "that scores them, so importance ratios do not reproduce its refits"
        ),
        prior_scale=latent_prior_scale("broad_projector"),
        exact_calibration=(
            "approximate: the posterior-like Bingham draws' 90 % intervals covered 0.845-0.875 "
            "in SBC at d = 4, n = 8 (benchmarks/results/bench_sbc.md; the trace-normalised "
            "target term outweighs the Bayes one there, docs/guides/model-criticism.md), below "
            "the 0.85-0.95 band's centre; read intervals as slightly too narrow at small n"
        ),
        svi_coverage={"‖WᵀU‖²": 0.935, "tr UᵀAU": 0.92, "σ_min(WᵀU)": 0.94},
    )
    model = staticmethod(latent_spherical_model)
    likelihood_type = PosteriorBinghamLikelihood

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        rank: int | Literal["auto", "variance"] | None = "auto",
        beta: float | Literal["auto"] | None = "auto",
        prior_anchors: float | Literal["auto"] = "auto",
        concentration: float | None = None,
        radius: float = 1.0,
        prior: str = "broad",
    ) -> "PosteriorBinghamPrior":
        """Prior from the broad anchors' principal subspace at ``rank``, as
        :meth:`BinghamPrior.from_anchors` (the recipe's rank ≥ 2, strength and target weight by
        default: :func:`.latent_gaussian.held_out_options`).

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Target anchors (needed for ``"auto"``).
        rank : int, "auto", "variance" or None, default "auto"
            Subspace dimension k ≥ 2: the recipe's choice (``"auto"``) or 95 % of the broad
            variance (``"variance"``, None).
        beta : float, "auto" or None, default "auto"
            Target weight in [0, 1] (``"auto"``: n/(n + s), s the recipe's strength; None:
            n/(n + prior_anchors)).
        prior_anchors : float or "auto", default "auto"
            The prior's strength in pseudo-anchors (``"auto"``: the recipe's).
        concentration : float, optional
            κ of the draws (None: from the PPCA likelihood at the chosen strength).
        radius : float, default 1.0
            Radius of the anchor model.
        prior : {"broad", "isotropic"}, default "broad"
            The broad projector or the isotropic control.

        Returns
        -------
        PosteriorBinghamPrior
            The prior.
        """
        broad = np.asarray(broad)
        rank, beta, prior_anchors = held_out_options(
            broad, targets, rank, beta, prior_anchors, low=2
        )
        rank = latent_rank(broad, rank, low=2)
        beta, n0 = cls.check_options(beta, prior_anchors)
        kappa = None if concentration is None else positive("concentration", concentration)
        p0 = broad_projector(broad, rank, check_prior_mode(prior))
        c, signal, noise = ppca_scale(cached(broad_spectrum, broad), rank)
        return cls(
            p0,
            signal,
            noise,
            c,
            len(broad),
            rank,
            beta,
            n0,
            kappa,
            positive("radius", radius),
            prior,
            np.asarray(broad, np.float64).mean(0),
        )

    @property
    def dim(self) -> int:
        return int(np.shape(self.projector)[0])

    def isotropic(self) -> "PosteriorBinghamPrior":
        d = self.dim
        return dataclasses.replace(self, projector=self.rank / d * np.eye(d), prior="isotropic")

    def target_concentration(self, n: int, beta: float) -> float:
        if self.concentration is not None:
            return float(self.concentration)
        m, _ = target_weight(n, self.n_broad, beta)
        return float(self.scale * m * self.signal)

    def exact(self, targets):
        t = np.asarray(targets, np.float64)
        beta = self.target_beta(len(t))
        kappa = self.target_concentration(len(t), beta)
        post, extra = latent_spherical_posterior(
            self.projector, t, rank=self.rank, beta=beta, concentration=kappa
        )
        info = {**self.weight_info(beta), "concentration": kappa, **extra}
        return post, info, {"radius": np.asarray(float(self.radius)), **self.ppca_fixed(t)}

    def prior_kwargs(self) -> dict:
        """At the default β and κ: ``κ(1 − β) = c·ℓ·n₀`` (uncapped), written as β = 0 and that
        concentration."""
        if self.concentration is not None:
            raise AnchorDivError(
                "concentration: a fixed κ gives the prior strength κ(1 − β), "
                "which depends on the number of targets; the prior alone is "
                "defined at the default concentration"
            )
        kappa = float(self.scale) * float(self.signal) * self.default_weight()
        return {
            "broad_projector": np.asarray(self.projector),
            "beta": 0.0,
            "rank": self.rank,
            "concentration": kappa,
        }

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return LatentSpherical.from_basis(
            np.asarray(p["U"], np.dtype(dtype)), tau=tau, radius=float(fixed["radius"])
        )

    @classmethod
    def project(cls, kwargs, u):
        return {**kwargs, "broad_projector": sandwich(u, kwargs["broad_projector"])}


__all__ = [
    "latent_spherical_posterior",
    "PosteriorBinghamLikelihood",
    "PosteriorBinghamPrior",
    "broad_projector",
    "latent_spherical_model",
    "latent_spherical_update",
    "likelihood_concentration",
    "normalised_covariance",
    "posterior_like_parameter",
]
