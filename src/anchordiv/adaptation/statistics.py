"""The anchors' statistics that the families, the held-out recipe and the checks share: the
targets' scatter (computed once per :func:`~.cache.frozen` target array, so an update, its
evidence and the recipe share one), the broad anchors' moments with a relative ridge (or their
isotropic control) and the broad spectrum.  Broad statistics are cached by the broad array's
digest (:mod:`.cache`)."""

from __future__ import annotations

import numpy as np

from ..anchors.gaussian import moments
from ..errors import AnchorDivError
from .cache import cached, derived


def scatter(targets: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``(n, t̄ [d], S [d, d])`` of ``targets [n, d]`` in float64, ``S = Σ (tᵢ − t̄)(tᵢ − t̄)ᵀ``;
    computed once per :func:`.cache.frozen` target array (``adapt`` freezes its targets, so
    the recipe, the update and the evidence share one scatter)."""
    return derived(_scatter, np.asarray(targets))


def _scatter(targets: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    t = np.asarray(targets, np.float64)
    mean = t.mean(axis=0)
    c = t - mean
    return t.shape[0], mean, c.T @ c


def broad_moments(
    broad: np.ndarray, *, reg: float = 0.0, prior: str = "broad"
) -> tuple[np.ndarray, np.ndarray]:
    """``(μ [d], C [d, d])``: the broad anchors' mean and covariance plus the relative ridge
    ``reg · tr(C)/d · I`` (:func:`anchordiv.anchors.gaussian.moments`), or for
    ``prior="isotropic"`` the isotropic covariance ``tr(C)/d · I`` of the same trace.

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    reg : float, default 0.0
        Relative ridge.
    prior : {"broad", "isotropic"}, default "broad"
        The covariance or its isotropic control.

    Returns
    -------
    mu : numpy.ndarray, shape [d]
    cov : numpy.ndarray, shape [d, d]

    Examples
    --------
    >>> from anchordiv.adaptation.statistics import broad_moments
    >>> mu, cov = broad_moments(np.array([[0.0, 0.0], [2.0, 0.0]]), prior="isotropic")
    >>> mu, cov
    (array([1., 0.]), array([[0.5, 0. ],
           [0. , 0.5]]))
    """
    mu, cov = cached(moments, broad, reg) if reg else cached(moments, broad)
    if prior == "isotropic":
        return mu, np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    if prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    return mu, cov


def broad_spectrum(broad: np.ndarray) -> np.ndarray:
    """Descending eigenvalues ``[d]`` of the broad covariance (unridged)."""
    return np.linalg.eigvalsh(moments(broad)[1])[::-1]


__all__ = ["broad_moments", "broad_spectrum", "scatter"]
