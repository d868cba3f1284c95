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

    ``kind``; ``method`` ("exact" | "nuts" | "svi"); ``tau``; ``dtype`` of the adapted models;
    ``info`` (chosen hyperparameters, counts, diagnostics — JSON-able); ``family`` (exact
    posterior parameters, :mod:`anchordiv.priors`) or ``samples`` (``{site: [chains, draws,
    ...]}``: every latent and deterministic site of the model that ran — NUTS draws or SVI guide
    draws) with NUTS sample ``stats``; ``points`` (summaries computed at fit time, e.g. the SVI
    guide's MAP); ``elbo`` (SVI: the ELBO per step); ``fixed`` (arrays every draw shares: latent
    mean, radius; subspace runs add ``basis [d, d]``); ``completion`` (subspace runs: the exact
    full-d posterior of the default prior that supplies the geometry outside the subspace, see
    :mod:`.subspace`); ``raw`` (the NumPyro ``MCMC`` or SVI result object for advanced use; not
    saved).
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
    points: dict | None = None
    elbo: np.ndarray | None = None
    completion: object = None
    raw: object = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def subspace(self) -> int | None:
        """The subspace rank r of a subspace run (None otherwise)."""
        return self.info.get("subspace")

    def params(self, which: str = "mean") -> dict[str, np.ndarray]:
        """Point-summary parameters (``"mean"`` or ``"map"``) as float64 arrays."""
        if which not in ("mean", "map"):
            raise AnchorDivError(f"which: 'mean' or 'map', got {which!r}")
        if self.family is not None:
            return self.family.mode() if which == "map" else self.family.mean()
        if self.points and which in self.points:
            p = self.points[which]
        elif which == "mean" and self.info.get("guide") == "delta":
            raise AnchorDivError(f"point('mean'): {self.info.get('point_mean', 'none')}")
        else:
            lp = self.flat_lp() if which == "map" else None
            p = summarise_samples(self.kind, self.flat_samples(), which, lp)
        return self._lift([p], which=which)[0]

    def _lift(self, ps: list[dict], which: str = "mean", rng=None) -> list[dict]:
        if self.subspace is None:
            return ps
        from .subspace import lift

        return lift(self.kind, ps, self.completion, self.fixed["basis"], self.subspace,
                    which=which, rng=rng)

    def point(self, which: str = "mean") -> AnchorModel:
        """The adapted anchor model at the posterior mean or MAP (usable with ad.divergence).

        Latent kinds: both give the principal subspace of the posterior (for sampled posteriors,
        ``"mean"`` is the top-k eigenvectors of the sampled E[UUᵀ])."""
        return to_model(self.kind, self.params(which), self.tau, self.dtype, self.fixed)

    def draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        """``n`` posterior parameter draws ``{site: [n, ...]}`` (sampled posteriors: resampled
        from the stored draws without replacement where possible; subspace runs: lifted with
        fresh draws of the geometry outside the subspace)."""
        n = integer("n", n, low=1)
        rng = np.random.default_rng(seed)
        if self.family is not None:
            from . import mixture_gibbs      # mixture: the assignments are sampled too

            if mixture_gibbs.applies(self):
                return mixture_gibbs.posterior_draws(self, rng, n)
            return self.family.sample(rng, n)
        flat = self.flat_samples()
        total = len(next(iter(flat.values())))
        idx = rng.choice(total, size=n, replace=n > total)
        if self.subspace is None:
            return {k: v[idx] for k, v in flat.items()}
        from ..priors import SITES

        full = self._lift([{k: flat[k][i] for k in SITES[self.kind]} for i in idx], rng=rng)
        return {k: np.stack([f[k] for f in full]) for k in full[0]}

    def sample(self, seed: int, n: int) -> list[AnchorModel]:
        """``n`` posterior draws as anchor models (same shapes: scoring them never retraces)."""
        d = self.draws(seed, n)
        return [to_model(self.kind, {k: v[i] for k, v in d.items()}, self.tau, self.dtype,
                         self.fixed) for i in range(n)]

    def plot_elbo(self, path) -> Path:
        """Write the SVI ELBO per step to the PNG ``path``."""
        if self.elbo is None:
            raise AnchorDivError(f"plot_elbo: a {self.method} posterior has no ELBO trace "
                                 f"(only method='svi')")
        from ..plots import elbo_plot

        return elbo_plot(self.elbo, path, title=f"SVI ({self.info.get('guide')}) — {self.kind}")

    def inference_data(self, num_draws: int | None = None, seed: int = 0, **options):
        """ArviZ InferenceData of interpretable posterior quantities (+ NUTS sample stats, and
        the prior / log-likelihood / predictive groups); see
        :func:`anchordiv.checks.uncertainty.inference_data` for ``num_draws`` and ``options``."""
        from ..checks.uncertainty import inference_data

        return inference_data(self, num_draws=num_draws, seed=seed, **options)

    def flat_samples(self) -> dict[str, np.ndarray]:
        """NUTS samples with chains merged ``{site: [chains·draws, ...]}``."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def flat_lp(self) -> np.ndarray | None:
        """Log posterior density of each draw (chains merged) that ``"map"`` maximises: the
        model's log joint at the constrained parameters (``stats["log_density"]``, see
        :func:`~.density.with_log_density`).  Posteriors sampled without it fall back to
        −potential energy, which is the density of NUTS's *unconstrained* coordinates
        (Jacobians included), with a warning."""
        if not self.stats:
            return None
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


