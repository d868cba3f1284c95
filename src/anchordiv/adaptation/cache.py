"""A small cache for the broad-anchor statistics a prior is built from.

Adaptation studies update one broad prior with many target sets; the broad covariance, its
eigendecomposition or the broad mixture EM fit then only need computing once.  Entries are keyed
by a SHA-1 of the broad array's bytes (with shape and dtype) and the call's options; results are
returned with their arrays read-only (plain arrays and tuples of them), so callers cannot
corrupt the cache.

Arrays the library froze itself (:func:`frozen`: a curve's broad anchors; the cache's own
results) are remembered by identity: their digest and what :func:`derived` computed from them
(the prior covariance's Cholesky factor) are looked up without rehashing — a curve hashes its
broad anchors once, not once per cell and model.  So is whether they passed the anchor checks
(:func:`checked`): :func:`as_anchors` then checks their shape only, so ``adapt`` validates its
anchors once however many functions read them.
"""

from __future__ import annotations

import collections
import hashlib
import weakref

import numpy as np

from ..errors import as_matrix

MAX_ENTRIES = 16
_CACHE: collections.OrderedDict = collections.OrderedDict()
#: id -> (weak reference, {"digest": ..., derived function: value}) of arrays frozen here
_FROZEN: dict[int, tuple[weakref.ref, dict]] = {}
#: the memo entry of a frozen array that passed the anchor checks (:func:`checked`)
CHECKED = "checked"


def _memo(a) -> dict | None:
    entry = _FROZEN.get(id(a))
    return entry[1] if entry is not None and entry[0]() is a else None


def _register(a: np.ndarray) -> np.ndarray:
    key, table = id(a), _FROZEN
    # the callback holds the table itself, not the module global: arrays that live until
    # interpreter exit (held by JAX's caches after NUTS/SVI) die after module teardown has set
    # the globals to None
    table[key] = (weakref.ref(a, lambda _, k=key: table.pop(k, None)), {})
    return a


def frozen(a) -> np.ndarray:
    """A read-only private copy of ``a`` (float arrays keep their dtype) whose digest and
    :func:`derived` values are remembered by identity for as long as it lives; ``a`` itself
    when it is such a copy already."""
    if isinstance(a, np.ndarray) and _memo(a) is not None:
        return a
    c = np.array(a, copy=True, subok=True)  # Embeddings keep their provenance (stand_in)
    c.flags.writeable = False
    return _register(c)


def digest(a: np.ndarray) -> str:
    """SHA-1 of the array's bytes (remembered for :func:`frozen` arrays)."""
    memo = _memo(a)
    if memo is not None and "digest" in memo:
        return memo["digest"]
    value = hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).hexdigest()
    if memo is not None:
        memo["digest"] = value
    return value


def checked(a) -> np.ndarray:
    """``a`` as a :func:`frozen` array remembered as anchors that passed the anchor checks
    (``adapt``'s :func:`~anchordiv.adaptation.pipeline.check_anchors`: floating, finite, 2-D,
    enough distinct rows); the caller has run those checks on ``a``."""
    c = frozen(a)
    memo = _memo(c)
    assert memo is not None  # frozen arrays are registered
    memo[CHECKED] = True
    return c


def is_checked(a) -> bool:
    """Whether ``a`` is an array :func:`checked` returned (and so read-only since)."""
    memo = _memo(a)
    return memo is not None and CHECKED in memo


def as_anchors(name: str, x, *, dim: int | None = None, min_rows: int = 1) -> np.ndarray:
    """:func:`anchordiv.errors.as_matrix` of anchors ``x [n, d]``: for a :func:`checked` array
    only the shape (``dim``, ``min_rows``) is checked, since its values passed already."""
    return as_matrix(name, x, dim=dim, min_rows=min_rows, check_finite=not is_checked(x))


def derived(fn, a: np.ndarray):
    """``fn(a)``, remembered by identity when ``a`` is a :func:`frozen` array (or a result of
    :func:`cached`), else computed."""
    memo = _memo(a)
    if memo is None:
        return fn(a)
    if fn not in memo:
        memo[fn] = _freeze(fn(a))
    return memo[fn]


def _key(fn, broad: np.ndarray, options: dict) -> tuple:
    a = np.asarray(broad)
    return (
        fn.__module__,
        fn.__qualname__,
        digest(a),
        a.shape,
        a.dtype.str,
        tuple(sorted(options.items())),
    )


def _freeze(value):
    if isinstance(value, np.ndarray):
        value = value.view()
        value.flags.writeable = False
        return _register(value)
    if isinstance(value, tuple):
        return tuple(_freeze(v) for v in value)
    return value


def cached(fn, broad: np.ndarray, *args, **options):
    """``fn(broad, *args, **options)``, computed once per distinct broad array and options
    (least recently used of :data:`MAX_ENTRIES` evicted)."""
    key = _key(fn, broad, {**options, "_args": args})
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = _freeze(fn(broad, *args, **options))
    _CACHE[key] = value
    if len(_CACHE) > MAX_ENTRIES:
        _CACHE.popitem(last=False)
    return value


def clear() -> None:
    _CACHE.clear()


__all__ = [
    "MAX_ENTRIES",
    "as_anchors",
    "cached",
    "checked",
    "clear",
    "derived",
    "digest",
    "frozen",
    "is_checked",
]
