"""Broad → target adaptation at d = 768: NIW update + scorer compilation (goal: < 1 s).

Synthetic unit embeddings (``common.synthetic_anchors``): N broad anchors and n target anchors
(n = 5, 50, 500).  Timed, median over repeats (wall seconds):

* ``broad_moments``: mean and covariance of the broad anchors (once per broad set);
* ``niw_update``: the conjugate update given κ₀, ν₀ plus the posterior-mean summary and its
  Cholesky factor — everything after the broad moments that produces the scoring model;
* ``empirical_bayes``: choosing κ₀ and ν₀ by the closed-form marginal likelihood;
* ``adapt_total``: ``ad.adapt("gaussian", broad, targets, kappa0=…, nu0=…).point()`` end to end
  (recomputes the broad moments);
* ``scorer_compile``: first ``ad.divergence`` call after ``jax.clear_caches()`` minus a warm
  call (Q = 256 queries, G = 4096 gallery items);
* ``retraced``: whether scoring a second adapted model (new targets, same shapes) traced again.

The goal figure is ``niw_update + scorer_compile``.

    .venv/bin/python benchmarks/bench_adapt.py            # about a minute
    .venv/bin/python benchmarks/bench_adapt.py --quick    # d = 128 smoke run
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_adapt.py --tag openblas1
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np

import anchordiv as ad
from anchordiv.adaptation import cov_factor
from anchordiv.anchors.gaussian import moments
from anchordiv.adaptation.families.gaussian import NIW, empirical_bayes
from common import parser, synthetic_anchors, table, unit_rows, write_results

GOAL_S = 1.0


def scorer_compiles(fn) -> int:
    """XLA compilations of the divergence scorer while ``fn`` runs (``jax.log_compiles``)."""
    import logging

    found = []
    handler = logging.Handler()
    handler.emit = lambda r: found.append(r.getMessage())
    logger = logging.getLogger("jax")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles(True):
            fn()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return sum("Finished XLA compilation" in m and "_divergence_impl" in m for m in found)


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def niw_update(mu0, cov, targets, kappa0, nu0, tau):
    """Conjugate update → posterior-mean Gaussian model (what adapt does after the moments)."""
    post = NIW.from_scale(mu0, cov, kappa0, nu0).update(targets)
    m = post.mean()
    return ad.Gaussian(
        m["mu"].astype(np.float32), cov_factor(m["Sigma"]).astype(np.float32), np.float32(tau)
    )


def compile_time(model, x, y) -> tuple[float, float]:
    """(first call after clearing JAX caches, warm call) of ad.divergence, seconds."""
    jax.clear_caches()
    t0 = time.perf_counter()
    jax.block_until_ready(ad.divergence(model, x, y))
    first = time.perf_counter() - t0
    return first, median_time(lambda: ad.divergence(model, x, y), 3)


def measure(d: int, n_broad: int, n_targets: int, repeats: int, tau: float = 20.0) -> dict:
    rng = np.random.default_rng(n_targets)
    broad = synthetic_anchors(rng, n_broad, d)
    targets = unit_rows(rng, n_targets, d, decay=0.5, shift=1.0)
    x, y = unit_rows(rng, 256, d), unit_rows(rng, 4096, d)
    mu0, cov = moments(broad, 1e-3)
    kappa0, nu0 = 10.0, d + 11.0
    row = {
        "d": d,
        "n_broad": n_broad,
        "n_targets": n_targets,
        "broad_moments": median_time(lambda: moments(broad, 1e-3), repeats),
        "niw_update": median_time(lambda: niw_update(mu0, cov, targets, kappa0, nu0, tau), repeats),
        "empirical_bayes": median_time(lambda: empirical_bayes(mu0, cov, targets), repeats),
        "adapt_total": median_time(
            lambda: ad.adapt("gaussian", broad, targets, tau=tau, kappa0=kappa0, nu0=nu0).point(),
            repeats,
        ),
    }
    model = niw_update(mu0, cov, targets, kappa0, nu0, tau)
    first, warm = compile_time(model, x, y)
    row.update(scorer_first_call=first, scorer_warm_call=warm, scorer_compile=first - warm)
    other = niw_update(mu0, cov, unit_rows(rng, n_targets, d, shift=1.0), kappa0, nu0, tau)
    row["retraced"] = scorer_compiles(lambda: jax.block_until_ready(ad.divergence(other, x, y))) > 0
    row["update_plus_compile"] = row["niw_update"] + row["scorer_compile"]
    row["goal_met"] = row["update_plus_compile"] < GOAL_S
    _, _, row["eb_log_marginal"] = empirical_bayes(mu0, cov, targets)
    return row


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    d, n_broad = (128, 1000) if args.quick else (768, 5000)
    repeats = args.repeats or (3 if args.quick else 5)
    rows = [measure(d, n_broad, n, repeats) for n in (5, 50, 500)]
    cols = [
        ("d", "d"),
        ("n_targets", "targets"),
        ("broad_moments", "broad moments s"),
        ("niw_update", "NIW update s"),
        ("scorer_compile", "scorer compile s"),
        ("update_plus_compile", "update + compile s"),
        ("goal_met", f"< {GOAL_S} s"),
        ("empirical_bayes", "EB s"),
        ("adapt_total", "adapt() total s"),
        ("retraced", "retraced"),
    ]
    md = table(rows, cols)
    print(md)
    threads = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    md += (
        f"\n\nBLAS thread settings: {threads} (on a loaded 2-core machine multithreaded "
        f"OpenBLAS factorisations slow down ~15×; single-threaded BLAS avoids that).\n"
    )
    path = write_results(
        "bench_adapt" + ("-quick" if args.quick else ""),
        {"rows": rows, "blas_threads": threads},
        md,
        args.tag,
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
