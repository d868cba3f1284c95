"""Input validation shared by every public entry point: each check raises an
:class:`AnchorDivError` (a ``ValueError``) naming the argument and the problem.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Collection

import numpy as np

from ._tolerance import IDENTICAL_RTOL

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_WRAPPERS = {os.path.abspath(contextlib.__file__), os.path.abspath(functools.__file__)}


def user_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn` that points at the first frame outside
    anchordiv (and the standard library's decorator wrappers), whatever library frames and
    decorators lie between: a warning names the user's line, not the library's."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not (name.startswith(_PACKAGE) or name in _WRAPPERS):
            return level
        frame, level = frame.f_back, level + 1
    return level


class AnchorDivError(ValueError):
    """Bad input to an anchordiv function; the message says which argument and why.

    A subclass of ``ValueError``: code that catches ``ValueError`` also catches it.

    Parameters
    ----------
    message : str
        What was wrong, starting with the name of the argument.

    Examples
    --------
    >>> try:
    ...     ad.fit("gaussian", np.zeros((3, 4)), tau=20.0)
    ... except ad.AnchorDivError as err:
    ...     print(str(err).split(":")[0])
    anchors
    """


class OutputExistsError(AnchorDivError):
    """A writer's destination already exists and holds something; nothing is replaced without
    ``overwrite=True`` (``--overwrite`` on the command line)."""

    def __init__(self, path, what: str):
        self.path, self.what = str(path), what
        super().__init__(self.message("overwrite=True"))

    def message(self, option: str) -> str:
        """The message with ``option`` as the way to replace the destination."""
        return (
            f"{self.path}: already exists ({self.what}); pass {option} to replace it, or "
            f"choose another path"
        )


def check_output(path, overwrite: bool = False, *, file: bool = False):
    """The one rule of every writer (``save_model``, ``prior.save``, ``post.save``,
    ``save_inference_data``, ``save_embeddings``, ``Curve.write``, every CLI ``-o``): ``path``
    as a ``pathlib.Path`` it may write to.

    A directory destination (the default) that exists and is not empty, or a ``file``
    destination that exists, raises :class:`OutputExistsError` unless ``overwrite``; a file where
    a directory is wanted (or the reverse) is always an :class:`AnchorDivError`."""
    from pathlib import Path

    path = Path(path)
    if file:
        if path.is_dir():
            raise AnchorDivError(
                f"{path}: is a directory; the output is a file — choose another path"
            )
        if path.exists() and not overwrite:
            raise OutputExistsError(path, "a file")
        return path
    if path.exists() and not path.is_dir():
        raise AnchorDivError(
            f"{path}: exists and is not a directory; the output is a "
            "directory — choose another path"
        )
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        what = "a saved bundle" if (path / "card.json").is_file() else "a non-empty directory"
        raise OutputExistsError(path, what)
    return path


def no_file(name: str, path) -> AnchorDivError:
    """The error for input file ``path`` of argument ``name`` that is not a file: a directory
    is said to be one (not "no such file"), a missing path is said to be missing."""
    from pathlib import Path

    if Path(path).is_dir():
        return AnchorDivError(f"{name}: {path} is a directory; expected a file")
    return AnchorDivError(f"{name}: no such file: {path}")


def as_matrix(
    name: str, x, *, dim: int | None = None, min_rows: int = 1, check_finite: bool = True
) -> np.ndarray:
    """Validate an embedding matrix ``[n, d]`` (a single ``[d]`` vector is promoted to ``[1, d]``).

    Floating dtypes are kept (float32 stays float32).  Raises if the array is empty, not of a
    floating dtype (boolean/integer/complex/object: e.g. a relevance matrix passed as embeddings;
    cast with ``.astype(np.float32)`` if intended), not 1-D/2-D, has fewer than ``min_rows`` rows, a last axis other than ``dim``, or any NaN/inf
    entry."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged rows, or what numpy refuses (a DataTree)
        if isinstance(x, (list, tuple)):
            raise AnchorDivError(
                f"{name}: expected an array of embeddings [n, d], got a {type(x).__name__} "
                f"numpy cannot make one array of ({err})"
            ) from None
        arr = np.empty(0, object)
    if not np.issubdtype(arr.dtype, np.floating):
        if not isinstance(x, (np.ndarray, np.generic, list, tuple)) and arr.dtype.kind in "OUS":
            # an object that is no array at all (a Posterior, ArviZ data, a path): named as such
            path = isinstance(x, (str, os.PathLike))
            hint = f" {str(x)!r} (a path? read it with ad.load_embeddings)" if path else ""
            raise AnchorDivError(
                f"{name}: expected an array of embeddings [n, d], got {type(x).__name__}{hint}"
            )
        raise AnchorDivError(
            f"{name}: expected floating-point embeddings, got dtype={arr.dtype} (a relevance or "
            "label array? cast with .astype(np.float32) if the values are really embeddings)"
        )
    if arr.size == 0:
        raise AnchorDivError(
            f"{name}: is empty (shape {list(arr.shape)}); need at least "
            f"{max(min_rows, 1)} row(s) of d > 0 numbers"
        )
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise AnchorDivError(f"{name}: expected shape [n, d], got {list(arr.shape)}")
    if arr.shape[0] < min_rows:
        raise AnchorDivError(f"{name}: need at least {min_rows} row(s), got {arr.shape[0]}")
    if dim is not None and arr.shape[1] != dim:
        raise AnchorDivError(
            f"{name}: dimension mismatch: last axis has {arr.shape[1]} entries, "
            f"the model expects d={dim}"
        )
    if check_finite and arr.dtype != np.float16:  # one pass: NaN or inf make the sum non-finite
        with np.errstate(over="ignore", invalid="ignore"):
            check_finite = not np.isfinite(arr.sum())  # an overflow goes to the exact check
    if check_finite:
        # float16: inf/NaN have all exponent bits set; numpy's float16 isfinite is ~25x slower
        bad = (
            ((arr.view(np.uint16) & 0x7C00) == 0x7C00)
            if arr.dtype == np.float16
            else ~np.isfinite(arr)
        )
        if bad.any():
            rows = np.unique(np.nonzero(bad)[0])
            raise AnchorDivError(
                f"{name}: contains NaN or inf in {len(rows)} row(s) (first: row {int(rows[0])})"
            )
    return arr


