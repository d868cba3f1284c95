"""The mixture family: Dirichlet–NIW prior of the Gaussian mixture anchor model, centred on the
broad EM fit, updated by MAP-EM (docs/mathematics.md, "Gaussian mixture: Dirichlet–NIW, MAP-EM") — its explicit NumPyro model, the conjugate
parameters :class:`DirichletNIW`, MAP-EM, the Gibbs sampler of the exact posterior and the
prior object :class:`DirichletNIWPrior`.

    prior = ad.DirichletNIWPrior.from_anchors(broad [N, d], components=4, em_seed=0)
    post = prior.update(targets [n, d])

Sites: ``weights [K]``, ``means [K, d]``, ``covs [K, d, d]`` (PD).  ``em_seed`` seeds the broad
EM fit (π⁰, μ⁰_k, Σ⁰_k).  Prior: ``π ~ Dir(1 + α₀ π⁰)`` (its mode is exactly π⁰, so a broad
component keeps its weight in the MAP when no target lands near it) and, per component,
``Σ_k ~ IW(ν₀, (ν₀ − d − 1) Σ⁰_k)``, ``μ_k | Σ_k ~ N(μ⁰_k, Σ_k/κ₀)``.  MAP-EM: E-step
responsibilities, M-step the soft-count conjugate updates then the modes; "mean" is the
posterior mean given the final responsibilities.  ``prior="isotropic"``: every Σ⁰_k becomes
``tr(Σ⁰_k)/d · I``.  Exact draws carry the assignment uncertainty: Gibbs chains over
(w, μ_k, Σ_k, z) from the MAP-EM assignments, :data:`GIBBS_BURN_IN` sweeps, every
:data:`THIN`-th kept, O(K d³) per sweep.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpyro
import numpyro.distributions as dist
import scipy.special

from ..._tolerance import PROBABILITY_ATOL, first_max
from ...anchors import GaussianMixture
from ...anchors.mixture import em, responsibilities, weighted_moments
from ...errors import AnchorDivError, check_covariance, integer, positive
from ..statistics import cached
from ..protocol import Family, check_prior_mode, isotropic_like, Hooks, cosine, unit_vector, family
from ..model import Likelihood
from .gaussian import (
    NIW,
    Conditional,
    check_niw_kwargs,
    check_nu0,
    gaussian_logpdf,
    log_niw,
    project_niw,
    weak_covariance,
)

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


def stack_components(weights, parts: list[dict], axis: int = 0) -> dict[str, np.ndarray]:
    """The mixture's sites from the weights and per-component Gaussian ``{"mu", "Sigma"}``."""
    return {
        "weights": weights,
        "means": np.stack([p["mu"] for p in parts], axis=axis),
        "covs": np.stack([p["Sigma"] for p in parts], axis=axis),
    }


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
        """Component ``k``'s NIW parameters."""
        return NIW(self.mu[k], float(self.kappa[k]), float(self.nu[k]), self.psi[k])

    @classmethod
    def stack(cls, alpha, parts: list[NIW]) -> "DirichletNIW":
        """From the Dirichlet ``alpha [K]`` and one NIW per component."""
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
        return stack_components(weights, parts)

    def mode(self) -> dict[str, np.ndarray]:
        """Component-wise joint modes and the Dirichlet mode."""
        return self._summary("mode")

    def mean(self) -> dict[str, np.ndarray]:
        """Posterior means (Dirichlet mean, NIW means)."""
        return self._summary("mean")

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``{"weights": [n, K], "means": [n, K, d], "covs": [n, K, d, d]}``."""
        draws = [self.component(k).sample(rng, n) for k in range(len(self.alpha))]
        return stack_components(rng.dirichlet(self.alpha, size=n), draws, axis=1)

    @classmethod
    def from_model_kwargs(cls, kwargs: dict) -> "DirichletNIW":
        """The prior whose :meth:`model_kwargs` are ``kwargs``."""
        k = len(kwargs["weights0"])
        return cls(
            float(kwargs["alpha0"]) * np.asarray(kwargs["weights0"], np.float64),
            np.asarray(kwargs["means0"], np.float64),
            np.full(k, float(kwargs["kappa0"])),
            np.full(k, float(kwargs["nu0"])),
            np.asarray(kwargs["psi0"], np.float64),
        )

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
    covs = isotropic_like(fit.covs) if check_prior_mode(prior) == "isotropic" else fit.covs
    nu0 = check_nu0(nu0, broad.shape[1])
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
    max_iter = integer("max_iter", max_iter, low=1)
    for it in range(1, max_iter + 1):  # noqa: B007 (returned: the iterations run)
        resp, _ = responsibilities(t, params["weights"], params["means"], params["covs"])
        post = prior.update_soft(t, resp)
        new = post.mode()
        change = max(np.max(np.abs(new[k] - params[k])) for k in new)
        params = new
        if change <= tol:
            break
    return post, resp, it


#: Gibbs burn-in sweeps and thinning of the mixture's exact draws (:func:`gibbs_chain`)
GIBBS_BURN_IN = 50
THIN = 2


def _log_components(t: np.ndarray, weights, means, covs) -> np.ndarray:
    """``log w_k + log N(t_i | μ_k, Σ_k)`` ``[n, K]``."""
    return np.log(weights) + gaussian_logpdf(t, np.asarray(means), np.asarray(covs)).T


def _assign(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One component per row drawn from the log weights ``logp [n, K]``."""
    p = np.exp(logp - logp.max(1, keepdims=True))
    cum = np.cumsum(p / p.sum(1, keepdims=True), axis=1)
    return np.minimum((rng.random((len(p), 1)) > cum).sum(1), p.shape[1] - 1)


