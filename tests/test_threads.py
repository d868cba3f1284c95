"""BLAS thread cap around the batched linear algebra of posterior draws."""

import dataclasses

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import anchordiv as ad
import os

from anchordiv import threads
from anchordiv.threads import THREADS_ENV, XLA_THREADS_ENV as XLA_ENV, blas_threads
from helpers import blas_scope_entries, broad_and_targets


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
    """The family's quantities (batched eigh) in inference_data() run under the BLAS cap."""
    seen = []
    quantities = ad.NIWPrior.hooks.quantities

    def spy(draws, ref):
        seen.append(blas_threads_now())
        return quantities(draws, ref)

    hooks = ad.NIWPrior.hooks
    monkeypatch.setattr(ad.NIWPrior, "hooks", dataclasses.replace(hooks, quantities=spy))
    rng = np.random.default_rng(0)
    post = ad.adapt("gaussian", rng.normal(size=(60, 4)), rng.normal(size=(5, 4)), tau=5.0)
    ad.inference_data(post, num_draws=4)
    assert seen and all(s == {1} for s in seen)  # posterior (and prior) quantities
    assert blas_threads_now() == {2}  # restored afterwards


def test_the_cap_is_configurable(two_threads, monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "0")
    with blas_threads():
        assert blas_threads_now() == {2}
    with blas_threads(limit=1):
        assert blas_threads_now() == {1}


def _adapt_problem():
    return broad_and_targets(0, n_broad=80, n=12, d=6, spread=None, shift=0.0)


def test_the_recipe_and_the_exact_update_run_under_the_cap(two_threads, monkeypatch):
    """Issue 25: the recipe's eigendecompositions and the conjugate update run on one BLAS
    thread however many the caller allows, and the caller's setting comes back afterwards."""
    from anchordiv.adaptation import statistics as recipe
    from anchordiv.adaptation.families import gaussian as niw

    seen = {"recipe": [], "exact": []}
    scores, update = recipe.fold_scores, niw.NIW.update

    def spy_scores(*args):
        seen["recipe"].append(blas_threads_now())
        return scores(*args)

    def spy_update(self, targets):
        seen["exact"].append(blas_threads_now())
        return update(self, targets)

    monkeypatch.setattr(recipe, "fold_scores", spy_scores)
    monkeypatch.setattr(niw.NIW, "update", spy_update)
    broad, targets = _adapt_problem()
    ad.adapt("gaussian", broad, targets, tau=5.0)
    assert seen["recipe"] and all(s == {1} for s in seen["recipe"])
    assert seen["exact"] and all(s == {1} for s in seen["exact"])
    assert blas_threads_now() == {2}


def test_a_curve_cell_runs_under_the_cap_on_its_own(two_threads, monkeypatch):
    """Issue 25: a curve cell called outside ``adaptation_curve`` (a Dask worker runs it so, and
    so did bench_contention) builds its models on one BLAS thread: outside the cap its 32
    Cholesky factorisations took 2.3 s beside two busy processes against 0.05 s alone."""
    from anchordiv.evaluation import curves

    seen, cholesky = [], np.linalg.cholesky

    def spy(a, *args, **kwargs):
        seen.append(blas_threads_now())
        return cholesky(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "cholesky", spy)
    broad, targets = _adapt_problem()
    rng = np.random.default_rng(1)
    queries, gallery = rng.normal(size=(4, 6)), rng.normal(size=(30, 6))
    models = curves._resolve(curves.DEFAULT_MODELS)
    curves._evaluate_cell(
        models, broad, targets, 5.0, queries, gallery, rng.random((4, 30)) < 0.3, None, None
    )
    assert seen and all(s == {1} for s in seen)
    assert blas_threads_now() == {2}


def test_results_do_not_depend_on_the_cap(two_threads, monkeypatch):
    broad, targets = _adapt_problem()
    capped = ad.adapt("gaussian", broad, targets, tau=5.0)
    monkeypatch.setenv(THREADS_ENV, "0")
    free = ad.adapt("gaussian", broad, targets, tau=5.0)
    assert capped.info["kappa0"] == free.info["kappa0"]
    np.testing.assert_allclose(
        np.asarray(capped.point("mean").factor),
        np.asarray(free.point("mean").factor),
        rtol=1e-12,
        atol=1e-14,
    )


def test_nested_entry_points_reuse_the_cap():
    from anchordiv import threads

    with blas_threads(limit=1):
        assert threads.current_limit() == 1
        with blas_threads(limit=1):
            assert threads.current_limit() == 1
    assert threads.current_limit() is None


def test_warnings_point_at_the_callers_line_through_the_policy():
    """The policy's decorators add frames; library warnings still name the user's line."""
    rng = np.random.default_rng(1)
    with pytest.warns(ad.AnchorDivWarning, match="not unit-norm") as record:
        ad.adapt(
            "gaussian",
            rng.normal(size=(40, 4)),
            3 * rng.normal(size=(5, 4)),
            tau=5.0,
            kappa0=2.0,
            nu0=8.0,
        )
    assert record[0].filename == __file__


def test_import_sets_one_xla_thread_unless_the_user_chose(monkeypatch):
    """``import anchordiv`` gives JAX's CPU backend one intra-op thread (XLA's own pool waits
    for its slowest thread beside busy processes) — unless ``$XLA_FLAGS`` sets threads,
    ``$ANCHORDIV_XLA_THREADS=0``, or JAX already computed something."""
    import subprocess
    import sys

    from jax._src import xla_bridge

    code = "import os\n{pre}\nimport anchordiv\nprint(os.environ.get('XLA_FLAGS', ''))"
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", XLA_ENV)}

    def imported(pre=""):  # a fresh interpreter: the real import path
        run = [sys.executable, "-c", code.format(pre=pre)]
        return subprocess.run(run, env=base, capture_output=True, text=True, check=True)

    assert imported().stdout.strip() == (
        "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    assert imported("import jax.numpy as jnp; jnp.ones(1) + 1").stdout.strip() == ""

    def configured(**env):  # in this process, as if no backend existed yet
        monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: False)
        monkeypatch.delenv("XLA_FLAGS", raising=False)
        monkeypatch.delenv(XLA_ENV, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        added = threads.configure_xla()
        return added, os.environ.get("XLA_FLAGS", "")

    assert configured(ANCHORDIV_XLA_THREADS="4") == (
        "intra_op_parallelism_threads=4",
        "intra_op_parallelism_threads=4",
    )
    assert configured(ANCHORDIV_XLA_THREADS="0") == (None, "")
    mine = "--xla_cpu_multi_thread_eigen=true"
    assert configured(XLA_FLAGS=mine) == (None, mine)


def test_a_thread_count_that_is_not_a_number_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("ANCHORDIV_BLAS_THREADS", "two")
    with pytest.raises(ValueError, match=r"\$ANCHORDIV_BLAS_THREADS: a thread count"):
        threads.blas_thread_limit()


def test_a_decorated_function_inside_a_scope_runs_straight_under_it(monkeypatch):
    """Nested entry points enter no scope of their own: one controller entry per outer call."""
    entered, depth = blas_scope_entries(monkeypatch), []

    @threads.limited_blas
    def inner():
        depth.append(threads.current_limit())

    @threads.limited_blas
    def outer():
        inner()
        inner()

    outer()
    assert entered == [1] and depth == [1, 1]
    assert outer.__wrapped__.__name__ == "outer" and threads.current_limit() is None
    inner()  # outside a scope: enters its own
    assert entered == [1, 1]
