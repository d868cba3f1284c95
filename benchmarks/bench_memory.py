"""Peak memory of top-k over a 1,000,000-item memory-mapped gallery.

Writes a ``[G, d]`` float32 ``.npy`` (default G = 1,000,000, d = 384: 1.5 GB) in chunks, then
measures three fresh subprocesses that each import anchordiv, fit a Gaussian model and load the
queries:

* ``base``: stops there (the floor: Python + JAX + the model);
* ``top_k``: ``ad.top_k(model, queries, memmap, k)`` streaming the gallery;
* ``index``: ``GalleryIndex(model, memmap, store=keys.npy)`` then ``index.top_k`` (keys on
  disk, streamed back).

A sampling thread in each child reads ``/proc/self/status`` every 10 ms: the peak of the
process's anonymous memory (``RssAnon``: heap and device buffers — what the streaming must
bound) and of its file-backed resident pages (``RssFile``: pages of the memory-mapped files,
reclaimable page cache), plus the kernel's ``VmHWM`` (peak total RSS).  Linux only.

    .venv/bin/python benchmarks/bench_memory.py                # 1M items
    .venv/bin/python benchmarks/bench_memory.py --quick        # 100k items
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from common import parser, table, unit_rows, write_results

FIELDS = ("RssAnon", "RssFile", "VmHWM")


def status_kb() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in FIELDS:
                out[key] = int(value.split()[0])
    return out


class PeakSampler(threading.Thread):
    """Background thread keeping the maximum of every ``FIELDS`` entry (kB)."""

    def __init__(self, period: float = 0.01):
        super().__init__(daemon=True)
        self.period, self.peak, self.done = period, status_kb(), threading.Event()

    def run(self):
        while not self.done.is_set():
            for key, value in status_kb().items():
                self.peak[key] = max(self.peak[key], value)
            time.sleep(self.period)

    def stop(self) -> dict:
        self.done.set()
        self.join()
        for key, value in status_kb().items():
            self.peak[key] = max(self.peak[key], value)
        return {f"{k}_MB": v / 1024 for k, v in self.peak.items()}


def child(mode: str, gallery_path: str, n_queries: int, k: int) -> None:
    """One measured process (prints a JSON line)."""
    sampler = PeakSampler()
    sampler.start()
    import anchordiv as ad

    gallery = np.load(gallery_path, mmap_mode="r")
    rng = np.random.default_rng(1)
    d = gallery.shape[1]
    model = ad.fit("gaussian", unit_rows(rng, 2000, d, decay=0.7, shift=0.5), tau=100.0)
    queries = unit_rows(rng, n_queries, d, decay=0.3)
    t0 = time.perf_counter()
    if mode == "top_k":
        ad.top_k(model, queries, gallery, k, progress=True)
    elif mode == "index":
        keys = Path(gallery_path).with_name("keys.npy")
        index = ad.GalleryIndex(model, gallery, store=keys, progress=True)
        index.top_k(queries, k, progress=True)
    seconds = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "seconds": seconds, **sampler.stop()}))


def write_gallery(path: Path, n: int, d: int, chunk: int = 50_000) -> None:
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    rng = np.random.default_rng(0)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        out[start:stop] = unit_rows(rng, stop - start, d, decay=0.3)
    out.flush()
    del out


def measure(mode: str, path: Path, n_queries: int, k: int) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, str(path), str(n_queries), str(k)]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=None, help="G (default 1,000,000; quick 100,000)")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--dir", default=None, help="where to write the gallery (default: a temp dir)")
    args = p.parse_args()
    n = args.items or (100_000 if args.quick else 1_000_000)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "gallery.npy"
        t0 = time.perf_counter()
        write_gallery(path, n, args.dim)
        print(
            f"wrote {n} x {args.dim} float32 gallery ({path.stat().st_size / 2**20:.0f} MB) "
            f"in {time.perf_counter() - t0:.1f}s",
            flush=True,
        )
        rows = [measure(m, path, args.queries, args.k) for m in ("base", "top_k", "index")]
    size_mb = n * args.dim * 4 / 2**20
    base = rows[0]["RssAnon_MB"]
    for r in rows:
        r["anon_over_base_MB"] = r["RssAnon_MB"] - base
        print(json.dumps(r), flush=True)
    md = table(
        rows,
        [
            ("mode", "process"),
            ("seconds", "seconds"),
            ("RssAnon_MB", "peak anonymous MB"),
            ("anon_over_base_MB", "anonymous MB over base"),
            ("RssFile_MB", "peak file-backed MB"),
            ("VmHWM_MB", "peak RSS MB"),
        ],
    )
    md += (
        f"\n\nGallery: {n:,} × {args.dim} float32 memory-mapped `.npy` ({size_mb:.0f} MB); "
        f"{args.queries} queries, top-{args.k}, Gaussian model, default chunking.  "
        "'base' imports anchordiv, fits the model and opens the memmap without scanning.  "
        "Anonymous memory is what the streaming bounds (O(Q·(k + chunk)) plus one chunk of "
        "gallery rows); file-backed pages are the memory-mapped gallery/keys held in the "
        "page cache, which the kernel reclaims under pressure.\n"
    )
    print(md)
    path = write_results(
        "bench_memory",
        {
            "rows": rows,
            "items": n,
            "dim": args.dim,
            "gallery_MB": size_mb,
            "queries": args.queries,
            "k": args.k,
            "quick": args.quick,
        },
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