def gibbs_chain(
    prior, targets: np.ndarray, z: np.ndarray, n: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``n`` kept draws ``{"weights": [n, K], "means": [n, K, d], "covs": [n, K, d, d]}`` of
    one Gibbs chain from the assignments ``z [n_targets]`` (module docstring)."""
    eye = np.eye(len(prior.alpha))
    kept = []
    for sweep in range(GIBBS_BURN_IN + n * THIN):
        draw = {k: v[0] for k, v in prior.update_soft(targets, eye[z]).sample(rng, 1).items()}
        z = _assign(_log_components(targets, draw["weights"], draw["means"], draw["covs"]), rng)
        if sweep >= GIBBS_BURN_IN and (sweep - GIBBS_BURN_IN) % THIN == THIN - 1:
            kept.append(draw)
    return {k: np.stack([d[k] for d in kept]) for k in kept[0]}


def posterior_chains(
    post, rng: np.random.Generator, chains: int, per_chain: int
) -> dict[str, np.ndarray]:
    """``{site: [chains, per_chain, ...]}``: independent Gibbs chains of an exact posterior."""
    targets = np.asarray(post.fixed["targets"], np.float64)
    m, prior = post.exact.mode(), DirichletNIW.from_model_kwargs(post.model_kwargs)
    z0 = first_max(_log_components(targets, m["weights"], m["means"], m["covs"]), axis=1)  # MAP-EM
    runs = [gibbs_chain(prior, targets, z0, per_chain, rng) for _ in range(chains)]
    return {k: np.stack([r[k] for r in runs]) for k in runs[0]}


class MixtureLikelihood(Likelihood):
    """The mixture's likelihood ``t_i ~ Σ_k w_k N(μ_k, Σ_k)`` under the Dirichlet–NIW prior of
    :func:`dirichlet_niw_model`, all in closed form (sites ``weights [K]``, ``means [K, d]``,
    ``covs [K, d, d]``)."""

    positive_definite = ("covs",)

    def log_density(self, draws, targets):
        t = np.asarray(targets, np.float64)
        w, means, covs = (np.asarray(draws[s], np.float64) for s in ("weights", "means", "covs"))
        comp = np.stack(
            [gaussian_logpdf(t, means[:, j], covs[:, j]) for j in range(w.shape[1])], -1
        )  # [S, n, K]
        return scipy.special.logsumexp(comp + np.log(w)[:, None, :], axis=-1)

    def sample(self, draws, n, rng):
        w, means, covs = (np.asarray(draws[s], np.float64) for s in ("weights", "means", "covs"))
        lab = np.stack([rng.choice(w.shape[1], size=n, p=wi / wi.sum()) for wi in w])  # [S, n]
        idx = np.arange(len(w))[:, None]
        z = rng.normal(size=(len(w), n, means.shape[-1]))
        return means[idx, lab] + np.einsum("snij,snj->sni", np.linalg.cholesky(covs[idx, lab]), z)

    def log_joint(self, targets, draws):
        kw = self.kwargs
        d = {k: np.asarray(v, np.float64) for k, v in draws.items()}
        alpha = float(kw["alpha0"]) * np.asarray(kw["weights0"], np.float64)
        w = d["weights"]
        log_dir = (
            scipy.special.gammaln(alpha.sum())
            - scipy.special.gammaln(alpha).sum()
            + ((alpha - 1) * np.log(w)).sum(-1)
        )
        niw = [{**kw, "mu0": m, "psi0": p} for m, p in zip(kw["means0"], kw["psi0"])]
        comps = sum(log_niw(d["means"][:, j], d["covs"][:, j], niw[j]) for j in range(w.shape[1]))
        return log_dir + comps + self.log_density(d, targets).sum(-1)

    def exact_prior(self):
        return DirichletNIW.from_model_kwargs(self.kwargs)

    @classmethod
    def site_shapes(cls, d, shapes):
        k = shapes["weights"][0] if shapes["weights"] else 1
        return {"weights": (k,), "means": (k, d), "covs": (k, d, d)}


def assignment_predictive(kwargs: dict, draws: dict, train, test, rng) -> np.ndarray:
    """``log p(test | z_s, T)`` ``[S, m]`` given assignments ``z_s ~ p(z | θ_s, T)`` per draw: a
    mixture of the NIW posteriors' Student-t's.  Exact ``[1, m]`` (the draws unused) with one
    component, or where summing over every assignment of the training targets is within
    :data:`ENUMERATION_BUDGET` (:func:`enumerated_predictive`)."""
    t, x = np.asarray(train, np.float64), np.asarray(test, np.float64)
    prior = DirichletNIW.from_model_kwargs(kwargs)
    k = len(prior.alpha)
    eye = np.eye(k)
    if k > 1 and enumeration_cost(k, len(t), t.shape[1], len(x)) <= ENUMERATION_BUDGET:
        return enumerated_predictive(prior, t, x)[None]  # exact: every assignment summed
    if k == 1:
        zs = np.zeros((1, len(t)), int)
    else:
        w, means, covs = (np.asarray(draws[s], np.float64) for s in ("weights", "means", "covs"))
        zs = np.stack([_assign(_log_components(t, *p), rng) for p in zip(w, means, covs)])
    unique, index = np.unique(zs, axis=0, return_inverse=True)
    rows = []
    for z in unique:  # each distinct assignment once
        post = prior.update_soft(t, eye[z])
        logw = np.log(post.alpha / post.alpha.sum())
        comp = [[post.component(j).log_marginal(xi[None]) for j in range(k)] for xi in x]
        rows.append(scipy.special.logsumexp(np.asarray(comp) + logw, axis=1))
    out = np.asarray(rows)
    return out if k == 1 else out[np.asarray(index).reshape(-1)]


#: largest ``K^n · K · (d³ + m d²)`` (floating-point work, roughly) at which the fold predictive
#: sums over every assignment of the training targets instead of sampling them
#: (:func:`enumerated_predictive`): 2¹⁸ assignments of 18 targets at d = 8 with K = 2 fit
ENUMERATION_BUDGET = 5e8
#: assignments per vectorised block of :func:`enumerated_predictive`
_BLOCK_FLOATS = 2**20


def enumeration_cost(k: int, n: int, d: int, m: int) -> float:
    """The work of :func:`enumerated_predictive` on ``n`` training and ``m`` test targets."""
    return float(k) ** n * k * (d**3 + m * d**2)


def _log_multigamma(a: np.ndarray, d: int) -> np.ndarray:
    """``log Γ_d(a)`` elementwise."""
    j = np.arange(d)
    return 0.25 * d * (d - 1) * np.log(np.pi) + scipy.special.gammaln(
        np.asarray(a)[..., None] - 0.5 * j
    ).sum(-1)


def enumerated_predictive(prior: DirichletNIW, train, test) -> np.ndarray:
    """The exact predictive ``log p(x_j | T)`` ``[m]`` of each test point under the
    Dirichlet–NIW mixture model given the training targets ``T [n, d]``: the sum over all
    ``K^n`` assignments z of ``p(z | T) · Σ_k E[w_k | z] St_k(x | targets in k)``, with
    ``p(z | T) ∝ p(z) Π_k p(T_k)`` (Dirichlet–multinomial times the NIW marginals), in blocks
    of assignments with a running log-sum-exp.  Cost :func:`enumeration_cost`."""
    t, x = np.asarray(train, np.float64), np.asarray(test, np.float64)
    n, d = t.shape
    k = len(prior.alpha)
    centre = t.mean(0) if n else np.zeros(d)  # translation-invariant: centred for precision
    t, x, mu0 = t - centre, x - centre, prior.mu - centre  # [n, d], [m, d], [K, d]
    k0, v0, psi0, alpha = prior.kappa, prior.nu, prior.psi, prior.alpha
    a0 = float(alpha.sum())
    outer = np.einsum("ni,nj->nij", t, t).reshape(n, d * d)
    stats = np.concatenate([np.ones((n, 1)), t, outer], 1)  # per target: 1, t, t tᵀ
    # every term that depends on z only through the counts c = 0..n, per component: tables
    c = np.arange(n + 1)[:, None]
    kn_t, vn_t = k0 + c, v0 + c  # [n + 1, K]
    count_t = (
        -0.5 * c * d * np.log(np.pi)
        + _log_multigamma(vn_t / 2, d)
        - _log_multigamma(v0 / 2, d)
        + 0.5 * v0 * np.linalg.slogdet(psi0)[1]
        + 0.5 * d * (np.log(k0) - np.log(kn_t))
        + scipy.special.gammaln(alpha + c)
        - scipy.special.gammaln(alpha)
    )  # log NIW marginal but its |Ψₙ| term, plus the Dirichlet–multinomial's count terms
    ratio = kn_t / (kn_t + 1)
    t_t = (
        _log_multigamma((vn_t + 1) / 2, d) - _log_multigamma(vn_t / 2, d) + 0.5 * d * np.log(ratio)
    )
    t_t += np.log(alpha + c) - np.log(a0 + n) - 0.5 * d * np.log(np.pi)  # with E[w_k | z]
    const = scipy.special.gammaln(a0) - scipy.special.gammaln(a0 + n)
    block = max(1, _BLOCK_FLOATS // (k * d * (d + len(x) + 1)))
    total, digits, cols = k**n, k ** np.arange(n), np.arange(k)
    log_norm, log_num = -np.inf, np.full(len(x), -np.inf)
    for start in range(0, total, block):
        z = (np.arange(start, min(start + block, total))[:, None] // digits) % k  # [A, n]
        members = (z[:, None, :] == cols[None, :-1, None]).astype(np.float64)  # [A, K − 1, n]
        s = (members.reshape(-1, n) @ stats).reshape(len(z), k - 1, -1)  # one matrix product
        s = np.concatenate([s, stats.sum(0) - s.sum(1, keepdims=True)], 1)  # the last: the rest
        counts = np.rint(s[..., 0]).astype(int)  # [A, K]
        kn, vn = k0 + counts, v0 + counts
        mun = (k0[:, None] * mu0 + s[..., 1 : d + 1]) / kn[..., None]
        # Ψₙ = Ψ₀ + Σ (t − t̄)(t − t̄)ᵀ + κ₀N/κₙ (t̄ − μ₀)(t̄ − μ₀)ᵀ, each term PSD (no
        # cancellation at the scale of μ₀): with sums s, Σ t tᵀ − s sᵀ/N and (s − Nμ₀)/√(κₙN)
        sums, per = s[..., 1 : d + 1], np.maximum(counts, 1)[..., None]
        dev = (sums - counts[..., None] * mu0) * np.sqrt(k0 / (kn * per[..., 0]))[..., None]
        psin = psi0 + s[..., d + 1 :].reshape(*counts.shape, d, d)
        psin -= (sums[..., :, None] * sums[..., None, :]) / per[..., None]
        psin += dev[..., :, None] * dev[..., None, :]
        chol = np.linalg.cholesky(psin)  # reads the lower triangle
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)  # [A, K]
        by_count = np.take_along_axis  # noqa: N806 (a table per component, indexed by count)
        log_joint = const + (by_count(count_t, counts, 0) - 0.5 * vn * logdet).sum(-1)
        # the Student-t of each test point per component, given z
        r = x[None, None, :, :] - mun[:, :, None, :]  # [A, K, m, d]
        maha = (np.linalg.solve(chol, np.swapaxes(r, -1, -2)) ** 2).sum(-2)  # [A, K, m]
        log_t = (
            by_count(t_t, counts, 0)[..., None]
            - 0.5 * (vn + 1)[..., None] * np.log1p(by_count(ratio, counts, 0)[..., None] * maha)
            - 0.5 * logdet[..., None]
        )
        log_pred = scipy.special.logsumexp(log_t, axis=1)  # [A, m]
        log_norm = np.logaddexp(log_norm, scipy.special.logsumexp(log_joint))
        log_num = np.logaddexp(log_num, scipy.special.logsumexp(log_joint[:, None] + log_pred, 0))
    return log_num - log_norm


# ---- what the checks know of the family (:class:`~anchordiv.adaptation.protocol.Hooks`) ----------
def mixture_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """Per component: the weight, the mean's cosine to the point summary's, the trace."""
    return {
        "weights": s["weights"],
        "mean_cosine": cosine(s["means"], ref["means"]),
        "cov_trace": np.trace(s["covs"], axis1=-2, axis2=-1),
    }


def mixture_sbc_quantities(d: int, rng) -> dict:
    """The first weight, tr Σ₀ and μ₁·v for a fixed unit v."""
    v = unit_vector(d, rng)
    return {
        "weight₀": lambda p: p["weights"][..., 0],
        "tr Σ₀": lambda p: np.trace(p["covs"][..., 0, :, :], axis1=-2, axis2=-1),
        "μ₁·v": lambda p: p["means"][..., 1, :] @ v,
    }


def mixture_sbc_broad(d: int, rng, separation: float = 8.0) -> np.ndarray:
    """Two clusters of spread 0.5 whose centres are ``separation`` apart (8: well separated;
    1.5 overlaps, so that assignments are uncertain)."""
    centres = np.zeros((2, d))
    centres[:, 0] = [-separation / 2, separation / 2]
    return centres[rng.integers(2, size=400)] + 0.5 * rng.normal(size=(400, d))


def mixture_prior_scale(kwargs: dict, mean: dict) -> np.ndarray:
    """The components' ``psi0`` (else posterior-mean covariances), summed ``[d, d]``."""
    return np.asarray(kwargs["psi0"] if "psi0" in kwargs else mean["covs"], np.float64).sum(0)


@family("mixture")
class DirichletNIWPrior(Family):
    """Dirichlet–NIW prior of the mixture kind, centred on a broad EM fit.

    Build with :meth:`from_anchors` (``components``, ``em_seed``; ``nu0`` defaults to d + 11).

    Parameters
    ----------
    alpha : numpy.ndarray, shape [K]
        Dirichlet parameters (= 1 + α₀π⁰).
    mu : numpy.ndarray, shape [K, d]
        Per-component NIW means.
    kappa, nu : numpy.ndarray, shape [K]
        Per-component NIW strengths.
    psi : numpy.ndarray, shape [K, d, d]
        Per-component NIW scale matrices.
    alpha0, kappa0 : float, default 10.0
        The strengths it was built with.
    nu0 : float, default 0.0
        The ν₀ it was built with.
    em_seed : int, default 0
        Seed of the broad EM fit.
    reg : float, default 1e-3
        Relative ridge of the EM covariances.
    max_iter : int, default 200
        MAP-EM iterations of the update.
    prior : {"broad", "isotropic"}, default "broad"
        The broad components or the isotropic control.
    origin : str, default ""
        Where the prior came from.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.DirichletNIWPrior.from_anchors(broad, components=2)
    >>> prior.mu.shape
    (2, 4)
    """

    exact_types = (DirichletNIW,)
    axes = {"alpha": "k", "mu": "kd", "kappa": "k", "nu": "k", "psi": "kdd"}

    alpha: np.ndarray
    mu: np.ndarray
    kappa: np.ndarray
    nu: np.ndarray
    psi: np.ndarray
    alpha0: float = 10.0
    kappa0: float = 10.0
    nu0: float = 0.0
    em_seed: int = 0
    reg: float = 1e-3
    max_iter: int = 200
    prior: str = "broad"
    origin: str = ""

    sites = ("weights", "means", "covs")
    covariance_site = "covs"
    hooks = Hooks(
        quantities=mixture_quantities,
        dims={"weights": ["component"], "mean_cosine": ["component"], "cov_trace": ["component"]},
        sbc_broad=mixture_sbc_broad,
        sbc_options=lambda d: {"components": 2, "alpha0": 10.0, "kappa0": 20.0, "nu0": d + 6.0},
        sbc_quantities=mixture_sbc_quantities,
        draw_size=lambda params: int(np.size(params.psi)),
        prior_scale=mixture_prior_scale,
        conditional_predictive=assignment_predictive,
    )
    static_fields = ("prior", "origin", "em_seed", "max_iter")
    model_axes = {"weights0": "k", "means0": "kd", "psi0": "kdd"}
    model = staticmethod(dirichlet_niw_model)
    likelihood_type = MixtureLikelihood
    descriptions = {
        "exact_mean": "closed-form conjugate posterior mean, given the MAP-EM responsibilities",
        "exact_map": "closed-form joint mode of (w, μ, Σ) of the full-d model, given the MAP-EM "
        "responsibilities",
    }

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        components: int = 4,
        alpha0: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
        reg: float = 1e-3,
        em_seed: int = 0,
        max_iter: int = 200,
        prior: str = "broad",
    ) -> "DirichletNIWPrior":
        """Prior centred on the broad EM fit with ``components`` (seeded by ``em_seed``).

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors (at least 2 per component).
        targets : array_like, shape [n, d], optional
            Not used (no strength is chosen from them).
        components : int, default 4
            Number of mixture components K.
        alpha0 : float, default 10.0
            Dirichlet strength of the broad weights, in pseudo-anchors.
        kappa0 : float, default 10.0
            Prior mean strength per component, in pseudo-anchors.
        nu0 : float, optional
            Inverse-Wishart degrees of freedom per component (> d + 1; default d + 11).
        reg : float, default 1e-3
            Relative ridge of the broad EM covariances.
        em_seed : int, default 0
            Seed of the broad EM fit (not a sampler).
        max_iter : int, default 200
            MAP-EM iterations of the update.
        prior : {"broad", "isotropic"}, default "broad"
            The broad components or the isotropic control.

        Returns
        -------
        DirichletNIWPrior
            The prior."""
        broad = np.asarray(broad)
        k = integer("components", components, low=1)
        if len(broad) < 2 * k:
            raise AnchorDivError(
                f"broad_anchors: too few for {k} components: need at least "
                f"{2 * k}, got {len(broad)}"
            )
        d = broad.shape[1]
        strengths = {
            "alpha0": positive("alpha0", alpha0),
            "kappa0": positive("kappa0", kappa0),
            "nu0": check_nu0(d + 11.0 if nu0 is None else nu0, d),
        }
        seed, reg = int(em_seed), positive("reg", reg, allow_zero=True)
        p = mixture_prior(
            broad, components=k, seed=seed, reg=reg, **strengths, prior=check_prior_mode(prior)
        )
        arrays = {k: getattr(p, k) for k in ("alpha", "mu", "kappa", "nu", "psi")}
        iters = integer("max_iter", max_iter, low=1)
        return cls(**arrays, **strengths, em_seed=seed, reg=reg, max_iter=iters, prior=prior)

    @property
    def dim(self) -> int:
        return int(np.shape(self.mu)[-1])

    def dirichlet_niw(self) -> DirichletNIW:
        return DirichletNIW(self.alpha, self.mu, self.kappa, self.nu, self.psi)

    def isotropic(self) -> "DirichletNIWPrior":
        return dataclasses.replace(
            self, psi=isotropic_like(np.asarray(self.psi)), prior="isotropic"
        )

    #: why a saved Gaussian model cannot give this prior (``ad.load_prior(model, kind=...)``)
    needs_anchors = (
        "a mixture prior runs EM on the broad anchors themselves; a saved Gaussian model only "
        "gives their mean and covariance — use DirichletNIWPrior.from_anchors(broad)"
    )

    def prior_kwargs(self) -> dict:
        return self.dirichlet_niw().model_kwargs()

    def check_loaded(self, dim: int | None) -> None:
        """As :meth:`Family.check_loaded`, and the constructor's rules: Dirichlet
        concentrations, κ and the strengths positive, each ν > d + 1, each Ψ positive
        definite (before the update probe of :meth:`Family.check_loaded`, which they break)."""
        d = int(np.shape(self.mu)[-1])
        for name in ("alpha", "kappa"):
            positive(f"prior: field {name} (its smallest entry)", np.min(getattr(self, name)))
        for name in ("alpha0", "kappa0"):
            positive(f"prior: field {name}", getattr(self, name))
        for nu in np.asarray(self.nu, np.float64).reshape(-1):
            check_nu0(nu, d)
        for i, m in enumerate(np.asarray(self.psi, np.float64).reshape(-1, d, d)):
            check_covariance(f"prior: field psi[{i}]", m, dim=d)
        super().check_loaded(dim)

    @classmethod
    def check_model_inputs(cls, kwargs, fixed, d):
        """As :meth:`Family.check_model_inputs`, and the constructor's rules: α₀ positive,
        the component weights a distribution, each component's NIW keywords as the gaussian
        kind's."""
        super().check_model_inputs(kwargs, fixed, d)
        if kwargs is not None:
            positive("model_kwargs.alpha0", kwargs["alpha0"])
            w = np.asarray(kwargs["weights0"], np.float64)
            positive("model_kwargs.weights0 (its smallest entry)", w.min())
            if abs(w.sum() - 1.0) > PROBABILITY_ATOL:
                raise AnchorDivError(f"model_kwargs.weights0: sums to {w.sum():.6g}, not 1")
            check_niw_kwargs(kwargs, d)

    def model_inputs(self, targets):
        info = {
            "components": len(self.alpha),
            "alpha0": float(self.alpha0),
            "kappa0": float(self.kappa0),
            "nu0": float(self.nu0),
            **weak_covariance(float(self.nu0) - self.dim - 1),
        }
        return self.prior_kwargs(), info, {}

    def exact(self, targets):
        kwargs, info, fixed = self.model_inputs(targets)
        post, resp, iters = map_em(self.dirichlet_niw(), targets, max_iter=int(self.max_iter))
        info.update(em_iterations=iters, target_counts=resp.sum(0).tolist())
        return post, info, fixed

    @classmethod
    def exact_chains(cls, post, rng, chains: int, per_chain: int) -> dict:
        """Exact draws that carry the assignment uncertainty: independent Gibbs chains over
        (z, weights, means, covs) given the targets (:func:`gibbs_chain`)."""
        return posterior_chains(post, rng, chains, per_chain)

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return GaussianMixture.from_params(
            p["weights"], np.asarray(p["means"], np.dtype(dtype)), p["covs"], tau=tau
        )

    @classmethod
    def project(cls, kwargs, u):
        return project_niw(kwargs, u, "means0")

    @classmethod
    def lift(cls, ps, completion, basis, r, *, which="mean", rng=None):
        """Each component as the Gaussian family lifts it (its own exact conditionals)."""
        conds = [
            Conditional(completion.component(k), basis, r) for k in range(len(completion.alpha))
        ]
        out = []
        for p in ps:
            f64 = {k: np.asarray(v, np.float64) for k, v in p.items()}
            full = [c.lift(m, s, which, rng) for c, m, s in zip(conds, f64["means"], f64["covs"])]
            out.append(stack_components(f64["weights"], full))
        return out

    @classmethod
    def project_mean(cls, mean, u):
        covs = np.swapaxes(u, 0, 1) @ mean["covs"] @ u
        return {"weights": mean["weights"], "means": mean["means"] @ u, "covs": covs}
