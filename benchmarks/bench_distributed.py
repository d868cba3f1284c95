"""Exact top-k over a sharded gallery: Dask workers against one process, per core and in total.

Writes a gallery of G unit vectors (default G = 4,000,000, d = 64, float16 on disk) as
clip-retrieval shards ``img_emb/img_emb_N.npy`` of 1,000,000 rows, fits a Gaussian model on
synthetic anchors and times top-10 of Q = 100 queries by four paths, interleaved round by round
(order rotated) so that the load of the shared machine hits them alike:

* ``single_2t``: this process, ``ad.top_k`` over each memory-mapped shard, results combined
  with ``ad.retrieval.merge_results`` (XLA on every core: 2 threads here);
* ``single_1c``: the same in a separate process pinned to core 0 (``sched_setaffinity``) with
  the workers' own thread settings (``WORKER_ENV``: one XLA/BLAS thread);
* ``dask_1w``: ``anchordiv.scale.dask.top_k`` on a LocalCluster of 1 worker (1 thread) pinned
  to core 0 (``local_cluster(1, pin=True)``), the per-core comparison with ``single_1c``;
* ``dask_2w``: the same on 2 workers (1 thread each, not pinned: the default);
* ``dask_2w_pinned``: 2 workers pinned to cores 0 and 1.

Reports per-worker efficiency = time(single_1c) / time(dask_1w) and the 2-worker ratio =
time(single_2t) / time(dask_2w) (and with ``dask_2w_pinned``), in wall time and in the CPU
seconds of the processes that compute (the client's own CPU is not counted for Dask), as
medians of per-round ratios with their range, and their minor page faults per item (fresh
``mmap``'d buffers faulted in per scan step: see ``anchordiv.heap``); the load average around every round, a task-size curve (rows per task → items/s on 2 workers), the
per-task overhead from that curve (a least-squares line of time against the number of tasks)
and its parts measured directly (scheduler round trip of an empty task, shipping the model and
query terms, opening the memory-mapped shard, the final merge), checks the Dask result against
``single_2t``, the peak memory of the 2 workers, and projects 10⁹ items on N workers from the
measured per-worker rate plus the per-task overhead.

    .venv/bin/python benchmarks/bench_distributed.py                   # 4M x 64
    .venv/bin/python benchmarks/bench_distributed.py --items 10000000 --tag 10M
    .venv/bin/python benchmarks/bench_distributed.py --quick           # 1M x 64, a smoke run
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_memory import PeakSampler
from common import parser, synthetic_anchors, table, unit_rows, write_results

SHARD = 1_000_000
TASK_ROWS = (1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20)


def write_shards(root: Path, n: int, d: int, chunk: int = 250_000) -> float:
    """clip-retrieval layout under ``root/img_emb``; returns the size in MB."""
    (root / "img_emb").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i, start in enumerate(range(0, n, SHARD)):
        rows = min(SHARD, n - start)
        out = np.lib.format.open_memmap(
            root / "img_emb" / f"img_emb_{i}.npy", mode="w+", dtype=np.float16, shape=(rows, d)
        )
        for s in range(0, rows, chunk):
            out[s : s + chunk] = unit_rows(
                rng, min(chunk, rows - s), d, decay=0.3, dtype=np.float16
            )
        out.flush()
        del out
    return sum(p.stat().st_size for p in (root / "img_emb").iterdir()) / 2**20


def start_sampler(dask_worker=None):
    dask_worker.anchordiv_peak = PeakSampler()
    dask_worker.anchordiv_peak.start()


def stop_sampler(dask_worker=None) -> dict:
    return dask_worker.anchordiv_peak.stop()


def scan_shards(model, queries, paths, k: int):
    """``ad.top_k`` over every shard, results combined with global indices."""
    import anchordiv as ad

    parts, offset = [], 0
    for path in paths:
        gallery = np.load(path, mmap_mode="r")
        idx, div = ad.top_k(model, queries, gallery, k, progress=False)
        parts.append((idx + offset, div))
        offset += len(gallery)
    return ad.retrieval.merge_results(parts, k)


def _pin(core: int) -> None:
    os.sched_setaffinity(0, {core})


def pinned_process(env: dict) -> concurrent.futures.ProcessPoolExecutor:
    """A one-process pool pinned to core 0, started (spawn) with ``env`` in its environment."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        pool = concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"), initializer=_pin, initargs=(0,)
        )
        pool.submit(os.getpid).result()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return pool


