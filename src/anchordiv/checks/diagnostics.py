"""Prior–target diagnostics: does a broad prior fit a handful of target anchors — before any
retrieval is run?

For broad anchors B ``[N, d]`` (or the moment points of a saved prior) and targets T ``[n, d]``:

* ``captured`` — the fraction of the targets' scatter (about their mean) that lies in the
  prior's ``k`` leading directions (top-k eigenvectors of Cov(B)): ``‖X V_k‖² / ‖X‖²``.  The
  isotropic control has no preferred directions: a random k-subspace captures ``k/d`` in
  expectation, which is its value;
* ``mean_cos2`` / ``max_angle_deg`` — principal angles between the prior's top-k subspace and
  the targets' principal subspace (rank ``min(k, n − 1)``): the mean squared cosine (1 = the
  target subspace lies in the prior's, 0 = orthogonal; a random k-subspace gives ``k/d``) and
  the largest angle;
* ``log_evidence`` — the NIW log marginal likelihood of the targets per target,
  ``log p(T) / n`` (:meth:`anchordiv.adaptation.priors.NIW.log_marginal`) with fixed strengths κ₀, ν₀;
* ``loo`` — the exact leave-one-out log predictive density per target: the mean over i of
  ``log p(t_i | T₋ᵢ)``, the closed-form NIW posterior predictive (a multivariate Student-t,
  ``t_{νₙ−d+1}(μₙ, Ψₙ(κₙ+1)/(κₙ(νₙ−d+1)))``), so no PSIS approximation is needed; with one
  target it is the prior predictive.

``log_evidence`` and ``loo`` are also given for the isotropic control (the same strengths and
mean, covariance ``tr(C)/d · I``), and :func:`diagnose` reports their differences
(``*_gain``: prior − control).  The prior's mean and covariance are those ``ad.adapt`` uses
(:func:`anchordiv.adaptation.priors.niw.prior_scale`, relative ridge ``reg``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.special

from ..errors import AnchorDivError, as_matrix, integer, positive
from ..adaptation.priors.niw import NIW, check_nu0, prior_scale, scatter
from ..anchors.linalg import canonical_signs

PRIORS = ("broad", "isotropic")


def leading_directions(cov: np.ndarray, k: int) -> np.ndarray:
    """``[d, k]`` orthonormal top-k eigenvectors of a symmetric ``[d, d]`` matrix."""
    _, v = np.linalg.eigh(cov)
    return canonical_signs(v[:, ::-1][:, :k])


def captured_scatter(cov: np.ndarray, targets: np.ndarray, k: int) -> float:
    """Fraction of the targets' scatter about their mean in the top-k directions of ``cov``;
    NaN for fewer than two distinct targets."""
    x = np.asarray(targets, np.float64)
    x = x - x.mean(0)
    total = float((x ** 2).sum())
    if total <= 1e-300:
        return float("nan")
    return float(((x @ leading_directions(cov, k)) ** 2).sum() / total)


def target_subspace(targets: np.ndarray, k: int) -> np.ndarray:
    """``[d, r]`` principal directions of the centred targets, ``r = min(k, rank)``."""
    x = np.asarray(targets, np.float64)
    _, sv, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)
    r = min(k, int((sv > 1e-10 * max(sv.max(initial=0.0), 1e-300)).sum()))
    return canonical_signs(vt[:r].T)


def principal_angles(cov: np.ndarray, targets: np.ndarray, k: int) -> np.ndarray:
    """Principal angles (radians, descending) between the top-k subspace of ``cov`` and the
    targets' principal subspace; empty when the targets span nothing (n < 2)."""
    t = target_subspace(targets, k)
    if t.shape[1] == 0:
        return np.zeros(0)
    return scipy.linalg.subspace_angles(leading_directions(cov, k), t)


def student_t_logpdf(x: np.ndarray, loc: np.ndarray, shape: np.ndarray, df: float) -> float:
    """log density of a multivariate Student-t ``t_df(loc, shape)`` at ``x [d]``."""
    d = len(loc)
    chol = np.linalg.cholesky(shape)
    z = scipy.linalg.solve_triangular(chol, x - loc, lower=True)
    return float(scipy.special.gammaln((df + d) / 2) - scipy.special.gammaln(df / 2)
                 - 0.5 * d * np.log(df * np.pi) - np.log(np.diag(chol)).sum()
                 - 0.5 * (df + d) * np.log1p(z @ z / df))


