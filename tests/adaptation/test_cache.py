"""The broad-statistics cache and its identity memo for arrays the library froze itself."""

import hashlib

import numpy as np
import pytest

from anchordiv.adaptation import cache


def sha1(a):
    return hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).hexdigest()


def test_frozen_arrays_are_private_read_only_copies_with_a_remembered_digest():
    a = np.arange(12.0).reshape(3, 4)
    f = cache.frozen(a)
    assert f is not a and not f.flags.writeable
    a[0, 0] = 99.0  # the caller's array may change ...
    assert cache.digest(f) == sha1(np.arange(12.0).reshape(3, 4))  # ... the copy does not
    with pytest.raises(ValueError):
        f[0, 0] = 1.0


def test_derived_values_are_computed_once_per_frozen_array_and_always_for_others():
    calls = []

    def chol(m):
        calls.append(1)
        return np.linalg.cholesky(m)

    m = np.eye(3) * 2.0
    f = cache.frozen(m)
    first = cache.derived(chol, f)
    assert cache.derived(chol, f) is first and len(calls) == 1
    np.testing.assert_array_equal(first, np.linalg.cholesky(m))
    cache.derived(chol, m)  # a user's (writable) array: no memo
    cache.derived(chol, m)
    assert len(calls) == 3


def test_cached_results_are_frozen_and_memoised_by_identity():
    broad = np.random.default_rng(0).normal(size=(20, 3))
    mu, cov = cache.cached(lambda b: (b.mean(0), np.cov(b.T)), broad)
    assert not cov.flags.writeable
    calls = []
    cache.derived(lambda c: calls.append(1) or np.linalg.cholesky(c), cov)
    cache.derived(lambda c: calls.append(1) or np.linalg.cholesky(c), cov)  # new fn: computed
    assert len(calls) == 2


def test_frozen_is_idempotent_and_adapt_computes_the_scatter_once(monkeypatch):
    """``adapt`` freezes its targets: the recipe (n > d), the exact update and the evidence
    share one scatter; freezing a frozen array returns it."""
    import anchordiv as ad
    from anchordiv.adaptation import statistics

    a = cache.frozen(np.ones((3, 2)))
    assert cache.frozen(a) is a
    calls = []
    real = statistics._scatter
    monkeypatch.setattr(statistics, "_scatter", lambda t: calls.append(t.shape) or real(t))
    rng = np.random.default_rng(0)
    ad.adapt("gaussian", rng.normal(size=(30, 4)), rng.normal(size=(9, 4)), tau=10.0)
    assert calls == [(9, 4)]


def test_a_frozen_array_that_outlives_the_module_globals_is_forgotten_quietly(monkeypatch):
    """At interpreter exit a frozen array can die after module teardown has set the cache's
    globals to None (arrays held by JAX's caches after NUTS/SVI): its weak-reference callback
    still removes it from the table it was registered in, with no "Exception ignored"."""
    import gc

    table = cache._FROZEN
    a = cache.frozen(np.ones(3))
    key = id(a)
    monkeypatch.setattr(cache, "_FROZEN", None)  # what teardown leaves
    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    del a
    gc.collect()
    assert not unraisable and key not in table


@pytest.mark.slow
def test_a_script_that_ran_nuts_and_svi_exits_quietly(tmp_path):
    """A tiny NUTS and SVI run in a fresh interpreter (compilation: ~10 s): nothing on stderr
    says an exception was ignored at exit."""
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(
        "import numpy as np\n"
        "import anchordiv as ad\n"
        "rng = np.random.default_rng(0)\n"
        "b = rng.normal(size=(30, 3))\n"
        "b /= np.linalg.norm(b, axis=1, keepdims=True)\n"
        "held = []\n"
        "for m, o in (('nuts', dict(num_samples=10, num_warmup=10)), ('svi', dict(num_steps=10))):\n"
        "    held.append(ad.adapt('gaussian', b, b[:4], tau=20.0, method=m, progress=False, **o))\n"
        "held.append(held)  # a cycle: the posteriors' frozen arrays die at exit\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr
    assert "Exception ignored" not in run.stderr, run.stderr


def test_checked_arrays_are_frozen_and_remembered_as_checked():
    a = np.arange(12.0).reshape(3, 4)
    c = cache.checked(a)
    assert c is not a and not c.flags.writeable and cache.is_checked(c)
    assert not cache.is_checked(a) and not cache.is_checked(cache.frozen(a))
    assert cache.checked(c) is c  # checked already: the same array


def test_as_anchors_checks_only_the_shape_of_a_checked_array():
    from anchordiv.errors import AnchorDivError

    bad = np.array([[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(AnchorDivError, match="NaN"):
        cache.as_anchors("targets", bad)
    c = cache.checked(np.eye(2))
    assert cache.as_anchors("targets", c, dim=2, min_rows=2) is c
    with pytest.raises(AnchorDivError, match="dimension mismatch"):
        cache.as_anchors("targets", c, dim=3)
    with pytest.raises(AnchorDivError, match="at least 3"):
        cache.as_anchors("targets", c, min_rows=3)
