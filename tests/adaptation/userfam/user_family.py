"""A family a user writes in their own module, outside the package, after anchordiv was imported
(issue 26): the Gaussian anchor model whose mean is learned and whose covariance is the broad
anchors' own, held fixed — conjugate, so every method runs on it.

It subclasses only :class:`anchordiv.Family` and defines 8 members (``sites``, ``model``, ``exact_types``,
``from_anchors``, ``isotropic``, ``prior_kwargs``, ``to_model`` and the :class:`Conjugate`
capability ``exact``); the log likelihood, simulated anchors, the log joint, prior draws,
ArviZ quantities, persistence and CLI options all come from the library's generic defaults
(its NumPyro model traced, its dataclass fields, its ``from_anchors`` signature).

Prior ``μ ~ N(m₀, Σ/κ₀)`` with Σ the broad covariance; targets ``t_i ~ N(μ, Σ)``; posterior
``μ | T ~ N((κ₀m₀ + Σtᵢ)/(κ₀ + n), Σ/(κ₀ + n))``.  ``register()`` defines and registers it
under :data:`KIND`; ``unregister()`` removes it again (tests restore the registry they found).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpyro
import numpyro.distributions as dist

import anchordiv as ad

KIND = "user-mean"


def mean_model(targets, *, mu0, cov, kappa0):
    """``μ ~ N(mu0, cov/kappa0)``; ``targets ~ N(μ, cov)``; ``Sigma`` = cov, recorded."""
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, cov / kappa0))
    numpyro.deterministic("Sigma", cov)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, cov), obs=targets)


@dataclasses.dataclass(frozen=True)
class MeanPosterior:
    """The exact posterior ``μ ~ N(m, cov/kappa)`` (Σ = cov fixed)."""

    m: np.ndarray
    cov: np.ndarray
    kappa: float

    def mean(self):
        return {"mu": self.m, "Sigma": self.cov}

    def mode(self):
        return self.mean()

    def sample(self, rng, n):
        chol = np.linalg.cholesky(self.cov / self.kappa)
        mu = self.m + rng.normal(size=(n, len(self.m))) @ chol.T
        return {"mu": mu, "Sigma": np.broadcast_to(self.cov, (n,) + self.cov.shape).copy()}


def define():
    """The class statement a user's module would hold (returned unregistered)."""

    class FixedCovariancePrior(ad.Family):
        """Gaussian mean prior with the broad covariance held fixed."""

        mu0: np.ndarray
        cov: np.ndarray
        kappa0: float = 10.0
        prior: str = "broad"

        sites = ("mu", "Sigma")
        model = staticmethod(mean_model)
        exact_types = (MeanPosterior,)

        @classmethod
        def from_anchors(cls, broad, targets=None, *, kappa0: float = 10.0, prior="broad"):
            b = np.asarray(broad, np.float64)
            cov = np.cov(b, rowvar=False) + 1e-3 * np.eye(b.shape[1])
            out = cls(b.mean(0), cov, float(kappa0))
            return out.isotropic() if prior == "isotropic" else out

        def isotropic(self):
            d = len(self.mu0)
            iso = np.trace(self.cov) / d * np.eye(d)
            return dataclasses.replace(self, cov=iso, prior="isotropic")

        def prior_kwargs(self):
            return {"mu0": self.mu0, "cov": self.cov, "kappa0": self.kappa0}

        def exact(self, targets):
            t = np.asarray(targets, np.float64)
            k = self.kappa0 + len(t)
            post = MeanPosterior((self.kappa0 * self.mu0 + t.sum(0)) / k, self.cov, k)
            return post, {"kappa0": self.kappa0}, {}

        @classmethod
        def to_model(cls, p, tau, dtype, fixed):
            return ad.Gaussian.from_moments(
                np.asarray(p["mu"], dtype), np.asarray(p["Sigma"], np.float64), tau=tau
            )

    return FixedCovariancePrior


#: the members the user wrote (the library's own families define more: closed forms)
MEMBERS = (
    "sites",
    "model",
    "exact_types",
    "from_anchors",
    "isotropic",
    "prior_kwargs",
    "exact",
    "to_model",
)


def register() -> type:
    """Define and register the family under :data:`KIND` (``ad.family(KIND)(cls)``)."""
    return ad.family(KIND)(define())


def unregister() -> None:
    from anchordiv.adaptation.protocol import FAMILIES

    FAMILIES.pop(KIND, None)
