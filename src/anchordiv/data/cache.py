"""Content-addressed embedding cache (``$ANCHORDIV_CACHE``, else ``$XDG_CACHE_HOME/anchordiv``):
a second run with the same encoder and inputs loads the embeddings instead of re-encoding them,
a corrupt or partial entry is reported and rebuilt (``docs/guides/data.md``)."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import time
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .._safeio import atomic_file, read_json, remove, write_npy, write_text
from ..errors import AnchorDivError, user_stacklevel

#: Environment variable that overrides the cache directory.
CACHE_ENV = "ANCHORDIV_CACHE"

#: Environment variable: ``0`` keeps the command line from using JAX's persistent cache.
XLA_CACHE_ENV = "ANCHORDIV_XLA_CACHE"

#: ``hits`` / ``misses`` / ``rebuilt`` counts of :func:`cached_embeddings` in this process, and
#: on misses ``encoded`` (inputs) and ``encode_s`` (seconds spent encoding them).
STATS: collections.Counter = collections.Counter()


def cache_dir() -> Path:
    """The anchordiv cache directory (created on first use by the writers).

    Returns
    -------
    Path
        ``$ANCHORDIV_CACHE`` if set, else ``$XDG_CACHE_HOME/anchordiv`` (default
        ``~/.cache/anchordiv``).
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "anchordiv"


#: compile time from which a program is kept in the persistent cache (seconds): every program
#: (at 0.1 s a warm run recompiled 355 programs, at 0.01 s those that had compiled fast)
MIN_COMPILE_S = 0.0


def use_compilation_cache(path=None) -> Path | None:
    """Keep JAX's compiled programs in ``path`` (default ``<cache>/xla``) across processes:
    a fresh NUTS fit at d = 384 traces and compiles for tens of seconds per target count, and
    the persistent cache turns the compile half of that into a disk read on the next run
    (a spectral fit: 80 s -> 44 s under load).  A directory the user set for JAX
    (``$JAX_COMPILATION_CACHE_DIR`` or ``jax_compilation_cache_dir``) is left as it is; with
    ``$ANCHORDIV_XLA_CACHE=0`` nothing is changed.  Returns the directory in use (None: off).
    The ``anchordiv`` command calls it; library imports never change JAX's configuration."""
    import jax

    if os.environ.get(XLA_CACHE_ENV, "1") == "0":
        return None
    current = getattr(jax.config, "jax_compilation_cache_dir", None)
    if current:
        return Path(current)
    target = Path(path) if path is not None else cache_dir() / "xla"
    jax.config.update("jax_compilation_cache_dir", str(target))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_S)
    return target


def content_key(encoder_id: str, kind: str, items: Sequence[str | bytes]) -> str:
    """SHA-256 over the encoder id, the input kind and each item (length-prefixed, in order).

    Parameters
    ----------
    encoder_id : str
        The encoder's id.
    kind : str
        The kind of input (``"text"``, ``"image"``).
    items : sequence of str or bytes
        The inputs (texts, or image file bytes).

    Returns
    -------
    str
        The hex digest.

    Examples
    --------
    >>> from anchordiv.data.cache import content_key
    >>> content_key("enc", "text", ["a", "b"]) == content_key("enc", "text", ["a", "b"])
    True
    >>> content_key("enc", "text", ["ab"]) == content_key("enc", "text", ["a", "b"])
    False
    """
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


def _read_entry(npy: Path, manifest: Path) -> tuple[np.ndarray | None, str | None]:
    """``(array, None)``, or ``(None, what is wrong)`` when the entry does not match its
    manifest."""
    from ..provenance import load_npy

    try:
        meta = read_json(manifest)
        arr = load_npy(npy, "cache entry", mmap=False)
    except (OSError, ValueError, EOFError) as err:  # AnchorDivError is a ValueError
        return None, f"{type(err).__name__}: {err}"
    if not isinstance(meta, dict) or not {"shape", "dtype", "sha256"} <= set(meta):
        return None, f"manifest {manifest.name} lacks shape/dtype/sha256"
    if list(arr.shape) != meta["shape"] or arr.dtype.str != meta["dtype"]:
        return None, (
            f"array is {arr.dtype.str} {list(arr.shape)}, manifest says "
            f"{meta['dtype']} {meta['shape']}"
        )
    if _array_hash(arr) != meta["sha256"]:
        return None, "array bytes do not match the manifest's SHA-256"
    return arr, None


