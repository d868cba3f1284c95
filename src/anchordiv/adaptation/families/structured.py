"""Structured Gaussian priors: factor-analysis and LKJ NumPyro models whose hyperparameters are
built from the broad anchors — readable models to copy and change, and the families
``factor-gaussian`` (:class:`FactorPrior`) and ``lkj-gaussian`` (:class:`LKJPrior`).

    prior = ad.StructuredPrior.factor(broad [N, d], rank=16)      # or .lkj(broad)
    post = ad.infer(prior, targets, ad.SVI(guide="lowrank", subspace=16), broad=broad)
    post = ad.adapt("gaussian", broad, targets, tau=20.0, method="svi", guide="lowrank",
                    model=factor_model, model_kwargs=factor_prior(rank=16))  # a custom model

A structured prior holds the broad mean and (ridged) covariance and builds its model's
hyperparameters from them (from the projected moments under ``subspace=r``), so its isotropic
control is the same structure on the isotropic covariance.  No closed-form update: NUTS or SVI;
outside a subspace the lift uses the exact conditionals of its base NIW posterior
(:meth:`StructuredPrior.base`).  Both models are non-centred.  Units: ``prior_anchors`` is how
many anchors the broad estimate of each hyperparameter is worth (it sets the spreads),
``kappa0`` how many the broad mean is worth.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ...anchors.gaussian import moments
from ...anchors.linalg import canonical_signs
from ...errors import AnchorDivError, integer, positive
from ..statistics import cached, sandwich
from ..protocol import Family, check_prior_mode, isotropic_like, family, Hooks, own_sites
from .gaussian import (
    GAUSSIAN_DIMS,
    NIW,
    GaussianLikelihood,
    NIWPrior,
    gaussian_prior_scale,
    gaussian_quantities,
    gaussian_sbc_quantities,
    isotropic_cov,
)


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


#: relative ridge of the broad covariance the structured priors are built from
REG = 1e-3


def _broad_moments(broad) -> tuple[np.ndarray, np.ndarray]:
    """The broad mean and covariance with the ridge :data:`REG`."""
    b = np.asarray(broad, np.float64)
    if b.ndim != 2 or len(b) < 2:
        raise AnchorDivError(f"broad anchors: expected [N ≥ 2, d], got {list(b.shape)}")
    return cached(moments, b, REG)


def factor_kwargs(mu, cov, rank: int, *, prior_anchors: float, kappa0: float) -> dict:
    """:func:`factor_model`'s hyperparameters from the broad mean ``mu [d]`` and covariance
    ``cov [d, d]`` (:func:`factor_prior`, which builds them from the broad anchors)."""
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
        "mean_scale": np.sqrt(np.diag(cov) / kappa0),
        "loadings0": w0,
        "loading_scale": float(np.sqrt(noise / prior_anchors)),
        "noise0": psi0,
        "noise_scale": float(np.sqrt(2 / prior_anchors)),
    }


def lkj_kwargs(mu, cov, concentration: float, *, prior_anchors: float, kappa0: float) -> dict:
    """:func:`lkj_model`'s hyperparameters from the broad mean ``mu [d]`` and covariance
    ``cov [d, d]`` (:func:`lkj_prior`, which builds them from the broad anchors)."""
    sd = np.sqrt(np.diag(cov))
    return {
        "mu0": mu,
        "mean_scale": sd / np.sqrt(kappa0),
        "scale0": sd,
        "scale_spread": float(np.sqrt(1 / (2 * prior_anchors))),
        "concentration": concentration,
    }


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
    return _builder(factor_kwargs, integer("rank", rank, low=1), prior_anchors, kappa0)


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
    return _builder(lkj_kwargs, eta, prior_anchors, kappa0)


def _builder(build, option, prior_anchors, kappa0):
    """``broad -> build(mu, cov, option, strengths)`` with validated strengths."""
    n0, k0 = positive("prior_anchors", prior_anchors), positive("kappa0", kappa0)
    return lambda broad: build(*_broad_moments(broad), option, prior_anchors=n0, kappa0=k0)


def structured_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """The Gaussian quantities and the structured model's own sites (loadings, scales, ...)."""
    out = gaussian_quantities(s, ref)
    return {**out, **own_sites(("mu", "Sigma"), s, out)}


