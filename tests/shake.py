"""Numerics shakes: the numerics-sensitive tests run again with the arithmetic shaken as another
host would shake it, without another BLAS build, and must print and store the same results
within their stated tolerances.

Modes (``$ANCHORDIV_SHAKE``, read by ``tests/conftest.py`` for every test of a run; ``make
test-shake`` runs the sensitive files once per mode; ``tests/test_shake.py`` runs a
representative subset under each mode in the default tier):

* ``ulp`` — every embedding matrix the library validates (:func:`anchordiv.errors.as_matrix`,
  the gate of every array input) comes back with each non-zero entry moved one unit in the last
  place toward +inf (``np.nextafter``): the rounding of an encoder on another machine.  Zeros
  stay zeros and equal entries stay equal (exact data: a design's zeros, a duplicated row).
* ``threads1``, ``threads2`` — NumPy's BLAS runs on 1 or 2 threads (``threadpoolctl``, and
  ``$ANCHORDIV_BLAS_THREADS`` for the library's own cap): another reduction order inside the
  larger products and factorisations.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

#: the environment variable naming the shake of a whole run
ENV = "ANCHORDIV_SHAKE"
MODES = ("ulp", "threads1", "threads2")


def mode() -> str | None:
    """The shake of this run (``$ANCHORDIV_SHAKE``), None when unset; an unknown one is an
    error naming the modes."""
    m = os.environ.get(ENV, "").strip()
    if not m:
        return None
    if m not in MODES:
        raise ValueError(f"${ENV}: one of {', '.join(MODES)}, got {m!r}")
    return m


def perturb(x: np.ndarray) -> np.ndarray:
    """``x`` with every non-zero floating entry one ulp toward +inf (a copy; other dtypes and
    zeros unchanged)."""
    if not np.issubdtype(x.dtype, np.floating):
        return x
    return np.where(x != 0, np.nextafter(x, np.inf, dtype=x.dtype), x).astype(x.dtype)


@contextlib.contextmanager
def _ulp():
    import anchordiv  # noqa: F401  (loads the modules whose as_matrix is rebound)
    from anchordiv import errors

    original = errors.as_matrix

    def shaken_as_matrix(*args, **kwargs):
        return perturb(original(*args, **kwargs))

    bound = [
        m
        for name, m in list(sys.modules.items())
        if name.startswith("anchordiv") and getattr(m, "as_matrix", None) is original
    ]
    for m in bound:
        m.as_matrix = shaken_as_matrix
    try:
        yield
    finally:
        for m in bound:
            m.as_matrix = original


@contextlib.contextmanager
def _threads(n: int):
    from threadpoolctl import threadpool_limits

    from anchordiv.threads import THREADS_ENV

    before = os.environ.get(THREADS_ENV)
    os.environ[THREADS_ENV] = str(n)
    try:
        with threadpool_limits(limits=n, user_api="blas"):
            yield
    finally:
        if before is None:
            del os.environ[THREADS_ENV]
        else:
            os.environ[THREADS_ENV] = before


def shaken(m: str | None):
    """A context manager applying the shake ``m`` (one of :data:`MODES`; None: nothing)."""
    if m is None:
        return contextlib.nullcontext()
    if m == "ulp":
        return _ulp()
    if m in MODES:
        return _threads(int(m[-1]))
    raise ValueError(f"shake: one of {', '.join(MODES)}, got {m!r}")
