"""Safe reading and writing of files: the one place for atomic replacement (:func:`atomic_dir`,
:func:`atomic_file`, :func:`replace_files`), bounded reads (:func:`read_json`, :func:`read_npz`)
and digests, which every saver and loader goes through.  Details: ``docs/guides/safe-files.md``."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .errors import AnchorDivError

#: Digests every bundle and sidecar read must have (``--sha256``; empty: none pinned).
PINS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("pins", default=frozenset())


#: The largest JSON file (card, sidecar, manifest) read, in bytes.
MAX_JSON_BYTES = 64 * 2**20
#: The deepest nesting of JSON arrays and objects accepted.
MAX_JSON_DEPTH = 64
#: The most values a JSON text may hold, counted from its ``[``, ``{`` and ``,`` before parsing.
MAX_JSON_ELEMENTS = 4_000_000
#: The most digits a JSON integer may have (Python refuses more than 4,300 with a ValueError).
MAX_JSON_INT_DIGITS = 100
#: An ``.npz``'s members may inflate, all together, to at most this many times its size ...
MAX_INFLATE_RATIO = 100
#: ... unless they inflate to at most this many bytes in all (one budget per load).
FREE_INFLATE_BYTES = 64 * 2**20
#: The most members an ``.npz`` may have (read from the zip's end record before its directory).
MAX_MEMBERS = 4096
#: The largest ``.npy`` header read, in bytes.
MAX_HEADER_BYTES = 10_000
#: The dtype kinds an array may have (booleans, integers, floats, complex, strings).
DTYPE_KINDS = "biufcUS"
#: Seconds a stale temporary of a process whose liveness cannot be checked is kept.
STALE_SECONDS = 3600.0

TMP, OLD, SWAP, DONE = "tmp", "old", "swap", "done"


# ---- JSON -------------------------------------------------------------------------------------


def json_depth(obj) -> int:
    """The nesting depth of a parsed JSON value (0 for a scalar), computed without recursion."""
    deepest, stack = 0, [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
    return deepest


def parse_json(text: str | bytes, what: str, *, finite: bool = False):
    """JSON ``text`` parsed, with an :class:`AnchorDivError` naming ``what`` for text that is
    not JSON, larger than :data:`MAX_JSON_BYTES`, holding more than :data:`MAX_JSON_ELEMENTS`
    values or an integer of more than :data:`MAX_JSON_INT_DIGITS` digits, or nested deeper
    than :data:`MAX_JSON_DEPTH` (all but the depth checked before parsing); with ``finite``,
    ``NaN`` and ``Infinity`` are refused too."""
    if len(text) > MAX_JSON_BYTES:
        raise AnchorDivError(f"{what}: {len(text)} bytes of JSON, more than {MAX_JSON_BYTES}")
    raw = text.encode("utf-8", "replace") if isinstance(text, str) else text
    values = raw.count(b"[") + raw.count(b"{") + raw.count(b",")
    if values > MAX_JSON_ELEMENTS:
        raise AnchorDivError(
            f"{what}: JSON of about {values} values, more than {MAX_JSON_ELEMENTS}"
        )

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_JSON_INT_DIGITS:
            raise AnchorDivError(
                f"{what}: a JSON integer of {len(digits)} digits (at most {MAX_JSON_INT_DIGITS})"
            )
        return int(digits)

    def constant(name: str) -> float:
        if finite:
            raise AnchorDivError(f"{what}: JSON holds {name}; only finite numbers are accepted")
        return float(name)

    def real(digits: str) -> float:
        value = float(digits)
        if finite and not math.isfinite(value):
            raise AnchorDivError(f"{what}: JSON number {digits[:20]} is not finite")
        return value

    try:
        obj = json.loads(text, parse_int=integer, parse_float=real, parse_constant=constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AnchorDivError(f"{what}: not valid JSON ({err})") from None
    except RecursionError:
        raise AnchorDivError(f"{what}: JSON nested too deeply") from None
    if json_depth(obj) > MAX_JSON_DEPTH:
        raise AnchorDivError(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return obj


def read_json(path, what: str | None = None, *, finite: bool = False):
    """The JSON value in the file ``path`` (size checked before reading; :func:`parse_json`)."""
    path = Path(path)
    what = what or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise AnchorDivError(f"{what}: {size} bytes of JSON, more than {MAX_JSON_BYTES}")
        data = path.read_bytes()
    except OSError as err:
        raise AnchorDivError(f"{what}: cannot read ({err.strerror or err})") from None
    return parse_json(data, what, finite=finite)


def dumps(obj, **kw) -> str:
    """The JSON text a card or sidecar is written as (sorted keys, indented, newline)."""
    return json.dumps(obj, indent=kw.pop("indent", 2), sort_keys=True, **kw) + "\n"


# ---- arrays -----------------------------------------------------------------------------------


def data_hash(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the arrays' names, dtypes, shapes and bytes (order-independent), hashing
    each array's memory in place (a view, no copy of a contiguous array)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        if a.size:
            h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()


def canonical(card: dict) -> bytes:
    """The bytes :func:`card_digest` hashes: the card but ``digest``, compact sorted JSON."""
    body = {k: v for k, v in card.items() if k != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def card_digest(card: dict) -> str:
    """SHA-256 of a card's content (every field but ``digest``; with the card's ``data_hash``
    it covers the whole bundle).  It detects corruption, not tampering."""
    return hashlib.sha256(canonical(card)).hexdigest()


def native(arr: np.ndarray) -> np.ndarray:
    """``arr`` in the machine's byte order (a big-endian array converted, values unchanged)."""
    order = "<" if sys.byteorder == "little" else ">"
    if arr.dtype.byteorder not in ("=", "|", order):
        return arr.astype(arr.dtype.newbyteorder("="))
    return arr


