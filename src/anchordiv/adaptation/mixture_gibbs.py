"""Exact-posterior draws of the Dirichlet–NIW mixture that carry the assignment uncertainty.

The conjugate family after MAP-EM (:func:`anchordiv.adaptation.priors.map_em`) is the posterior *given the
EM responsibilities*; drawing from it ignores which component each target belongs to, and on
overlapping components its intervals are too narrow (SBC: χ² p ≈ 4e-7, 90 % coverage 0.82 for
tr Σ₀ and the weights).  This module samples the joint posterior of (w, μ_k, Σ_k, z) by Gibbs:

* ``θ | z``: Dirichlet(α₀π⁰ + counts) weights and, per component, the conjugate NIW update
  from the targets assigned to it (hard assignments, :meth:`DirichletNIW.update_soft` with
  one-hot responsibilities), one exact draw;
* ``z | θ``: each target's component from ``p(z_i = k) ∝ w_k N(t_i | μ_k, Σ_k)``.

Chains start from the MAP-EM assignments, run :data:`BURN_IN` sweeps, then keep one θ every
:data:`THIN` sweeps.  Cost per sweep: K exact NIW draws and K Cholesky factors, O(K d³).  The
informative broad prior anchors the labels (no label switching in practice; check R-hat over
the two chains that :func:`posterior_chains` returns).
"""

from __future__ import annotations

import numpy as np

BURN_IN = 50
THIN = 2


def _log_components(t: np.ndarray, weights, means, covs) -> np.ndarray:
    """``log w_k + log N(t_i | μ_k, Σ_k)`` ``[n, K]``."""
    out = np.empty((len(t), len(weights)))
    for k in range(len(weights)):
        chol = np.linalg.cholesky(covs[k])
        z = np.linalg.solve(chol, (t - means[k]).T)
        out[:, k] = (
            np.log(weights[k])
            - np.log(np.diag(chol)).sum()
            - 0.5 * (z * z).sum(0)
            - 0.5 * t.shape[1] * np.log(2 * np.pi)
        )
    return out


def _assign(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = np.exp(logp - logp.max(1, keepdims=True))
    cum = np.cumsum(p / p.sum(1, keepdims=True), axis=1)
    return np.minimum((rng.random((len(p), 1)) > cum).sum(1), p.shape[1] - 1)


def _prior(kwargs: dict):
    from .priors import DirichletNIW

    k = len(kwargs["weights0"])
    return DirichletNIW(
        float(kwargs["alpha0"]) * np.asarray(kwargs["weights0"], np.float64),
        np.asarray(kwargs["means0"], np.float64),
        np.full(k, float(kwargs["kappa0"])),
        np.full(k, float(kwargs["nu0"])),
        np.asarray(kwargs["psi0"], np.float64),
    )


def gibbs_chain(
    prior, targets: np.ndarray, z: np.ndarray, n: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``n`` kept draws ``{"weights": [n, K], "means": [n, K, d], "covs": [n, K, d, d]}`` of
    one Gibbs chain from the assignments ``z [n_targets]`` (module docstring)."""
    eye = np.eye(len(prior.alpha))
    kept = []
    for sweep in range(BURN_IN + n * THIN):
        draw = {k: v[0] for k, v in prior.update_soft(targets, eye[z]).sample(rng, 1).items()}
        z = _assign(_log_components(targets, draw["weights"], draw["means"], draw["covs"]), rng)
        if sweep >= BURN_IN and (sweep - BURN_IN) % THIN == THIN - 1:
            kept.append(draw)
    return {k: np.stack([d[k] for d in kept]) for k in kept[0]}


def _start(post, targets: np.ndarray) -> np.ndarray:
    """The MAP-EM assignments (the most probable component of each target at the mode)."""
    m = post.family.mode()
    return _log_components(targets, m["weights"], m["means"], m["covs"]).argmax(1)


def posterior_chains(
    post, rng: np.random.Generator, chains: int, per_chain: int
) -> dict[str, np.ndarray]:
    """``{site: [chains, per_chain, ...]}`` from independent Gibbs chains of an exact mixture
    posterior (its prior ``post.model_kwargs``, targets ``fixed["targets"]``)."""
    targets = np.asarray(post.fixed["targets"], np.float64)
    prior, z0 = _prior(post.model_kwargs), _start(post, targets)
    runs = [gibbs_chain(prior, targets, z0, per_chain, rng) for _ in range(chains)]
    return {k: np.stack([r[k] for r in runs]) for k in runs[0]}


def posterior_draws(post, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """``n`` draws ``{site: [n, ...]}`` (one Gibbs chain)."""
    return {k: v[0] for k, v in posterior_chains(post, rng, 1, n).items()}


__all__ = [
    "BURN_IN",
    "THIN",
    "gibbs_chain",
    "posterior_chains",
    "posterior_draws",
]
