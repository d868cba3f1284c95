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
