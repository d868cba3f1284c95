"""Keep BLAS from oversubscribing the cores around batched linear algebra.

Posterior draws and their summaries run many small ``eigh``/``cholesky`` calls in NumPy beside
JAX's own thread pool.  A multithreaded OpenBLAS then spins up a full thread team for every
small matrix and, on a busy machine, the teams fight each other and the JAX threads: on 2
shared cores ``inference_data(post)`` took 127 s instead of 9 s.  The heavy calls
therefore run under :func:`blas_threads`, which caps the BLAS thread pools (``threadpoolctl``)
for their duration only.  ``ANCHORDIV_BLAS_THREADS`` sets the cap (default 1; ``0`` turns the
limit off).
"""

from __future__ import annotations

import contextlib
import os

#: Environment variable with the BLAS thread cap inside heavy calls (0: no limit).
THREADS_ENV = "ANCHORDIV_BLAS_THREADS"


def blas_thread_limit() -> int | None:
    """The cap from ``$ANCHORDIV_BLAS_THREADS`` (default 1); ``None`` when it is 0."""
    value = int(os.environ.get(THREADS_ENV, "1") or 1)
    return value if value > 0 else None


@contextlib.contextmanager
def blas_threads(limit: int | None = -1):
    """Cap the BLAS thread pools inside the block (``limit=-1``: the environment's cap)."""
    limit = blas_thread_limit() if limit == -1 else limit
    if limit is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=limit, user_api="blas"):
        yield


def limited_blas(fn):
    """Decorator: run ``fn`` under :func:`blas_threads` (``fn.__wrapped__`` is the original;
    the context manager is entered afresh on every call, so the cap is read then)."""
    return blas_threads()(fn)
