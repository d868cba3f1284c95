"""A small cache for the broad-anchor statistics a prior is built from.

Adaptation studies update one broad prior with many target sets; the broad covariance, its
eigendecomposition or the broad mixture EM fit then only need computing once.  Entries are keyed
by a SHA-1 of the broad array's bytes (with shape and dtype) and the call's options; results are
returned with their arrays read-only (plain arrays and tuples of them), so callers cannot
corrupt the cache.
"""

from __future__ import annotations

import collections
import hashlib

import numpy as np

MAX_ENTRIES = 16
_CACHE: collections.OrderedDict = collections.OrderedDict()


def _key(fn, broad: np.ndarray, options: dict) -> tuple:
    a = np.ascontiguousarray(broad)
    digest = hashlib.sha1(a.view(np.uint8)).hexdigest()
    return (fn.__module__, fn.__qualname__, digest, a.shape, a.dtype.str,
            tuple(sorted(options.items())))


def _freeze(value):
    if isinstance(value, np.ndarray):
        value = value.view()
        value.flags.writeable = False
        return value
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