def npy_header(fp, what: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``fp``, read from its header
    only, with an :class:`AnchorDivError` for anything that is not a plain ``.npy`` header."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fp, max_header_size=MAX_HEADER_BYTES)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fp, max_header_size=MAX_HEADER_BYTES)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except Exception as err:  # numpy raises ValueError, SyntaxError, TokenError, ...
        raise AnchorDivError(
            f"{what}: not a readable .npy array (invalid header: {type(err).__name__})"
        ) from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise AnchorDivError(f"{what}: dtype {dtype.str!r} is not supported (objects/records)")
    if dtype.kind not in DTYPE_KINDS:
        raise AnchorDivError(f"{what}: dtype {dtype.str!r} is not supported")
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise AnchorDivError(f"{what}: invalid shape {shape}")
    return tuple(shape), bool(fortran), dtype


def read_npz(path, *, expect: dict | None = None) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path``, in their stored dtypes and byte order.

    Before any data is read, the archive is checked as a whole from its end record and zip
    directory — at most :data:`MAX_MEMBERS` members, inflating all together to at most
    :data:`MAX_INFLATE_RATIO` times the file's size beyond :data:`FREE_INFLATE_BYTES` (one
    budget per load) — and each member (not encrypted, stored or deflated) from its ``.npy``
    header (a plain dtype, a shape whose size is the member's size; ``expect``,
    ``{name: [dtype, shape]}``, if given, must match), so a small file never makes a large
    allocation.  The bytes inflated are counted against the budget while reading too."""
    path = Path(path)
    out: dict[str, np.ndarray] = {}
    try:
        disk = path.stat().st_size
        with open(path, "rb") as f:
            members = zip_member_count(f, disk)
        if members is not None and members > MAX_MEMBERS:
            at_least = "at least " if members == 0xFFFF else ""  # a zip64 archive's cap
            raise AnchorDivError(f"{path}: {at_least}{members} members, more than {MAX_MEMBERS}")
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > MAX_MEMBERS:
                raise AnchorDivError(f"{path}: {len(infos)} members, more than {MAX_MEMBERS}")
            budget = max(FREE_INFLATE_BYTES, MAX_INFLATE_RATIO * disk)
            total = sum(info.file_size for info in infos)
            if total > budget:
                raise AnchorDivError(
                    f"{path}: its {len(infos)} members inflate {disk} bytes to {total} "
                    f"(over {MAX_INFLATE_RATIO} times the file, beyond {FREE_INFLATE_BYTES}); "
                    f"refused as a zip bomb"
                )
            for info in infos:
                name = info.filename.removesuffix(".npy")
                what = f"{path}[{info.filename}]"
                check_member(info, disk, what)
                if name in out:
                    raise AnchorDivError(f"{what}: a second member of that name")
                with z.open(info) as fp:
                    shape, fortran, dtype = npy_header(fp, what)
                    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
                    if count < 0 or count * dtype.itemsize != info.file_size - fp.tell():
                        raise AnchorDivError(
                            f"{what}: header says {dtype.str} {list(shape)}, which is not the "
                            f"member's {info.file_size - fp.tell()} data bytes"
                        )
                    if expect is not None:
                        want = expect.get(name)
                        if want is None or [dtype.str, list(shape)] != [want[0], list(want[1])]:
                            raise AnchorDivError(
                                f"{what}: holds {dtype.str} {list(shape)}, the card says {want}"
                            )
                    budget -= fp.tell() + count * dtype.itemsize  # the running count
                    if budget < 0:
                        raise AnchorDivError(f"{what}: the archive inflates past its budget")
                    arr = np.empty(count, dtype)
                    read_into(fp, arr.view(np.uint8), what)
                out[name] = arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
        if expect is not None and set(expect) != set(out):
            raise AnchorDivError(
                f"{path}: members {sorted(out)} are not the card's arrays {sorted(expect)}"
            )
    except AnchorDivError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError) as err:
        raise AnchorDivError(
            f"{path}: unreadable or truncated array archive ({type(err).__name__}: {err})"
        ) from None
    except (NotImplementedError, RuntimeError, ValueError, KeyError, OverflowError) as err:
        raise AnchorDivError(
            f"{path}: malformed array archive ({type(err).__name__}: {err})"
        ) from None
    return out


def zip_member_count(fp, disk: int) -> int | None:
    """The member count a zip's end-of-central-directory record declares (None where there is
    none to be found: the zip reader then says what is wrong), read before the directory is."""
    tail = min(disk, 22 + 65535)
    fp.seek(disk - tail)
    data = fp.read(tail)
    at = data.rfind(b"PK\x05\x06")
    if at < 0 or len(data) < at + 22:
        return None
    return int(struct.unpack("<4s4H2LH", data[at : at + 22])[4])


def read_into(fp, buf: np.ndarray, what: str) -> None:
    """Fill the byte array ``buf`` from the stream ``fp`` (one copy, into a writable array)."""
    view, done = memoryview(buf), 0
    while done < len(view):
        got = fp.readinto(view[done:])
        if not got:
            raise AnchorDivError(f"{what}: truncated")
        done += got


def check_member(info: zipfile.ZipInfo, disk: int, what: str) -> None:
    """Refuse a zip member that is encrypted, compressed other than by deflate, or claims more
    compressed bytes than the file has (the inflated sizes are bounded by :func:`read_npz`)."""
    if info.flag_bits & 0x1:
        raise AnchorDivError(f"{what}: encrypted members are not supported")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise AnchorDivError(f"{what}: compression method {info.compress_type} is not supported")
    if not info.filename.endswith(".npy") or "/" in info.filename:
        raise AnchorDivError(f"{what}: not an array member (name.npy)")
    if info.compress_size > disk:
        raise AnchorDivError(f"{what}: claims more bytes than the file holds")
    if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
        raise AnchorDivError(f"{what}: stored member with inconsistent sizes")


def array_specs(arrays: dict[str, np.ndarray]) -> dict[str, list]:
    """``{name: [dtype, shape]}``: what a card declares of its arrays (:func:`read_npz`)."""
    return {k: [np.asarray(v).dtype.str, list(np.shape(v))] for k, v in sorted(arrays.items())}


def write_npz(path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` to ``path`` (uncompressed), flushed to disk."""
    with open(path, "wb") as f:
        np.savez(f, **arrays)
        flush(f)


