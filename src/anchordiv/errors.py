"""Input validation shared by every public entry point.

Every check raises :class:`AnchorDivError` (a ``ValueError``) whose message names the argument
and the problem (shape, NaN/inf, dimension mismatch, too few anchors, invalid hyperparameter), so
bad input never turns into a silent NaN deep inside a jitted computation.
"""

from __future__ import annotations

import numpy as np


class AnchorDivError(ValueError):
    """Bad input to an anchordiv function; the message says which argument and why."""


def as_matrix(name: str, x, *, dim: int | None = None, min_rows: int = 1,
              check_finite: bool = True) -> np.ndarray:
    """Validate an embedding matrix ``[n, d]`` (a single ``[d]`` vector is promoted to ``[1, d]``).

    Floating dtypes are kept (float32 stays float32); other dtypes become float32.
    Raises if the array is not 1-D/2-D, has fewer than ``min_rows`` rows, a last axis other than
    ``dim``, or any NaN/inf entry.
    """
    arr = np.asarray(x)
    if arr.dtype == object:
        raise AnchorDivError(f"{name}: expected a numeric array, got dtype=object")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise AnchorDivError(f"{name}: expected shape [n, d], got {list(arr.shape)}")
    if arr.shape[0] < min_rows:
        raise AnchorDivError(
            f"{name}: need at least {min_rows} row(s), got {arr.shape[0]}")
    if dim is not None and arr.shape[1] != dim:
        raise AnchorDivError(
            f"{name}: dimension mismatch: last axis has {arr.shape[1]} entries, "
            f"the model expects d={dim}")
    if check_finite:
        bad = ~np.isfinite(arr)
        if bad.any():
            rows = np.unique(np.nonzero(bad)[0])
            raise AnchorDivError(
                f"{name}: contains NaN or inf in {len(rows)} row(s) "
                f"(first: row {int(rows[0])})")
    return arr


def positive(name: str, value, *, allow_zero: bool = False) -> float:
    """A finite positive (or non-negative) scalar hyperparameter."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise AnchorDivError(f"{name}: expected a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise AnchorDivError(f"{name}: must be a finite {need} number, got {value!r}")
    return v


def in_unit_interval(name: str, value) -> float:
    """A scalar in the closed interval [0, 1]."""
    v = positive(name, value, allow_zero=True)
    if v > 1:
        raise AnchorDivError(f"{name}: must lie in [0, 1], got {value!r}")
    return v


def integer(name: str, value, *, low: int, high: int | None = None) -> int:
    """An integer in ``[low, high]`` (``high`` inclusive when given)."""
    if isinstance(value, bool) or int(value) != value:
        raise AnchorDivError(f"{name}: expected an integer, got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        rng = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise AnchorDivError(f"{name}: must be {rng}, got {v}")
    return v
