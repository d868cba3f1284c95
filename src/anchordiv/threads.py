"""One thread policy for host (NumPy/SciPy) linear algebra and XLA's CPU pool: library entry
points run under :func:`blas_threads` (``$ANCHORDIV_BLAS_THREADS``, default 1) and
:func:`configure_xla` gives XLA ``$ANCHORDIV_XLA_THREADS`` threads (``docs/guides/data.md``)."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading

#: Environment variable with the BLAS thread cap inside library calls (0: no cap).
THREADS_ENV = "ANCHORDIV_BLAS_THREADS"
#: Environment variable with XLA's CPU intra-op threads for JAX programs (0: XLA's default).
XLA_THREADS_ENV = "ANCHORDIV_XLA_THREADS"
#: the XLA flags that set its CPU threads (one of them in ``$XLA_FLAGS``: the user's choice)
XLA_THREAD_FLAGS = ("xla_cpu_multi_thread_eigen", "intra_op_parallelism_threads")


def configure_xla() -> str | None:
    """Set XLA's CPU intra-op threads from ``$ANCHORDIV_XLA_THREADS`` (default 1) in
    ``$XLA_FLAGS``, before JAX creates its CPU backend; returns the flags added, or None where
    nothing was changed: the variable is 0, ``$XLA_FLAGS`` already sets threads, or a JAX
    backend exists already (its threads are fixed)."""
    n = env_count(XLA_THREADS_ENV)
    flags = os.environ.get("XLA_FLAGS", "")
    if n <= 0 or any(f in flags for f in XLA_THREAD_FLAGS):
        return None
    if "jax" in sys.modules:
        try:
            from jax._src import xla_bridge

            if xla_bridge.backends_are_initialized():
                return None
        except (ImportError, AttributeError):  # another JAX: leave it as it is
            return None
    added = f"intra_op_parallelism_threads={n}"
    if n == 1:
        added = f"--xla_cpu_multi_thread_eigen=false {added}"
    os.environ["XLA_FLAGS"] = f"{flags} {added}".strip()
    return added


_LOCAL = threading.local()
_CONTROLLER: list = [None, -1]  # [ThreadpoolController, len(sys.modules) it saw]


def env_count(name: str) -> int:
    """A thread count from the environment variable ``name`` (unset or empty: 1; 0: no
    setting); anything but a non-negative integer is a ``ValueError`` naming the variable."""
    text = os.environ.get(name, "").strip() or "1"
    if not text.isdigit():
        raise ValueError(f"${name}: a thread count (a non-negative integer), got {text!r}")
    return int(text)


def blas_thread_limit() -> int | None:
    """The cap from ``$ANCHORDIV_BLAS_THREADS`` (default 1); ``None`` when it is 0."""
    return env_count(THREADS_ENV) or None


def _controller():
    """The ``threadpoolctl`` controller, rebuilt when new modules (so maybe new BLAS
    libraries: scipy, torch, faiss) were imported since it was built."""
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER[0] is None or _CONTROLLER[1] != len(sys.modules):
        _CONTROLLER[:] = [ThreadpoolController(), len(sys.modules)]
    return _CONTROLLER[0]


def current_limit() -> int | None:
    """The BLAS cap this thread runs under inside a library call (``None`` outside one)."""
    stack = getattr(_LOCAL, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def blas_threads(limit: int | None = -1):
    """Cap the BLAS thread pools inside the block (``limit=-1``: the environment's cap,
    :func:`blas_thread_limit`; ``None``: no cap).  Re-entering with the cap already in force
    costs nothing; usable as a decorator (entered afresh on every call)."""
    limit = blas_thread_limit() if limit == -1 else limit
    stack = _LOCAL.__dict__.setdefault("stack", [])
    if limit is None or (stack and stack[-1] == limit):
        yield
        return
    with _controller().limit(limits=limit, user_api="blas"):
        stack.append(limit)
        try:
            yield
        finally:
            stack.pop()


def limited_blas(fn):
    """Decorator: run ``fn`` under :func:`blas_threads` (``fn.__wrapped__`` is the original).
    Outside a library call the cap is read and entered on every call; inside one (a cap in
    force on this thread) ``fn`` runs directly under it: one scope per entry point, however
    many decorated functions it calls."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if getattr(_LOCAL, "stack", None):  # inside a scope already: its cap holds
            return fn(*args, **kwargs)
        with blas_threads():
            return fn(*args, **kwargs)

    return run


configure_xla()  # on import: ``import anchordiv`` imports this module before JAX