def write_npy(path, arr: np.ndarray) -> None:
    """``np.save`` to exactly ``path`` (no suffix added), flushed to disk."""
    with open(path, "wb") as f:
        np.save(f, arr, allow_pickle=False)
        flush(f)


def write_text(path, text: str) -> None:
    """``text`` to ``path`` (UTF-8), flushed to disk."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        flush(f)


def flush(f) -> None:
    f.flush()
    with contextlib.suppress(OSError):
        os.fsync(f.fileno())


# ---- atomic replacement ---------------------------------------------------------------------


def _sibling(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}-{secrets.token_hex(4)}")


def _siblings(path: Path, tag: str) -> list[Path]:
    """The temporaries named for ``path`` and ``tag`` by :func:`_sibling` — exactly
    ``.NAME.TAG-PID-HEX``, so ``.run.old-…`` never matches the aside ``.run.old-2.old-…`` of a
    sibling named ``run.old-2`` — oldest first."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.{tag}-(\d+)-([0-9a-f]+)")
    try:
        names = [e.name for e in os.scandir(path.parent) if pattern.fullmatch(e.name)]
    except OSError:
        return []
    return sorted((path.parent / n for n in names), key=_age_key)


def _age_key(p: Path) -> tuple[float, str]:
    with contextlib.suppress(OSError):
        return (p.lstat().st_mtime, p.name)
    return (0.0, p.name)


