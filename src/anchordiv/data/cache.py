"""Content-addressed embedding cache (``$ANCHORDIV_CACHE``, else ``$XDG_CACHE_HOME/anchordiv``):
a second run with the same encoder and inputs loads the embeddings instead of re-encoding them,
a corrupt or partial entry is reported and rebuilt (``docs/guides/data.md``)."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import re
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


# ---- the cache's marker, its key and its lock ------------------------------------------------

#: The file the cache writes at its root: it marks the folder as an anchordiv cache (``cache
#: prune`` refuses any other folder) and holds the key its manifests and indexes are digested
#: with (a file planted in the cache, or copied from another cache, does not verify).
MARKER = "anchordiv-cache.json"
#: The standard cache-directory tag (backup tools skip a folder holding it).
CACHEDIR_TAG = "CACHEDIR.TAG"
_TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by anchordiv (the embedding cache).\n"
)
#: The lock file at the cache root: runs hold it shared, ``cache prune`` exclusively.
LOCK = ".anchordiv-cache.lock"
#: The entries of a cache root the cache writes (besides temporaries of them).
ROOT_NAMES = frozenset({"images", "embeddings", "files", "xla", MARKER, CACHEDIR_TAG, LOCK})
#: Seconds ``cache prune`` waits for the runs using the cache before giving up.
PRUNE_WAIT_S = 30.0
#: Manifest format of packs and entries (older ones, without a digest, are re-encoded).
FORMAT = 2
#: A row whose Euclidean norm differs from 1 by more than this is not a unit-norm embedding.
UNIT_TOL = 1e-3
#: Two stored embeddings of the same file agree when no coordinate differs by more than this.
AGREE_TOL = 1e-3

_HEX = frozenset("0123456789abcdef")


def is_hex(text, n: int) -> bool:
    """Whether ``text`` is a string of ``n`` lowercase hex digits."""
    return isinstance(text, str) and len(text) == n and set(text) <= _HEX


def _read_marker(root: Path) -> dict | None:
    try:
        meta = read_json(root / MARKER, f"{root / MARKER}")
    except (AnchorDivError, OSError, ValueError):
        return None
    ok = isinstance(meta, dict) and meta.get("format") == "anchordiv-cache"
    return meta if ok and is_hex(meta.get("key"), 64) else None


def cache_key(root: Path, *, create: bool = False) -> bytes | None:
    """The key of the cache at ``root`` (from its :data:`MARKER`), written first when
    ``create`` and there is none; None where there is none (a read-only or foreign folder)."""
    meta = _read_marker(root)
    if meta is None and create:
        import secrets

        try:
            root.mkdir(parents=True, exist_ok=True)
            tmp = root / f".{MARKER}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
            text = {"format": "anchordiv-cache", "version": 1, "key": secrets.token_hex(32)}
            write_text(tmp, json.dumps(text, indent=1) + "\n")
            try:
                os.link(tmp, root / MARKER)  # the first writer's key wins
            except FileExistsError:
                if _read_marker(root) is None:  # a broken marker: a new key (packs re-encoded)
                    os.replace(tmp, root / MARKER)
            except OSError:  # a file system without hard links
                if not (root / MARKER).exists():
                    os.replace(tmp, root / MARKER)
            finally:
                tmp.unlink(missing_ok=True)
            if not (root / CACHEDIR_TAG).exists():
                with atomic_file(root / CACHEDIR_TAG) as t:
                    write_text(t, _TAG_TEXT)
        except OSError:
            return None
        meta = _read_marker(root)
    return bytes.fromhex(meta["key"]) if meta else None


def sign(key: bytes, meta: dict) -> str:
    """The digest of a manifest or index: HMAC-SHA256 under the cache's key of its canonical
    JSON (every field but ``digest``)."""
    import hmac

    body = {k: v for k, v in meta.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def verified(key: bytes | None, meta) -> bool:
    """Whether ``meta`` is a JSON object carrying its own correct :func:`sign` digest."""
    import hmac

    if key is None or not isinstance(meta, dict) or not isinstance(meta.get("digest"), str):
        return False
    return hmac.compare_digest(meta["digest"], sign(key, meta))


@contextlib.contextmanager
def cache_lock(root: Path, *, exclusive: bool = False, wait: float | None = None):
    """Hold the lock of the cache at ``root``: shared by the runs that read and write it,
    exclusive for ``cache prune`` (which waits ``wait`` seconds, then raises); a run on a
    read-only cache without a lock file goes on without one."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not posix
        yield
        return
    lock, fd = root / LOCK, None
    with contextlib.suppress(OSError):
        root.mkdir(parents=True, exist_ok=True)
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            fd = os.open(lock, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
            break
        except OSError:
            continue
    if fd is None:
        if exclusive:
            raise AnchorDivError(f"cache {root}: cannot open its lock file {LOCK}; nothing removed")
        yield
        return
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        deadline = time.monotonic() + (PRUNE_WAIT_S if wait is None else wait)
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not exclusive:
                    fcntl.flock(fd, mode)  # a run waits for a prune to finish
                    break
                if time.monotonic() > deadline:
                    raise AnchorDivError(
                        f"cache {root} is in use by a running embedding (it holds {LOCK}); "
                        f"nothing removed: prune again when it has finished"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _note(text: str) -> None:
    from ..provenance import AnchorDivWarning

    warnings.warn(text, AnchorDivWarning, stacklevel=user_stacklevel())


def row_problem(arr: np.ndarray, unit: bool) -> str | None:
    """What is wrong with embedding rows (not finite, not unit-norm where promised), or None."""
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        return f"{int(bad.sum())} row(s) are not finite (first: row {int(np.flatnonzero(bad)[0])})"
    if unit and arr.size:
        norms = np.linalg.norm(arr.astype(np.float64), axis=1)
        off = np.abs(norms - 1.0) > UNIT_TOL
        if off.any():
            i = int(np.flatnonzero(off)[0])
            return f"{int(off.sum())} row(s) are not unit-norm (row {i} has norm {norms[i]:.4g})"
    return None


# ---- entries: an array and its manifest ------------------------------------------------------


def _read_entry(
    npy: Path,
    manifest: Path,
    *,
    key: bytes | None = None,
    expect: dict | None = None,
    unit: bool = False,
) -> tuple[np.ndarray | None, str | None]:
    """``(array, None)``, or ``(None, what is wrong)`` when the entry does not match its
    manifest, the manifest is not digested with the cache's ``key``, a field differs from
    ``expect`` or the rows are not finite (and unit-norm, with ``unit``)."""
    from ..provenance import load_npy

    try:
        meta = read_json(manifest, f"manifest {manifest.name}")
    except (AnchorDivError, OSError, ValueError) as err:
        return None, f"{type(err).__name__}: {err}"
    problem = _manifest_problem(meta, manifest, key, expect)
    if problem:
        return None, problem
    shape, dtype = meta["shape"], np.dtype(meta["dtype"])
    want = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    try:
        size = npy.stat().st_size
    except OSError as err:
        return None, f"{type(err).__name__}: {err}"
    if not want <= size <= want + 4096:  # checked before reading: a huge file is never read
        return None, f"array file is {size} bytes, its manifest's {dtype.str} {shape} needs {want}"
    try:
        arr = load_npy(npy, "cache entry", mmap=False)
    except (AnchorDivError, OSError, ValueError, EOFError) as err:
        return None, f"{type(err).__name__}: {err}"
    if list(arr.shape) != shape or arr.dtype.str != meta["dtype"]:
        return (
            None,
            f"array is {arr.dtype.str} {list(arr.shape)}, manifest says {dtype.str} {shape}",
        )
    if _array_hash(arr) != meta["sha256"]:
        return None, "array bytes do not match the manifest's SHA-256"
    rows = row_problem(arr, unit)
    return (None, rows) if rows else (arr, None)


def _manifest_problem(meta, manifest: Path, key: bytes | None, expect: dict | None) -> str | None:
    if not isinstance(meta, dict):
        return f"manifest {manifest.name} is not a JSON object"
    if meta.get("format") != FORMAT or "digest" not in meta:
        return f"manifest {manifest.name} has no digest (written by an older anchordiv?)"
    if not verified(key, meta):
        why = "the cache has no key (no marker)" if key is None else "edited, or not written here"
        return f"manifest {manifest.name} does not match its digest ({why})"
    shape, dtype = meta.get("shape"), meta.get("dtype")
    if not (
        isinstance(shape, list)
        and len(shape) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        return f"manifest {manifest.name} has a malformed shape {shape!r}"
    if dtype != "<f4" or not is_hex(meta.get("sha256"), 64):
        return f"manifest {manifest.name} has a malformed dtype or sha256"
    fields = {"rows": shape[0], "width": shape[1], "count": shape[0]}
    for name, value in [*fields.items(), *(expect or {}).items()]:
        if value is not None and meta.get(name) != value:
            return f"manifest {manifest.name} has {name} {meta.get(name)!r}, expected {value!r}"
    return None


def _write_entry(npy: Path, manifest: Path, arr: np.ndarray, info: dict, key: bytes | None) -> None:
    """The array, then (atomically, last) its manifest with shape, dtype, SHA-256 and digest."""
    with atomic_file(npy) as tmp:
        write_npy(tmp, arr)
    meta = {
        **info,
        "format": FORMAT,
        "shape": list(arr.shape),
        "rows": int(arr.shape[0]),
        "width": int(arr.shape[1]),
        "dtype": arr.dtype.str,
        "sha256": _array_hash(arr),
    }
    if key is not None:
        meta["digest"] = sign(key, meta)
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


def cache_root(cache: bool | str | Path) -> Path:
    """The cache directory ``cache`` names (True: :func:`cache_dir`), refused when it exists
    and is not a directory (``$ANCHORDIV_CACHE`` named when that is where it came from)."""
    root = cache_dir() if cache is True else Path(cache)
    where = f"${CACHE_ENV}" if cache is True and os.environ.get(CACHE_ENV) else "the cache"
    if root.exists() and not root.is_dir():
        raise AnchorDivError(
            f"{where} = {root} is a file, not a directory; point it at a folder (or pass "
            f"cache=False / --no-cache)"
        )
    foreign = foreign_entries(root)
    if foreign:
        _note(
            f"{where} = {root} is not an anchordiv cache (it holds "
            f"{', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''} and no {MARKER}): "
            f"the cache writes its folders (images/, files/, embeddings/) among those files; "
            f"point it at an empty or new folder to keep them apart"
        )
    return root


def foreign_entries(root: Path) -> list[str]:
    """The entries of the folder ``root`` that an anchordiv cache does not write (hidden ones
    aside), when it is not a cache yet (no :data:`MARKER`): a folder of the user's own
    (``$ANCHORDIV_CACHE=~/Documents``); empty for a cache, a new or an empty folder."""
    try:
        if not root.is_dir() or (root / MARKER).exists():
            return []
        return sorted(
            p.name for p in root.iterdir() if p.name not in ROOT_NAMES and p.name[:1] != "."
        )
    except OSError:
        return []


def cached_embeddings(
    encoder_id: str,
    kind: str,
    items: Sequence[str | bytes],
    compute: Callable[[], np.ndarray],
    *,
    cache: bool | str | Path = True,
    unit: bool = False,
) -> np.ndarray:
    """Embeddings of ``items`` from the cache, or ``compute()`` them and store the result.

    An entry is used only when its manifest carries the cache's digest and its encoder, kind,
    row count, shape, dtype, SHA-256 and rows (finite; unit-norm with ``unit``) all check;
    else it is reported and rebuilt.  Computed rows are checked the same way before anything
    is written (:class:`AnchorDivError`).  A read-only cache is read, not written (a note).

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
    root = cache_root(cache)
    folder = root / "embeddings"
    npy = folder / f"{content_key(encoder_id, kind, items)}.npy"
    with cache_lock(root):
        key = cache_key(root, create=True)
        if npy.with_suffix(".json").is_file():
            expect = {"encoder": encoder_id, "kind": kind, "count": len(items)}
            arr, problem = _read_entry(
                npy, npy.with_suffix(".json"), key=key, expect=expect, unit=unit
            )
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
        if arr.ndim != 2 or arr.shape[0] != len(items):
            raise AnchorDivError(
                f"encoder {encoder_id} returned an array of shape {list(arr.shape)} for "
                f"{len(items)} inputs (expected [{len(items)}, d])"
            )
        problem = row_problem(arr, unit)
        if problem:
            raise AnchorDivError(f"encoder {encoder_id}: {problem}; nothing was cached")
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        info = {"encoder": encoder_id, "kind": kind, "count": len(items)}
        try:
            folder.mkdir(parents=True, exist_ok=True)
            clean_legacy_temporaries(npy)
            _write_entry(npy, npy.with_suffix(".json"), arr, info, key)
        except OSError as err:
            _note(
                f"embedding cache {root} is read-only ({err.strerror or err}): the embeddings "
                f"are used, not stored"
            )
    return arr


# ---- per-file image embeddings ------------------------------------------------------------

#: New image embeddings are written as a pack every this many images ...
PACK_ROWS = 1024
#: ... or every this many seconds, whichever comes first (a kill loses at most the pack
#: being filled: under a minute of work).
PACK_SECONDS = 30.0

_PACK_NAME = re.compile(r"pack-\d+-\d+-[0-9a-f]{8}")


class ImageStore:
    """Per-file image embeddings of one encoder and preprocessing, keyed by each file's
    content SHA-256: any subset, superset, reordering or moved copy of a tree finds every
    image it has seen before.

    Every pack is data from a stranger until checked: its manifest must carry the cache's
    digest (:func:`sign`) and name this space, ``width`` (when given), float32, a row count
    equal to its file digests, and the SHA-256 of its rows; the rows must be finite and
    unit-norm; two packs that disagree on a file are both ignored for it.  What fails is
    reported in one note and never used (its images are encoded afresh)."""

    def __init__(self, space_id: str, root: Path | None = None, width: int | None = None) -> None:
        self.id = space_id
        self.root = root or cache_dir()
        self.width = width
        self.readonly = False
        self.dir = self.root / "images" / hashlib.sha256(space_id.encode()).hexdigest()[:24]

    def packs(self) -> list[Path]:
        """The packs' manifests, oldest first."""
        return sorted(p for p in self.dir.glob("pack-*.json") if _PACK_NAME.fullmatch(p.stem))

    def lookup(self, digests: Sequence[str | None]) -> tuple[np.ndarray | None, np.ndarray]:
        """``(rows [n, d] or None, found [n] bool)``: the stored embedding of each digest."""

        found = np.zeros(len(digests), bool)
        wanted: dict[str, list[int]] = {}
        for i, d in enumerate(digests):
            if d is not None:
                wanted.setdefault(d, []).append(i)
        key = cache_key(self.root) if wanted else None
        space = _field(self.dir / "space.json", "id", None)
        ignored: list[str] = []
        if wanted and space is not None and space != self.id:
            ignored.append(f"space.json names another encoder space ({str(space)[:80]!r})")
        expect = {"encoder": self.id, "kind": "image", "width": self.width}
        rows: dict[str, list[np.ndarray]] = {}
        for manifest in self.packs() if wanted else []:
            meta = _field(manifest, None, None)  # None: removed by a concurrent prune, or bad
            names = meta.get("digests") if isinstance(meta, dict) else None
            if not isinstance(names, list) or not all(is_hex(d, 64) for d in names):
                ignored.append(f"{manifest.name}: unreadable or malformed manifest")
                continue
            if not any(d in wanted for d in names):
                continue
            if len(set(names)) != len(names):
                ignored.append(f"{manifest.name}: a file digest twice")
                continue
            arr, problem = _read_entry(
                manifest.with_suffix(".npy"),
                manifest,
                key=key,
                expect={**expect, "count": len(names)},
                unit=True,
            )
            if problem or arr is None:
                mine = verified(key, meta)
                ignored.append(f"{manifest.name}: {problem}" + ("; removed" if mine else ""))
                if mine:  # the cache wrote it and its array broke: remove both
                    STATS["rebuilt"] += 1
                    self._remove(manifest)
                continue
            for j, d in enumerate(names):
                if d in wanted:
                    rows.setdefault(d, []).append(arr[j])
        out = None
        conflicts = 0
        for d, found_rows in rows.items():
            first = found_rows[0]
            if any(np.max(np.abs(r - first)) > AGREE_TOL for r in found_rows[1:]):
                conflicts += 1
                continue
            if out is None:
                out = np.zeros((len(digests), first.shape[0]), np.float32)
            out[wanted[d]] = first
            found[wanted[d]] = True
        if conflicts:
            ignored.append(f"{conflicts} file(s) stored with different embeddings in two packs")
        if ignored:
            _note(
                f"image embedding cache {self.dir}: ignored, not used (corrupt or partial, or not "
                f"written by this cache), their images are encoded afresh: "
                + "; ".join(ignored[:5])
                + (f"; and {len(ignored) - 5} more" if len(ignored) > 5 else "")
                + " (`anchordiv cache prune --older-than DAYS` removes such files)"
            )
        STATS["image_hits"] += int(found.sum())
        return out, found

    def add(self, digests: Sequence[str], arr: np.ndarray) -> Path | None:
        """Store ``arr [n, d]`` (finite, unit-norm rows) as a new pack of the files
        ``digests``; None (one note) where the cache is read-only."""
        import secrets

        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(digests):
            raise AnchorDivError(f"image pack: {len(digests)} digests for an array {arr.shape}")
        if self.width is not None and arr.shape[1] != self.width:
            raise AnchorDivError(
                f"image pack: rows of width {arr.shape[1]} for an encoder of width {self.width}"
            )
        problem = row_problem(arr, unit=True)
        if problem:
            raise AnchorDivError(f"image embeddings of {self.id.split('|')[0]}: {problem}")
        if self.readonly:
            return None
        try:
            key = cache_key(self.root, create=True)
            self.dir.mkdir(parents=True, exist_ok=True)
            space = self.dir / "space.json"
            if not space.is_file():
                with atomic_file(space) as tmp:
                    write_text(tmp, json.dumps({"id": self.id, "kind": "image"}) + "\n")
            name = f"pack-{time.time_ns()}-{os.getpid()}-{secrets.token_hex(4)}"
            npy = self.dir / f"{name}.npy"
            info = {"encoder": self.id, "kind": "image", "count": len(digests)}
            _write_entry(
                npy, npy.with_suffix(".json"), arr, {**info, "digests": list(digests)}, key
            )
        except OSError as err:
            self.readonly = True
            _note(
                f"image embedding cache {self.root} is read-only ({err.strerror or err}): its "
                f"embeddings are used, new ones are not stored"
            )
            return None
        STATS["image_misses"] += len(digests)
        return npy

    @staticmethod
    def _remove(manifest: Path) -> None:
        with contextlib.suppress(OSError):
            manifest.unlink(missing_ok=True)  # the manifest first: a reader never sees it alone
            manifest.with_suffix(".npy").unlink(missing_ok=True)


def _field(path: Path, key: str | None, default):
    """``key`` of a JSON object file (None: the object), or ``default`` where it is missing,
    unreadable or not an object."""
    try:
        meta = read_json(path)
    except (AnchorDivError, OSError, ValueError):
        return default
    if not isinstance(meta, dict):
        return default
    return meta if key is None else meta.get(key, default)


def _size(path: Path) -> int:
    total = 0
    for p in path.rglob("*") if path.is_dir() else ():
        with contextlib.suppress(OSError):
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    return total


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def cache_summary(root: Path | None = None) -> dict:
    """What the cache holds: per image space its encoder id, images, packs and bytes; the text
    and other entries; the file-digest index; JAX's compiled programs.  Malformed files are
    counted as such (``unreadable``), never raised."""

    root = Path(root) if root else cache_dir()
    spaces = []
    for d in sorted(root.glob("images/*/")):  # (a glob of a missing folder finds nothing)
        sid = _field(d / "space.json", "id", "?")
        sid = sid if isinstance(sid, str) else "?"
        packs = sorted(p for p in d.glob("pack-*.json") if _PACK_NAME.fullmatch(p.stem))
        images: set[str] = set()
        unreadable = 0
        for m in packs:
            names = _field(m, "digests", None)
            if isinstance(names, list) and all(is_hex(x, 64) for x in names):
                images.update(names)
            else:
                unreadable += 1
        newest = max((t for m in packs if (t := _mtime(m)) is not None), default=None)
        space = {"id": sid, "dir": str(d), "images": len(images), "packs": len(packs)}
        spaces.append({**space, "unreadable": unreadable, "bytes": _size(d), "newest": newest})
    return {
        "root": str(root),
        "cache": is_cache(root),
        "images": spaces,
        "embeddings": {
            "entries": len(list(root.glob("embeddings/*.json"))),
            "bytes": _size(root / "embeddings"),
        },
        "files": {"folders": len(list(root.glob("files/*.json"))), "bytes": _size(root / "files")},
        "xla": {"bytes": _size(root / "xla")},
    }


# ---- pruning: only what the cache wrote ------------------------------------------------------

_TEMP = re.compile(r"\.(?P<name>.+)\.(?:tmp|old|done|swap)-(?P<pid>\d+)-[0-9a-f]+")
_LEGACY_TEMP = re.compile(r"(?P<name>[0-9a-f]{64})\.(?P<pid>\d+)\.tmp(?:\.npy)?")
#: The files of each cache folder the cache writes (names matched whole).
_OWN = {
    "images/*": re.compile(r"space\.json|pack-\d+-\d+-[0-9a-f]{8}\.(?:npy|json)"),
    "embeddings": re.compile(r"[0-9a-f]{64}\.(?:npy|json)"),
    "files": re.compile(r"[0-9a-f]{24}\.json"),
}


def is_cache(root: Path) -> bool:
    """Whether ``root`` is an anchordiv cache: it holds the :data:`MARKER`, or (a cache of an
    older anchordiv) nothing but the folders and files the cache writes."""
    if _read_marker(root) is not None:
        return True
    try:
        names = {e.name for e in os.scandir(root)}
    except OSError:
        return False
    return names <= ROOT_NAMES or not names


def _own(folder: Path, pattern: re.Pattern) -> list[Path]:
    """The files in ``folder`` the cache wrote: names matching ``pattern``, and temporaries of
    such names."""
    out = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for e in entries:
        if not e.is_file(follow_symlinks=False) and not e.is_symlink():
            continue
        temp = _TEMP.fullmatch(e.name) or _LEGACY_TEMP.fullmatch(e.name)
        if pattern.fullmatch(e.name) or (temp and pattern.fullmatch(temp["name"])):
            out.append(folder / e.name)
        elif temp and temp["name"] in (MARKER, CACHEDIR_TAG) and folder.name != "images":
            out.append(folder / e.name)
    return out


def _dead_temporary(p: Path) -> bool:
    """A temporary or pack array whose writer no longer runs (or, unknown, is old)."""
    from .._safeio import STALE_SECONDS

    m = _TEMP.fullmatch(p.name) or _LEGACY_TEMP.fullmatch(p.name)
    pid = int(m["pid"]) if m else None
    if m is None and _PACK_NAME.fullmatch(p.stem):
        pid = int(p.stem.split("-")[2])
    if pid is None:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        pass
    age = time.time() - (_mtime(p) or time.time())
    return age > STALE_SECONDS


def _folders(root: Path) -> list[tuple[Path, re.Pattern]]:
    spaces = [d for d in sorted(root.glob("images/*")) if d.is_dir() and not d.is_symlink()]
    spaces = [d for d in spaces if re.fullmatch(r"[0-9a-f]{24}", d.name)]
    out = [(d, _OWN["images/*"]) for d in spaces]
    return out + [(root / "embeddings", _OWN["embeddings"]), (root / "files", _OWN["files"])]


def _orphans(root: Path) -> list[Path]:
    """Leftovers of killed writes: temporaries and pack arrays of writers no longer running,
    arrays without a manifest, manifests that do not parse (truncated); and manifests (with
    their arrays) that do not carry this cache's digest, which are never used."""
    gone = []
    key = cache_key(root)
    for folder, pattern in _folders(root):
        files = _own(folder, pattern)
        names = {p.name for p in files}
        for p in files:
            if p.name.startswith("."):
                if _dead_temporary(p):
                    gone.append(p)
            elif p.suffix == ".npy" and p.with_suffix(".json").name not in names:
                if _dead_temporary(p) or not _PACK_NAME.fullmatch(p.stem):
                    gone.append(p)
            elif p.suffix == ".json" and p.name != "space.json":
                npy = [p.with_suffix(".npy")] if p.with_suffix(".npy").name in names else []
                try:
                    meta = read_json(p)
                except AnchorDivError:  # truncated or not JSON: never a usable manifest
                    gone += [p, *npy]
                    continue
                except OSError:
                    continue
                if key is not None and folder.name != "files" and not verified(key, meta):
                    gone += [p, *npy]
    return gone


def prune(
    root: Path | None = None,
    *,
    encoder: str | None = None,
    older_than_days: float | None = None,
    everything: bool = False,
    dry_run: bool = False,
    wait: float | None = None,
) -> list[Path]:
    """Delete cache entries: the image spaces whose encoder id contains ``encoder``, the
    entries and packs not written for ``older_than_days`` days, or ``everything``; with
    ``older_than_days`` or ``everything`` also the leftovers of killed writes (temporaries,
    arrays without a manifest, truncated manifests).

    Only files the cache writes are touched (by name, folder by folder), and only in a folder
    that is a cache (:func:`is_cache`): another folder is refused, nothing deleted.  The
    cache's lock is taken exclusively, so a running embedding is never pruned under: prune
    waits ``wait`` seconds (default :data:`PRUNE_WAIT_S`) for the runs, then raises.

    Raises
    ------
    AnchorDivError
        Nothing said to remove, a folder that is not an anchordiv cache, or a cache in use."""
    if not (encoder or older_than_days is not None or everything):
        raise AnchorDivError("cache prune: say what to remove: --encoder, --older-than or --all")
    root = Path(root) if root else cache_dir()
    if not root.is_dir():
        return []
    if not is_cache(root):
        try:
            names = sorted(e.name for e in os.scandir(root))
        except OSError:
            names = []
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise AnchorDivError(
            f"cache prune: {root} is not an anchordiv cache (it has no {MARKER} and holds "
            f"files the cache did not write: {shown}); nothing removed"
        )
    gone: list[Path] = []
    with cache_lock(root, exclusive=True, wait=wait):
        if everything:
            for folder, pattern in _folders(root):
                gone += sorted(_own(folder, pattern))
            xla = root / "xla"
            if xla.is_dir() and not xla.is_symlink():
                gone.append(xla)
        else:
            if encoder:
                for d, pattern in _folders(root):
                    sid = _field(d / "space.json", "id", None)
                    if d.parent.name == "images" and isinstance(sid, str) and encoder in sid:
                        gone += sorted(_own(d, pattern))
            if older_than_days is not None:
                limit = time.time() - 86400.0 * float(older_than_days)
                for pattern in ("images/*/pack-*.json", "embeddings/*.json", "files/*.json"):
                    for m in root.glob(pattern):
                        t = _mtime(m)
                        if m in gone or t is None or t >= limit:
                            continue
                        gone.append(m)
                        if m.with_suffix(".npy").exists():
                            gone.append(m.with_suffix(".npy"))
                gone += [p for p in _orphans(root) if p not in gone]
        # manifests before arrays: a reader never finds a manifest alone
        gone = sorted(dict.fromkeys(gone), key=lambda p: (p.suffix == ".npy", str(p)))
        if not dry_run:
            for p in gone:
                remove(p)
            for d, _ in _folders(root):  # folders left empty
                if d.parent.name == "images" and not any(d.glob("pack-*")):
                    with contextlib.suppress(OSError):
                        (d / "space.json").unlink(missing_ok=True)
                        d.rmdir()
    return gone
