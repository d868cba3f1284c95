"""Dirichlet–NIW prior for the Gaussian mixture anchor model (MATH.md, "Adaptation", D.5).

The broad EM fit (:func:`anchordiv.anchors.mixture.em`) gives π⁰, μ⁰_k, Σ⁰_k.  Prior:
``π ~ Dir(1 + α₀ π⁰)`` and, per component, ``Σ_k ~ IW(ν₀, (ν₀ − d − 1) Σ⁰_k)``,
``μ_k | Σ_k ~ N(μ⁰_k, Σ_k/κ₀)``.  Units: α₀ is the number of pseudo-anchors the broad weights
are worth in total, κ₀ and ν₀ − d − 1 the pseudo-anchors per component (as for the NIW).

Why ``1 + α₀π⁰`` and not ``α₀π⁰``: the mode of ``Dir(α)`` is ``∝ max(α_k − 1, 0)``, so with
``α₀π⁰`` every broad component with ``α₀π⁰_k < 1`` (below 10 % weight at the default α₀ = 10)
had weight 0 in the MAP as soon as no target landed near it — a broad mode silently vanished.
With the added uniform pseudo-count the prior mode is exactly π⁰ and the posterior mode
``∝ α₀π⁰_k + n_k`` (n_k the soft target counts) keeps every broad component in proportion to its
broad weight.  Cost: the posterior mean weights ``(1 + α₀π⁰_k + n_k)/(K + α₀ + n)`` carry one extra
pseudo-anchor per component (an O(K/n) shift, negligible once targets are many).

MAP-EM: E-step responsibilities under the current parameters
(:func:`~anchordiv.anchors.mixture.responsibilities`), M-step the soft-count conjugate updates
(:func:`~anchordiv.anchors.mixture.weighted_moments` then :meth:`NIW.update_stats` per
component) followed by the modes: ``π_k ∝ max(α_k − 1, 0)`` (floored at 1e-12), ``μ_k = μₙ``,
``Σ_k = Ψₙ/(νₙ + d + 2)``.  With one component this is the NIW joint mode.  The posterior "mean"
summary is the posterior mean given the final responsibilities.  ``prior="isotropic"`` replaces
every Σ⁰_k by ``tr(Σ⁰_k)/d · I``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpyro
import numpyro.distributions as dist

from ...anchors.mixture import em, responsibilities, weighted_moments
from ...errors import AnchorDivError
from .cache import cached
from .niw import NIW, check_nu0

MIN_WEIGHT = 1e-12


def dirichlet_niw_model(targets, *, weights0, alpha0, means0, kappa0, nu0, psi0):
    """The explicit NumPyro model of the mixture kind (copy and change it for a custom prior).

    Sites: ``weights [K]``, ``covs [K, d, d]``, ``means [K, d]``, observed ``targets``.

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    weights0 : array_like, shape [K]
        Prior mixture weights π⁰.
    alpha0 : float
        Dirichlet strength.
    means0 : array_like, shape [K, d]
        Prior component means.
    kappa0 : float
        Mean strength.
    nu0 : float
        Covariance degrees of freedom.
    psi0 : array_like, shape [K, d, d]
        Prior component scale matrices.

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    k = means0.shape[0]
    weights = numpyro.sample("weights", dist.Dirichlet(alpha0 * weights0))
    with numpyro.plate("components", k):
        covs = numpyro.sample("covs", dist.InverseWishart(nu0, scale_matrix=psi0))
        means = numpyro.sample("means", dist.MultivariateNormal(means0, covs / kappa0))
    mixture = dist.MixtureSameFamily(
        dist.Categorical(probs=weights), dist.MultivariateNormal(means, covs)
    )
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", mixture, obs=targets)


def dirichlet_mode(alpha: np.ndarray) -> np.ndarray:
    """Mode of Dir(α) on the simplex ``[K]`` (boundary where α_k < 1), floored at 1e-12."""
    w = np.clip(alpha - 1.0, 0.0, None)
    w = w / w.sum() if w.sum() > 0 else alpha / alpha.sum()
    w = np.maximum(w, MIN_WEIGHT)
    return w / w.sum()