def _alive(p: Path) -> bool:
    """Whether the writer that named the temporary ``p`` (``.NAME.TAG-PID-…``) may still run:
    this process, or a running process whose temporary changed within :data:`STALE_SECONDS`
    (a PID is reused and PID 1 always runs, so a temporary is stale by age as well)."""
    try:
        pid = int(p.name.rsplit("-", 2)[-2])
    except (ValueError, IndexError):
        return False
    if pid == os.getpid():
        return True
    try:
        times = [p.lstat().st_mtime]
        if p.is_dir():
            times += [e.stat(follow_symlinks=False).st_mtime for e in os.scandir(p)]
    except OSError:
        return False
    if time.time() - max(times) > STALE_SECONDS:
        return False
    try:
        if os.name == "posix":
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # no permission to signal it: it runs
        pass
    return True


def remove(p: Path) -> None:
    """Delete ``p`` (a file, a link — never what it points to — or a directory tree)."""
    with contextlib.suppress(FileNotFoundError):
        if p.is_symlink() or not p.is_dir():
            p.unlink()
        else:
            shutil.rmtree(p, ignore_errors=True)


def clean_stale(path: Path) -> None:
    """Before writing ``path``: restore a complete copy left aside by a killed writer when
    ``path`` itself is missing, then delete the temporaries of writers no longer running."""
    olds = [p for p in _siblings(path, OLD) if not _alive(p)]
    if not os.path.lexists(path) and olds:
        os.rename(olds[-1], path)
        olds = olds[:-1]
    for p in olds + [p for tag in (TMP, DONE) for p in _siblings(path, tag) if not _alive(p)]:
        remove(p)


#: Seconds a writer waits for another writer of the same path before giving up.
LOCK_SECONDS = 600.0


