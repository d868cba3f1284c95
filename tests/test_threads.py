"""BLAS thread cap around the batched linear algebra of posterior draws."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import anchordiv as ad
from anchordiv.checks import uncertainty
from anchordiv.threads import THREADS_ENV, blas_threads


def blas_threads_now() -> set[int]:
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


@pytest.fixture
def two_threads():
    """Allow 2 BLAS threads outside (tests otherwise run with OPENBLAS_NUM_THREADS=1)."""
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads_now() != {2}:
            pytest.skip("this BLAS cannot run 2 threads")
        yield


def test_inference_data_runs_under_the_cap(two_threads, monkeypatch):
    """Issue 11: batched eigh in inference_data() oversubscribed BLAS (127 s instead of 9 s)."""
    seen = []
    quantities = uncertainty.QUANTITIES["gaussian"]

    def spy(draws, ref):
        seen.append(blas_threads_now())
        return quantities(draws, ref)

    monkeypatch.setitem(uncertainty.QUANTITIES, "gaussian", spy)
    rng = np.random.default_rng(0)
    post = ad.adapt("gaussian", rng.normal(size=(60, 4)), rng.normal(size=(5, 4)), tau=5.0)
    post.inference_data(num_draws=4)
    assert seen and all(s == {1} for s in seen)   # posterior (and prior) quantities
    assert blas_threads_now() == {2}                # restored afterwards


def test_the_cap_is_configurable(two_threads, monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "0")
    with blas_threads():
        assert blas_threads_now() == {2}
    with blas_threads(limit=1):
        assert blas_threads_now() == {1}
