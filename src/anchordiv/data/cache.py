"""Content-addressed embedding cache: a second run with the same encoder and inputs loads the
embeddings instead of re-encoding them.

An entry is ``<cache>/embeddings/<key>.npy`` plus ``<key>.json`` (the manifest: encoder id, kind,
count, shape, dtype and a SHA-256 of the array bytes).  The key hashes the encoder id, the input
kind and every input in order, so any change in the encoder or the inputs is a different entry.
The manifest is written last (atomically), so an interrupted write leaves no manifest; an entry
whose array is missing, truncated or does not match its manifest is detected, reported and
rebuilt.

The cache directory is ``$ANCHORDIV_CACHE`` if set, else ``$XDG_CACHE_HOME/anchordiv``
(``~/.cache/anchordiv``).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import AnchorDivError, user_stacklevel

#: Environment variable that overrides the cache directory.
CACHE_ENV = "ANCHORDIV_CACHE"

#: ``hits`` / ``misses`` / ``rebuilt`` counts of :func:`cached_embeddings` in this process.
STATS: collections.Counter = collections.Counter()


def cache_dir() -> Path:
    """The anchordiv cache directory (created on first use by the writers)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "anchordiv"


def content_key(encoder_id: str, kind: str, items: Sequence[str | bytes]) -> str:
    """SHA-256 over the encoder id, the input kind and each item (length-prefixed, in order)."""
    h = hashlib.sha256()
    for part in (encoder_id, kind):
        h.update(f"{len(part)}:{part}|".encode())
    for item in items:
        b = item.encode("utf-8") if isinstance(item, str) else bytes(item)
        h.update(f"{len(b)}:".encode())
        h.update(b)
    return h.hexdigest()


def _array_hash(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def _paths(key: str, root: Path | None) -> tuple[Path, Path]:
    d = (root or cache_dir()) / "embeddings"
    return d / f"{key}.npy", d / f"{key}.json"


def load_entry(key: str, root: Path | None = None) -> np.ndarray | None:
    """The cached array for ``key``; ``None`` if absent; ``None`` with a warning if corrupt."""
    npy, manifest = _paths(key, root)
    if not manifest.is_file():
        return None
    arr, problem = _read_entry(npy, manifest)
    if problem:
        STATS["rebuilt"] += 1
        warnings.warn(f"embedding cache entry {npy} is corrupt or partial ({problem}); "
                      f"re-encoding", stacklevel=user_stacklevel())
        return None
    return arr


def _read_entry(npy: Path, manifest: Path) -> tuple[np.ndarray | None, str | None]:
    """``(array, None)``, or ``(None, what is wrong)`` when the entry does not match its
    manifest."""
    try:
        meta = json.loads(manifest.read_text())
        arr = np.load(npy, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:     # JSONDecodeError is a ValueError
        return None, f"{type(err).__name__}: {err}"
    if not isinstance(meta, dict) or not {"shape", "dtype", "sha256"} <= set(meta):
        return None, f"manifest {manifest.name} lacks shape/dtype/sha256"
    if list(arr.shape) != meta["shape"] or arr.dtype.str != meta["dtype"]:
        return None, (f"array is {arr.dtype.str} {list(arr.shape)}, manifest says "
                      f"{meta['dtype']} {meta['shape']}")
    if _array_hash(arr) != meta["sha256"]:
        return None, "array bytes do not match the manifest's SHA-256"
    return arr, None


def store_entry(key: str, arr: np.ndarray, info: dict, root: Path | None = None) -> Path:
    """Write ``arr`` and its manifest atomically (array first, manifest last)."""
    npy, manifest = _paths(key, root)
    npy.parent.mkdir(parents=True, exist_ok=True)
    tmp = npy.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, arr)
    os.replace(tmp, npy)
    meta = {**info, "shape": list(arr.shape), "dtype": arr.dtype.str, "sha256": _array_hash(arr)}
    tmp = manifest.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, manifest)
    return npy


def cached_embeddings(encoder_id: str, kind: str, items: Sequence[str | bytes],
                      compute: Callable[[], np.ndarray], *, cache: bool | str | Path = True
                      ) -> np.ndarray:
    """Embeddings of ``items`` from the cache, or ``compute()`` them and store the result.

    ``cache`` is ``True`` (default directory), ``False`` (always compute, store nothing) or a
    directory path.  ``items`` identify the inputs (texts, or image file bytes).
    """
    if not cache:
        return compute()
    root = None if cache is True else Path(cache)
    key = content_key(encoder_id, kind, items)
    arr = load_entry(key, root)
    if arr is not None:
        STATS["hits"] += 1
        return arr
    STATS["misses"] += 1
    arr = np.asarray(compute())
    if arr.shape[0] != len(items):
        raise AnchorDivError(f"encoder {encoder_id} returned {arr.shape[0]} rows for "
                             f"{len(items)} inputs")
    store_entry(key, arr, {"encoder": encoder_id, "kind": kind, "count": len(items)}, root)
    return arr
