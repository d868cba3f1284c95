"""The library's numerical tolerances: every decision on a computed value being zero or two
being equal compares against one of these, so outputs do not change with a host's rounding."""

from __future__ import annotations

import numpy as np

#: eigenvalues at or below this fraction of the largest are absent directions
SPECTRUM_RTOL = 1e-11

#: values within this fraction of the maximum's magnitude of the maximum tie (the first wins)
TIE_RTOL = 1e-9

#: values within this many ε (relative) of a precision tie in SBC's ranks (``sbc.tie_rtol``)
TIE_ULPS = 8

#: anchors within this fraction of their largest coordinate of the first anchor are identical
IDENTICAL_RTOL = 1e-6

#: ``1 − (n/m)·leverage`` at or below this: the left-out target is needed for the others' span
LEVERAGE_TOL = 1e-8

#: a cumulative fraction of variance within this of the requested fraction reaches it
FRACTION_ATOL = 1e-12

#: a draw within this relative distance of its distribution's support (a float32 draw's
#: rounding, ~1e-7) is re-scored at its projection onto the support; farther, where it is
SUPPORT_RTOL = 1e-5

#: probabilities (a mixture's component weights) whose sum is within this of 1 sum to 1
PROBABILITY_ATOL = 1e-6

#: a Rao-Blackwellized ELPD is unreliable when halving its draws moves it more than this many SE
DOUBLING_SE = 3.0

#: how far above 1 a loaded latent prior's ``projector`` eigenvalue may be (round-off of U Uᵀ)
PROJECTOR_ATOL = 1e-6


def kept_spectrum(lam) -> np.ndarray:
    """Mask ``[k]`` of the eigenvalues ``lam [k]`` above :data:`SPECTRUM_RTOL` · max λ (none of
    an all-zero spectrum)."""
    lam = np.asarray(lam)
    return lam > SPECTRUM_RTOL * max(float(lam.max(initial=0.0)), np.finfo(np.float64).tiny)


def kept_singular_values(sv) -> np.ndarray:
    """Mask ``[k]`` of the singular values ``sv [k]`` whose squares :func:`kept_spectrum`
    keeps: the same rank rule for a matrix as for its scatter."""
    return kept_spectrum(np.square(np.asarray(sv, np.float64)))


def numerical_rank(cov) -> int:
    """The number of eigenvalues of the symmetric ``cov [d, d]`` above :data:`SPECTRUM_RTOL` of
    the largest.

    Examples
    --------
    >>> from anchordiv._tolerance import numerical_rank
    >>> x = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])   # two rows on one line
    >>> numerical_rank(x.T @ x)
    1
    """
    c = np.asarray(cov, np.float64)
    return int(kept_spectrum(np.linalg.eigvalsh((c + c.T) / 2)).sum())


def first_max(values, axis: int = -1):
    """Index of the first entry of ``values`` (along ``axis``) within :data:`TIE_RTOL` of the
    maximum, relative to the maximum's own magnitude (not the largest magnitude: a far-off
    −1e10 must not widen the window near a maximum of 0): ``np.argmax`` with near-ties broken
    toward the first, so that the choice does not hang on a last bit.  NaN never wins.  A
    maximum of exactly 0 ties only with other zeros.

    Parameters
    ----------
    values : array_like, shape [..., n, ...]
        Scores (NumPy or JAX; a JAX array gives a JAX index, traceable).
    axis : int, default -1
        The axis to choose along.

    Returns
    -------
    int or numpy.ndarray
        The indices, ``values``' shape without ``axis`` (an int for a 1-d input).

    Examples
    --------
    >>> from anchordiv._tolerance import first_max
    >>> first_max([1.0, 3.0, 3.0 + 1e-14, 2.0])      # the last bit does not decide
    1
    >>> int(np.argmax([1.0, 3.0, 3.0 + 1e-14, 2.0]))
    2
    >>> first_max([-5.0, 0.0, -1e10])                  # the window is the maximum's, not −1e10's
    1
    """
    import jax

    xp = jax.numpy if isinstance(values, jax.Array) else np
    v = xp.asarray(values) if xp is not np else np.asarray(values, np.float64)
    finite = xp.isfinite(v)
    top = xp.max(xp.where(finite, v, -xp.inf), axis=axis, keepdims=True)
    near = finite & (v >= top - TIE_RTOL * xp.abs(top))
    i = xp.argmax(near, axis=axis)  # the first True
    return int(i) if xp is np and np.ndim(i) == 0 else i
