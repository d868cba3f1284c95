"""The posterior object every inference method returns, and its point summaries.

A :class:`Posterior` holds either an exact conjugate family (:mod:`anchordiv.priors`) or draws
of the model's sites (NUTS, SVI guide draws); ``point``/``sample`` turn either into anchor models
(:func:`to_model`), so scoring never depends on how the posterior was computed.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from ..anchors import Gaussian, GaussianMixture, LatentGaussian, LatentSpherical
from ..anchors.base import AnchorModel, as_tau, psd_factor
from ..errors import AnchorDivError, integer


@dataclasses.dataclass
class Posterior:
    """Result of :func:`adapt`.

    ``kind``; ``method`` ("exact" | "nuts"); ``tau``; ``dtype`` of the adapted models;
    ``info`` (chosen hyperparameters, counts — JSON-able); ``family`` (exact posterior
    parameters, :mod:`anchordiv.priors`) or ``samples``/``stats`` (NUTS: ``[chains, draws, ...]``
    sites and sample statistics); ``fixed`` (arrays every draw shares: latent mean, radius).
    """

    kind: str
    method: str
    tau: float
    dtype: str
    info: dict
    family: object = None
    samples: dict | None = None
    stats: dict | None = None
    fixed: dict = dataclasses.field(default_factory=dict)

    def params(self, which: str = "mean") -> dict[str, np.ndarray]:
        """Point-summary parameters (``"mean"`` or ``"map"``) as float64 arrays."""
        if which not in ("mean", "map"):
            raise AnchorDivError(f"which: 'mean' or 'map', got {which!r}")
        if self.family is not None:
            return self.family.mode() if which == "map" else self.family.mean()
        lp = self.flat_lp() if which == "map" else None
        return summarise_samples(self.kind, self.flat_samples(), which, lp)

    def point(self, which: str = "mean") -> AnchorModel:
        """The adapted anchor model at the posterior mean or MAP (usable with ad.divergence).

        Latent kinds: both give the principal subspace of the posterior (for NUTS, ``"mean"`` is
        the top-k eigenvectors of the sampled E[UUᵀ], ``"map"`` the highest-density draw)."""
        return to_model(self.kind, self.params(which), self.tau, self.dtype, self.fixed)

    def draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        """``n`` posterior parameter draws ``{site: [n, ...]}`` (NUTS: resampled from the
        chains without replacement where possible)."""
        n = integer("n", n, low=1)
        rng = np.random.default_rng(seed)
        if self.family is not None:
            return self.family.sample(rng, n)
        flat = self.flat_samples()
        total = len(next(iter(flat.values())))
        idx = rng.choice(total, size=n, replace=n > total)
        return {k: v[idx] for k, v in flat.items()}

    def sample(self, seed: int, n: int) -> list[AnchorModel]:
        """``n`` posterior draws as anchor models (same shapes: scoring them never retraces)."""
        d = self.draws(seed, n)
        return [to_model(self.kind, {k: v[i] for k, v in d.items()}, self.tau, self.dtype,
                         self.fixed) for i in range(n)]

    def inference_data(self, num_draws: int | None = None, seed: int = 0, **options):
        """ArviZ InferenceData of interpretable posterior quantities (+ NUTS sample stats, and
        the prior / log-likelihood / predictive groups); see
        :func:`anchordiv.uncertainty.inference_data` for ``num_draws`` and ``options``."""
        from ..uncertainty import inference_data

        return inference_data(self, num_draws=num_draws, seed=seed, **options)

    def flat_samples(self) -> dict[str, np.ndarray]:
        """NUTS samples with chains merged ``{site: [chains·draws, ...]}``."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def flat_lp(self) -> np.ndarray:
        """Log posterior density of each draw (chains merged) that ``"map"`` maximises: the
        model's log joint at the constrained parameters (``stats["log_density"]``, see
        :func:`~.density.with_log_density`).  Posteriors sampled without it fall back to
        −potential energy, which is the density of NUTS's *unconstrained* coordinates
        (Jacobians included), with a warning."""
        if "log_density" in self.stats:
            return np.asarray(self.stats["log_density"]).reshape(-1)
        warnings.warn("point('map'): this posterior has no stats['log_density'] (the density "
                      "of the constrained parameters); using −potential energy, which includes "
                      "the Jacobian of the unconstrained coordinates — see "
                      "anchordiv.adapt.density.with_log_density", stacklevel=3)
        return -self.stats["potential_energy"].reshape(-1)

    def save(self, path, **card) -> Path:
        """Save to the directory ``path`` (see :func:`~.persistence.save_posterior`)."""
        from .persistence import save_posterior

        return save_posterior(self, path, **card)


def to_model(kind: str, p: dict, tau: float, dtype: str, fixed: dict) -> AnchorModel:
    """Anchor model from one set of parameters (float64 arrays) in ``dtype``."""
    dt = np.dtype(dtype)
    if kind == "gaussian":
        return Gaussian(jnp.asarray(p["mu"], dt), jnp.asarray(cov_factor(p["Sigma"]), dt),
                        as_tau(tau, dt))
    if kind == "latent-gaussian":
        return LatentGaussian(jnp.asarray(fixed["mean"], dt), jnp.asarray(p["U"], dt),
                              as_tau(tau, dt))
    if kind == "latent-spherical":
        return LatentSpherical.from_basis(np.asarray(p["U"], dt), tau=tau,
                                          radius=float(fixed["radius"]))
    return GaussianMixture.from_params(p["weights"], np.asarray(p["means"], dt), p["covs"],
                                       tau=tau)


def cov_factor(cov: np.ndarray) -> np.ndarray:
    """F with F Fᵀ = Σ: Cholesky (O(d³/3), fast at d = 768) with an eigen fallback."""
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return psd_factor(cov)


def summarise_samples(kind: str, s: dict, which: str, lp: np.ndarray | None) -> dict:
    """Point parameters from samples ``{site: [S, ...]}``: the draw of highest posterior
    density ``lp [S]`` of the constrained parameters (``"map"``) or the mean (latent kinds:
    principal subspace of the mean projector)."""
    if which == "map":
        i = int(np.argmax(lp))
        return {k: v[i] for k, v in s.items()}
    if kind in ("latent-gaussian", "latent-spherical"):
        u = s["U"]
        proj = np.einsum("sik,sjk->ij", u, u) / len(u)
        _, v = np.linalg.eigh(proj)
        return {"U": np.ascontiguousarray(v[:, ::-1][:, : u.shape[-1]])}
    return {k: v.mean(0) for k, v in s.items()}