@dataclass(frozen=True)
class DirichletNIW:
    """Dirichlet–NIW parameters of the mixture kind (float64).

    Parameters
    ----------
    alpha : numpy.ndarray, shape [K]
        Dirichlet concentration.
    mu : numpy.ndarray, shape [K, d]
        Per-component NIW means.
    kappa : numpy.ndarray, shape [K]
        Per-component κ.
    nu : numpy.ndarray, shape [K]
        Per-component ν.
    psi : numpy.ndarray, shape [K, d, d]
        Per-component Ψ.
    """

    alpha: np.ndarray
    mu: np.ndarray
    kappa: np.ndarray
    nu: np.ndarray
    psi: np.ndarray

    def component(self, k: int) -> NIW:
        return NIW(self.mu[k], float(self.kappa[k]), float(self.nu[k]), self.psi[k])

    @classmethod
    def stack(cls, alpha, parts: list[NIW]) -> "DirichletNIW":
        return cls(
            np.asarray(alpha, np.float64),
            np.stack([p.mu for p in parts]),
            np.array([p.kappa for p in parts]),
            np.array([p.nu for p in parts]),
            np.stack([p.psi for p in parts]),
        )

    def update_soft(self, targets: np.ndarray, resp: np.ndarray) -> "DirichletNIW":
        """Conjugate update with soft assignments ``resp [n, K]``."""
        nk, means, covs = weighted_moments(targets, resp, 0.0)
        parts = [
            self.component(k).update_stats(nk[k], means[k], nk[k] * covs[k]) for k in range(len(nk))
        ]
        return DirichletNIW.stack(self.alpha + nk, parts)

    def _summary(self, which: str) -> dict[str, np.ndarray]:
        parts = [getattr(self.component(k), which)() for k in range(len(self.alpha))]
        weights = dirichlet_mode(self.alpha) if which == "mode" else self.alpha / self.alpha.sum()
        return {
            "weights": weights,
            "means": np.stack([p["mu"] for p in parts]),
            "covs": np.stack([p["Sigma"] for p in parts]),
        }

    def mode(self) -> dict[str, np.ndarray]:
        """Component-wise joint modes and the Dirichlet mode."""
        return self._summary("mode")

    def mean(self) -> dict[str, np.ndarray]:
        """Posterior means (Dirichlet mean, NIW means)."""
        return self._summary("mean")

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``{"weights": [n, K], "means": [n, K, d], "covs": [n, K, d, d]}``."""
        draws = [self.component(k).sample(rng, n) for k in range(len(self.alpha))]
        return {
            "weights": rng.dirichlet(self.alpha, size=n),
            "means": np.stack([x["mu"] for x in draws], axis=1),
            "covs": np.stack([x["Sigma"] for x in draws], axis=1),
        }

    def model_kwargs(self) -> dict:
        """Keyword arguments of :func:`dirichlet_niw_model` (a prior with shared κ₀, ν₀)."""
        a0 = float(self.alpha.sum())
        return {
            "weights0": self.alpha / a0,
            "alpha0": a0,
            "means0": self.mu,
            "kappa0": float(self.kappa[0]),
            "nu0": float(self.nu[0]),
            "psi0": self.psi,
        }


def mixture_prior(
    broad: np.ndarray,
    *,
    components: int,
    seed: int,
    reg: float,
    alpha0: float,
    kappa0: float,
    nu0: float,
    prior: str = "broad",
) -> DirichletNIW:
    """The Dirichlet–NIW prior centred on the broad EM fit.

    The Dirichlet is ``1 + α₀π⁰``: its mode is π⁰ (module docstring).

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    components : int
        K.
    seed : int
        Seed of the EM fit.
    reg : float
        Relative ridge of the EM covariances.
    alpha0, kappa0, nu0 : float
        The strengths.
    prior : {"broad", "isotropic"}, default "broad"
        The broad components or the isotropic control.

    Returns
    -------
    DirichletNIW
        The prior parameters.
    """
    fit = cached(em, broad, components, reg=reg, seed=seed)
    d = broad.shape[1]
    covs = fit.covs
    if prior == "isotropic":
        covs = np.stack([np.trace(c) / d * np.eye(d) for c in covs])
    elif prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    nu0 = check_nu0(nu0, d)
    parts = [NIW.from_scale(m, c, kappa0, nu0) for m, c in zip(fit.means, covs)]
    return DirichletNIW.stack(1.0 + alpha0 * fit.weights, parts)


def map_em(
    prior: DirichletNIW, targets: np.ndarray, *, max_iter: int = 200, tol: float = 1e-9
) -> tuple[DirichletNIW, np.ndarray, int]:
    """MAP-EM of the mixture posterior from the prior mode.

    Parameters
    ----------
    prior : DirichletNIW
        The prior.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    max_iter : int, default 200
        Iterations.
    tol : float, default 1e-9
        Stop when no mode parameter moves by more (largest absolute change).

    Returns
    -------
    posterior : DirichletNIW
        The posterior given the final responsibilities (its :meth:`~DirichletNIW.mode` is the
        MAP estimate).
    responsibilities : numpy.ndarray, shape [n, K]
        Component responsibilities of the targets.
    iterations : int
        Iterations run.
    """
    t = np.asarray(targets, np.float64)
    params = prior.mode()
    for it in range(1, max_iter + 1):  # noqa: B007 (returned: the iterations run)
        resp, _ = responsibilities(t, params["weights"], params["means"], params["covs"])
        post = prior.update_soft(t, resp)
        new = post.mode()
        change = max(np.max(np.abs(new[k] - params[k])) for k in new)
        params = new
        if change <= tol:
            break
    return post, resp, it


__all__ = ["DirichletNIW", "dirichlet_mode", "dirichlet_niw_model", "map_em", "mixture_prior"]
