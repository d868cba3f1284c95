"""The library's numerical tolerances: every decision that rests on a computed value being zero,
or on two computed values being equal (a rank, a kept column, the first of tied maxima, a sign
pivot), compares against one of these relative tolerances, so that outputs do not change
between hosts with the BLAS build's rounding.  Decisions on exact data (counts, 0/1 labels, a
user's rows compared bytewise) stay exact."""

from __future__ import annotations

import numpy as np

#: eigenvalues at or below this fraction of the largest are absent directions: well above the
#: rounding of a symmetric eigensolver (≈ d·ε·λ_max, 1e-13 at d = 384) and below the squared
#: condition number a criterion's Gram matrix can carry (singular values down to ~3e-6 of the
#: largest are kept)
SPECTRUM_RTOL = 1e-11

#: values within this fraction of the maximum's magnitude of the maximum tie (the first wins):
#: far above a last-bit difference between hosts (≈ 1e-16 relative, 1e-13 after a reduction
#: over a few thousand terms), far below any difference the library reports
TIE_RTOL = 1e-9

#: values of a precision within this many of its ε (relative) tie: a float32 rounding of a
#: float64 value (≤ ε/2) and the rounding of a short computation on it (a few ε) — SBC's rank
#: of a truth among draws (:func:`anchordiv.checks.sbc.tie_rtol`; at least :data:`TIE_RTOL`)
TIE_ULPS = 8

#: anchors within this fraction of their largest absolute coordinate of the first anchor are
#: identical: above float32 rounding (≈ 6e-8, embeddings are often stored in float32), below
#: any real spread of distinct texts' embeddings
IDENTICAL_RTOL = 1e-6

#: ``1 − (n/m)·leverage`` at or below this: the left-out target is needed for the others' span
#: (its leverage is 1 up to the rounding of a projection onto a handful of directions)
LEVERAGE_TOL = 1e-8

#: a cumulative fraction of variance within this of the requested fraction reaches it (the
#: rounding of a cumulative sum of eigenvalues over their total, ≈ d·ε)
FRACTION_ATOL = 1e-12

#: a Rao-Blackwellized Monte-Carlo ELPD (a few distinct values: no Pareto tail to fit) is
#: unreliable when halving its draws moves it by more than this many of its Monte-Carlo
#: standard errors (the draws-doubling check: a log of a mean is biased by ∝ 1/S, so the
#: change from S/2 to S estimates the bias at S; unbiased, the change is about one error)
DOUBLING_SE = 3.0


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
    try:
        import jax

        xp = jax.numpy if isinstance(values, jax.Array) else np
    except ImportError:  # pragma: no cover - jax is a dependency
        xp = np
    v = xp.asarray(values) if xp is not np else np.asarray(values, np.float64)
    finite = xp.isfinite(v)
    top = xp.max(xp.where(finite, v, -xp.inf), axis=axis, keepdims=True)
    near = finite & (v >= top - TIE_RTOL * xp.abs(top))
    i = xp.argmax(near, axis=axis)  # the first True
    return int(i) if xp is np and np.ndim(i) == 0 else i


__all__ = [
    "DOUBLING_SE",
    "FRACTION_ATOL",
    "IDENTICAL_RTOL",
    "LEVERAGE_TOL",
    "SPECTRUM_RTOL",
    "TIE_RTOL",
    "TIE_ULPS",
    "first_max",
    "kept_singular_values",
    "kept_spectrum",
    "numerical_rank",
]