def cpu_seconds() -> np.ndarray:
    """``[user + system CPU seconds, minor page faults]`` of this process so far (all its
    threads)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return np.array([usage.ru_utime + usage.ru_stime, usage.ru_minflt], float)


def rounds(candidates: dict, cpu: dict, repeats: int) -> dict:
    """Wall seconds of every candidate per round (order rotated), the CPU seconds its compute
    processes used (``cpu[name]()`` reads their total), and the load average (1 min) before
    each round; ``faults``: the minor page faults of those processes."""
    names = list(candidates)
    for name in names:  # warm-up: compiles in every process
        candidates[name]()
    wall, used, load = {n: [] for n in names}, {n: [] for n in names}, []
    faults = {n: [] for n in names}
    for r in range(repeats):
        load.append(os.getloadavg()[0])
        for name in names[r % len(names) :] + names[: r % len(names)]:
            c0, t0 = cpu[name](), time.perf_counter()
            candidates[name]()
            wall[name].append(time.perf_counter() - t0)
            spent = cpu[name]() - c0
            used[name].append(float(spent[0]))
            faults[name].append(float(spent[1]))
    return {"wall": wall, "cpu": used, "faults": faults, "load": load}


def ratio(wall: dict, num: str, den: str) -> dict:
    """Median and range over rounds of wall[num] / wall[den] (> 1: ``den`` is faster)."""
    r = np.asarray(wall[num]) / np.asarray(wall[den])
    return {"median": float(np.median(r)), "min": float(r.min()), "max": float(r.max())}


def task_curve(add, client, model, queries, root, k: int, n: int, repeats: int) -> list[dict]:
    """Items/s of ``dask.top_k`` on ``client`` for every rows-per-task in :data:`TASK_ROWS`."""
    rows = []
    for block_rows in TASK_ROWS:
        if block_rows > SHARD:
            continue

        def run(block_rows=block_rows):
            return add.top_k(
                model, queries, root, k, client=client, block_rows=block_rows, progress=False
            )

        run()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        tasks = len(add.blocks(model, root, block_rows=block_rows)[0])
        rows.append(
            {
                "rows_per_task": block_rows,
                "tasks": tasks,
                "median_s": float(np.median(times)),
                "items_per_s": n / np.median(times),
                "load": os.getloadavg()[0],
            }
        )
    return rows


def overhead_fit(curve: list[dict], workers: int) -> dict:
    """Least squares ``time = a + b · tasks``: the per-task overhead is ``b · workers``."""
    tasks = np.array([r["tasks"] for r in curve], float)
    secs = np.array([r["median_s"] for r in curve])
    b, a = np.polyfit(tasks, secs, 1)
    return {"per_task_ms": float(b * workers * 1e3), "fixed_s": float(a)}


def _empty():
    return None


def _worker_parts(path: str, terms) -> dict:
    """Per-task fixed costs inside a worker, in ms: open the shard's memmap, move the query
    terms to the device."""
    import jax.numpy as jnp

    out = {}
    t0 = time.perf_counter()
    for _ in range(20):
        np.load(path, mmap_mode="r")
    out["open_memmap_ms"] = (time.perf_counter() - t0) / 20 * 1e3
    t0 = time.perf_counter()
    for _ in range(20):
        [jnp.asarray(t).block_until_ready() for t in terms]
    out["terms_to_device_ms"] = (time.perf_counter() - t0) / 20 * 1e3
    return out


def overhead_parts(add, dv, client, model, queries, path: str, k: int) -> dict:
    """The per-task overhead's parts, measured directly (ms)."""
    from anchordiv.retrieval import merge_results

    t0 = time.perf_counter()
    for _ in range(20):
        client.submit(_empty, pure=False).result()
    parts = {"round_trip_ms": (time.perf_counter() - t0) / 20 * 1e3}
    u, c = dv.padded_query_terms(model, queries)
    terms = (np.asarray(u), np.asarray(c))
    blob = pickle.dumps((model, terms))
    t0 = time.perf_counter()
    for _ in range(20):
        pickle.loads(blob)
    parts["ship_model_terms_ms"] = (time.perf_counter() - t0) / 20 * 1e3
    parts["model_terms_kB"] = len(blob) / 1024
    parts.update(client.submit(_worker_parts, path, terms, pure=False).result())
    rng = np.random.default_rng(0)
    pieces = [(rng.integers(0, 10**6, (len(u), k)), rng.random((len(u), k))) for _ in range(8)]
    t0 = time.perf_counter()
    for _ in range(20):
        merge_results(pieces, k)
    parts["merge_8_parts_ms"] = (time.perf_counter() - t0) / 20 * 1e3
    return parts


