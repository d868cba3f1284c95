"""Structured Gaussian priors: factor-analysis and LKJ NumPyro models with hyperparameters built
from the broad anchors, as readable models to copy and change and as prior objects.

    prior = ad.StructuredPrior.factor(broad [N, d], rank=16)      # or .lkj(broad)
    post = ad.infer(prior, targets, ad.SVI(guide="lowrank", subspace=16), broad=broad)

A structured prior is a Gaussian-family prior (kind ``gaussian``, sites ``mu``, ``Sigma``)
whose model is the structured one; its ``base`` NIW prior (fixed strengths, the same broad
moments) supplies what the family needs around it: the exact geometry outside the subspace under
``subspace=`` and the reference quantities.  Saved posteriors keep that base prior (the model is
a Python function).

post = ad.adapt("gaussian", broad, targets, tau=20.0, method="svi", guide="lowrank",
                    model=factor_model, model_kwargs=factor_prior(rank=16))

(``model_kwargs`` a builder: it is called with the broad anchors — projected ones under
``subspace=r`` — so the same call works at full d and in a subspace.)

Both are written non-centred (every latent site a standard normal, or the LKJ Cholesky factor),
so SVI starts from the prior median without float32 trouble at d = 384 and NUTS sees a
well-scaled space where it is affordable (d·r + 2d or d(d−1)/2 + 2d unconstrained coordinates).

* :func:`factor_model` — ``Σ = W Wᵀ + diag(ψ)`` (factor analysis), loadings centred on the broad
  anchors' principal directions: ``W = W₀ + s_W · Z``, ``W₀ = U_r diag(√(λ − σ²))`` (the PPCA fit
  of the broad covariance at rank r), ``ψ = ψ₀ · exp(s_ψ · ε)`` with ψ₀ the broad per-coordinate
  residual variance.  The likelihood is ``LowRankMultivariateNormal``: O(n d r²) per step.
* :func:`lkj_model` — ``Σ = diag(σ) Ω diag(σ)``, ``Ω ~ LKJ(η)`` through its Cholesky factor,
  ``σ = σ₀ · exp(s_σ · ε)`` with σ₀ the broad anchors' per-coordinate standard deviations.  The
  broad correlations do not enter (LKJ is centred on Ω = I): the prior knows scales, not
  directions — a deliberate contrast with the factor prior.

Units: ``prior_anchors`` is how many anchors the broad estimate of each hyperparameter is worth
(it sets the spreads ``s``), ``kappa0`` how many the broad mean is worth.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ...anchors.gaussian import moments
from ...anchors.linalg import canonical_signs
from ...errors import AnchorDivError, integer, positive
from ..cache import cached
from ..family import as_rng
from ..inference import Exact
from .gaussian import GaussianLikelihood, NIWPrior


def _mean_site(mu0, mean_scale):
    """``mu = mu0 + mean_scale · z``, ``z ~ N(0, I)`` (deterministic ``mu``, latent ``mu_std``)."""
    z = numpyro.sample("mu_std", dist.Normal(0.0, 1.0).expand(jnp.shape(mu0)).to_event(1))
    return numpyro.deterministic("mu", mu0 + mean_scale * z)


def _log_normal_site(name, centre, spread):
    """``centre · exp(spread · ε)``, ``ε ~ N(0, I)`` (deterministic ``name``)."""
    e = numpyro.sample(f"{name}_std", dist.Normal(0.0, 1.0).expand(jnp.shape(centre)).to_event(1))
    return numpyro.deterministic(name, centre * jnp.exp(spread * e))


def factor_model(targets, *, mu0, mean_scale, loadings0, loading_scale, noise0, noise_scale):
    """Factor-analysis prior ``Σ = W Wᵀ + diag(ψ)`` as a NumPyro model (copy and change it).

    Sites: ``mu [d]``, ``loadings [d, r]``, ``noise [d]``, ``Sigma [d, d]`` (deterministic);
    latent ``mu_std``, ``loadings_std``, ``noise_std``.

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    mu0, mean_scale : array_like, shape [d]
        Prior mean and its spread.
    loadings0 : array_like, shape [d, r]
        Prior loadings W₀.
    loading_scale : float
        Spread of the loadings.
    noise0 : array_like, shape [d]
        Prior noise variances ψ₀ (> 0).
    noise_scale : float
        Spread of the log noise.

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    mu = _mean_site(mu0, mean_scale)
    z = numpyro.sample(
        "loadings_std", dist.Normal(0.0, 1.0).expand(jnp.shape(loadings0)).to_event(2)
    )
    w = numpyro.deterministic("loadings", loadings0 + loading_scale * z)
    psi = _log_normal_site("noise", noise0, noise_scale)
    numpyro.deterministic("Sigma", w @ w.T + jnp.diag(psi))
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.LowRankMultivariateNormal(mu, w, psi), obs=targets)


