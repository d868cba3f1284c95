"""Normal–Inverse-Wishart prior for the Gaussian anchor model (MATH.md, "Adaptation", D.2).

Prior ``Σ ~ IW(ν₀, Ψ₀)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``; target anchors ``t_i ~ N(μ, Σ)``.  From the
broad anchors B: ``μ₀ = mean(B)``, ``Ψ₀ = (ν₀ − d − 1)·C`` with ``C = Cov(B)`` (plus a relative
ridge ``reg``), so that ``E[Σ] = C``.  Units: κ₀ is the number of pseudo-anchors the prior mean is
worth, ``ν₀ − d − 1`` the number the prior covariance is worth.  ``prior="isotropic"`` replaces C
by ``tr(C)/d · I`` (same strength, same trace, no direction information): the control that
separates an informative broad prior from mere shrinkage.

Conjugate update with n targets, mean t̄ and scatter S = Σ (t_i − t̄)(t_i − t̄)ᵀ:
``κₙ = κ₀ + n``, ``νₙ = ν₀ + n``, ``μₙ = (κ₀μ₀ + n t̄)/κₙ``,
``Ψₙ = Ψ₀ + S + (κ₀ n/κₙ)(t̄ − μ₀)(t̄ − μ₀)ᵀ``.  Posterior mean ``(μₙ, Ψₙ/(νₙ − d − 1))``;
joint mode ``(μₙ, Ψₙ/(νₙ + d + 2))``.  The marginal likelihood of the targets is closed form and,
with a weak hyperprior on the log strengths, drives empirical Bayes (:func:`empirical_bayes_fit`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints
from numpyro.distributions.util import validate_sample
import scipy.linalg
import scipy.optimize
import scipy.special

from ...anchors.gaussian import moments
from ...errors import AnchorDivError, positive, user_stacklevel
from .cache import cached, derived

#: search box of empirical Bayes, in pseudo-anchors (κ₀ and ν₀ − d − 1)
EB_BOUNDS = (1e-3, 1e6)
#: weak hyperprior of empirical Bayes: (centre in pseudo-anchors, sd of the natural log)
EB_HYPERPRIOR = (10.0, 2.0)


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


def scatter(targets: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``(n, t̄ [d], S [d, d])`` in float64; computed once per :func:`.cache.frozen` target
    array (``adapt`` freezes its targets, so the recipe, the update and the evidence share
    one scatter)."""
    return derived(_scatter, np.asarray(targets))


def _scatter(targets: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    t = np.asarray(targets, np.float64)
    mean = t.mean(axis=0)
    c = t - mean
    return t.shape[0], mean, c.T @ c


def prior_scale(broad: np.ndarray, *, reg: float, prior: str) -> tuple[np.ndarray, np.ndarray]:
    """``(μ₀ [d], C [d, d])`` from the broad anchors: mean and (ridged) covariance, or for
    ``prior="isotropic"`` the isotropic covariance of the same trace."""
    mu, cov = cached(moments, broad, reg)
    if prior == "isotropic":
        cov = np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    elif prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    return mu, cov


def check_nu0(nu0: float, d: int) -> float:
    v = positive("nu0", nu0)
    if v <= d + 1:
        raise AnchorDivError(
            f"nu0: must be > d + 1 = {d + 1} (so that E[Σ] exists); got {nu0!r}. "
            f"nu0 − d − 1 is the prior covariance's strength in pseudo-anchors"
        )
    return v


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
    >>> from anchordiv.adaptation.priors import NIW
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

    def log_marginal(self, targets) -> float:
        """log p(targets) under this NIW prior (closed form)."""
        n, d = np.shape(targets)
        post = self.update(targets)
        logdet = lambda m: np.linalg.slogdet(m)[1]  # noqa: E731
        return float(
            -0.5 * n * d * np.log(np.pi)
            + scipy.special.multigammaln(post.nu / 2, d)
            - scipy.special.multigammaln(self.nu / 2, d)
            + 0.5 * self.nu * logdet(self.psi)
            - 0.5 * post.nu * logdet(post.psi)
            + 0.5 * d * (np.log(self.kappa) - np.log(post.kappa))
        )

    def model_kwargs(self) -> dict:
        """Keyword arguments of :func:`niw_model` for this prior."""
        return {"mu0": self.mu, "kappa0": self.kappa, "nu0": self.nu, "psi0": self.psi}


class _MarginalCurve:
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
        keep = sv > 1e-12 * max(sv.max(initial=0.0), 1e-300)
        z = scipy.linalg.solve_triangular(chol, tbar - mu0, lower=True)
        wr2 = (vt[keep] @ z) ** 2
        r = int(keep.sum())
        # eigenvalues with multiplicities: the r nonzero ones, then 0 with multiplicity d − r
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


def log_multigamma(a, d: int):
    """log Γ_d(a), vectorised over ``a`` (``scipy.special.multigammaln`` takes scalars only)."""
    a = np.asarray(a, np.float64)
    return 0.25 * d * (d - 1) * np.log(np.pi) + scipy.special.gammaln(
        a[..., None] - 0.5 * np.arange(d)
    ).sum(-1)


def log_hyperprior(log_strength):
    """Weak hyperprior on a log strength: ``log s ~ N(log 10, 2²)`` (95 % of the mass between 0.2
    and 500 pseudo-anchors), :data:`EB_HYPERPRIOR`."""
    centre, sd = np.log(EB_HYPERPRIOR[0]), EB_HYPERPRIOR[1]
    return -0.5 * ((np.asarray(log_strength) - centre) / sd) ** 2 - np.log(sd * np.sqrt(2 * np.pi))


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
    curve = _MarginalCurve(np.asarray(mu0, np.float64), np.asarray(cov, np.float64), targets)
    d = curve.d
    free = [kappa0 is None, nu0 is None]
    fixed = [
        np.log(kappa0) if kappa0 is not None else 0.0,
        np.log(nu0 - d - 1) if nu0 is not None else 0.0,
    ]

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
    x0 = starts[np.argmin(loss(starts.T))]
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


def empirical_bayes(
    mu0,
    cov,
    targets,
    *,
    kappa0: float | None = None,
    nu0: float | None = None,
    hyperprior: bool = True,
) -> tuple[float, float, float]:
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
    >>> from anchordiv.adaptation.priors import empirical_bayes
    >>> t = np.random.default_rng(0).normal(size=(6, 3))
    >>> k0, n0, lml = empirical_bayes(np.zeros(3), np.eye(3), t)
    >>> k0 > 0 and n0 > 3 + 1
    True
    """
    r = empirical_bayes_fit(mu0, cov, targets, kappa0=kappa0, nu0=nu0, hyperprior=hyperprior)
    return r["kappa0"], r["nu0"], r["log_marginal"]


__all__ = [
    "BartlettGaussian",
    "EB_BOUNDS",
    "EB_HYPERPRIOR",
    "NIW",
    "check_nu0",
    "empirical_bayes",
    "empirical_bayes_fit",
    "log_hyperprior",
    "niw_bartlett",
    "niw_model",
    "prior_scale",
    "scatter",
]
