"""Heap reuse inside scans: lift, for a scan's duration, the fixed glibc malloc thresholds
that Dask workers (and any process started with ``MALLOC_TRIM_THRESHOLD_``) run with, so XLA
temporaries are not mmapped afresh on every chunk (``docs/guides/scale-out.md``)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
import types

#: ``mallopt`` parameters (glibc's ``malloc.h``).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: glibc's trim and mmap thresholds when they are fixed but not given.
DEFAULT_THRESHOLD = 128 * 1024
#: Inside :func:`reused_heap`: glibc's largest mmap threshold (64-bit) and twice that to trim.
TASK_MMAP_THRESHOLD = 32 << 20
TASK_TRIM_THRESHOLD = 2 * TASK_MMAP_THRESHOLD

#: Seconds without a task inside :func:`reused_heap` before :func:`release_heap` runs.
IDLE_RELEASE_S = 1.0


#: The process's one heap state: users, lifted thresholds, the pending release.
_HEAP = types.SimpleNamespace(lock=threading.Lock(), users=0, lifted=None, timer=None)


def startup_environ() -> dict[str, str]:
    """The environment this process was started with (``/proc/self/environ``, what glibc
    read), not ``os.environ`` (which the process may have changed since); ``{}`` where
    ``/proc`` is missing."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def fixed_thresholds(environ: dict[str, str]) -> tuple[int, int] | None:
    """``(trim, mmap)`` thresholds in bytes that glibc was fixed to by ``environ``
    (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_`` or their ``GLIBC_TUNABLES``
    names, the tunables first); ``None`` when neither is set (glibc's dynamic threshold)."""
    tunables = dict(
        item.partition("=")[::2]
        for item in environ.get("GLIBC_TUNABLES", "").split(":")
        if "=" in item
    )
    trim = tunables.get("glibc.malloc.trim_threshold", environ.get("MALLOC_TRIM_THRESHOLD_"))
    mmap = tunables.get("glibc.malloc.mmap_threshold", environ.get("MALLOC_MMAP_THRESHOLD_"))
    return None if trim is None and mmap is None else (_bytes(trim), _bytes(mmap))


def _bytes(value: str | None) -> int:
    try:
        return int(value, 0) if value is not None else DEFAULT_THRESHOLD
    except ValueError:
        return DEFAULT_THRESHOLD


@functools.cache
def startup_thresholds() -> tuple[int, int] | None:
    """:func:`fixed_thresholds` of :func:`startup_environ` (read once: it cannot change)."""
    return fixed_thresholds(startup_environ())


def glibc():
    """This process's C library when it is glibc (``mallopt``, ``malloc_trim``), else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version, libc.mallopt, libc.malloc_trim  # noqa: B018 (probes)
    except (OSError, TypeError, AttributeError):
        return None
    return libc


@contextlib.contextmanager
def reused_heap():
    """Inside the block, buffers up to 32 MB are reused from the heap even where the process
    started with fixed malloc thresholds (a Dask worker); see the module docstring."""
    libc, fixed = glibc(), startup_thresholds()
    if libc is None or fixed is None:
        yield
        return
    with _HEAP.lock:
        _HEAP.users += 1
        if _HEAP.timer is not None:
            _HEAP.timer.cancel()
            _HEAP.timer = None
        if _HEAP.lifted is None:
            libc.mallopt(M_MMAP_THRESHOLD, TASK_MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, TASK_TRIM_THRESHOLD)
            _HEAP.lifted = (libc, fixed)
    try:
        yield
    finally:
        with _HEAP.lock:
            _HEAP.users -= 1
            if _HEAP.users == 0:
                _HEAP.timer = threading.Timer(IDLE_RELEASE_S, release_heap)
                _HEAP.timer.daemon = True
                _HEAP.timer.start()


def heap_lifted() -> bool:
    """Whether :func:`reused_heap` has the thresholds lifted now."""
    return _HEAP.lifted is not None


def release_heap() -> None:
    """Restore the thresholds the process started with and return the freed heap to the OS,
    unless a task is inside :func:`reused_heap` (it runs by itself once they are idle)."""
    with _HEAP.lock:
        if _HEAP.users or _HEAP.lifted is None:
            return
        libc, (trim, mmap) = _HEAP.lifted
        libc.mallopt(M_MMAP_THRESHOLD, mmap)
        libc.mallopt(M_TRIM_THRESHOLD, trim)
        libc.malloc_trim(0)
        _HEAP.lifted, _HEAP.timer = None, None


def reusing_heap(fn):
    """Decorator: run ``fn`` inside :func:`reused_heap` (for functions run as worker tasks;
    entered afresh on every call)."""
    return reused_heap()(fn)