class StructuredPrior(Family):
    """Base of the structured Gaussian priors (module docstring): the broad moments they are
    built from, the Gaussian sites and anchor model, and the subspace projection and lift.
    Make one with :meth:`factor` or :meth:`lkj` (or the subclasses' ``from_anchors``).

    Parameters
    ----------
    mu0 : numpy.ndarray, shape [d]
        The broad mean.
    cov : numpy.ndarray, shape [d, d]
        The broad covariance (relative ridge :data:`REG`), or its isotropic control.
    prior_anchors : float
        Strength of the structure's hyperparameters, in pseudo-anchors.
    kappa0 : float
        Strength of the mean, in pseudo-anchors.
    nu0 : float, optional
        ν₀ of the base NIW prior (None: d + 1 + κ₀).
    prior : {"broad", "isotropic"}, default "broad"
        The broad covariance or its isotropic control.
    origin : str, default ""
        Where the prior came from.
    """

    sites = ("mu", "Sigma")
    exact_types = (NIW,)  # the completion: the base prior's exact posterior
    axes = {"mu0": "d", "cov": "dd"}
    likelihood_type = GaussianLikelihood
    static_fields = ("prior", "origin")
    model_axes = {"mu0": "d", "mean_scale": "d", "loadings0": "dr", "noise0": "d", "scale0": "d"}
    hooks = Hooks(
        quantities=structured_quantities,
        dims=GAUSSIAN_DIMS,
        sbc_quantities=gaussian_sbc_quantities,
        prior_scale=gaussian_prior_scale,
    )

    @classmethod
    def factor(cls, broad, **options) -> "FactorPrior":
        """:meth:`FactorPrior.from_anchors`."""
        return FactorPrior.from_anchors(broad, **options)

    @classmethod
    def lkj(cls, broad, **options) -> "LKJPrior":
        """:meth:`LKJPrior.from_anchors`."""
        return LKJPrior.from_anchors(broad, **options)

    isotropic = isotropic_cov

    def base(self) -> NIWPrior:
        """The NIW prior on the same broad moments (κ₀, ν₀ = d + 1 + κ₀ unless given) whose
        exact posterior fills in the directions outside a subspace."""
        k0, nu0 = float(self.kappa0), self.nu0
        nu0 = self.dim + 1.0 + k0 if nu0 is None else float(nu0)
        return NIWPrior(self.mu0, self.cov, k0, nu0, self.prior)

    def completion(self, targets):
        """The base prior's exact posterior given ``targets [n, d]`` (:meth:`base`)."""
        return self.base().exact(targets)[0]

    def project(self, kwargs, u):
        """The model's hyperparameters built from the broad moments in the basis ``u [d, r]``."""
        mu0, cov = self.mu0 @ u, sandwich(u, self.cov)
        return dataclasses.replace(self, mu0=mu0, cov=cov).prior_kwargs()

    lift = NIWPrior.lift
    to_model = NIWPrior.to_model

    #: the model's hyperparameters from the broad moments and the structure's field ``option``
    build: ClassVar[Callable[..., dict]]
    option: ClassVar[str]

    @classmethod
    def make(cls, broad, option, *, prior_anchors, kappa0, nu0, prior: str):
        """The prior of the broad anchors with the structure's ``option`` (validated by the
        caller) and validated strengths."""
        mu, cov = _broad_moments(broad)
        if check_prior_mode(prior) == "isotropic":
            cov = isotropic_like(cov)
        n0, k0 = positive("prior_anchors", prior_anchors), positive("kappa0", kappa0)
        nu0 = None if nu0 is None else positive("nu0", nu0)
        return cls(mu, cov, option, n0, k0, nu0, prior)  # type: ignore[call-arg]

    def check_loaded(self, dim: int | None) -> None:
        """As :meth:`Family.check_loaded` (its model's keywords built and checked), and
        :meth:`make`'s rules: the strengths positive (before the keywords divide by them)."""
        positive("prior: field prior_anchors", self.prior_anchors)
        positive("prior: field kappa0", self.kappa0)
        if self.nu0 is not None:
            positive("prior: field nu0", self.nu0)
        super().check_loaded(dim)

    @classmethod
    def check_model_inputs(cls, kwargs, fixed, d):
        """As :meth:`Family.check_model_inputs`, and the builders' rules: every scale, spread
        and the LKJ concentration positive."""
        super().check_model_inputs(kwargs, fixed, d)
        for k, v in (kwargs or {}).items():
            if k != "mu0" and k != "loadings0" and np.size(v):
                positive(f"model_kwargs.{k} (smallest)", np.min(v))

    def prior_kwargs(self) -> dict:
        return type(self).build(
            np.asarray(self.mu0, np.float64),
            np.asarray(self.cov, np.float64),
            getattr(self, self.option),
            prior_anchors=float(self.prior_anchors),
            kappa0=float(self.kappa0),
        )