@contextlib.contextmanager
def writer_lock(path: Path):
    """Serialise the writers of ``path``: an exclusive ``fcntl`` lock on the sibling
    ``.NAME.lock`` for the whole write (clean-up, write, swap), the file deleted by its holder
    when done (a waiter that then holds a deleted file's lock starts again).  The kernel drops a
    lock when its holder exits, however it dies, so a dead writer never holds one (the
    stale-holder rule); a live one is waited for up to :data:`LOCK_SECONDS`, then an
    :class:`AnchorDivError`.  Where ``fcntl`` is missing (Windows) writers are not locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not posix
        yield
        return
    lock = path.with_name(f".{path.name}.lock")
    deadline = time.monotonic() + LOCK_SECONDS
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as err:
            raise AnchorDivError(f"{path}: cannot open its lock file {lock.name} ({err})") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise AnchorDivError(
                            f"{path}: another writer has held {lock.name} for {LOCK_SECONDS:g} s"
                        ) from None
                    time.sleep(0.02)
            st = os.fstat(fd)
            if _identity(lock) == [st.st_ino, st.st_size, st.st_mtime_ns]:
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder deleted it: lock the new one
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def bundle_dir(path) -> Path:
    """The complete copy of the directory ``path`` to read: ``path`` itself, or — when a killed
    :func:`atomic_dir` left the destination missing — the copy it had renamed aside."""
    path = Path(path)
    if os.path.lexists(path):
        return path
    olds = _siblings(path, OLD)
    return olds[-1] if olds else path


def swap_in(tmp: Path, path: Path) -> None:
    """Rename the complete directory or file ``tmp`` to ``path``: an existing ``path`` (a
    directory, a file or a link) is first renamed aside and deleted after."""
    if not os.path.lexists(path):
        os.rename(tmp, path)
    elif tmp.is_dir() or (path.is_dir() and not path.is_symlink()):
        aside = _sibling(path, OLD)
        os.rename(path, aside)
        os.rename(tmp, path)
        remove(aside)
    else:
        os.replace(tmp, path)


@contextlib.contextmanager
def atomic_dir(path, overwrite: bool = False):
    """Write a directory atomically: yields an empty temporary sibling to write into, then
    swaps it in for ``path`` (old or new at every instant; nothing replaced on an error).
    Writers of one ``path`` take turns (:func:`writer_lock`).

    ``path`` is checked first (:func:`~anchordiv.errors.check_output`)."""
    from .errors import check_output

    path = Path(path)
    if path.name in ("", ".", ".."):  # "." or "..": the directory by its own name
        path = Path(os.path.abspath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with writer_lock(path):
        clean_stale(path)
        check_output(path, overwrite)
        tmp = _sibling(path, TMP)
        tmp.mkdir()
        try:
            yield tmp
            swap_in(tmp, path)
        except BaseException:
            remove(tmp)
            raise


@contextlib.contextmanager
def atomic_file(path, overwrite: bool = True):
    """Write a file atomically: yields a temporary sibling path to write, then renames it onto
    ``path`` (replacing a link there, never writing through it)."""
    from .errors import check_output

    path = Path(path)
    check_output(path, overwrite, file=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path)
    tmp = _sibling(path, TMP)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise


#: The record inside a journal: the identities of the files it replaces and their replacements.
RECORD = "journal.json"


def _journal(paths: list[Path]) -> Path:
    return paths[0].with_name(f".{paths[0].name}.{SWAP}")


def _identity(p: Path) -> list[int] | None:
    """``[inode, size, mtime_ns]`` of the file ``p`` (a rename keeps it), None if absent."""
    try:
        st = p.lstat()
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _journal_applies(journal: Path, paths: list[Path]) -> bool:
    """Whether ``journal`` is an interrupted :func:`replace_files`'s: it holds the record it
    wrote, and every file is now the one recorded before or the one recorded after — not one
    another tool wrote later (then the files themselves are newer than the journal)."""
    try:
        record = parse_json((journal / RECORD).read_bytes(), str(journal / RECORD))
        before, after = record["before"], record["after"]
        return all(_identity(p) in (before[p.name], after[p.name]) for p in paths)
    except (OSError, AnchorDivError, KeyError, TypeError):
        return False


def replace_files(writers: dict, *, overwrite: bool = False) -> None:
    """Replace the files of ``writers`` (``{path: write(tmp_path)}``, one directory) as a unit:
    a reader (:func:`group_paths`) sees all the old files or all the new ones.  Writers of one
    set take turns (:func:`writer_lock`)."""
    from .errors import check_output

    paths = [Path(p) for p in writers]
    for p in paths:
        check_output(p, overwrite, file=True)
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    journal = _journal(paths)
    with writer_lock(paths[0]):
        for p in paths + [journal]:
            clean_stale(p)
        tmps = {p: _sibling(p, TMP) for p in paths}
        try:
            for p, write in writers.items():
                write(tmps[Path(p)])
            after = {p.name: _identity(tmps[p]) for p in paths}
            if _journal_applies(journal, paths):  # a killed save's: the last complete set
                record = parse_json((journal / RECORD).read_bytes(), str(journal))
                staged = _sibling(journal / RECORD, TMP)
                write_text(staged, dumps({**record, "after": after}))
                os.replace(staged, journal / RECORD)
            else:
                remove(journal)  # none, or one that no longer describes these files
                staging = _sibling(journal, TMP)
                staging.mkdir()
                for p in paths:
                    if p.is_file():
                        try:
                            os.link(p, staging / p.name)
                        except OSError:
                            shutil.copy2(p, staging / p.name)
                before = {p.name: _identity(p) for p in paths}
                write_text(staging / RECORD, dumps({"before": before, "after": after}))
                os.rename(staging, journal)
            for p in paths:
                os.replace(tmps[p], p)
            done = _sibling(journal, DONE)
            os.rename(journal, done)
            remove(done)
        except BaseException:
            for t in tmps.values():
                remove(t)
            raise


def group_paths(paths) -> dict[Path, Path | None]:
    """``{path: the file to read}`` for a set written by :func:`replace_files`: the files
    themselves, or the journal's copies (None for one that did not exist) while an interrupted
    replacement's journal remains and still describes the files (:func:`_journal_applies`; a
    directory of that name without its record, or files replaced since, are ignored)."""
    paths = [Path(p) for p in paths]
    journal = _journal(paths)
    if journal.is_dir() and not journal.is_symlink() and _journal_applies(journal, paths):
        return {p: (journal / p.name if (journal / p.name).is_file() else None) for p in paths}
    return {p: (p if p.is_file() else None) for p in paths}


# ---- faiss --------------------------------------------------------------------------------

#: Seconds the check of a serialized faiss index may take.
FAISS_CHECK_SECONDS = 60

_FAISS_CHECK = """
import resource, sys
import numpy as np
import faiss
data = np.fromfile(sys.argv[1], dtype=np.uint8)
with open("/proc/self/statm") as f:
    base = int(f.read().split()[0]) * resource.getpagesize()
