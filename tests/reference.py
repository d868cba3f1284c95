"""Float64 numpy references for every anchor model, written independently of the library.

Each reference gives ψ(θ) and ∇ψ(θ) in closed form (from the fitted model's parameters) and a
closed-form divergence; :func:`bregman_ref` applies the generic Bregman identity to (ψ, ∇ψ).
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp


def f64(x):
    return np.asarray(x, dtype=np.float64)


def lse(z, axis=-1):
    return sp.logsumexp(z, axis=axis)


def softmax_psi(m, t):
    a, lw, tau = f64(m.anchors), f64(m.log_weights), float(m.tau)
    keep = np.isfinite(lw)
    z = tau * t @ a[keep].T + lw[keep]
    p = np.exp(z - lse(z)[..., None])
    return lse(z), tau * p @ a[keep]


def gaussian_psi(m, t):
    mu, cov, tau = f64(m.mean), f64(m.factor) @ f64(m.factor).T, float(m.tau)
    return tau * t @ mu + 0.5 * tau**2 * np.einsum(
        "...i,ij,...j->...", t, cov, t
    ), tau * mu + tau**2 * t @ cov


def latent_gaussian_psi(m, t):
    mu, u, tau = f64(m.mean), f64(m.basis), float(m.tau)
    return tau * t @ mu + 0.5 * tau**2 * np.sum((t @ u) ** 2, -1), tau * mu + tau**2 * (t @ u) @ u.T


def spherical_log_mgf(k, s):
    """log E exp(s t) for t the first coordinate of a uniform point on S^{k-1} (Bessel form)."""
    nu = k / 2 - 1
    return sp.gammaln(k / 2) + (1 - k / 2) * np.log(s / 2) + np.log(sp.ive(nu, s)) + s


def bessel_ratio(k, s):
    return sp.ive(k / 2, s) / sp.ive(k / 2 - 1, s)


def mixture_psi(m, t):
    lw, mus, tau = f64(m.log_weights), f64(m.means), float(m.tau)
    covs = np.einsum("kir,kjr->kij", f64(m.factors), f64(m.factors))
    z = lw + tau * t @ mus.T + 0.5 * tau**2 * np.einsum("...i,kij,...j->...k", t, covs, t)
    r = np.exp(z - lse(z)[..., None])
    grads = tau * mus[None] + tau**2 * np.einsum("kij,nj->nki", covs, np.atleast_2d(t))
    return lse(z), np.einsum("nk,nki->ni", np.atleast_2d(r), grads).reshape(np.shape(t))


def mix_psi(m, t):
    p = float(m.p)
    (v1, g1), (v2, g2) = PSI[m.first.kind](m.first, t), PSI[m.second.kind](m.second, t)
    with np.errstate(divide="ignore"):
        z = np.stack([np.log(p) + v1, np.log1p(-p) + v2], -1)
    w = np.exp(z - lse(z)[..., None])
    return lse(z), w[..., :1] * g1 + w[..., 1:] * g2


PSI = {
    "softmax": softmax_psi,
    "gaussian": gaussian_psi,
    "latent-gaussian": latent_gaussian_psi,
    "mixture": mixture_psi,
    "mix": mix_psi,
}


def bregman_ref(m, x, y):
    """D [Q, G] from the generic Bregman identity on the numpy ψ, ∇ψ (ambient models)."""
    psi = PSI[m.kind]
    vx, gx = psi(m, f64(x))
    vy, _ = psi(m, f64(y))
    return vy[None, :] - vx[:, None] - (gx @ f64(y).T - np.sum(gx * f64(x), -1)[:, None])


def closed_form(m, x, y):
    """The closed-form divergence of docs/mathematics.md's table ("Anchor models"), [Q, G]."""
    x, y = f64(x), f64(y)
    if m.kind == "softmax":
        a, lw, tau = f64(m.anchors), f64(m.log_weights), float(m.tau)
        keep = np.isfinite(lw)
        lp = lambda v: (lambda z: z - lse(z)[..., None])(tau * v @ a[keep].T + lw[keep])  # noqa
        lpx, lpy = lp(x), lp(y)
        return np.sum(np.exp(lpx)[:, None, :] * (lpx[:, None, :] - lpy[None, :, :]), -1)
    if m.kind in ("mixture", "mix"):
        return bregman_ref(m, x, y)
    diff = y[None, :, :] - x[:, None, :]
    tau = float(m.tau)
    if m.kind == "gaussian":
        cov = f64(m.factor) @ f64(m.factor).T
        return 0.5 * tau**2 * np.einsum("qgi,ij,qgj->qg", diff, cov, diff)
    if m.kind == "latent-gaussian":
        return 0.5 * tau**2 * np.sum((diff @ f64(m.basis)) ** 2, -1)
    if m.kind == "latent-spherical":
        u = f64(m.basis)
        px, py = x @ u, y @ u
        cos = (px / np.linalg.norm(px, axis=1, keepdims=True)) @ (
            py / np.linalg.norm(py, axis=1, keepdims=True)
        ).T
        s = tau * float(m.radius)
        return s * bessel_ratio(u.shape[1], s) * (1 - cos)
    raise ValueError(m.kind)
