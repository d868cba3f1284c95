"""The Gaussian family: Normal–Inverse-Wishart prior of the Gaussian anchor model (docs/mathematics.md, "Gaussian: Normal–Inverse-Wishart"):
its explicit NumPyro model, the conjugate posterior :class:`NIW`, empirical Bayes, the subspace
projection and lift, and the prior object :class:`NIWPrior`.

    prior = ad.NIWPrior.from_anchors(broad [N, d], targets=targets)   # κ₀, ν₀ by the recipe
    prior = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=d + 6.0)  # or fixed strengths
    prior.chosen_by, prior.kappa0, prior.nu0                          # what was chosen, and how
    post = prior.update(targets)                                      # NIW(μₙ, κₙ, νₙ, Ψₙ)

Sites: ``mu [d]``, ``Sigma [d, d]`` (PD).  Prior ``Σ ~ IW(ν₀, Ψ₀)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``;
targets ``t_i ~ N(μ, Σ)``.  From the broad anchors B: ``μ₀ = mean(B)``, ``Ψ₀ = (ν₀ − d − 1)·C``
with C the ridged ``Cov(B)``, so that ``E[Σ] = C``; κ₀ and ``ν₀ − d − 1`` are pseudo-anchors of
the mean and the covariance.  ``prior="isotropic"`` replaces C by ``tr(C)/d · I`` (the control).

Conjugate update with n targets, mean t̄ and scatter S = Σ (t_i − t̄)(t_i − t̄)ᵀ:
``κₙ = κ₀ + n``, ``νₙ = ν₀ + n``, ``μₙ = (κ₀μ₀ + n t̄)/κₙ``,
``Ψₙ = Ψ₀ + S + (κ₀ n/κₙ)(t̄ − μ₀)(t̄ − μ₀)ᵀ``.  Posterior mean ``(μₙ, Ψₙ/(νₙ − d − 1))``;
joint mode ``(μₙ, Ψₙ/(νₙ + d + 2))``.  The marginal likelihood of the targets is closed form and,
with a weak hyperprior on the log strengths, drives empirical Bayes (:func:`empirical_bayes_fit`).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import scipy.linalg
import scipy.optimize
import scipy.special
from numpyro.distributions import constraints
from numpyro.distributions.util import validate_sample

from ..._tolerance import first_max, kept_singular_values
from ...anchors import Gaussian
from ...anchors.base import as_tau, jax_dtype, psd_factor
from ...errors import AnchorDivError, check_choice, check_covariance, positive, user_stacklevel
from ..model import Likelihood
from ..protocol import (
    N_EIGEN,
    SMALL_D,
    Family,
    Hooks,
    check_prior_mode,
    cosine,
    family,
    isotropic_like,
    unit_vector,
)
from ..statistics import (
    broad_moments,
    derived,
    gaussian_strengths,
    log_hyperprior,
    sandwich,
    scatter,
)


def log_multigamma(a, d: int):
    """log Γ_d(a), vectorised over ``a`` (``scipy.special.multigammaln`` takes scalars only)."""
    a = np.asarray(a, np.float64)
    return 0.25 * d * (d - 1) * np.log(np.pi) + scipy.special.gammaln(
        a[..., None] - 0.5 * np.arange(d)
    ).sum(-1)


def gaussian_logpdf(t: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``log N(t_i | μ_s, Σ_s)``: ``t [n, d]``, ``mu [S, d]``, ``cov [S, d, d]`` -> ``[S, n]``."""
    chol = np.linalg.cholesky(cov)
    diff = t[None, :, :] - mu[:, None, :]  # [S, n, d]
    z = np.linalg.solve(chol, np.swapaxes(diff, -1, -2))  # [S, d, n]
    logdet = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)  # [S]
    d = t.shape[1]
    return -0.5 * ((z * z).sum(-2) + logdet[:, None] + d * np.log(2 * np.pi))


def log_iw(sig: np.ndarray, nu, psi: np.ndarray) -> np.ndarray:
    """log IW(Σ_s | ν, Ψ) for ``sig [S, d, d]`` (float64 closed form)."""
    d = psi.shape[-1]
    chol = np.linalg.cholesky(sig)
    logdet = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    inv = np.linalg.inv(sig)
    return (
        0.5 * nu * np.linalg.slogdet(psi)[1]
        - 0.5 * nu * d * np.log(2.0)
        - log_multigamma(0.5 * nu, d)
        - 0.5 * (nu + d + 1) * logdet
        - 0.5 * np.einsum("ij,sji->s", psi, inv)
    )


def log_niw(mu, sig, kw) -> np.ndarray:
    """log NIW(μ_s, Σ_s) = log IW(Σ) + log N(μ | μ₀, Σ/κ₀): ``mu [S, d]``, ``sig [S, d, d]``."""
    d = np.shape(sig)[-1]
    want = {"mu0": (d,), "psi0": (d, d), "nu0": (), "kappa0": ()}
    for k, shape in want.items():  # model arguments read from a file meet the draws here
        if k not in kw or np.shape(kw[k]) != shape:
            got = f"shape {list(np.shape(kw[k]))}" if k in kw else "no value"
            raise AnchorDivError(
                f"NIW prior: {k} has {got}, not shape {list(shape)} for draws of dimension {d}"
            )
    mu0 = np.asarray(kw["mu0"], np.float64)
    return (
        log_iw(sig, float(kw["nu0"]), np.asarray(kw["psi0"], np.float64))
        + gaussian_logpdf(mu0[None], mu, sig / float(kw["kappa0"]))[:, 0]
    )


def cov_cholesky(cov) -> np.ndarray:
    """The lower Cholesky factor of a prior covariance ``[d, d]`` that is finite, symmetric and
    positive definite (else an error naming ``cov`` and what is wrong,
    :func:`~anchordiv.errors.check_covariance`)."""
    return check_covariance("cov", cov, factor=True)


def gaussian_model(p: dict, tau: float, dtype: str) -> Gaussian:
    """The Gaussian anchor model of parameters ``{"mu": [d], "Sigma": [d, d]}`` in ``dtype``
    (float64 is float32 unless JAX runs in float64)."""
    dt = jax_dtype(dtype)
    return Gaussian(
        jnp.asarray(p["mu"], dt), jnp.asarray(cov_factor(p["Sigma"]), dt), as_tau(tau, dt)
    )