def _write_entry(npy: Path, manifest: Path, arr: np.ndarray, info: dict) -> None:
    """The array, then (atomically, last) its manifest with shape, dtype and SHA-256."""
    with atomic_file(npy) as tmp:
        write_npy(tmp, arr)
    meta = {**info, "shape": list(arr.shape), "dtype": arr.dtype.str, "sha256": _array_hash(arr)}
    with atomic_file(manifest) as tmp:
        write_text(tmp, json.dumps(meta, indent=1, sort_keys=True) + "\n")


def clean_legacy_temporaries(npy: Path) -> None:
    """Delete the ``<key>.<pid>.tmp.npy`` / ``.tmp`` files that writers killed mid-write left
    in the cache (those of processes no longer running)."""
    for p in npy.parent.glob(f"{npy.stem}.*.tmp*"):
        pid = p.name[len(npy.stem) + 1 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                p.unlink(missing_ok=True)
            except OSError:
                pass


def cached_embeddings(
    encoder_id: str,
    kind: str,
    items: Sequence[str | bytes],
    compute: Callable[[], np.ndarray],
    *,
    cache: bool | str | Path = True,
) -> np.ndarray:
    """Embeddings of ``items`` from the cache, or ``compute()`` them and store the result.

    Examples
    --------
    >>> import tempfile
    >>> from anchordiv.data.cache import cached_embeddings
    >>> root = tempfile.mkdtemp()
    >>> first = cached_embeddings("toy", "text", ["a"], lambda: np.ones((1, 2), np.float32), cache=root)
    >>> again = cached_embeddings("toy", "text", ["a"], lambda: 1 / 0, cache=root)   # a cache hit
    >>> again.tolist()
    [[1.0, 1.0]]
    """
    if not cache:
        return compute()
    folder = (cache_dir() if cache is True else Path(cache)) / "embeddings"
    npy = folder / f"{content_key(encoder_id, kind, items)}.npy"
    if npy.with_suffix(".json").is_file():
        arr, problem = _read_entry(npy, npy.with_suffix(".json"))
        if not problem:
            STATS["hits"] += 1
            return arr
        STATS["rebuilt"] += 1
        warnings.warn(
            f"embedding cache entry {npy} is corrupt or partial ({problem}); re-encoding",
            stacklevel=user_stacklevel(),
        )
    STATS["misses"] += 1
    start = time.perf_counter()
    arr = np.asarray(compute())
    STATS["encoded"] += len(items)
    STATS["encode_s"] += time.perf_counter() - start
    if arr.shape[0] != len(items):
        raise AnchorDivError(
            f"encoder {encoder_id} returned {arr.shape[0]} rows for {len(items)} inputs"
        )
    folder.mkdir(parents=True, exist_ok=True)
    clean_legacy_temporaries(npy)
    info = {"encoder": encoder_id, "kind": kind, "count": len(items)}
    _write_entry(npy, npy.with_suffix(".json"), arr, info)
    return arr


# ---- per-file image embeddings ------------------------------------------------------------

#: New image embeddings are written as a pack every this many images (a kill loses at most
#: the pack being filled).
PACK_ROWS = 1024


class ImageStore:
    """Per-file image embeddings of one encoder and preprocessing, keyed by each file's
    content SHA-256: any subset, superset, reordering or moved copy of a tree finds every
    image it has seen before."""

    def __init__(self, space_id: str, root: Path | None = None) -> None:
        self.id = space_id
        self.dir = (
            (root or cache_dir()) / "images" / hashlib.sha256(space_id.encode()).hexdigest()[:24]
        )

    def packs(self) -> list[Path]:
        """The packs' manifests, oldest first."""
        return sorted(self.dir.glob("pack-*.json"))

    def lookup(self, digests: Sequence[str | None]) -> tuple[np.ndarray | None, np.ndarray]:
        """``(rows [n, d] or None, found [n] bool)``: the stored embedding of each digest."""

        found = np.zeros(len(digests), bool)
        wanted: dict[str, list[int]] = {}
        for i, d in enumerate(digests):
            if d is not None:
                wanted.setdefault(d, []).append(i)
        where: dict[Path, list[tuple[int, str]]] = {}
        seen: set[str] = set()
        for manifest in self.packs() if wanted else []:
            # a manifest removed by a concurrent prune reads as empty; a bad one is checked below
            for j, d in enumerate(_field(manifest, "digests", [])):
                if d in wanted and d not in seen:
                    seen.add(d)
                    where.setdefault(manifest, []).append((j, d))
        out = None
        for manifest, rows in where.items():
            arr, problem = _read_entry(manifest.with_suffix(".npy"), manifest)
            if problem or arr is None or arr.ndim != 2:
                STATS["rebuilt"] += 1
                warnings.warn(
                    f"image embedding pack {manifest.with_suffix('.npy')} is corrupt or partial "
                    f"({problem}); removed, its images are re-encoded",
                    stacklevel=user_stacklevel(),
                )
                self._remove(manifest)
                continue
            if out is None:
                out = np.zeros((len(digests), arr.shape[1]), arr.dtype)
            for j, d in rows:
                out[wanted[d]] = arr[j]
                found[wanted[d]] = True
        STATS["image_hits"] += int(found.sum())
        return out, found

    def add(self, digests: Sequence[str], arr: np.ndarray) -> Path:
        """Store ``arr [n, d]`` as a new pack of the files ``digests``."""
        import secrets

        arr = np.ascontiguousarray(arr)
        if arr.ndim != 2 or arr.shape[0] != len(digests):
            raise AnchorDivError(f"image pack: {len(digests)} digests for an array {arr.shape}")
        self.dir.mkdir(parents=True, exist_ok=True)
        space = self.dir / "space.json"
        if not space.is_file():
            with atomic_file(space) as tmp:
                write_text(tmp, json.dumps({"id": self.id, "kind": "image"}) + "\n")
        name = f"pack-{time.time_ns()}-{os.getpid()}-{secrets.token_hex(4)}"
        npy = self.dir / f"{name}.npy"
        info = {"encoder": self.id, "kind": "image", "count": len(digests)}
        _write_entry(npy, npy.with_suffix(".json"), arr, {**info, "digests": list(digests)})
        STATS["image_misses"] += len(digests)
        return npy

    @staticmethod
    def _remove(manifest: Path) -> None:
        manifest.unlink(missing_ok=True)  # the manifest first: a reader never sees it alone
        manifest.with_suffix(".npy").unlink(missing_ok=True)


def _field(path: Path, key: str, default):
    """``key`` of a JSON object file, or ``default`` where it is missing or unreadable."""
    try:
        return read_json(path).get(key, default)
    except (OSError, ValueError, AttributeError):
        return default


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def cache_summary(root: Path | None = None) -> dict:
    """What the cache holds: per image space its encoder id, images, packs and bytes; the text
    and other entries; the file-digest index; JAX's compiled programs."""

    root = Path(root) if root else cache_dir()
    spaces = []
    for d in sorted(root.glob("images/*/")):  # (a glob of a missing folder finds nothing)
        sid = _field(d / "space.json", "id", "?")
        packs = sorted(d.glob("pack-*.json"))
        images = {x for m in packs for x in _field(m, "digests", [])}
        newest = max((m.stat().st_mtime for m in packs), default=None)
        space = {"id": sid, "dir": str(d), "images": len(images), "packs": len(packs)}
        spaces.append({**space, "bytes": _size(d), "newest": newest})
    return {
        "root": str(root),
        "images": spaces,
        "embeddings": {
            "entries": len(list(root.glob("embeddings/*.json"))),
            "bytes": _size(root / "embeddings"),
        },
        "files": {"folders": len(list(root.glob("files/*.json"))), "bytes": _size(root / "files")},
        "xla": {"bytes": _size(root / "xla")},
    }


def prune(
    root: Path | None = None,
    *,
    encoder: str | None = None,
    older_than_days: float | None = None,
    everything: bool = False,
    dry_run: bool = False,
) -> list[Path]:
    """Delete cache entries: the image spaces whose encoder id contains ``encoder``, the
    entries and packs not written for ``older_than_days`` days, or ``everything``."""
    if not (encoder or older_than_days is not None or everything):
        raise AnchorDivError("cache prune: say what to remove: --encoder, --older-than or --all")
    root = Path(root) if root else cache_dir()
    gone: list[Path] = []
    if everything:
        gone = sorted(root.iterdir()) if root.is_dir() else []
    else:
        summary = cache_summary(root)
        if encoder:
            gone += [Path(s["dir"]) for s in summary["images"] if encoder in s["id"]]
        if older_than_days is not None:
            limit = time.time() - 86400.0 * float(older_than_days)
            for pattern in ("images/*/pack-*.json", "embeddings/*.json", "files/*.json"):
                for m in root.glob(pattern):
                    if m.stat().st_mtime < limit and not any(g in m.parents for g in gone):
                        gone.append(m)
                        if m.with_suffix(".npy").exists():
                            gone.append(m.with_suffix(".npy"))
    if not dry_run:
        for p in gone:  # manifests before arrays: a reader never finds a manifest alone
            remove(p)
    return gone
