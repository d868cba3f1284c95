"""Shared benchmark machinery: interleaved timing, synthetic embeddings, results files.

Timings on a shared machine are noisy, so every benchmark *interleaves* its candidates: each
round times every candidate once (in rotating order) and the figure reported for a candidate is
the median over rounds of ``time(candidate) / time(baseline)`` measured in the same round.
Results go to ``benchmarks/results/<name>.json`` and ``.md`` together with the exact command,
the JAX device and the machine's load, so a figure can always be reproduced.

The benchmarks are device-agnostic: JAX picks the default device (CPU here, a GPU where one is
installed); every timed call ends with ``jax.block_until_ready``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Callable

import jax
import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def parser(description: str) -> argparse.ArgumentParser:
    """Argument parser with the options every benchmark shares (``--quick``, ``--repeats``)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, finishes in well under a minute (a smoke run)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="interleaved rounds per measurement (default: 3 quick, 7 full)",
    )
    p.add_argument("--tag", default="", help="suffix for the results file names (e.g. 'gpu')")
    return p


def command() -> str:
    """The command line that produced this run (for the results file)."""
    script = os.path.relpath(os.path.abspath(sys.argv[0]), Path(__file__).resolve().parent.parent)
    return shlex.join([".venv/bin/python", script, *sys.argv[1:]])


def environment() -> dict:
    """Where the figures were measured: device, JAX version, cores, load, the versions of the
    stack (``versions``: python, numpy, scipy, jax, jaxlib, numpyro, arviz, anchordiv) and the
    thread settings (``threads``)."""
    import anchordiv
    from anchordiv.io import stack_versions

    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": str(jax.devices()[0]),
        "platform": jax.default_backend(),
        "jax": jax.__version__,
        "anchordiv": anchordiv.__version__,
        "cpu_count": os.cpu_count(),
        "load_average_at_end": load,
        "machine": platform.platform(),
        "versions": stack_versions(),
        # the thread settings the figures ran under (anchordiv.threads)
        "threads": {
            k: os.environ.get(k)
            for k in ("XLA_FLAGS", "ANCHORDIV_XLA_THREADS", "ANCHORDIV_BLAS_THREADS")
        },
    }


def block(value):
    """Wait for asynchronous JAX results (numpy values pass through)."""
    return jax.block_until_ready(value)


def time_once(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call, results awaited."""
    w0, c0 = time.perf_counter(), time.process_time()
    block(fn())
    return time.perf_counter() - w0, time.process_time() - c0


def interleaved(
    candidates: dict[str, Callable[[], object]], baseline: str, repeats: int, *, warmup: int = 1
) -> dict[str, dict]:
    """Time every candidate once per round, rotating the order; return per candidate the
    median wall seconds and the median (min, max) over rounds of its wall-time ratio to
    ``baseline`` in the same round, plus the median ratio of process CPU time (less sensitive
    to other processes competing for the cores than wall time)."""
    names = list(candidates)
    for name in names:
        for _ in range(warmup):
            block(candidates[name]())
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            w, c = time_once(candidates[name])
            wall[name].append(w)
            cpu[name].append(c)
    out = {}
    for name in names:
        ratio = np.asarray(wall[name]) / np.asarray(wall[baseline])
        cpu_ratio = np.asarray(cpu[name]) / np.maximum(np.asarray(cpu[baseline]), 1e-9)
        out[name] = {
            "median_s": float(np.median(wall[name])),
            "ratio": float(np.median(ratio)),
            "ratio_min": float(ratio.min()),
            "ratio_max": float(ratio.max()),
            "cpu_ratio": float(np.median(cpu_ratio)),
            "rounds": repeats,
        }
    return out


def unit_rows(
    rng: np.random.Generator,
    n: int,
    d: int,
    *,
    decay: float = 0.0,
    shift: float = 0.0,
    dtype=np.float32,
) -> np.ndarray:
    """``[n, d]`` unit vectors: Gaussian with per-axis scale ``i^(−decay)`` around a mean
    direction of length ``shift`` (an anisotropic cloud, like real text embeddings)."""
    scale = np.arange(1, d + 1, dtype=np.float64) ** (-decay)
    x = rng.standard_normal((n, d)) * scale
    x[:, 0] += shift * np.linalg.norm(scale)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(dtype)


def synthetic_anchors(rng: np.random.Generator, n: int, d: int, dtype=np.float32) -> np.ndarray:
    """``[n, d]`` synthetic text anchors with a decaying covariance spectrum (power law 1.4),
    so the latent models pick a subspace of moderate rank as with real anchors."""
    return unit_rows(rng, n, d, decay=0.7, shift=0.5, dtype=dtype)


def write_results(name: str, payload: dict, markdown: str, tag: str = "") -> Path:
    """Write ``results/<name>[-tag].json`` and ``.md`` (both carry the command)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-{tag}" if tag else name
    record = {"command": command(), "environment": environment(), **payload}
    (RESULTS / f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n")
    env = record["environment"]
    header = (
        f"# {name}\n\nCommand: `{record['command']}`\n\n"
        f"Measured {env['date_utc']} on `{env['device']}` (JAX {env['jax']}, "
        f"{env['cpu_count']} cores, load average at end {env['load_average_at_end']}).\n\n"
        "Versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()) + ".\n\n"
    )
    path = RESULTS / f"{stem}.md"
    path.write_text(header + markdown.rstrip() + "\n")
    return path


def table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """A markdown table from dict rows; ``columns`` = [(key, header)]."""
    lines = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for key, _ in columns:
            v = row.get(key, "")
            cells.append(f"{v:.3g}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
