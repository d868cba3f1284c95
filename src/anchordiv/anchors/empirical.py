"""Empirical ("softmax") anchor model: ψ(θ) = log Σ_i w_i exp(τ⟨a_i, θ⟩).

Its divergence is ``KL(p_x ‖ p_y)`` with ``p_x = softmax(τ A x + log w)`` — the softmax anchor
divergence (and TIP-X's KL over class-text affinity profiles).  Anchors are padded to a size
bucket with zero rows of weight zero (log-weight −inf), so refitting with a slightly different
number of anchors reuses compiled code.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import AnchorDivError, as_matrix
from .base import AnchorModel, anchor_model, as_tau


@anchor_model("softmax")
class Softmax(AnchorModel):
    """Empirical anchor distribution Σ_i w_i δ_{a_i} (the softmax anchor divergence).

    ψ(θ) = log Σ_i w_i exp(τ⟨a_i, θ⟩); its divergence is KL(p_x ‖ p_y) with
    p_x = softmax(τ A x + log w).

    Parameters
    ----------
    anchors : jax.Array, shape [N, d]
        The anchors, N padded to a size bucket with zero rows.
    log_weights : jax.Array, shape [N]
        log w_i (−inf on padding).
    tau : jax.Array, shape []
        The encoder's logit scale τ.

    Examples
    --------
    >>> m = ad.fit("softmax", np.eye(4), tau=20.0)
    >>> m.n_anchors, m.profile(np.eye(4)[0]).shape[-1] >= 4
    (4, True)
    """

    anchors: jax.Array
    log_weights: jax.Array
    tau: jax.Array
    axes = {"anchors": "nd", "log_weights": "n", "tau": ""}

    def cumulant(self, theta):
        logits = self.tau * (theta @ self.anchors.T) + self.log_weights
        return jax.nn.logsumexp(logits, axis=-1)

    def profile(self, theta):
        """The anchor distribution p_θ = softmax(τAθ + log w): ``[..., d] -> [..., N]``."""
        return jax.nn.softmax(self.tau * (theta @ self.anchors.T) + self.log_weights, axis=-1)

    @property
    def dim(self) -> int:
        return int(self.anchors.shape[-1])

    @property
    def n_anchors(self) -> int:
        """Number of real (non-padding) anchors."""
        return int(np.isfinite(np.asarray(self.log_weights)).sum())


def bucket_size(n: int) -> int:
    """Padded size for n items: next power of two up to 4096, then the next multiple of 4096."""
    if n <= 4096:
        return 1 << max(0, (n - 1).bit_length())
    return -(-n // 4096) * 4096


def _log_weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, -np.log(n))
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise AnchorDivError(f"weights: expected shape [{n}] (one per anchor), got {list(w.shape)}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise AnchorDivError("weights: must be finite and non-negative")
    if w.sum() <= 0:
        raise AnchorDivError("weights: at least one weight must be positive")
    with np.errstate(divide="ignore"):
        return np.log(w / w.sum())


def fit_softmax(anchors, *, tau: float, weights=None, pad: bool = True) -> Softmax:
    """Empirical model of ``anchors [N, d]`` with optional non-negative ``weights [N]``
    (normalised to sum to one).  ``pad`` rounds N up to :func:`bucket_size` with weight-zero rows."""
    a = as_matrix("anchors", anchors, min_rows=1)
    n, d = a.shape
    logw = _log_weights(weights, n)
    size = bucket_size(n) if pad else n
    a_pad = np.concatenate([a, np.zeros((size - n, d), a.dtype)])
    lw_pad = np.concatenate([logw, np.full(size - n, -np.inf)]).astype(a.dtype)
    return Softmax(jnp.asarray(a_pad), jnp.asarray(lw_pad), as_tau(tau, a.dtype))