def cov_factor(cov: np.ndarray) -> np.ndarray:
    """A factor F with F Fᵀ = Σ: Cholesky (O(d³/3), fast at d = 768) with an eigen fallback.

    Parameters
    ----------
    cov : numpy.ndarray, shape [d, d]
        A symmetric positive semi-definite Σ.

    Returns
    -------
    numpy.ndarray, shape [d, d]
        F.

    Examples
    --------
    >>> from anchordiv.adaptation import cov_factor
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> F = cov_factor(S)
    >>> bool(np.allclose(F @ F.T, S))
    True
    """
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return psd_factor(cov)


def gaussian_predictive(mu, cov, n, rng) -> np.ndarray:
    """``n`` draws per ``(mu [S, d], cov [S, d, d])`` ``[S, n, d]``."""
    z = rng.normal(size=(len(mu), n, mu.shape[-1]))
    return mu[:, None, :] + np.einsum("sij,snj->sni", np.linalg.cholesky(cov), z)


class GaussianLikelihood(Likelihood):
    """The Gaussian anchor model's likelihood ``t_i ~ N(μ, Σ)`` in closed form (sites ``mu [d]``,
    ``Sigma [d, d]``); the prior's terms are traced from the family's model (a structured
    prior's)."""

    positive_definite = ("Sigma",)

    def log_density(self, draws, targets):
        return gaussian_logpdf(
            np.asarray(targets, np.float64),
            np.asarray(draws["mu"], np.float64),
            np.asarray(draws["Sigma"], np.float64),
        )

    def sample(self, draws, n, rng):
        return gaussian_predictive(
            np.asarray(draws["mu"], np.float64), np.asarray(draws["Sigma"], np.float64), n, rng
        )

    @classmethod
    def site_shapes(cls, d, shapes):
        return {"mu": (d,), "Sigma": (d, d)}