@family("factor-gaussian")
class FactorPrior(StructuredPrior):
    """Factor-analysis prior of the ``factor-gaussian`` kind: :func:`factor_model` centred on
    the broad PPCA fit at ``rank`` (:func:`factor_kwargs`).

    Parameters
    ----------
    mu0, cov, prior_anchors, kappa0, nu0, prior, origin
        As :class:`StructuredPrior`.
    rank : int, default 16
        r, the number of factors.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.StructuredPrior.factor(broad, rank=2)
    >>> prior.kind, prior.rank, prior.dim
    ('factor-gaussian', 2, 4)
    """

    mu0: np.ndarray
    cov: np.ndarray
    rank: int = 16
    prior_anchors: float = 10.0
    kappa0: float = 10.0
    nu0: float | None = None
    prior: str = "broad"
    origin: str = ""

    static_fields = ("prior", "origin", "rank")
    hooks = Hooks(sbc_options=lambda d: {"rank": 1})
    model = staticmethod(factor_model)
    build = staticmethod(factor_kwargs)
    option = "rank"

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        rank: int = 16,
        prior_anchors: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
        prior: str = "broad",
    ) -> "FactorPrior":
        """The factor prior of the broad anchors (``targets`` are not used: no strength is
        chosen from them).

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Not used.
        rank : int, default 16
            The number of factors (< d).
        prior_anchors : float, default 10.0
            Strength of the loadings and noise, in pseudo-anchors.
        kappa0 : float, default 10.0
            Strength of the mean, in pseudo-anchors.
        nu0 : float, optional
            ν₀ of the base NIW prior (the geometry outside a subspace; default d + 1 + κ₀).
        prior : {"broad", "isotropic"}, default "broad"
            The broad covariance or the isotropic control.

        Returns
        -------
        FactorPrior
            The prior."""
        r, d = integer("rank", rank, low=1), np.shape(broad)[-1]
        if r >= d:
            raise AnchorDivError(f"rank: {r} must be < d = {d}")
        return cls.make(broad, r, prior_anchors=prior_anchors, kappa0=kappa0, nu0=nu0, prior=prior)


@family("lkj-gaussian")
class LKJPrior(StructuredPrior):
    """LKJ prior of the ``lkj-gaussian`` kind: :func:`lkj_model` with log-normal scales centred
    on the broad standard deviations (:func:`lkj_kwargs`).

    Parameters
    ----------
    mu0, cov, prior_anchors, kappa0, nu0, prior, origin
        As :class:`StructuredPrior`.
    concentration : float, default 2.0
        The LKJ η.

    Examples
    --------
    >>> broad = np.random.default_rng(0).normal(size=(20, 4))
    >>> ad.StructuredPrior.lkj(broad).kind
    'lkj-gaussian'
    """

    mu0: np.ndarray
    cov: np.ndarray
    concentration: float = 2.0
    prior_anchors: float = 10.0
    kappa0: float = 10.0
    nu0: float | None = None
    prior: str = "broad"
    origin: str = ""

    model = staticmethod(lkj_model)
    build = staticmethod(lkj_kwargs)
    option = "concentration"

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        concentration: float = 2.0,
        prior_anchors: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
        prior: str = "broad",
    ) -> "LKJPrior":
        """The LKJ prior of the broad anchors (``targets`` are not used).

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Not used.
        concentration : float, default 2.0
            The LKJ η (> 0; 1 is uniform over correlation matrices).
        prior_anchors : float, default 10.0
            Strength of the scales, in pseudo-anchors.
        kappa0 : float, default 10.0
            Strength of the mean, in pseudo-anchors.
        nu0 : float, optional
            ν₀ of the base NIW prior (default d + 1 + κ₀).
        prior : {"broad", "isotropic"}, default "broad"
            The broad covariance or the isotropic control.

        Returns
        -------
        LKJPrior
            The prior."""
        eta = positive("concentration", concentration)
        return cls.make(
            broad, eta, prior_anchors=prior_anchors, kappa0=kappa0, nu0=nu0, prior=prior
        )