def lkj_model(targets, *, mu0, mean_scale, scale0, scale_spread, concentration):
    """LKJ-Cholesky prior with log-normal scales as a NumPyro model (copy and change it).

    Sites: ``mu [d]``, ``scales [d]``, ``corr_cholesky [d, d]``, ``Sigma [d, d]``
    (deterministic).

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    mu0, mean_scale : array_like, shape [d]
        Prior mean and its spread.
    scale0 : array_like, shape [d]
        Prior standard deviations (> 0).
    scale_spread : float
        Spread of the log scales.
    concentration : float
        η > 0 (1 = uniform over correlation matrices).

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    d = jnp.shape(mu0)[-1]
    mu = _mean_site(mu0, mean_scale)
    sd = _log_normal_site("scales", scale0, scale_spread)
    omega = numpyro.sample("corr_cholesky", dist.LKJCholesky(d, concentration))
    chol = sd[:, None] * omega
    numpyro.deterministic("Sigma", chol @ chol.T)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, scale_tril=chol), obs=targets)


def _broad_moments(broad) -> tuple[np.ndarray, np.ndarray]:
    b = np.asarray(broad, np.float64)
    if b.ndim != 2 or len(b) < 2:
        raise AnchorDivError(f"broad anchors: expected [N ≥ 2, d], got {list(b.shape)}")
    return cached(moments, b, 1e-3)


def factor_prior(rank: int = 16, *, prior_anchors: float = 10.0, kappa0: float = 10.0):
    """Builder of :func:`factor_model`'s hyperparameters from broad anchors.

    PPCA of the broad covariance C at rank r: ``W₀ = U_r diag(√(λ_r − σ²))``, σ² the mean of
    the other eigenvalues; ``ψ₀ = diag(C − W₀W₀ᵀ)`` floored at σ²/10; spreads: loadings
    ``√(σ²/prior_anchors)`` (a loading estimated from that many anchors), log-noise
    ``√(2/prior_anchors)`` (a χ² variance estimate), mean ``√(diag C / kappa0)``.

    Parameters
    ----------
    rank : int, default 16
        r, the number of factors.
    prior_anchors : float, default 10.0
        Strength of the loadings and noise.
    kappa0 : float, default 10.0
        Strength of the mean.

    Returns
    -------
    callable
        ``f(broad [N, d]) -> dict`` of :func:`factor_model` keywords.

    Examples
    --------
    >>> from anchordiv.adaptation.families import factor_prior
    >>> broad = np.random.default_rng(0).normal(size=(20, 4))
    >>> sorted(factor_prior(2)(broad))
    ['loading_scale', 'loadings0', 'mean_scale', 'mu0', 'noise0', 'noise_scale']
    """
    rank = integer("rank", rank, low=1)
    n0, k0 = positive("prior_anchors", prior_anchors), positive("kappa0", kappa0)

    def build(broad) -> dict:
        mu, cov = _broad_moments(broad)
        d = cov.shape[0]
        if rank >= d:
            raise AnchorDivError(f"factor_prior: rank {rank} must be < d = {d}")
        lam, u = np.linalg.eigh(cov)
        lam, u = lam[::-1], canonical_signs(u[:, ::-1])
        noise = max(float(lam[rank:].mean()), 1e-12)
        w0 = u[:, :rank] * np.sqrt(np.clip(lam[:rank] - noise, 0.0, None))
        psi0 = np.maximum(np.diag(cov) - (w0**2).sum(1), noise / 10)
        return {
            "mu0": mu,
            "mean_scale": np.sqrt(np.diag(cov) / k0),
            "loadings0": w0,
            "loading_scale": float(np.sqrt(noise / n0)),
            "noise0": psi0,
            "noise_scale": float(np.sqrt(2 / n0)),
        }

    return build


def lkj_prior(*, concentration: float = 2.0, prior_anchors: float = 10.0, kappa0: float = 10.0):
    """Builder of :func:`lkj_model`'s hyperparameters from broad anchors.

    σ₀ the broad standard deviations, log-scale spread ``√(1/(2·prior_anchors))`` (a standard
    deviation estimated from that many anchors), mean ``μ₀ = mean(B)`` with spread
    ``σ₀/√kappa0``.

    Parameters
    ----------
    concentration : float, default 2.0
        The LKJ η.
    prior_anchors : float, default 10.0
        Strength of the scales.
    kappa0 : float, default 10.0
        Strength of the mean.

    Returns
    -------
    callable
        ``f(broad [N, d]) -> dict`` of :func:`lkj_model` keywords.

    Examples
    --------
    >>> from anchordiv.adaptation.families import lkj_prior
    >>> broad = np.random.default_rng(0).normal(size=(20, 4))
    >>> sorted(lkj_prior()(broad))
    ['concentration', 'mean_scale', 'mu0', 'scale0', 'scale_spread']
    """
    eta = positive("concentration", concentration)
    n0, k0 = positive("prior_anchors", prior_anchors), positive("kappa0", kappa0)

    def build(broad) -> dict:
        mu, cov = _broad_moments(broad)
        sd = np.sqrt(np.diag(cov))
        return {
            "mu0": mu,
            "mean_scale": sd / np.sqrt(k0),
            "scale0": sd,
            "scale_spread": float(np.sqrt(1 / (2 * n0))),
            "concentration": eta,
        }

    return build


@dataclasses.dataclass(frozen=True, eq=False)
class StructuredPrior(NIWPrior):
    """A user's structured NumPyro prior on the gaussian sites (``mu``, ``Sigma``); NUTS or SVI.

    Made by :meth:`factor` (factor analysis) or :meth:`lkj` (LKJ correlations); the exact update
    is the base NIW prior's.

    Parameters
    ----------
    mu0, cov, kappa0, nu0, prior, chosen_by, at_bound, origin
        The :class:`NIWPrior` fields of the base prior.
    structure : str, default ""
        The structure's name ("factor", "lkj", ...).
    user_model : callable, optional
        The NumPyro model.
    builder : callable, optional
        ``broad [N, d'] -> model_kwargs``, called on the projected broad anchors under
        ``subspace=``.
    model_kwargs : dict
        The builder's output at full d.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.StructuredPrior.factor(broad, rank=2)
    >>> prior.structure, prior.dim
    ('factor', 4)
    """

    structure: str = ""
    user_model: Callable | None = None
    builder: Callable | None = None
    model_kwargs: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def build(
        cls, structure: str, model, builder, broad, *, kappa0: float, nu0: float | None
    ) -> "StructuredPrior":
        broad = np.asarray(broad, np.float64)
        d = broad.shape[1]
        base = NIWPrior.from_anchors(
            broad, kappa0=kappa0, nu0=d + 1.0 + kappa0 if nu0 is None else nu0
        )
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(NIWPrior)}
        return cls(
            **fields,
            structure=structure,
            user_model=model,
            builder=builder,
            model_kwargs=builder(broad),
        )

    @classmethod
    def factor(
        cls,
        broad,
        *,
        rank: int = 16,
        prior_anchors: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
    ) -> "StructuredPrior":
        """Factor analysis ``Σ = W Wᵀ + diag(ψ)`` centred on the broad PPCA fit at ``rank``
        (:func:`anchordiv.adaptation.families.structured.factor_model`)."""
        return cls.build(
            "factor",
            factor_model,
            factor_prior(rank, prior_anchors=prior_anchors, kappa0=kappa0),
            broad,
            kappa0=kappa0,
            nu0=nu0,
        )

    @classmethod
    def lkj(
        cls,
        broad,
        *,
        concentration: float = 2.0,
        prior_anchors: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
    ) -> "StructuredPrior":
        """LKJ correlations with log-normal scales centred on the broad standard deviations
        (:func:`anchordiv.adaptation.families.structured.lkj_model`)."""
        return cls.build(
            "lkj",
            lkj_model,
            lkj_prior(concentration=concentration, prior_anchors=prior_anchors, kappa0=kappa0),
            broad,
            kappa0=kappa0,
            nu0=nu0,
        )

    def base(self) -> NIWPrior:
        return NIWPrior(**{f.name: getattr(self, f.name) for f in dataclasses.fields(NIWPrior)})

    def prepare(self, method, broad):
        if isinstance(method, Exact):
            raise AnchorDivError(
                f"method: the {self.structure} prior has no closed-form update; "
                f"use ad.NUTS(...) or ad.SVI(...)"
            )
        if method.model is not None:
            raise AnchorDivError(f"model: the {self.structure} prior brings its own model")
        kwargs = self.builder if broad is not None else self.model_kwargs
        return self.base(), dataclasses.replace(method, model=self.user_model, model_kwargs=kwargs)

    def isotropic(self):
        raise AnchorDivError(
            f"isotropic: the {self.structure} prior has no isotropic control "
            f"(use its base prior: prior.base().isotropic())"
        )

    def sample(self, key, n: int) -> dict[str, np.ndarray]:
        """``n`` prior draws of every site of the model ``{site: [n, ...]}``."""
        from numpyro.infer import Predictive

        rng = as_rng(key)
        targets = np.zeros((1, self.dim))
        # parallel=True: one vmap (the default lax.map compiled a new scan on every call)
        out = Predictive(
            self.user_model, num_samples=int(n), exclude_deterministic=False, parallel=True
        )(jax.random.PRNGKey(int(rng.integers(2**31))), targets, **self.model_kwargs)
        return {k: np.asarray(v, np.float64) for k, v in out.items() if k != "targets"}

    def prior_predictive(self, key, n_draws: int, n_anchors: int) -> np.ndarray:
        rng = as_rng(key)
        return GaussianLikelihood(type(self), {}, {}, self.dim).sample(
            self.sample(rng, n_draws), n_anchors, rng
        )

    def to_arrays(self):
        """The base prior's arrays (the model is a Python function: not saved)."""
        return self.base().to_arrays()


jax.tree_util.register_dataclass(
    StructuredPrior,
    data_fields=["mu0", "cov", "kappa0", "nu0", "model_kwargs"],
    meta_fields=[
        f.name
        for f in dataclasses.fields(StructuredPrior)
        if f.name not in ("mu0", "cov", "kappa0", "nu0", "model_kwargs")
    ],
)


__all__ = [
    "StructuredPrior",
    "factor_model",
    "factor_prior",
    "lkj_model",
    "lkj_prior",
]