def positive(name: str, value, *, allow_zero: bool = False) -> float:
    """A finite positive (or non-negative) scalar hyperparameter (a bool or a string is not a
    number here: ``tau=True`` is a mistake, not τ = 1; ``tau="20"`` one too, as for
    :func:`integer`)."""
    try:
        if isinstance(value, (bool, np.bool_, str, bytes)):
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise AnchorDivError(f"{name}: expected a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise AnchorDivError(f"{name}: must be a finite {need} number, got {value!r}")
    return v


def check_choice(name: str, value, choices: Collection[str], why: str = "") -> None:
    """Refuse a ``value`` of option ``name`` not among ``choices`` (``why``: what they mean)."""
    if value not in choices:
        raise AnchorDivError(f"{name}: one of {', '.join(choices)}{why}, got {value!r}")


def in_unit_interval(name: str, value) -> float:
    """A scalar in the closed interval [0, 1]."""
    v = positive(name, value, allow_zero=True)
    if v > 1:
        raise AnchorDivError(f"{name}: must lie in [0, 1], got {value!r}")
    return v


def integer(name: str, value, *, low: int, high: int | None = None) -> int:
    """An integer in ``[low, high]`` (``high`` inclusive when given); a bool, a string, NaN,
    inf or a number with a fractional part is an :class:`AnchorDivError`, never a raw
    ``ValueError``/``TypeError`` of ``int()``."""
    try:
        whole = not isinstance(value, (bool, str, bytes)) and int(value) == value
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise AnchorDivError(f"{name}: expected an integer, got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        rng = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise AnchorDivError(f"{name}: must be {rng}, got {v}")
    return v


#: Largest fraction of anchors that may repeat an earlier anchor exactly (:func:`check_spread`).
MAX_DUPLICATE_FRACTION = 0.5
#: Relative deviation under which anchors count as identical: ``_tolerance.IDENTICAL_RTOL``
IDENTICAL_TOLERANCE = IDENTICAL_RTOL


def check_covariance(
    name: str, cov, *, dim: int | None = None, definite: bool = True, factor: bool = False
) -> np.ndarray:
    """``cov [d, d]`` as float64 (with ``factor=True``: its lower Cholesky factor, positive
    definite only) unless it is not a finite symmetric positive-definite (or, with
    ``definite=False``, semi-definite) matrix: an :class:`AnchorDivError` naming ``name`` and
    what is wrong (a negative or NaN covariance would score every pair 0 or NaN, silently)."""
    c = np.asarray(cov, np.float64)
    definite = definite or factor
    if c.ndim != 2 or c.shape[0] != c.shape[1] or (dim is not None and c.shape[0] != dim):
        want = f"[{dim}, {dim}]" if dim is not None else "[d, d]"
        raise AnchorDivError(
            f"{name}: expected a covariance matrix {want}, got shape {list(c.shape)}"
        )
    if not np.isfinite(c).all():
        raise AnchorDivError(
            f"{name}: contains NaN or inf ({int((~np.isfinite(c)).sum())} entries)"
        )
    scale = max(float(np.max(np.abs(c))), np.finfo(np.float64).tiny)
    if np.max(np.abs(c - c.T)) > 1e-6 * scale:
        raise AnchorDivError(
            f"{name}: is not symmetric (largest |C - Cᵀ| = {float(np.max(np.abs(c - c.T))):.3g})"
        )
    if definite:
        with contextlib.suppress(np.linalg.LinAlgError):
            chol = np.linalg.cholesky(c)
            return chol if factor else c
    low = float(np.linalg.eigvalsh((c + c.T) / 2).min())
    # definite: Cholesky's failure decides (host-independent); semi-definite: a relative allowance
    if definite or low < -1e-6 * scale:
        raise AnchorDivError(
            f"{name}: is not positive {'definite' if definite else 'semi-definite'}"
            f" (smallest eigenvalue {low:.3g}); a covariance is Σ = F Fᵀ (+ a ridge)"
        )
    return c


def check_spread(name: str, a: np.ndarray) -> np.ndarray:
    """``a [n, d]`` unless its rows are degenerate: all identical (zero variance: every
    divergence would be 0, every ranking a tie) or more than :data:`MAX_DUPLICATE_FRACTION`
    exact duplicates."""
    # max_i |a_ij − a_0j| = max(hi_j − a_0j, a_0j − lo_j) exactly, without temporaries
    hi, lo = a.max(0), a.min(0)
    scale = max(float(max(np.abs(hi).max(), np.abs(lo).max())), np.finfo(np.float64).tiny)
    if float(max((hi - a[0]).max(), (a[0] - lo).max())) <= IDENTICAL_TOLERANCE * scale:
        what = "a single anchor" if len(a) == 1 else f"all {len(a)} anchors are identical"
        raise AnchorDivError(
            f"{name}: {what} (zero variance): every divergence would be 0 and "
            f"every ranking a tie; need at least 2 distinct anchors"
        )
    return check_duplicates(name, a)


def _void_rows(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1])))


