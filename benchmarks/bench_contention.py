"""The default adaptation path alone and beside two busy processes (issue 25).

At d = 384 with broad anchors [4000, 384] and target anchors [n, 384], n = 2 … 10,000, each
call is timed first on an otherwise idle machine ("alone"), then beside ``--busy`` processes
(default 2) that stand for another scientific job: each loops NumPy matrix products
(1000 × 1000, float64) on its *default* BLAS threads, so the machine's cores are oversubscribed
the way a notebook kernel or a second study oversubscribes them (pure-Python busy loops do
not reproduce OpenBLAS's collapse: they leave its spinning threads a core).

Calls:

* ``default adapt``: ``ad.adapt("gaussian", broad, targets, tau=20)`` — the held-out recipe
  chooses the strengths;
* ``fixed adapt``: the same with ``kappa0=5, nu0=390`` (no recipe);
* ``recipe``: ``recipe.gaussian_strengths(broad, targets)`` on its own;
* ``exact update``: ``prior.update(targets)`` of a fixed NIW prior object;
* ``curve cell``: one cell of ``ad.adaptation_curve`` with the default models (target-only
  softmax and Gaussian, the broad posterior, its isotropic control, cosine, inversion) on
  100 queries × 2,000 gallery items;
* ``top_k``: ``ad.top_k`` of a Gaussian model, 100 queries × 100,000 gallery items, k = 10
  (independent of n: measured once).

Reported per call and n: median seconds per call alone and loaded (5 rounds each, alternating:
the busy processes are paused with SIGSTOP for an alone round and resumed for a loaded one, so
drift of the machine falls on both; a call shorter than :data:`ROUND_S` repeats within a round,
as ``timeit`` does), the ratio loaded / alone, and the ratio of the default to the
fixed-strength adapt (alone and loaded), all measured in one run.

    .venv/bin/python benchmarks/bench_contention.py            # ~10 min on 2 cores
    .venv/bin/python benchmarks/bench_contention.py --quick    # n = 2, 120, 1000; 1 round
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import warnings

import numpy as np

import anchordiv as ad
from anchordiv.adaptation import statistics as recipe
from anchordiv.evaluation import curves
from common import block, parser, table, unit_rows, write_results

D, N_BROAD, TAU = 384, 4000, 20.0
NS = (2, 10, 120, 1000, 10000)
QUICK_NS = (2, 120, 1000)


def busy_loop(seed: int) -> None:  # another scientific job: BLAS GEMMs on default threads
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(1000, 1000))
    while True:
        a = np.tanh(a @ a.T / 1000.0)


#: a round of a millisecond call repeats it until the round lasts this long (as timeit does):
#: one scheduler time slice beside the busy processes is several milliseconds
ROUND_S = 1.0


class Busy:
    """The busy processes, started once and then paused (SIGSTOP) for each alone round and
    resumed (SIGCONT) for each loaded one, so that a call's alone and loaded rounds alternate
    and drift of the machine (clock, caches, other tenants) falls on both alike."""

    def __init__(self, count: int):
        ctx = mp.get_context("spawn")
        self.procs = [ctx.Process(target=busy_loop, args=(i,), daemon=True) for i in range(count)]
        for proc in self.procs:
            proc.start()
        time.sleep(3.0)  # let them reach their loops
        self.pause()

    def _signal(self, sig) -> None:
        for proc in self.procs:
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, sig)

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)
        time.sleep(SETTLE_S)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        time.sleep(SETTLE_S)

    def close(self) -> None:
        self.resume()
        for proc in self.procs:
            proc.terminate()
            proc.join(5)


#: seconds for the machine to settle after the busy processes are paused or resumed
SETTLE_S = 0.2


def paired_times(fn, repeats: int, busy: Busy) -> tuple[float, float]:
    """``(alone, loaded)``: medians over ``repeats`` alternating rounds of the seconds per call;
    a call that takes less than :data:`ROUND_S` runs several times per round (the count fixed
    from a warm call alone, as timeit does)."""
    block(fn())  # warm-up (compilation, caches)
    t0 = time.perf_counter()
    block(fn())  # a warm call: how many fit in a round
    per_round = max(1, min(100, int(np.ceil(ROUND_S / max(time.perf_counter() - t0, 1e-6)))))

    def one_round() -> float:
        t0 = time.perf_counter()
        for _ in range(per_round):
            block(fn())
        return (time.perf_counter() - t0) / per_round

    alone, loaded = [], []
    for _ in range(repeats):
        alone.append(one_round())
        busy.resume()
        loaded.append(one_round())
        busy.pause()
    return float(np.median(alone)), float(np.median(loaded))


def calls(n: int, rng) -> dict:
    broad = unit_rows(rng, N_BROAD, D, decay=0.7, shift=0.4)
    targets = unit_rows(rng, n, D, decay=0.7, shift=0.6)
    prior = ad.NIWPrior.from_anchors(broad, kappa0=5.0, nu0=D + 6.0)
    queries, gallery = unit_rows(rng, 100, D, shift=0.5), unit_rows(rng, 2000, D, shift=0.5)
    relevance = rng.random((100, 2000)) < 0.1
    models = curves._resolve(curves.DEFAULT_MODELS)

    def cell():
        curves._POSTERIORS.clear()  # a fresh subset: nothing remembered
        return curves._evaluate_cell(
            models, broad, targets, TAU, queries, gallery, relevance, None, None
        )[0]

    return {
        "default adapt": lambda: ad.adapt("gaussian", broad, targets, tau=TAU),
        "fixed adapt": lambda: ad.adapt(
            "gaussian", broad, targets, tau=TAU, kappa0=5.0, nu0=D + 6.0
        ),
        "recipe": lambda: recipe.gaussian_strengths(broad, targets),
        "exact update": lambda: prior.update(targets, tau=TAU),
        "curve cell": cell,
    }


def top_k_call(rng):
    model = ad.fit("gaussian", unit_rows(rng, 200, D, decay=0.7, shift=0.6), tau=TAU)
    queries, gallery = unit_rows(rng, 100, D), unit_rows(rng, 100_000, D)
    return lambda: ad.top_k(model, queries, gallery, k=10, progress=False)


def measure(ns, repeats: int, busy: Busy) -> tuple[dict, dict]:
    alone, loaded = {}, {}
    named = [((name, n), fn) for n in ns for name, fn in calls(n, np.random.default_rng(n)).items()]
    for key, fn in named + [(("top_k", 0), top_k_call(np.random.default_rng(0)))]:
        alone[key], loaded[key] = paired_times(fn, repeats, busy)
        name, n = key
        print(
            f"  n={n:>6} {name:<14} alone {alone[key]:.4f} s, loaded {loaded[key]:.4f} s "
            f"({loaded[key] / alone[key]:.2f}x)",
            flush=True,
        )
    return alone, loaded


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--busy", type=int, default=2, help="busy processes beside (default 2)")
    p.add_argument(
        "--ns",
        default=None,
        help="comma-separated target counts (default "
        f"{','.join(map(str, NS))}; --quick: {','.join(map(str, QUICK_NS))})",
    )
    args = p.parse_args()
    ns = tuple(int(v) for v in args.ns.split(",")) if args.ns else QUICK_NS if args.quick else NS
    repeats = args.repeats or (1 if args.quick else 5)
    warnings.simplefilter("ignore")
    busy = Busy(args.busy)
    try:
        alone, loaded = measure(ns, repeats, busy)
    finally:
        busy.close()
    rows = []
    for (name, n), s in alone.items():
        fixed = (alone[("fixed adapt", n)], loaded[("fixed adapt", n)]) if n else (None, None)
        rows.append(
            {
                "call": name,
                "n": n or "-",
                "alone_s": s,
                "loaded_s": loaded[(name, n)],
                "loaded_over_alone": loaded[(name, n)] / s,
                **(
                    {
                        "over_fixed_alone": s / fixed[0],
                        "over_fixed_loaded": loaded[(name, n)] / fixed[1],
                    }
                    if n
                    else {}
                ),
            }
        )
    cols = [
        ("call", "call"),
        ("n", "n"),
        ("alone_s", "alone (s)"),
        ("loaded_s", f"beside {args.busy} busy (s)"),
        ("loaded_over_alone", "loaded / alone"),
        ("over_fixed_alone", "÷ fixed adapt, alone"),
        ("over_fixed_loaded", "÷ fixed adapt, loaded"),
    ]
    md = (
        f"d = {D}, broad [{N_BROAD}, {D}], {repeats} alone and {repeats} loaded rounds after a "
        f"warm-up, alternating (the busy processes paused and resumed between rounds); busy "
        f"processes: {args.busy} × NumPy 1000 × 1000 GEMM loops on default BLAS threads.\n\n"
        + table(rows, cols)
    )
    print(md)
    path = write_results(
        "bench_contention",
        {"rows": rows, "busy": args.busy, "repeats": repeats},
        md,
        tag=args.tag or ("quick" if args.quick or args.ns else ""),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
