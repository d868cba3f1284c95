"""Helpers of the families' interpretable quantities (``Family.quantities``, the ArviZ
posterior group): principal angles between subspaces and cosines."""

from __future__ import annotations

import numpy as np

#: the Gaussian quantities include ``mu`` and ``Sigma`` themselves up to this d
SMALL_D = 8
#: leading covariance eigenvalues reported
N_EIGEN = 5


def principal_angles(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Principal angles in degrees, ascending, between two subspaces.

    Parameters
    ----------
    u, v : numpy.ndarray, shape [..., d, k]
        Bases of the subspaces (orthonormal columns).

    Returns
    -------
    numpy.ndarray, shape [..., k]
        The angles in degrees.

    Examples
    --------
    >>> from anchordiv.adaptation.quantities import principal_angles
    >>> principal_angles(np.eye(3)[:, :1], np.eye(3)[:, 1:2]).round(1)
    array([90.])
    """
    s = np.linalg.svd(np.swapaxes(u, -1, -2) @ v, compute_uv=False)
    return np.degrees(np.arccos(np.clip(s, -1.0, 1.0)))


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine between the last axes of two arrays (broadcast).

    Parameters
    ----------
    a, b : numpy.ndarray, shape [..., d]
        The vectors.

    Returns
    -------
    numpy.ndarray, shape [...]
        cos(a, b).

    Examples
    --------
    >>> from anchordiv.adaptation.quantities import cosine
    >>> float(cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])).round(3))
    0.707
    """
    return (a * b).sum(-1) / np.maximum(
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-300
    )


__all__ = ["N_EIGEN", "SMALL_D", "cosine", "principal_angles"]