limit = base + 4 * data.nbytes + int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    index = faiss.deserialize_index(data)
except BaseException as err:
    print(type(err).__name__, str(err)[:300])
    sys.exit(3)
print(index.ntotal, index.d)
"""


def check_faiss_bytes(data: np.ndarray, what: str, headroom: int = 256 * 2**20) -> tuple[int, int]:
    """``(ntotal, d)`` of a serialized faiss index, deserialized first in a child process with
    its memory bounded (the bytes plus ``headroom``) and a time limit, so a corrupt index is an
    :class:`AnchorDivError` rather than an unbounded allocation here.  Where the child's
    memory cannot be bounded (no ``/proc``), the index is only deserialized here."""
    if not Path("/proc/self/statm").exists():
        return -1, -1
    with tempfile.NamedTemporaryFile(suffix=".faiss") as f:
        np.asarray(data, np.uint8).tofile(f.name)
        try:
            cmd = [sys.executable, "-c", _FAISS_CHECK, f.name, str(headroom)]
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            run = subprocess.run(
                cmd, capture_output=True, text=True, timeout=FAISS_CHECK_SECONDS, env=env
            )
        except subprocess.TimeoutExpired:
            raise AnchorDivError(
                f"{what}: the faiss index did not deserialize within {FAISS_CHECK_SECONDS} s"
            ) from None
    if run.returncode != 0:
        reason = run.stdout.strip() or (run.stderr.strip().splitlines() or ["?"])[-1]
        raise AnchorDivError(f"{what}: the faiss index is corrupt ({reason[:300]})")
    ntotal, d = (int(x) for x in run.stdout.split()[-2:])
    return ntotal, d


# ---- HDF5 (netCDF) --------------------------------------------------------------------------


def check_hdf5(path, what: str) -> None:
    """Refuse an HDF5 file (an InferenceData's netCDF) that reads outside itself — external
    storage, virtual datasets, external links — or whose datasets inflate, all together, past
    the budget of :func:`read_npz` (:data:`MAX_INFLATE_RATIO` times the file beyond
    :data:`FREE_INFLATE_BYTES`), checked from its metadata before any data is read."""
    import h5py

    path = Path(path)
    budget = max(FREE_INFLATE_BYTES, MAX_INFLATE_RATIO * path.stat().st_size)
    total, bad = 0, []

    def visit(name, link):
        nonlocal total
        if isinstance(link, h5py.ExternalLink):
            bad.append(f"{name} (an external link)")
            return
        if not isinstance(link, h5py.HardLink):
            return
        obj = f[name]
        if isinstance(obj, h5py.Dataset):
            if obj.external or obj.is_virtual:
                bad.append(f"{name} (external storage)")
            total += int(np.prod(obj.shape or (), dtype=object)) * max(obj.dtype.itemsize, 1)

    try:
        with h5py.File(path, "r") as f:
            f.visititems_links(visit)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise AnchorDivError(f"{what}: not a readable HDF5/netCDF file ({err})") from None
    if bad:
        raise AnchorDivError(f"{what}: refers outside the file: {', '.join(bad[:3])}")
    if total > budget:
        raise AnchorDivError(
            f"{what}: its variables inflate to {total} bytes, over {MAX_INFLATE_RATIO} times "
            f"the file beyond {FREE_INFLATE_BYTES}; refused as a compression bomb"
        )


# ---- malformed content --------------------------------------------------------------------

#: What a malformed bundle raises while turned into objects (:func:`malformed` converts them).
MALFORMED: tuple = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)
MALFORMED += (ZeroDivisionError, np.linalg.LinAlgError)


@contextlib.contextmanager
def malformed(path, what: str = "bundle"):
    """Turn the exceptions of building objects from a file's content into an
    :class:`AnchorDivError` naming the file."""
    try:
        yield
    except AnchorDivError:
        raise
    except MALFORMED as err:
        raise AnchorDivError(
            f"{path}: malformed {what} ({type(err).__name__}: {str(err)[:200]})"
        ) from None
