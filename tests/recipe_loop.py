"""The recipe's criteria as they were computed before they became batched algebra: one Python
loop over folds × strengths, one small solve (Woodbury) per cell, one SVD per fold.  Kept as the
slow float64 reference the batched :mod:`anchordiv.adaptation.statistics` is held to."""

import numpy as np
import scipy.linalg
import scipy.special

from anchordiv.adaptation import statistics as recipe
from anchordiv.adaptation.families.gaussian import NIW
from anchordiv.adaptation.statistics import broad_moments


def psi_terms(w, z, s):
    d, p = w.shape
    if p < d:
        small = s * np.eye(p) + w.T @ w
        wz = w.T @ z
        return (
            (z @ z - wz @ np.linalg.solve(small, wz)) / s,
            (d - p) * np.log(s) + np.linalg.slogdet(small)[1],
        )
    chol = np.linalg.cholesky(s * np.eye(d) + w @ w.T)
    v = scipy.linalg.solve_triangular(chol, z, lower=True)
    return float(v @ v), 2.0 * float(np.log(np.diag(chol)).sum())


def fold_log_predictive(y, i, s, logdet_c):
    d = y.shape[1]
    rest = np.delete(y, i, axis=0)
    m = len(rest)
    mean = rest.mean(0)
    kappa, df = s + m, s + m + 2.0
    w = np.concatenate([rest - mean, np.sqrt(s * m / kappa) * mean[None]]).T
    z = y[i] - m * mean / kappa
    quad, logdet_psi = psi_terms(w, z, s)
    logdet_psi += logdet_c
    scale = (kappa + 1) / (kappa * df)
    return float(
        scipy.special.gammaln((df + d) / 2)
        - scipy.special.gammaln(df / 2)
        - 0.5 * d * np.log(df * np.pi)
        - 0.5 * (logdet_psi + d * np.log(scale))
        - 0.5 * (df + d) * np.log1p(quad / (scale * df))
    )


def whitened(mu0, cov, targets):
    chol = np.linalg.cholesky(np.asarray(cov, np.float64))
    y = scipy.linalg.solve_triangular(chol, (np.asarray(targets, np.float64) - mu0).T, lower=True).T
    return y, 2.0 * float(np.log(np.diag(chol)).sum())


def density_scores(mu0, cov, t, grid=recipe.STRENGTH_GRID, max_folds=recipe.MAX_FOLDS):
    d = len(mu0)
    t = np.asarray(t, np.float64)
    if len(t) < recipe.MIN_LOO_TARGETS:
        return np.array(
            [
                NIW.from_scale(mu0, cov, s, d + 1 + s).log_marginal(t)
                + 2 * recipe.log_hyperprior(np.log(s))
                for s in grid
            ],
            float,
        )
    y, logdet_c = whitened(mu0, cov, t)
    left_out = recipe.folds(len(t), max_folds)
    return np.array(
        [np.mean([fold_log_predictive(y, i, s, logdet_c) for i in left_out]) for s in grid], float
    )


def target_novelty(t, max_folds=recipe.MAX_FOLDS):
    t = np.asarray(t, np.float64)
    if len(t) <= 2:
        return 1.0
    out = []
    for i in recipe.folds(len(t), max_folds):
        rest = np.delete(t, i, axis=0)
        mean = rest.mean(0)
        _, sv, vt = np.linalg.svd(rest - mean, full_matrices=False)
        span = vt[sv > 1e-8 * max(sv.max(initial=0.0), 1e-300)]
        dev = t[i] - mean
        total = dev @ dev
        out.append(1.0 if total <= 1e-300 else 1.0 - ((span @ dev) ** 2).sum() / total)
    return float(np.clip(np.mean(out), 0.0, 1.0))


def gaussian_strengths(broad, t, reg=1e-3, grid=recipe.STRENGTH_GRID):
    mu0, cov = broad_moments(np.asarray(broad), reg=reg)
    grid = np.asarray(grid)
    dens = float(grid[int(np.argmax(density_scores(mu0, cov, t, grid)))])
    nov = target_novelty(t)
    by_novelty = recipe.novelty_strength(len(t), nov)
    s = float(np.clip(min(dens, by_novelty), min(grid), max(grid)))
    return {"strength": s, "density_strength": dens, "novelty": nov}