def projection(rate: float, per_task_ms: float, block_rows: int) -> list[dict]:
    """Hours for 10⁹ items on N workers: scan at the per-worker ``rate`` plus the per-task
    overhead of 10⁹ / block_rows tasks, shared by the workers."""
    tasks = 1e9 / block_rows
    return [
        {
            "workers": w,
            "hours": (1e9 / rate + tasks * per_task_ms / 1e3) / w / 3600,
            "tasks": int(tasks),
        }
        for w in (2, 16, 64, 256)
    ]


def main() -> None:
    import importlib

    import anchordiv as ad
    import anchordiv.scale.dask as add
    from distributed import Client

    dv = importlib.import_module("anchordiv.retrieval.divergence")
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=None, help="G (default 4,000,000; quick 1M)")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--k", type=int, default=10)
    p.add_argument(
        "--curve-repeats",
        type=int,
        default=None,
        help="timed runs per task size (default 2; quick 1)",
    )
    p.add_argument("--dir", default=None, help="where to write the shards (default: a temp dir)")
    args = p.parse_args()
    n = args.items or (1_000_000 if args.quick else 4_000_000)
    repeats = args.repeats or (2 if args.quick else 4)
    curve_repeats = args.curve_repeats or (1 if args.quick else 2)
    rng = np.random.default_rng(1)
    model = ad.fit("gaussian", synthetic_anchors(rng, 2000, args.dim), tau=100.0)
    queries = unit_rows(rng, args.queries, args.dim, decay=0.3)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        size_mb = write_shards(root, n, args.dim)
        paths = add.shard_paths(root)
        print(
            f"wrote {n:,} x {args.dim} float16 in {len(paths)} shards ({size_mb:.0f} MB)",
            flush=True,
        )
        pool = pinned_process(add.WORKER_ENV)
        with (
            add.local_cluster(1, pin=True) as one,
            Client(one) as c1,
            add.local_cluster(2) as two,
            Client(two) as c2,
            add.local_cluster(2, pin=True) as two_pinned,
            Client(two_pinned) as c2p,
            pool,
        ):
            c2.run(start_sampler)

            def scan(client):
                return add.top_k(model, queries, root, args.k, client=client, progress=False)

            candidates = {
                "single_2t": lambda: scan_shards(model, queries, paths, args.k),
                "single_1c": lambda: pool.submit(
                    scan_shards, model, queries, paths, args.k
                ).result(),
                "dask_1w": lambda: scan(c1),
                "dask_2w": lambda: scan(c2),
                "dask_2w_pinned": lambda: scan(c2p),
            }

            def workers_cpu(client):
                return sum(client.run(cpu_seconds).values())

            cpu = {
                "single_2t": cpu_seconds,
                "single_1c": lambda: pool.submit(cpu_seconds).result(),
                "dask_1w": lambda: workers_cpu(c1),
                "dask_2w": lambda: workers_cpu(c2),
                "dask_2w_pinned": lambda: workers_cpu(c2p),
            }
            timing = rounds(candidates, cpu, repeats)
            peaks = c2.run(stop_sampler)
            want = candidates["single_2t"]()
            exact = all(
                np.array_equal(candidates[name]()[0], want[0]) for name in ("single_1c", "dask_2w")
            )
            print("ratios measured; task-size curve", flush=True)
            curve = task_curve(add, c2, model, queries, root, args.k, n, curve_repeats)
            parts = overhead_parts(add, dv, c1, model, queries, paths[0], args.k)
    wall, used = timing["wall"], timing["cpu"]
    cpu_efficiency = ratio(used, "single_1c", "dask_1w")
    cpu_two = ratio(used, "single_2t", "dask_2w")
    efficiency = ratio(wall, "single_1c", "dask_1w")
    two_workers = ratio(wall, "single_2t", "dask_2w")
    two_pinned = ratio(wall, "single_2t", "dask_2w_pinned")
    one_vs_two = ratio(wall, "dask_1w", "dask_2w")
    fit = overhead_fit(curve, 2)
    rate_1w = n / np.median(wall["dask_1w"])
    proj = projection(rate_1w, fit["per_task_ms"], add.BLOCK_ROWS)
    rows = [
        {
            "path": name,
            "median_s": float(np.median(w)),
            "items_per_s": n / np.median(w),
            "range_s": f"{min(w):.2f}–{max(w):.2f}",
            "cpu_s": float(np.median(used[name])),
            "faults_per_item": float(np.median(timing["faults"][name])) / n,
        }
        for name, w in wall.items()
    ]
    md = table(
        rows,
        [
            ("path", "path"),
            ("median_s", "seconds"),
            ("items_per_s", "items/s"),
            ("range_s", "range s"),
            ("cpu_s", "CPU s of its compute processes"),
            ("faults_per_item", "page faults per item"),
        ],
    )
    md += (
        f"\n\n**Per-worker efficiency** (single_1c / dask_1w): {efficiency['median']:.2f} "
        f"(rounds {efficiency['min']:.2f}–{efficiency['max']:.2f}; target ≥ 0.9).  "
        f"**2 workers vs the 2-thread process** (single_2t / dask_2w): "
        f"{two_workers['median']:.2f} (rounds {two_workers['min']:.2f}–"
        f"{two_workers['max']:.2f}; target ≥ 0.85); pinned workers "
        f"{two_pinned['median']:.2f} ({two_pinned['min']:.2f}–{two_pinned['max']:.2f}).  "
        f"Speed-up of 2 workers over 1: {one_vs_two['median']:.2f}.  In CPU seconds "
        f"(less sensitive to other jobs' load): single_1c / dask_1w "
        f"{cpu_efficiency['median']:.2f}, single_2t / dask_2w (all workers) "
        f"{cpu_two['median']:.2f}.  Load average (1 min) before the rounds: "
        f"{', '.join(f'{v:.1f}' for v in timing['load'])} on {os.cpu_count()} cores.  "
        f"Results equal single_2t: {exact}.\n"
    )
    md += "\n\nTask-size curve (2 workers):\n\n" + table(
        curve,
        [
            ("rows_per_task", "rows per task"),
            ("tasks", "tasks"),
            ("median_s", "seconds"),
            ("items_per_s", "items/s"),
            ("load", "load (1 min)"),
        ],
    )
    md += (
        f"\n\nPer-task overhead (least squares of seconds against tasks, × 2 workers): "
        f"{fit['per_task_ms']:.1f} ms.  Its parts, measured directly (ms): "
        + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
        + ".\n"
    )
    md += "\n\nPeak memory per Dask worker (2-worker cluster):\n\n" + table(
        [{"worker": w, **v} for w, v in peaks.items()],
        [
            ("worker", "worker"),
            ("RssAnon_MB", "peak anonymous MB"),
            ("RssFile_MB", "peak file-backed MB"),
            ("VmHWM_MB", "peak RSS MB"),
        ],
    )
    md += "\n\nProjected time for 10⁹ items:\n\n" + table(
        proj, [("workers", "workers"), ("hours", "hours"), ("tasks", "tasks")]
    )
    md += (
        f"\n\nGallery: {n:,} × {args.dim} float16 in {len(paths)} memory-mapped `.npy` shards "
        f"({size_mb:.0f} MB, page-cached); {args.queries} queries, top-{args.k}, Gaussian "
        f"model; {repeats} interleaved rounds after one warm-up.  Projection: every worker "
        f"scans at the 1-worker rate measured here ({rate_1w:,.0f} items/s, one core, "
        f"d = {args.dim}) and pays the measured per-task overhead for tasks of "
        f"{add.BLOCK_ROWS:,} rows; reading from disk rather than page cache and stragglers "
        f"are not modelled.\n"
    )
    print(md)
    out = write_results(
        "bench_distributed",
        {
            "rows": rows,
            "wall": wall,
            "cpu": used,
            "faults": timing["faults"],
            "load": timing["load"],
            "cpu_efficiency": cpu_efficiency,
            "cpu_two_workers": cpu_two,
            "efficiency": efficiency,
            "two_workers": two_workers,
            "two_workers_pinned": two_pinned,
            "one_vs_two": one_vs_two,
            "curve": curve,
            "overhead_fit": fit,
            "overhead_parts": parts,
            "workers": peaks,
            "projection_1e9": proj,
            "items": n,
            "dim": args.dim,
            "queries": args.queries,
            "k": args.k,
            "gallery_MB": size_mb,
            "exact": exact,
            "quick": args.quick,
        },
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