def niw_bartlett(prefix, mu0, kappa0, nu0, psi0, psi0_tril=None):
    """NIW sites in whitened Bartlett coordinates (batched over leading axes of ``mu0``).

    With ``Ψ₀ = L Lᵀ`` and the Bartlett factor A (lower triangular; ``A_ii² ~ χ²(ν₀ − i)``,
    i = 0..d−1, ``A_ij ~ N(0, 1)`` below the diagonal), ``Σ⁻¹ = L⁻ᵀ A Aᵀ L⁻¹ ~ W(ν₀, Ψ₀⁻¹)``, i.e.
    ``Σ ~ IW(ν₀, Ψ₀)``; ``μ = μ₀ + L A⁻ᵀ z / √κ₀`` with ``z ~ N(0, I)`` has ``μ | Σ ~ N(μ₀, Σ/κ₀)``.
    Returns ``(mu [..., d], BartlettGaussian(mu, L, A), log_jacobian [...])`` and records the
    deterministic sites ``mu`` and ``Sigma``; ``log_jacobian`` = log |∂(c, o, z)/∂(μ, Σ)| up
    to a constant = ``Σ_i (d + i + 4) log A_ii`` (i = 0..d−1), so adding it to the log density of
    the coordinates gives the log density of (μ, Σ)."""
    mu0 = jnp.asarray(mu0)
    d, batch = mu0.shape[-1], mu0.shape[:-1]
    chol = jnp.linalg.cholesky(psi0) if psi0_tril is None else jnp.asarray(psi0_tril)
    chi2 = numpyro.sample(
        f"{prefix}bartlett_chi2",
        dist.Chi2(nu0 - jnp.arange(d, dtype=mu0.dtype)).expand(batch + (d,)).to_event(1),
    )
    off = numpyro.sample(
        f"{prefix}bartlett_normal",
        dist.Normal(0.0, 1.0).expand(batch + (d * (d - 1) // 2,)).to_event(1),
    )
    z = numpyro.sample(f"{prefix}mu_std", dist.Normal(0.0, 1.0).expand(batch + (d,)).to_event(1))
    rows, cols = np.tril_indices(d, -1)
    diag = jnp.sqrt(chi2)
    a = jnp.zeros(batch + (d, d), mu0.dtype).at[..., rows, cols].set(
        off, indices_are_sorted=True, unique_indices=True, mode="promise_in_bounds"
    ) + diag[..., None] * jnp.eye(d, dtype=mu0.dtype)
    w = jax.scipy.linalg.solve_triangular(a, z[..., None], lower=True, trans=1)[..., 0]
    mu = numpyro.deterministic(
        f"{prefix}mu", mu0 + (chol @ w[..., None])[..., 0] / jnp.sqrt(kappa0)
    )
    law = BartlettGaussian(mu, chol, a)
    numpyro.deterministic(f"{prefix}Sigma", law.covariance())
    jac = ((d + jnp.arange(d, dtype=mu0.dtype) + 4) * jnp.log(diag)).sum(-1)
    return mu, law, jac


class BartlettGaussian(dist.Distribution):
    """``N(loc, Σ)`` with ``Σ = L (A Aᵀ)⁻¹ Lᵀ``: ``outer`` L and ``inner`` A lower triangular
    ``[..., d, d]``.  ``log_prob`` and ``sample`` cost O(d²) per point (triangular products and
    solves); :meth:`covariance` (O(d³)) only when asked."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "outer": constraints.lower_cholesky,
        "inner": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    reparametrized_params = ["loc"]

    def __init__(self, loc, outer, inner, *, validate_args=None):
        batch = jnp.broadcast_shapes(
            jnp.shape(loc)[:-1], jnp.shape(outer)[:-2], jnp.shape(inner)[:-2]
        )
        self.loc, self.outer, self.inner = loc, outer, inner
        super().__init__(
            batch_shape=batch, event_shape=jnp.shape(loc)[-1:], validate_args=validate_args
        )

    @validate_sample
    def log_prob(self, value):
        d = self.event_shape[0]
        x = value - self.loc
        logdet = jnp.log(jnp.diagonal(self.outer, axis1=-2, axis2=-1)).sum(-1) - jnp.log(
            jnp.diagonal(self.inner, axis1=-2, axis2=-1)
        ).sum(-1)
        if self.outer.ndim == 2 and self.inner.ndim == 2:  # one Σ: all points in one solve
            w = jax.scipy.linalg.solve_triangular(self.outer, x.reshape(-1, d).T, lower=True)
            q = (w.T @ self.inner).reshape(x.shape)
        else:
            shape = jnp.broadcast_shapes(x.shape, self.outer.shape[:-1], self.inner.shape[:-1])
            w = jax.scipy.linalg.solve_triangular(
                jnp.broadcast_to(self.outer, shape + (d,)),
                jnp.broadcast_to(x, shape)[..., None],
                lower=True,
            )
            q = (jnp.swapaxes(self.inner, -1, -2) @ w)[..., 0]
        return -0.5 * (q**2).sum(-1) - logdet - 0.5 * d * jnp.log(2 * jnp.pi)

    def sample(self, key, sample_shape=()):
        eps = jax.random.normal(key, sample_shape + self.batch_shape + self.event_shape)
        w = jax.scipy.linalg.solve_triangular(
            jnp.broadcast_to(self.inner, eps.shape + eps.shape[-1:]),
            eps[..., None],
            lower=True,
            trans=1,
        )
        return self.loc + (self.outer @ w)[..., 0]

    def covariance(self):
        """Σ ``[..., d, d]``."""
        ft = jax.scipy.linalg.solve_triangular(
            self.inner, jnp.swapaxes(self.outer, -1, -2), lower=True
        )  # A⁻¹ Lᵀ
        return jnp.swapaxes(ft, -1, -2) @ ft


def project_niw(kwargs: dict, u: np.ndarray, mean: str) -> dict:
    """NIW hyperparameters in a basis: ``μ₀ → μ₀u``, ``Ψ₀ → uᵀΨ₀u``, ``ν₀ → ν₀ − (d − r)``.

    Batched over components.

    Parameters
    ----------
    kwargs : dict
        Hyperparameters (the prior mean under ``mean``, ``psi0``, ``nu0``).
    u : numpy.ndarray, shape [d, r]
        The basis.
    mean : str
        The name of the prior mean.

    Returns
    -------
    dict
        The projected hyperparameters.
    """
    d, r = u.shape
    mu0, psi0 = np.asarray(kwargs[mean], np.float64) @ u, sandwich(u, kwargs["psi0"])
    return {**kwargs, mean: mu0, "psi0": psi0, "nu0": float(kwargs["nu0"]) - (d - r)}


class Conditional:
    """The exact conditionals of one NIW posterior outside the subspace, in the basis V.

    Parameters
    ----------
    niw : NIW
        The full-d NIW posterior.
    basis : numpy.ndarray, shape [d, d]
        V, the broad principal basis.
    r : int
        The subspace rank.
    """

    def __init__(self, niw, basis: np.ndarray, r: int):
        d = niw.dim
        psi = sandwich(basis, niw.psi)
        self.mu, self.r, self.q = basis.T @ niw.mu, r, d - r
        self.kappa, self.nu = niw.kappa, niw.nu
        p11, p12 = psi[:r, :r], psi[:r, r:]
        self.p11_inv = np.linalg.inv(p11)
        self.b_hat = self.p11_inv @ p12  # [r, d − r]
        s = psi[r:, r:] - p12.T @ self.b_hat
        self.schur = 0.5 * (s + s.T)  # Ψ₂₂·₁
        self.basis = basis
        self.law = type(niw)  # NIW: the conditional of the other block has the same law

    def assemble(self, s11, b, s22_1, mu1, mu2) -> dict:
        """Full ``{"mu": [d], "Sigma": [d, d]}`` from blocks in the basis V."""
        s12 = s11 @ b
        s22 = s22_1 + b.T @ s12
        sig = np.block([[s11, s12], [s12.T, s22]])
        v = self.basis
        return {"mu": v @ np.concatenate([mu1, mu2]), "Sigma": v @ (0.5 * (sig + sig.T)) @ v.T}

    def point(self, mu1, s11, which: str) -> dict:
        if which == "mean":
            s22_1 = (1 + np.trace(s11 @ self.p11_inv)) * self.schur / (self.nu - self.q - 1)
        else:
            s22_1 = self.schur / (self.nu + self.r + self.q + 2)
        mu2 = self.mu[self.r :] + self.b_hat.T @ (mu1 - self.mu[: self.r])
        return self.assemble(s11, self.b_hat, s22_1, mu1, mu2)

    def draw(self, mu1, s11, rng: np.random.Generator) -> dict:
        rest = self.law(self.mu[self.r :], self.kappa, self.nu, self.schur).sample(rng, 1)
        s22_1 = rest["Sigma"][0]
        e = rng.normal(size=self.b_hat.shape)
        b = self.b_hat + np.linalg.cholesky(self.p11_inv) @ e @ np.linalg.cholesky(s22_1).T
        mu2 = rest["mu"][0] + b.T @ (mu1 - self.mu[: self.r])
        return self.assemble(s11, b, s22_1, mu1, mu2)

    def lift(self, mu1, s11, which: str, rng: np.random.Generator | None) -> dict:
        """``{"mu", "Sigma"}`` in full d: a draw with ``rng``, else the point ``which``."""
        return self.draw(mu1, s11, rng) if rng is not None else self.point(mu1, s11, which)


def lift_gaussian(ps: list[dict], completion, basis, r: int, which: str, rng) -> list[dict]:
    """Full-d ``{"mu", "Sigma"}`` of subspace parameter sets ``ps`` (points, or draws with
    ``rng``) from the exact conditionals of the full-d NIW posterior ``completion``
    (:class:`Conditional`)."""
    cond = Conditional(completion, basis, r)
    return [
        cond.lift(np.asarray(p["mu"], np.float64), np.asarray(p["Sigma"], np.float64), which, rng)
        for p in ps
    ]


#: search box of empirical Bayes, in pseudo-anchors (κ₀ and ν₀ − d − 1)
EB_BOUNDS = (1e-3, 1e6)


class MarginalCurve:
    """log p(targets | κ₀, s) for ``Ψ₀ = s·C`` in O(n) per evaluation.

    With ``C = LLᵀ`` and the centred targets X ``[n, d]``, ``L⁻¹ S L⁻ᵀ = YᵀY`` for
    ``Y = X L⁻ᵀ``: its nonzero eigenvalues λ and eigenvectors come from a thin SVD of Y (at most
    n of them; the other d − r eigenvalues are 0), and the mean term enters through the matrix
    determinant lemma with ``z = L⁻¹(t̄ − μ₀)``.  Cost: one Cholesky of C and O(n d²)."""

    def __init__(self, mu0, cov, targets):
        t = np.asarray(targets, np.float64)
        self.n, self.d = t.shape
        chol = np.linalg.cholesky(cov)
        tbar = t.mean(0)
        y = scipy.linalg.solve_triangular(chol, (t - tbar).T, lower=True).T  # X L⁻ᵀ
        _, sv, vt = np.linalg.svd(y, full_matrices=False)
        keep = kept_singular_values(sv)  # the library's one rank rule (recipe.spectrum's)
        z = scipy.linalg.solve_triangular(chol, tbar - mu0, lower=True)
        wr2 = (vt[keep] @ z) ** 2
        r = int(keep.sum())
        self.lam = np.concatenate([sv[keep] ** 2, [0.0]])
        self.mult = np.concatenate([np.ones(r), [self.d - r]])
        self.w2 = np.concatenate([wr2, [max(z @ z - wr2.sum(), 0.0)]])
        self.logdet_c = 2 * np.log(np.diag(chol)).sum()

    def __call__(self, kappa0, s):
        """Vectorised over broadcastable ``kappa0`` and ``s`` (arrays or scalars)."""
        n, d = self.n, self.d
        kappa0, s = np.broadcast_arrays(np.asarray(kappa0, np.float64), np.asarray(s, np.float64))
        nu0 = d + 1 + s
        kn, nun = kappa0 + n, nu0 + n
        r = kappa0 * n / kn
        inv = 1.0 / (s[..., None] + self.lam)
        logdet_n = self.logdet_c - np.log(inv) @ self.mult + np.log1p(r * (inv @ self.w2))
        out = (
            -0.5 * n * d * np.log(np.pi)
            + log_multigamma(nun / 2, d)
            - log_multigamma(nu0 / 2, d)
            + 0.5 * nu0 * (d * np.log(s) + self.logdet_c)
            - 0.5 * nun * logdet_n
            + 0.5 * d * (np.log(kappa0) - np.log(kn))
        )
        return float(out) if out.ndim == 0 else out


def empirical_bayes_fit(
    mu0,
    cov,
    targets,
    *,
    kappa0: float | None = None,
    nu0: float | None = None,
    hyperprior: bool = True,
) -> dict:
    """Choose the prior strengths left ``None`` (maximum a posteriori over the log strengths).

    Objective: the closed-form log marginal likelihood of ``targets [n, d]`` plus, with
    ``hyperprior=True``, the weak :func:`log_hyperprior` on ``log κ₀`` and ``log(ν₀ − d − 1)``.
    Without it the objective has a plateau, not a maximum, as the strengths grow whenever the
    targets look like the broad prior (always possible for n ≤ 3): the maximiser then runs to the
    search bound (10⁶ pseudo-anchors), the targets are ignored and the posterior intervals
    collapse.  The hyperprior makes the plateau's start the answer and changes nothing where the
    data are informative (its curvature, 1/4 per log unit, is that of a fraction of one anchor).

    Search: a log-spaced 25-point grid per free strength over :data:`EB_BOUNDS`, refined by
    bounded Nelder–Mead to 1e-10 in the log strengths (derivative-free: the objective is a sum
    of large cancelling terms at large strengths, where finite-difference gradients are noise).
    Returns ``{"kappa0", "nu0", "log_marginal", "objective", "at_bound"}``; ``at_bound`` names
    the strengths that ended on a bound of the search box (also warned about)."""
    curve = MarginalCurve(np.asarray(mu0, np.float64), np.asarray(cov, np.float64), targets)
    d = curve.d
    free = [kappa0 is None, nu0 is None]
    fixed = [0.0 if kappa0 is None else np.log(kappa0), 0.0 if nu0 is None else np.log(nu0 - d - 1)]

    def unpack(x):
        it = iter(x)
        return [next(it) if f else v for f, v in zip(free, fixed)]

    def loss(x):
        lk, ls = unpack(x)
        prior = sum(log_hyperprior(v) for v, f in zip((lk, ls), free) if f) if hyperprior else 0
        return -(curve(np.exp(lk), np.exp(ls)) + prior)

    lo, hi = np.log(EB_BOUNDS[0]), np.log(EB_BOUNDS[1])
    grid = np.linspace(lo, hi, 25)
    starts = np.stack(np.meshgrid(*[grid] * sum(free)), -1).reshape(-1, sum(free))
    x0 = starts[first_max(-loss(starts.T))]
    res = scipy.optimize.minimize(
        loss,
        x0,
        method="Nelder-Mead",
        bounds=[(lo, hi)] * sum(free),
        options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000},
    )
    x = res.x if res.fun <= loss(x0) else x0
    lk, ls = unpack(x)
    names = [
        n for n, f, v in zip(("kappa0", "nu0"), free, (lk, ls)) if f and min(v - lo, hi - v) < 1e-6
    ]
    if names:
        warnings.warn(
            f"empirical Bayes: {', '.join(names)} ended on the bound of the search box "
            f"{EB_BOUNDS} pseudo-anchors; the choice is not an interior maximum — "
            f"set the strength(s) explicitly",
            stacklevel=user_stacklevel(),
        )
    k_best = kappa0 if kappa0 is not None else float(np.exp(lk))
    nu_best = nu0 if nu0 is not None else float(d + 1 + np.exp(ls))
    return {
        "kappa0": float(k_best),
        "nu0": float(nu_best),
        "log_marginal": float(curve(k_best, nu_best - d - 1)),
        "objective": float(-loss(x)),
        "at_bound": names,
    }


def empirical_bayes(mu0, cov, targets, **options) -> tuple[float, float, float]:
    """Empirical-Bayes strengths of a NIW prior (:func:`empirical_bayes_fit`).

    Parameters
    ----------
    mu0 : array_like, shape [d]
        Prior mean.
    cov : array_like, shape [d, d]
        Prior E[Σ].
    targets : array_like, shape [n, d]
        Target anchors.
    kappa0, nu0 : float, optional
        Fixed strengths; those left None are chosen.
    hyperprior : bool, default True
        Add the weak hyperprior on the log strengths.

    Returns
    -------
    kappa0, nu0, log_marginal : float
        The strengths and the log marginal likelihood at them.

    Examples
    --------
    >>> from anchordiv.adaptation.families import empirical_bayes
    >>> t = np.random.default_rng(0).normal(size=(6, 3))
    >>> k0, n0, lml = empirical_bayes(np.zeros(3), np.eye(3), t)
    >>> k0 > 0 and n0 > 3 + 1
    True
    """
    r = empirical_bayes_fit(mu0, cov, targets, **options)
    return r["kappa0"], r["nu0"], r["log_marginal"]


def niw_model(targets, *, mu0, kappa0, nu0, psi0, psi0_tril=None, map_jacobian=False):
    """The explicit NumPyro model of the gaussian kind (copy and change it for a custom prior).

    The law is exactly ``Σ ~ IW(ν₀, Ψ₀)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``, written in the whitened
    Bartlett coordinates of :func:`niw_bartlett` so that NUTS and SVI move in a well-conditioned,
    O(n d²)-per-step space at any d (no Cholesky of a sampled Σ, float32-safe).  Sites:
    deterministic ``Sigma [d, d]`` and ``mu [d]``; latent ``bartlett_chi2 [d]``,
    ``bartlett_normal [d(d−1)/2]``, ``mu_std [d]``; observed ``targets``.

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    mu0 : array_like, shape [d]
        μ₀.
    kappa0 : float
        κ₀ > 0.
    nu0 : float
        ν₀ > d − 1.
    psi0 : array_like, shape [d, d]
        Ψ₀, positive definite.
    psi0_tril : array_like, shape [d, d], optional
        Its Cholesky factor, if already known.
    map_jacobian : bool, default False
        Add the log-Jacobian that turns the density of the Bartlett coordinates into the
        density of (μ, Σ): a delta guide (MAP) then finds the joint mode
        ``(μₙ, Ψₙ/(νₙ + d + 2))`` of the parameters, not of their coordinates.

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    mu, law, jac = niw_bartlett("", mu0, kappa0, nu0, psi0, psi0_tril)
    if map_jacobian:
        numpyro.factor("map_jacobian", jac)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", law, obs=targets)


def check_proper(alpha, law: str, improper: bool, why: str) -> None:
    """Refuse an ``alpha`` that leaves the power-scaled ``law`` prior improper (``why``)."""
    if improper:
        raise AnchorDivError(f"alpha: {alpha:g} makes the power-scaled {law} prior improper: {why}")


def check_nu0(nu0: float, d: int) -> float:
    v = positive("nu0", nu0)
    if v <= d + 1:
        raise AnchorDivError(
            f"nu0: must be > d + 1 = {d + 1} (so that E[Σ] exists); got {nu0!r}. "
            f"nu0 − d − 1 is the prior covariance's strength in pseudo-anchors"
        )
    return v


def check_niw_kwargs(kw: dict, d: int, prefix: str = "model_kwargs.") -> None:
    """Refuse NIW model keywords (:meth:`NIW.model_kwargs`) the prior's constructor would
    refuse: κ₀ positive, ν₀ > d + 1, ψ₀ (each of a stack) positive definite."""
    positive(prefix + "kappa0", kw["kappa0"])
    check_nu0(kw["nu0"], d)
    psi = np.asarray(kw["psi0"], np.float64)
    for i, m in enumerate(psi.reshape(-1, d, d)):
        check_covariance(prefix + "psi0" + (f"[{i}]" if psi.ndim == 3 else ""), m, dim=d)


@dataclass(frozen=True)
class NIW:
    """Normal–inverse-Wishart parameters (float64): ``Σ ~ IW(ν, Ψ)``, ``μ | Σ ~ N(μ, Σ/κ)``.

    Parameters
    ----------
    mu : numpy.ndarray, shape [d]
        The mean.
    kappa : float
        κ > 0.
    nu : float
        ν > d − 1.
    psi : numpy.ndarray, shape [d, d]
        Ψ, positive definite.

    Examples
    --------
    >>> from anchordiv.adaptation.families import NIW
    >>> prior = NIW.from_scale(np.zeros(3), np.eye(3), 2.0, 6.0)   # E[Σ] = I
    >>> post = prior.update(np.eye(3)[:2])
    >>> post.kappa, post.nu
    (4.0, 8.0)
    """

    mu: np.ndarray
    kappa: float
    nu: float
    psi: np.ndarray

    @classmethod
    def from_scale(cls, mu0, cov, kappa0: float, nu0: float) -> "NIW":
        """The prior with ``E[Σ] = cov``: ``Ψ₀ = (ν₀ − d − 1)·cov``."""
        d = cov.shape[0]
        return cls(
            np.asarray(mu0, np.float64),
            positive("kappa0", kappa0),
            check_nu0(nu0, d),
            (nu0 - d - 1) * np.asarray(cov, np.float64),
        )

    @property
    def dim(self) -> int:
        return int(self.mu.shape[0])

    def update_stats(self, n: float, tbar: np.ndarray, s: np.ndarray) -> "NIW":
        """Conjugate update from (weighted) count n, mean ``t̄ [d]`` and scatter ``S [d, d]``."""
        kn = self.kappa + n
        delta = tbar - self.mu
        psi = self.psi + s + (self.kappa * n / kn) * np.outer(delta, delta)
        return NIW((self.kappa * self.mu + n * tbar) / kn, kn, self.nu + n, 0.5 * (psi + psi.T))

    def update(self, targets) -> "NIW":
        """Conjugate posterior given ``targets [n, d]``."""
        return self.update_stats(*scatter(targets))

    def power_scaled(self, alpha: float) -> "NIW":
        """This NIW density raised to the power ``alpha`` and renormalised: again NIW, with
        ``κ → ακ``, ``Ψ → αΨ``, ``ν + d + 2 → α(ν + d + 2)``, μ unchanged (docs/mathematics.md,
        "Power-scaling sensitivity").  An α that leaves it improper (ν' ≤ d − 1) is
        refused with the smallest α that keeps it proper."""
        a, d = positive("alpha", alpha), self.dim
        if a == 1.0:
            return self
        nu = a * (self.nu + d + 2) - d - 2
        why = f"ν' = α(ν + d + 2) − d − 2 = {nu:.4g} ≤ d − 1 = {d - 1} (ν = {self.nu:.4g})"
        bound = (2 * d + 1) / (self.nu + d + 2)
        check_proper(
            alpha, "inverse-Wishart", nu <= d - 1, f"{why}; it is proper for α > {bound:.4g}"
        )
        return NIW(self.mu, a * self.kappa, nu, a * self.psi)

    def mean(self) -> dict[str, np.ndarray]:
        """Posterior mean ``{"mu": μₙ, "Sigma": Ψₙ/(νₙ − d − 1)}``."""
        return {"mu": self.mu, "Sigma": self.psi / (self.nu - self.dim - 1)}

    def mode(self) -> dict[str, np.ndarray]:
        """Joint mode ``{"mu": μₙ, "Sigma": Ψₙ/(νₙ + d + 2)}``."""
        return {"mu": self.mu, "Sigma": self.psi / (self.nu + self.dim + 2)}

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` exact draws ``{"mu": [n, d], "Sigma": [n, d, d]}`` (Bartlett decomposition)."""
        d = self.dim
        chol = np.linalg.cholesky(self.psi)
        sig = np.empty((n, d, d))
        mus = np.empty((n, d))
        for i in range(n):
            a = np.tril(rng.normal(size=(d, d)), -1)
            a[np.diag_indices(d)] = np.sqrt(rng.chisquare(self.nu - np.arange(d)))
            f = np.linalg.solve(a, chol.T).T  # L A^{-T} (a is lower triangular)
            sig[i] = f @ f.T
            mus[i] = self.mu + f @ rng.normal(size=d) / np.sqrt(self.kappa)
        return {"mu": mus, "Sigma": sig}

    def log_marginal(
        self, targets, *, post: "NIW | None" = None, logdet_psi: float | None = None
    ) -> float:
        """log p(targets) under this NIW prior (closed form); ``post`` (its update on
        ``targets``) and ``logdet_psi`` (log|Ψ|) where the caller has them already."""
        n, d = np.shape(targets)
        post = self.update(targets) if post is None else post
        logdet = lambda m: np.linalg.slogdet(m)[1]  # noqa: E731
        return float(
            -0.5 * n * d * np.log(np.pi)
            + scipy.special.multigammaln(post.nu / 2, d)
            - scipy.special.multigammaln(self.nu / 2, d)
            + 0.5 * self.nu * (logdet(self.psi) if logdet_psi is None else logdet_psi)
            - 0.5 * post.nu * logdet(post.psi)
            + 0.5 * d * (np.log(self.kappa) - np.log(post.kappa))
        )

    def model_kwargs(self) -> dict:
        """Keyword arguments of :func:`niw_model` for this prior."""
        return {"mu0": self.mu, "kappa0": self.kappa, "nu0": self.nu, "psi0": self.psi}


def weak_covariance(strength: float) -> dict:
    """``{"target_only": why}`` for a prior covariance worth ``strength`` < 1 pseudo-anchor (the
    fit is then target-only in the directions the targets leave open), else
    ``{}``."""
    if strength >= 1.0:
        return {}
    return {"target_only": f"the prior's covariance carries {strength:.3g} pseudo-anchors"}


def isotropic_cov(prior):
    """The isotropic control of a prior whose covariance field is ``cov``."""
    return dataclasses.replace(prior, cov=isotropic_like(np.asarray(prior.cov)), prior="isotropic")


class NIWLikelihood(GaussianLikelihood):
    """:class:`GaussianLikelihood` under the NIW prior of :func:`niw_model` (closed form)."""

    def log_joint(self, targets, draws):
        d = {k: np.asarray(v, np.float64) for k, v in draws.items()}
        return log_niw(d["mu"], d["Sigma"], self.kwargs) + self.log_density(d, targets).sum(-1)

    def exact_prior(self):
        kw = self.kwargs
        return NIW(
            np.asarray(kw["mu0"]), float(kw["kappa0"]), float(kw["nu0"]), np.asarray(kw["psi0"])
        )


#: Rules that choose ``kappa0``/``nu0 = "auto"`` (:meth:`NIWPrior.from_anchors`).
STRENGTH_RULES = ("evidence", "held-out")


# ---- what the checks know of the family (:class:`~anchordiv.adaptation.protocol.Hooks`) ----------
def mean_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """The mean's cosine to the point summary's and its norm (site ``mu``)."""
    return {
        "mean_cosine": cosine(s["mu"], ref["mu"]),
        "mean_norm": np.linalg.norm(s["mu"], axis=-1),
    }


def gaussian_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """Mean cosine and norm, covariance trace, leading eigenvalues and the angle of the leading
    axis to the point summary's (degrees); ``mu`` and ``Sigma`` themselves at d ≤ 8."""
    w, v = np.linalg.eigh(s["Sigma"])
    _, vr = np.linalg.eigh(ref["Sigma"])
    lead = np.abs((v[..., :, -1] * vr[:, -1]).sum(-1))
    out = {
        **mean_quantities(s, ref),
        "cov_trace": np.trace(s["Sigma"], axis1=-2, axis2=-1),
        "cov_eigenvalues": w[..., ::-1][..., :N_EIGEN],
        "leading_axis_angle": np.degrees(np.arccos(np.clip(lead, 0.0, 1.0))),
    }
    if s["mu"].shape[-1] <= SMALL_D:
        out.update(mu=s["mu"], Sigma=s["Sigma"])
    return out


def gaussian_sbc_quantities(d: int, rng) -> dict:
    """tr Σ, vᵀΣv and μ·v for a fixed unit v."""
    v = unit_vector(d, rng)
    return {
        "tr Σ": lambda p: np.trace(p["Sigma"], axis1=-2, axis2=-1),
        "vᵀΣv": lambda p: np.einsum("i,sij,j->s", v, p["Sigma"], v),
        "μ·v": lambda p: p["mu"] @ v,
    }


def gaussian_prior_scale(kwargs: dict, mean: dict) -> np.ndarray:
    """The prior's scale ``psi0`` (else the posterior-mean covariance) ``[d, d]``."""
    return np.asarray(kwargs["psi0"] if "psi0" in kwargs else mean["Sigma"], np.float64)


#: the dims of :func:`gaussian_quantities`
GAUSSIAN_DIMS = {"cov_eigenvalues": ["eigenvalue"], "mu": ["dim"], "Sigma": ["dim", "dim_"]}


@family("gaussian")
class NIWPrior(Family):
    """Normal–inverse-Wishart prior of the gaussian kind.

    ``Σ ~ IW(ν₀, (ν₀ − d − 1) C)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``; strengths in pseudo-anchors: κ₀
    for the mean, ν₀ − d − 1 for the covariance.  Build with :meth:`from_anchors`.

    Parameters
    ----------
    mu0 : numpy.ndarray, shape [d]
        μ₀, the broad mean.
    cov : numpy.ndarray, shape [d, d]
        C = E[Σ], the broad (ridged) covariance.
    kappa0 : float
        κ₀ > 0.
    nu0 : float
        ν₀ > d + 1.
    prior : {"broad", "isotropic"}, default "broad"
        Which covariance C is (the isotropic control has the same trace).
    chosen_by : str, default "user"
        "user", "held-out recipe (…)" or "empirical Bayes (…)".
    at_bound : str, default ""
        The strengths that ended on the search bound.
    origin : str, default ""
        Where the prior came from (JSON: a saved model's path and card).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.NIWPrior.from_anchors(broad, kappa0=5.0, nu0=10.0)
    >>> prior.dim, prior.kappa0, prior.chosen_by
    (4, 5.0, 'user')
    >>> auto = ad.NIWPrior.from_anchors(broad, broad[:4])       # strengths from the targets
    >>> auto.chosen_by.split(" (")[0]
    'held-out recipe'
    """

    exact_types = (NIW,)
    axes = {"mu0": "d", "cov": "dd"}

    mu0: np.ndarray
    cov: np.ndarray
    kappa0: float
    nu0: float
    prior: str = "broad"
    chosen_by: str = "user"
    at_bound: str = ""
    origin: str = ""

    sites = ("mu", "Sigma")
    covariance_site = "Sigma"
    hooks = Hooks(
        quantities=gaussian_quantities,
        dims=GAUSSIAN_DIMS,
        sbc_options=lambda d: {"kappa0": 2.0, "nu0": d + 4.0},
        sbc_quantities=gaussian_sbc_quantities,
        draw_size=lambda params: int(np.size(params.psi)),
        prior_scale=gaussian_prior_scale,
        student_t_predictive=True,
        data_chosen=lambda o: [k for k in ("kappa0", "nu0") if o.get(k) == "auto"],
    )

    def __post_init__(self):
        """Concrete hyperparameters are checked (a pytree rebuilt from tracers is not):
        ``cov`` must be a finite symmetric positive-definite ``[d, d]`` (``cov = -I`` gave
        Σ = 0 and all-zero divergences), ``mu0`` finite, ``kappa0 > 0``, ``nu0 > d + 1``."""
        if not isinstance(self.cov, (np.ndarray, list, tuple)):
            return
        mu0 = np.asarray(self.mu0, np.float64)
        if mu0.ndim != 1 or not np.isfinite(mu0).all():
            raise AnchorDivError(
                f"mu0: expected a finite vector [d], got shape "
                f"{list(mu0.shape)}" + ("" if mu0.ndim != 1 else " with NaN or inf entries")
            )
        if np.shape(self.cov) != (len(mu0), len(mu0)):
            check_covariance("cov", self.cov, dim=len(mu0))  # names the shape
        derived(cov_cholesky, self.cov)  # once per cached broad covariance
        if isinstance(self.kappa0, (int, float, np.number)):
            positive("kappa0", self.kappa0)
        if isinstance(self.nu0, (int, float, np.number)):
            check_nu0(self.nu0, len(mu0))

    static_fields = ("prior", "origin", "chosen_by", "at_bound")
    model_axes = {"mu0": "d", "psi0": "dd", "psi0_tril": "dd"}
    model = staticmethod(niw_model)
    likelihood_type = NIWLikelihood
    descriptions = {
        "exact_map": "closed-form joint mode of (μ, Σ) of the full-d model",
        "joint_mode": "joint mode of (μ, Σ) of the full-d model",
    }

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        kappa0: float | Literal["auto"] = "auto",
        nu0: float | Literal["auto"] = "auto",
        reg: float = 1e-3,
        prior: str = "broad",
        strengths: Literal["held-out", "evidence"] = "held-out",
    ) -> "NIWPrior":
        """Prior centred on the broad mean and (ridged) covariance.

        A strength ``"auto"`` is chosen from ``targets`` by the rule ``strengths``:

        * ``"held-out"`` (default): the recipe of
          :func:`anchordiv.adaptation.statistics.gaussian_strengths` — one strength s (κ₀ = s,
          ν₀ = d + 1 + s) by exact leave-one-out predictive density, capped by the targets'
          held-out novelty so that the posterior approaches the target-only fit as the targets
          span their own subspace.  Computed from the broad covariance for
          ``prior="isotropic"`` too, so a control keeps the same strengths.  It chooses both
          strengths together: give both numbers, or leave both ``"auto"``;
        * ``"evidence"``: empirical Bayes, the maximiser of the closed-form marginal likelihood
          with a weak hyperprior (:func:`anchordiv.adaptation.families.gaussian.empirical_bayes_fit`);
          one strength may be fixed and the other chosen.

        Two numbers are used as given (``chosen_by="user"``) under either rule.

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Target anchors (needed for ``"auto"`` strengths).
        kappa0 : float or "auto", default "auto"
            Prior mean strength, in pseudo-anchors (``"auto"``: chosen by ``strengths``).
        nu0 : float or "auto", default "auto"
            Inverse-Wishart degrees of freedom (> d + 1; ν₀ − d − 1 pseudo-anchors of
            covariance), or ``"auto"``.
        reg : float, default 1e-3
            Relative ridge of the broad covariance.
        prior : {"broad", "isotropic"}, default "broad"
            The broad covariance or the isotropic control.
        strengths : {"held-out", "evidence"}, default "held-out"
            The rule choosing ``"auto"`` strengths: the held-out recipe (exact-LOO density
            capped by the targets' novelty) or empirical Bayes.

        Returns
        -------
        NIWPrior
            The prior.

        Raises
        ------
        AnchorDivError
            An unknown rule, invalid strengths, or ``"auto"`` without targets."""
        d = np.shape(broad)[1]
        check_choice("strengths", strengths, STRENGTH_RULES)
        mu0, cov = broad_moments(
            broad, reg=positive("reg", reg, allow_zero=True), prior=check_prior_mode(prior)
        )
        auto = {
            k: isinstance(v, str) and v == "auto" for k, v in (("kappa0", kappa0), ("nu0", nu0))
        }
        k0 = None if auto["kappa0"] else positive("kappa0", kappa0)
        n0 = None if auto["nu0"] else check_nu0(nu0, d)
        if k0 is not None and n0 is not None:
            return cls(mu0, cov, k0, n0, prior)
        if targets is None:
            raise AnchorDivError(
                f"targets: kappa0/nu0 = 'auto' chooses the strengths on the "
                f"target anchors (strengths={strengths!r}); pass targets= or "
                f"give both strengths"
            )
        if strengths == "evidence":
            eb = empirical_bayes_fit(mu0, cov, targets, kappa0=k0, nu0=n0)
            chosen = "empirical Bayes (" + ", ".join(k for k, v in auto.items() if v) + ")"
            return cls(mu0, cov, eb["kappa0"], eb["nu0"], prior, chosen, ", ".join(eb["at_bound"]))
        if not all(auto.values()):
            raise AnchorDivError(
                "strengths='held-out' chooses kappa0 and nu0 together; leave both 'auto', give "
                "both numbers, or pass strengths='evidence' to choose the other by empirical Bayes"
            )
        moments = (mu0, cov) if prior == "broad" else None  # the control: the broad's
        g = gaussian_strengths(broad, targets, reg=reg, moments=moments)
        chosen = f"held-out recipe ({g['chosen_by']})"
        return cls(mu0, cov, g["kappa0"], g["nu0"], prior, chosen, "")

    @property
    def dim(self) -> int:  # its own: the adapt path enters no protocol module (internals.md)
        return int(np.shape(self.mu0)[0])

    def niw(self) -> NIW:
        return NIW.from_scale(self.mu0, self.cov, self.kappa0, self.nu0)

    isotropic = isotropic_cov

    def prior_kwargs(self) -> dict:
        return self.niw().model_kwargs()

    @classmethod
    def check_model_inputs(cls, kwargs, fixed, d):
        """As :meth:`Family.check_model_inputs`, and the constructor's rules: κ₀ positive,
        ν₀ > d + 1, ψ₀ positive definite."""
        super().check_model_inputs(kwargs, fixed, d)
        if kwargs is not None:
            check_niw_kwargs(kwargs, d)

    @classmethod
    def model_extras(cls, kwargs: dict, *, map_density: bool) -> dict:
        """ψ₀'s Cholesky factor (``psi0_tril``) and, for a delta guide, ``map_jacobian``."""
        out = {"map_jacobian": True} if map_density else {}
        if "psi0" in kwargs and kwargs.get("psi0_tril") is None:
            out["psi0_tril"] = np.linalg.cholesky(np.asarray(kwargs["psi0"], np.float64))
        return out

    def log_marginal(self, targets) -> float:
        return self.niw().log_marginal(np.asarray(targets, np.float64))

    def chosen_on_targets(self) -> bool:
        """Whether ``kappa0``/``nu0`` were chosen on the targets (``chosen_by`` is not
        ``"user"``: the held-out recipe or empirical Bayes)."""
        return self.chosen_by.startswith(("empirical", "held-out"))

    def model_inputs(self, targets):
        info = {
            "kappa0": float(self.kappa0),
            "nu0": float(self.nu0),
            "mean_pseudo_anchors": float(self.kappa0),
            "covariance_pseudo_anchors": float(self.nu0) - self.dim - 1,
            "chosen_by": self.chosen_by,
            "at_bound": self.at_bound,
            **weak_covariance(float(self.nu0) - self.dim - 1),
        }
        return self.prior_kwargs(), info, {}

    def exact(self, targets):
        kwargs, info, fixed = self.model_inputs(targets)
        p = self.niw()
        post = p.update(targets)
        logdet_c = 2.0 * float(np.log(np.diagonal(derived(cov_cholesky, self.cov))).sum())
        logdet_psi = self.dim * np.log(float(self.nu0) - self.dim - 1) + logdet_c
        info["log_marginal_likelihood"] = p.log_marginal(targets, post=post, logdet_psi=logdet_psi)
        return post, {**info, "model_kwargs": kwargs}, fixed

    def power_scaled_posterior(self, alpha: float, targets) -> NIW:
        """The exact posterior under this prior raised to the power ``alpha``: the power-scaled
        NIW (:meth:`NIW.power_scaled`) updated by the conjugate update."""
        return self.niw().power_scaled(alpha).update(targets)

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return gaussian_model(p, tau, dtype)

    @classmethod
    def project(cls, kwargs, u):
        return project_niw(kwargs, u, "mu0")

    @classmethod
    def lift(cls, ps, completion, basis, r, *, which="mean", rng=None):
        return lift_gaussian(ps, completion, basis, r, which, rng)

    @classmethod
    def project_mean(cls, mean, u):
        return {"mu": mean["mu"] @ u, "Sigma": u.T @ mean["Sigma"] @ u}

    @classmethod
    def subspace_mode(cls, point, completion, r):
        return subspace_joint_mode(point, completion, r)


def subspace_joint_mode(point: dict, completion, r: int) -> dict:
    """The subspace model's mode ``Σ₁₁ = Ψ₁₁/(νₙ − d + 2r + 2)`` rescaled to the r-block
    ``Ψ₁₁/(νₙ + d + 2)`` of the full joint mode (which the lift completes)."""
    d, nu = completion.dim, completion.nu
    scale = (nu - d + 2 * r + 2) / (nu + d + 2)
    return {**point, "Sigma": np.asarray(point["Sigma"], np.float64) * scale}
