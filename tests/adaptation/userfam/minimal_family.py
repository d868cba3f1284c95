"""A user's family with only the required members of :class:`anchordiv.Family` (``sites``,
``model``, ``from_anchors``, ``isotropic``, ``prior_kwargs``, ``to_model``) and nothing else:
no ``origin`` field, no ``prior`` field or keyword, no closed-form update (so NUTS or SVI runs
it).  The module registers it on import under :data:`KIND` (for ``--family
tests/adaptation/userfam/minimal_family.py:MinimalPrior``).

Model: a latent scale ``s ~ LogNormal(0, 0.3)``; ``μ ~ N(m₀, s·Σ/κ₀)`` with Σ the broad
covariance; targets ``t_i ~ N(μ, Σ)``; ``Sigma`` = Σ recorded.  Its sites are ``mu`` and
``Sigma``; ``scale`` is a latent site of its own.
"""

from __future__ import annotations

import numpy as np
import numpyro
import numpyro.distributions as dist

import anchordiv as ad

KIND = "user-minimal"


def scaled_mean_model(targets, *, mu0, cov, kappa0):
    """``s ~ LogNormal(0, 0.3)``, ``μ ~ N(mu0, s·cov/kappa0)``, ``targets ~ N(μ, cov)``."""
    scale = numpyro.sample("scale", dist.LogNormal(0.0, 0.3))
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, scale * cov / kappa0))
    numpyro.deterministic("Sigma", cov)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, cov), obs=targets)


@ad.family(KIND)
class MinimalPrior(ad.Family):
    """Gaussian mean with a latent prior scale; the broad covariance held fixed."""

    mu0: np.ndarray
    cov: np.ndarray
    kappa0: float = 10.0

    sites = ("mu", "Sigma")
    model = staticmethod(scaled_mean_model)

    @classmethod
    def from_anchors(cls, broad, targets=None, *, kappa0: float = 10.0):
        b = np.asarray(broad, np.float64)
        return cls(b.mean(0), np.cov(b, rowvar=False) + 1e-3 * np.eye(b.shape[1]), kappa0)

    def isotropic(self):
        d = len(self.mu0)
        return type(self)(self.mu0, np.trace(self.cov) / d * np.eye(d), self.kappa0)

    def prior_kwargs(self):
        return {"mu0": self.mu0, "cov": self.cov, "kappa0": self.kappa0}

    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return ad.Gaussian.from_moments(
            np.asarray(p["mu"], dtype), np.asarray(p["Sigma"], np.float64), tau=tau
        )