def predictive_logpdf(post: NIW, x: np.ndarray) -> float:
    """log p(x | data) under the NIW posterior ``post``: the Student-t posterior predictive."""
    df = post.nu - post.dim + 1
    return student_t_logpdf(np.asarray(x, np.float64), post.mu,
                            post.psi * (post.kappa + 1) / (post.kappa * df), df)


def loo_pointwise(prior: NIW, targets: np.ndarray) -> np.ndarray:
    """Exact leave-one-out log predictive densities ``log p(t_i | T₋ᵢ)`` ``[n]`` of the
    targets ``[n, d]`` under the NIW ``prior`` (fixed strengths); with one target, its prior
    predictive density."""
    t = np.asarray(targets, np.float64)
    if len(t) == 1:
        return np.array([predictive_logpdf(prior, t[0])])
    n, tbar, s = scatter(t)
    out = np.empty(n)
    for i in range(n):
        rest_mean = (n * tbar - t[i]) / (n - 1)
        # scatter of the others: S − n/(n−1)·(t_i − t̄)(t_i − t̄)ᵀ (one-point downdate)
        rest_s = s - n / (n - 1) * np.outer(t[i] - tbar, t[i] - tbar)
        out[i] = predictive_logpdf(prior.update_stats(n - 1, rest_mean, rest_s), t[i])
    return out


def loo_predictive(prior: NIW, targets: np.ndarray) -> float:
    """Mean exact leave-one-out log predictive density of the targets (per target)."""
    return float(np.mean(loo_pointwise(prior, targets)))


def niw_prior(broad: np.ndarray, kappa0: float, nu0: float, *, prior: str = "broad",
              reg: float = 1e-3) -> NIW:
    """The NIW prior ``ad.adapt("gaussian", broad, ..., kappa0=, nu0=, prior=)`` starts from."""
    mu0, cov = prior_scale(broad, reg=reg, prior=prior)
    return NIW.from_scale(mu0, cov, kappa0, nu0)


def diagnose(broad, targets, *, kappa0: float, nu0: float, k: int = 10,
             reg: float = 1e-3) -> dict:
    """All diagnostics of ``broad [N, d]`` for ``targets [n, d]`` (see the module docstring):
    ``captured``, ``captured_isotropic`` (k/d), ``mean_cos2``, ``max_angle_deg``,
    ``log_evidence``, ``log_evidence_isotropic``, ``log_evidence_gain``, ``loo``,
    ``loo_isotropic``, ``loo_gain``, plus ``n``, ``d``, ``k``.  Strengths ``kappa0`` and
    ``nu0`` (> d + 1) are fixed, as in ``ad.adapt(..., kappa0=, nu0=)``."""
    b = as_matrix("broad", broad, min_rows=2)
    t = as_matrix("targets", targets, dim=b.shape[1])
    d = b.shape[1]
    k = integer("k", k, low=1)
    if k >= d:
        raise AnchorDivError(f"k: the leading directions must be fewer than d = {d}, got {k}")
    positive("kappa0", kappa0)
    check_nu0(nu0, d)
    _, cov = prior_scale(b, reg=reg, prior="broad")
    angles = principal_angles(cov, t, k)
    out = {"n": len(t), "d": d, "k": k, "captured": captured_scatter(cov, t, k),
           "captured_isotropic": k / d,
           "mean_cos2": float(np.mean(np.cos(angles) ** 2)) if len(angles) else float("nan"),
           "max_angle_deg": float(np.degrees(angles.max())) if len(angles) else float("nan")}
    for p in PRIORS:
        niw = niw_prior(b, kappa0, nu0, prior=p, reg=reg)
        suffix = "" if p == "broad" else "_isotropic"
        out["log_evidence" + suffix] = niw.log_marginal(t) / len(t)
        out["loo" + suffix] = loo_predictive(niw, t)
    out["log_evidence_gain"] = out["log_evidence"] - out["log_evidence_isotropic"]
    out["loo_gain"] = out["loo"] - out["loo_isotropic"]
    return out


__all__ = ["captured_scatter", "diagnose", "leading_directions", "loo_pointwise",
           "loo_predictive",
           "niw_prior", "predictive_logpdf", "principal_angles", "student_t_logpdf",
           "target_subspace"]
