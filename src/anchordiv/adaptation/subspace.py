"""Subspace inference: run a model (the kind's or a user's) on the broad anchors' top-r principal
directions and lift the result back to a full-d anchor model (MATH.md, "Inference at the
encoder's dimension").

Construction.  Let ``V = [U_r, U_⊥]`` ``[d, d]`` be the eigenvectors of the broad anchors'
covariance, leading first.  The model runs on the projected targets ``T U_r`` ``[n, r]`` with its
hyperparameters expressed in that basis (:func:`project`): for the NIW, ``μ₀ → U_rᵀμ₀``,
``Ψ₀ → U_rᵀΨ₀U_r`` and ``ν₀ → ν₀ − (d − r)``, because the r×r block of ``Σ ~ IW_d(ν₀, Ψ₀)`` is
``IW_r(ν₀ − (d − r), U_rᵀΨ₀U_r)`` and the conjugate update holds blockwise; so for the default
prior the subspace posterior has a closed form.  A user's prior builder
(``model_kwargs=callable``) is called with the projected broad anchors ``B U_r``.

Lifting: each family lifts its own sites (:meth:`Projectable.lift
<anchordiv.adaptation.capabilities.Projectable.lift>`).  The Gaussian family (and the mixture,
component by component) samples the exact conditionals of the default prior's NIW posterior
outside the subspace (:class:`anchordiv.adaptation.families.gaussian.Conditional`), so with exact
subspace draws of the default model the lifted draws are exact full-d posterior draws.

Latent kinds: the subspace frame ``U_sub`` ``[r, k]`` (k < r) lifts to ``U = U_r U_sub``; the
latent mean stays the exact full-d one.
"""

from __future__ import annotations

import numpy as np

from ..anchors.gaussian import moments
from ..errors import AnchorDivError, integer
from .cache import cached
from ..anchors.linalg import canonical_signs


def principal_basis(broad: np.ndarray) -> np.ndarray:
    """Eigenvectors of the broad covariance, leading first (float64).

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.

    Returns
    -------
    numpy.ndarray, shape [d, d]
        The basis V.

    Examples
    --------
    >>> from anchordiv.adaptation.subspace import principal_basis
    >>> broad = np.random.default_rng(0).normal(size=(50, 3)) * [3.0, 1.0, 0.1]
    >>> int(np.abs(principal_basis(broad)[:, 0]).argmax())
    0
    """
    _, cov = cached(moments, broad, 0.0)
    _, v = np.linalg.eigh(cov)
    return canonical_signs(np.ascontiguousarray(v[:, ::-1]))


def check_rank(r, d: int, n_broad: int, kind: str, latent_rank: int | None) -> int:
    """The subspace rank, validated.

    Parameters
    ----------
    r : int
        The requested rank.
    d : int
        Dimension.
    n_broad : int
        Broad anchors (the basis has at most their rank).
    kind : str
        The family.
    latent_rank : int, optional
        A latent kind's rank (the subspace must hold it).

    Returns
    -------
    int
        ``r``.

    Raises
    ------
    AnchorDivError
        ``r`` < 1, ``r`` ≥ d (use the full model), ``r`` > n_broad − 1, or ``r`` not above a
        latent kind's rank.
    """
    r = integer("subspace", r, low=1)
    if r >= d:
        raise AnchorDivError(
            f"subspace: r = {r} must be < d = {d} (r = d is the full model: leave subspace unset)"
        )
    if r > n_broad - 1:
        raise AnchorDivError(
            f"subspace: r = {r} is larger than the broad anchors allow: at most "
            f"n_broad − 1 = {n_broad - 1}"
        )
    if latent_rank is not None and latent_rank >= r:
        raise AnchorDivError(f"subspace: r = {r} must exceed the {kind} rank k = {latent_rank}")
    return r


def sandwich(u: np.ndarray, m):
    """``uᵀ m u`` for a batch of matrices.

    Parameters
    ----------
    u : numpy.ndarray, shape [d, r]
        The basis.
    m : array_like, shape [..., d, d]
        The matrices.

    Returns
    -------
    numpy.ndarray, shape [..., r, r]
        The projected matrices.

    Examples
    --------
    >>> from anchordiv.adaptation.subspace import sandwich
    >>> sandwich(np.eye(3)[:, :2], np.diag([1.0, 2.0, 3.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    return np.swapaxes(u, -1, -2) @ np.asarray(m, np.float64) @ u


__all__ = [
    "check_rank",
    "principal_basis",
    "sandwich",
]
