"""The latent spherical family: posterior-like Bingham ``U ~ MatrixBingham(κ Bₙ)``,
``Bₙ = (1 − β) U₀U₀ᵀ + β Ĉ_T``, with the concentration κ derived from the PPCA likelihood
(docs/mathematics.md, "Latent spherical: a posterior-like Bingham") — its explicit NumPyro model, exact update and the prior object
:class:`PosteriorBinghamPrior`.

    prior = ad.PosteriorBinghamPrior.from_anchors(broad [N, d], rank=8)
    post = prior.update(targets [n, d])          # U ~ MatrixBingham(κ Bₙ)

Site: ``U [d, k]``; the anchor model's radius is ``radius`` (1).  U₀ ``[d, k]`` is the broad
principal subspace, Ĉ_T the target covariance normalised to trace k (the projector's), β ∈ [0, 1]
the targets' weight (0: the broad subspace, 1: the target subspace); the summary is the top-k
eigenvectors of Bₙ.  "Posterior-like": Bₙ is not a Bayes posterior of a likelihood; κ sets the
draws' spread.  ``prior="isotropic"`` replaces U₀U₀ᵀ by ``(k/d) I``.

Default κ = c·m·ℓ = m ℓ²/(2σ²(σ² + ℓ)): the broad term of the latent Gaussian kind's posterior
``MB(c·m·[(1 − β) Cov(B) + β Cov(T)])`` on the rank-k PPCA fit ``Cov(B) = σ² I + ℓ U₀U₀ᵀ``.  The
target term κβĈ_T is not the Bayes c·S_T, so the draws are labelled approximate
(``PosteriorBinghamPrior.hooks.exact_calibration``, docs/guides/model-criticism.md).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax.numpy as jnp
import numpy as np
import numpyro

from ...anchors import LatentSpherical
from ...anchors.latent import principal_subspace
from ...errors import positive, AnchorDivError
from ..statistics import cached, sandwich
from ..distributions import MatrixBingham, stiefel_site
from ..registry import check_prior_mode, family
from ..protocol import Hooks
from .latent_gaussian import (
    PRIOR_ANCHORS,
    BinghamPosterior,
    LatentFamily,
    PPCALikelihood,
    latent_prior_scale,
    ppca_fit,
    target_weight,
)


def normalised_covariance(targets, rank: int):
    """Target covariance scaled to trace k ``[d, d]`` (0 if the targets coincide; numpy or JAX)."""
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
    if check_prior_mode(prior) == "isotropic":
        return rank / d * np.eye(d)
    _, u, _ = cached(principal_subspace, broad, rank=rank)
    return u @ u.T


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
    b = np.asarray(broad)
    fam = PosteriorBinghamPrior.build(b, rank, beta, PRIOR_ANCHORS, prior, concentration)
    return fam.posterior(targets, beta)[:2]


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

    def prior_parameter(self) -> np.ndarray:
        kw = self.kwargs
        return (
            float(kw["concentration"]) * (1 - float(kw["beta"])) * np.asarray(kw["broad_projector"])
        )


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

    hooks = Hooks(
        psis_caveat=lambda post: (
            "posterior-like: its draws are not the Bayes posterior of the PPCA likelihood "
            "that scores them, so importance ratios do not reproduce its refits"
        ),
        prior_scale=latent_prior_scale("broad_projector"),
        exact_calibration=(
            "approximate: the posterior-like Bingham draws' 90 % intervals covered less than "
            "90 % in SBC at d = 4, n = 8 (benchmarks/results/bench_sbc.md; the trace-normalised "
            "target term outweighs the Bayes one there, docs/guides/model-criticism.md): read "
            "intervals as slightly too narrow at small n"
        ),
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
            The prior."""
        kappa = None if concentration is None else positive("concentration", concentration)
        own = {"concentration": kappa, "radius": positive("radius", radius)}
        return cls.from_options(broad, targets, rank, beta, prior_anchors, prior, low=2, **own)

    @classmethod
    def build(cls, broad, rank, beta, prior_anchors, prior, concentration=None, radius=1.0):
        p0, (c, signal, noise) = broad_projector(broad, rank, prior), ppca_fit(broad, rank)
        mean = np.asarray(broad, np.float64).mean(0)
        own = (concentration, radius, prior, mean)
        return cls(p0, signal, noise, c, len(broad), rank, beta, prior_anchors, *own)

    def isotropic(self) -> "PosteriorBinghamPrior":
        d = self.dim
        return dataclasses.replace(self, projector=self.rank / d * np.eye(d), prior="isotropic")

    def posterior(self, targets, beta):
        t, kappa = np.asarray(targets, np.float64), self.concentration
        if kappa is None:  # c·m·ℓ = m ℓ²/(2σ²(σ² + ℓ)) (module docstring)
            kappa = self.scale * target_weight(len(t), self.n_broad, beta) * self.signal
        kappa = float(kappa)
        p0 = np.asarray(self.projector)
        b = posterior_like_parameter(p0, t, beta=beta, rank=self.rank)
        post = BinghamPosterior(kappa * b, self.rank, np.zeros(t.shape[1]))
        kwargs = {"broad_projector": p0, "beta": beta, "rank": self.rank, "concentration": kappa}
        info = {"concentration": kappa, "model_kwargs": kwargs}
        return post, info, {"radius": np.asarray(float(self.radius))}

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
        p0 = np.asarray(self.projector)
        return {"broad_projector": p0, "beta": 0.0, "rank": self.rank, "concentration": kappa}

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return LatentSpherical.from_basis(
            np.asarray(p["U"], np.dtype(dtype)), tau=tau, radius=float(fixed["radius"])
        )

    @classmethod
    def project(cls, kwargs, u):
        return {**kwargs, "broad_projector": sandwich(u, kwargs["broad_projector"])}