def distinct_rows(a: np.ndarray) -> int:
    """The number of distinct rows of ``a [n, d]``, bytewise (as ``np.unique`` of its rows),
    from one 64-bit polynomial hash per row: rows whose hash is unique are distinct, and only
    rows that share a hash are compared exactly (4,000 × 384: 2 ms, against 10 ms for sorting
    the rows themselves)."""
    x = np.ascontiguousarray(a)
    n = len(x)
    if n < 2:
        return n
    width = x.dtype.itemsize * x.shape[1]
    if width % 4:
        return len(np.unique(_void_rows(x)))
    words = x.view(np.uint64 if width % 8 == 0 else np.uint32)
    coeffs = np.random.default_rng(0x5EED).integers(1, 2**63, size=words.shape[1], dtype=np.uint64)
    h = words @ (coeffs | np.uint64(1))  # wraps modulo 2⁶⁴
    values, counts = np.unique(h, return_counts=True)
    shared = values[counts > 1]
    if not len(shared):
        return n
    rows = x[np.isin(h, shared)]
    return len(values) - len(shared) + len(np.unique(_void_rows(rows)))


def check_duplicates(name: str, a: np.ndarray) -> np.ndarray:
    """``a [n, d]`` unless more than :data:`MAX_DUPLICATE_FRACTION` of its rows repeat another
    row exactly (one text embedded repeatedly: it would count as that many anchors)."""
    dup = 1.0 - distinct_rows(a) / len(a)
    if dup > MAX_DUPLICATE_FRACTION:
        raise AnchorDivError(
            f"{name}: {dup:.0%} of the {len(a)} anchors repeat another anchor "
            f"exactly (tolerance {MAX_DUPLICATE_FRACTION:.0%}); de-duplicate "
            f"them (or pass weights to the softmax model)"
        )
    return a
