"""The diagonal Gaussian family: a Gaussian anchor model with a diagonal covariance and a
conjugate Normal–inverse-gamma prior per coordinate (``docs/guides/adaptation.md``, "Adding a
family").

    prior = ad.DiagonalPrior.from_anchors(broad [N, d], kappa0=10, nu0=10)
    post = prior.update(targets [n, d])          # or ad.adapt("diagonal-gaussian", broad, t)

Per coordinate j: ``σ²_j ~ InvGamma(a₀, b₀ⱼ)``, ``μ_j | σ²_j ~ N(m₀ⱼ, σ²_j/κ₀)``,
``t_ij ~ N(μ_j, σ²_j)``, with ``m₀ = mean(B)``, ``a₀ = ν₀/2 + 1``, ``b₀ = (ν₀/2)·diag Cov(B)``
(so ``E[σ²] = diag Cov(B)``).  Conjugate update (n targets, mean t̄, scatter
``s_j = Σ_i (t_ij − t̄_j)²``): ``κₙ = κ₀ + n``, ``mₙ = (κ₀m₀ + n t̄)/κₙ``, ``aₙ = a₀ + n/2``,
``bₙ = b₀ + s/2 + κ₀n(t̄ − m₀)²/(2κₙ)``; closed-form marginal likelihood.  O(n d) at any d, but
coordinate-wise: no principal-subspace projection (``subspace=`` is refused).  Sites: ``mu
[d]``, ``sigma2 [d]`` (variances).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import scipy.special

from ...anchors import Gaussian
from ...anchors.base import as_tau, jax_dtype
from ...anchors.gaussian import moments
from ...errors import positive
from ..statistics import cached
from ..protocol import Family, check_prior_mode, SMALL_D, Hooks, family
from ..model import Likelihood
from .gaussian import check_proper, mean_quantities


def diagonal_model(targets, *, mu0, kappa0, a0, b0):
    """The explicit NumPyro model (copy and change it).  ``targets [n, d]``; ``mu0 [d]``;
    ``kappa0 > 0``; ``a0 > 0``; ``b0 [d] > 0``.  Sites: ``sigma2 [d]``, ``mu [d]``, observed
    ``targets``."""
    sigma2 = numpyro.sample("sigma2", dist.InverseGamma(a0, b0).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(mu0, jnp.sqrt(sigma2 / kappa0)).to_event(1))
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.Normal(mu, jnp.sqrt(sigma2)).to_event(1), obs=targets)


@dataclasses.dataclass(frozen=True)
class NormalInverseGamma:
    """Per-coordinate Normal–inverse-gamma parameters (float64) of the diagonal kind: for each
    coordinate j, ``σ_j² ~ InvGamma(a, b_j)`` and ``μ_j | σ_j² ~ N(mu_j, σ_j²/kappa)``
    (docs/mathematics.md, "Adaptation: conjugate updates").

    Parameters
    ----------
    mu : numpy.ndarray, shape [d]
        The mean's location.
    kappa : float
        The mean's strength (pseudo-count), > 0.
    a : float
        The shape of every coordinate's inverse-gamma, shared across coordinates.
    b : numpy.ndarray, shape [d]
        The per-coordinate inverse-gamma scales, > 0.

    Attributes
    ----------
    mu, kappa, a, b
        As given.  :meth:`update` returns the conjugate posterior given targets ``[n, d]``
        (``kappa + n``, ``a + n/2``); :meth:`power_scaled` the density raised to a power.
    """

    mu: np.ndarray
    kappa: float
    a: float
    b: np.ndarray

    def update(self, targets) -> "NormalInverseGamma":
        t = np.asarray(targets, np.float64)
        n, tbar = len(t), t.mean(0)
        s = ((t - tbar) ** 2).sum(0)
        kn = self.kappa + n
        b = self.b + 0.5 * s + self.kappa * n * (tbar - self.mu) ** 2 / (2 * kn)
        return NormalInverseGamma((self.kappa * self.mu + n * tbar) / kn, kn, self.a + n / 2, b)

    def power_scaled(self, alpha: float) -> "NormalInverseGamma":
        """This density raised to the power ``alpha`` and renormalised: again
        Normal–inverse-gamma, per coordinate ``σ²^−(a + 3/2) → σ²^−α(a + 3/2)`` (so
        ``a → α(a + 3/2) − 3/2``), ``b → αb``, ``κ → ακ``, m unchanged.  An α that leaves it
        improper (a' ≤ 0) is refused."""
        alpha = positive("alpha", alpha)
        if alpha == 1.0:
            return self
        a = alpha * (self.a + 1.5) - 1.5
        why = f"a' = α(a + 3/2) − 3/2 = {a:.4g} ≤ 0 (a = {self.a:.4g})"
        bound = 1.5 / (self.a + 1.5)
        check_proper(alpha, "inverse-gamma", a <= 0, f"{why}; it is proper for α > {bound:.4g}")
        return NormalInverseGamma(self.mu, alpha * self.kappa, a, alpha * self.b)

    def mean(self) -> dict[str, np.ndarray]:
        """``{"mu": mₙ, "sigma2": bₙ/(aₙ − 1)}`` (infinite variance mean where aₙ ≤ 1)."""
        var = self.b / (self.a - 1) if self.a > 1 else np.full_like(self.b, np.inf)
        return {"mu": self.mu, "sigma2": var}

    def mode(self) -> dict[str, np.ndarray]:
        """Joint mode ``{"mu": mₙ, "sigma2": bₙ/(aₙ + 3/2)}``."""
        return {"mu": self.mu, "sigma2": self.b / (self.a + 1.5)}

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` exact draws ``{"mu": [n, d], "sigma2": [n, d]}``."""
        s2 = self.b / rng.gamma(self.a, 1.0, size=(n, len(self.b)))
        mu = self.mu + np.sqrt(s2 / self.kappa) * rng.normal(size=s2.shape)
        return {"mu": mu, "sigma2": s2}

    def log_marginal(self, targets) -> float:
        """log p(targets) (closed form)."""
        n = len(targets)
        post = self.update(targets)
        return float(
            np.sum(
                scipy.special.gammaln(post.a)
                - scipy.special.gammaln(self.a)
                + self.a * np.log(self.b)
                - post.a * np.log(post.b)
                + 0.5 * (np.log(self.kappa) - np.log(post.kappa))
                - 0.5 * n * np.log(2 * np.pi)
            )
        )

    def model_kwargs(self) -> dict:
        return {"mu0": self.mu, "kappa0": self.kappa, "a0": self.a, "b0": self.b}

    @classmethod
    def from_model_kwargs(cls, kw: dict) -> "NormalInverseGamma":
        """The prior whose :meth:`model_kwargs` are ``kw`` (float64)."""
        f64 = lambda k: np.asarray(kw[k], np.float64)  # noqa: E731
        return cls(f64("mu0"), float(kw["kappa0"]), float(kw["a0"]), f64("b0"))


def diagonal_predictive(kwargs: dict, draws: dict, train, test, rng) -> np.ndarray:
    """The exact predictive (hook ``conditional_predictive``): ``log p(t | T) = log p(T ∪ {t})
    − log p(T)`` of each held-out ``t`` (a product of per-coordinate Student-t's) ``[1, m]``."""
    prior = NormalInverseGamma.from_model_kwargs(kwargs)
    t = np.asarray(train, np.float64)
    base = prior.log_marginal(t)
    return np.array([[prior.log_marginal(np.vstack([t, x])) - base for x in np.asarray(test)]])


class DiagonalLikelihood(Likelihood):
    """The diagonal Gaussian likelihood ``t_i ~ N(μ, diag(σ²))`` under the Normal–inverse-gamma
    prior of :func:`diagonal_model`, all in closed form (sites ``mu [d]``, ``sigma2 [d]``)."""

    def log_density(self, draws, targets):
        t = np.asarray(targets, np.float64)
        mu, s2 = (np.asarray(draws[k], np.float64)[:, None, :] for k in ("mu", "sigma2"))
        return -0.5 * (((t[None] - mu) ** 2 / s2) + np.log(2 * np.pi * s2)).sum(-1)

    def sample(self, draws, n, rng):
        mu, s2 = (np.asarray(draws[k], np.float64) for k in ("mu", "sigma2"))
        return mu[:, None] + np.sqrt(s2)[:, None] * rng.normal(size=(len(mu), n, mu.shape[-1]))

    def log_joint(self, targets, draws):
        p = self.exact_prior()
        mu, s2 = (np.asarray(draws[k], np.float64) for k in ("mu", "sigma2"))
        a, b, k0, m0 = p.a, p.b, p.kappa, p.mu
        log_ig = a * np.log(b) - scipy.special.gammaln(a) - (a + 1) * np.log(s2) - b / s2
        log_mu = -0.5 * (k0 * (mu - m0) ** 2 / s2 + np.log(2 * np.pi * s2 / k0))
        return (log_ig + log_mu).sum(-1) + self.log_density(draws, targets).sum(-1)

    def exact_prior(self):
        return NormalInverseGamma.from_model_kwargs(self.kwargs)

    @classmethod
    def site_shapes(cls, d, shapes):
        return {"mu": (d,), "sigma2": (d,)}


def diagonal_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """Mean cosine and norm, total and largest variance; ``mu`` and ``sigma2`` at d ≤ 8."""
    small = {"mu": s["mu"], "sigma2": s["sigma2"]} if s["mu"].shape[-1] <= SMALL_D else {}
    return {
        **mean_quantities(s, ref),
        "var_trace": s["sigma2"].sum(-1),
        "var_max": s["sigma2"].max(-1),
        **small,
    }


@family("diagonal-gaussian")
class DiagonalPrior(Family):
    """Per-coordinate Normal–inverse-gamma prior of the diagonal-gaussian kind.

    Build with :meth:`from_anchors`.

    Parameters
    ----------
    mu0 : numpy.ndarray, shape [d]
        The broad mean.
    var : numpy.ndarray, shape [d]
        E[σ²]: the broad variances, or their mean for the isotropic control.
    kappa0 : float, default 10.0
        Pseudo-anchors of the mean.
    nu0 : float, default 10.0
        Pseudo-anchors of the variances.
    prior : {"broad", "isotropic"}, default "broad"
        Which variances ``var`` are.
    origin : str, default ""
        Where the prior came from.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.DiagonalPrior.from_anchors(broad)
    >>> prior.var.shape, prior.kappa0
    ((4,), 10.0)
    """

    exact_types = (NormalInverseGamma,)
    axes = {"mu0": "d", "var": "d"}

    mu0: np.ndarray
    var: np.ndarray
    kappa0: float = 10.0
    nu0: float = 10.0
    prior: str = "broad"
    origin: str = ""

    sites = ("mu", "sigma2")
    static_fields = ("prior", "origin")
    model_axes = {"mu0": "d", "b0": "d"}
    hooks = Hooks(
        quantities=diagonal_quantities,
        dims={"mu": ["dim"], "sigma2": ["dim"]},
        prior_scale=lambda kwargs, mean: np.diag(np.asarray(mean["sigma2"], np.float64)),
        conditional_predictive=diagonal_predictive,
    )
    model = staticmethod(diagonal_model)
    likelihood_type = DiagonalLikelihood

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        kappa0: float = 10.0,
        nu0: float = 10.0,
        reg: float = 1e-3,
        prior: str = "broad",
    ) -> "DiagonalPrior":
        """Prior centred on the broad mean and per-coordinate (ridged) variances.

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Not used (no strength is chosen from them).
        kappa0 : float, default 10.0
            Prior mean strength, in pseudo-anchors.
        nu0 : float, default 10.0
            Inverse-gamma strength of each variance, in pseudo-anchors.
        reg : float, default 1e-3
            Relative ridge of the broad variances.
        prior : {"broad", "isotropic"}, default "broad"
            The broad variances or the isotropic control (their mean, in every coordinate).

        Returns
        -------
        DiagonalPrior
            The prior."""
        mu, cov = cached(moments, np.asarray(broad), positive("reg", reg, allow_zero=True))
        out = cls(
            np.asarray(mu), np.diag(cov).copy(), positive("kappa0", kappa0), positive("nu0", nu0)
        )
        return out.isotropic() if check_prior_mode(prior) == "isotropic" else out

    def nig(self) -> NormalInverseGamma:
        """The prior's Normal–inverse-gamma parameters: ``a₀ = ν₀/2 + 1``, ``b₀ = ν₀/2 · var``."""
        half, mu0 = 0.5 * float(self.nu0), np.asarray(self.mu0, np.float64)
        var = np.asarray(self.var, np.float64)
        return NormalInverseGamma(mu0, float(self.kappa0), half + 1.0, half * var)

    def isotropic(self) -> "DiagonalPrior":
        v = np.asarray(self.var)
        return dataclasses.replace(self, var=np.full_like(v, v.mean()), prior="isotropic")

    def prior_kwargs(self) -> dict:
        return self.nig().model_kwargs()

    @classmethod
    def check_model_inputs(cls, kwargs, fixed, d):
        """As :meth:`Family.check_model_inputs`, and the constructor's rules: κ₀, a₀ and
        every b₀ positive."""
        super().check_model_inputs(kwargs, fixed, d)
        if kwargs is not None:
            for k in ("kappa0", "a0"):
                positive(f"model_kwargs.{k}", kwargs[k])
            positive("model_kwargs.b0 (its smallest entry)", np.min(kwargs["b0"]))

    def log_marginal(self, targets) -> float:
        return self.nig().log_marginal(targets)

    def model_inputs(self, targets):
        return self.prior_kwargs(), {"kappa0": float(self.kappa0), "nu0": float(self.nu0)}, {}

    def exact(self, targets):
        kwargs, info, fixed = self.model_inputs(targets)
        p = self.nig()
        info["log_marginal_likelihood"] = p.log_marginal(targets)
        return p.update(targets), info, fixed

    def power_scaled_posterior(self, alpha: float, targets) -> NormalInverseGamma:
        """The exact posterior under this prior raised to the power ``alpha``
        (:meth:`NormalInverseGamma.power_scaled`, then the conjugate update)."""
        return self.nig().power_scaled(alpha).update(targets)

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        dt = jax_dtype(dtype)  # float64 is float32 unless JAX runs in float64
        sd = np.sqrt(np.asarray(p["sigma2"], np.float64))
        return Gaussian(jnp.asarray(p["mu"], dt), jnp.asarray(np.diag(sd), dt), as_tau(tau, dt))
