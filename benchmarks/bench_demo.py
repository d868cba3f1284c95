"""The main job (``anchordiv demo``, the README's first command): wall time cold and warm.

Cold: a fresh, empty anchordiv cache (``$ANCHORDIV_CACHE`` set to a new directory), so the run
encodes every text with MiniLM and compiles every JAX program; the report's own count of what
was encoded gives MiniLM's throughput (texts/s, the encoding seconds inside the run).  Warm: the
same command again on that cache, ``--repeats`` times (default 2; the median is the figure; the
target is 120 s alone on 2 idle cores).  Each run's report is checked for every section
(``main_job.check_report``, as CI does) and its log's warnings are counted (none expected).  ``--warm-only`` reuses the cache directory given by
``--cache`` (a cold run made before) and times warm runs only.

    .venv/bin/python benchmarks/bench_demo.py
    .venv/bin/python benchmarks/bench_demo.py --small --tag small      # the test suite's size

``--note`` records how the machine was loaded (e.g. "beside three other jobs"): timings taken
beside load are recorded as such, never passed off as idle-machine figures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import parser, table, write_results

from anchordiv.app.studies.main_job import check_report

#: lines of a run's output kept with its result (a failing run says what failed)
TAIL_LINES = 15


def run_demo(cache: Path, out: Path, small: bool) -> dict:
    """One ``anchordiv demo`` in a subprocess on ``cache``: wall seconds, exit status, the
    report's run record (``results.json``: encoded texts and seconds) and what it lacks."""
    cmd = [str(Path(sys.executable).with_name("anchordiv")), "demo", "-o", str(out), "--overwrite"]
    cmd += ["--small"] if small else []
    env = {**os.environ, "ANCHORDIV_CACHE": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    wall = time.perf_counter() - t0
    results = out / "results.json"
    run = json.loads(results.read_text()).get("run", {}) if proc.returncode == 0 else {}
    return {
        "wall_s": wall,
        "rc": proc.returncode,
        "encoded": run.get("encoded", 0),
        "encode_s": run.get("encode_s", 0.0),
        "missing": check_report(out) if proc.returncode == 0 else ["no report"],
        # the demo's log has no warning a reader should act on (issue 42)
        "warnings": sum(": warning: " in line for line in proc.stdout.splitlines()),
        "tail": "\n".join(proc.stdout.splitlines()[-TAIL_LINES:]),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="the small size (tests)")
    p.add_argument("--cache", type=Path, default=None, help="cache directory (default: a new one)")
    p.add_argument("--warm-only", action="store_true", help="no cold run (--cache is warm)")
    p.add_argument("--note", default="", help="how the machine was loaded while measuring")
    args = p.parse_args()
    repeats = args.repeats or 2
    work = Path(tempfile.mkdtemp(prefix="bench_demo_"))
    cache = args.cache or work / "cache"
    rows = []
    if not args.warm_only:
        print(f"cold run (cache {cache}) ...", flush=True)
        rows.append({"run": "cold", **run_demo(cache, work / "cold", args.small)})
    for i in range(repeats):
        print(f"warm run {i + 1} of {repeats} ...", flush=True)
        rows.append({"run": f"warm {i + 1}", **run_demo(cache, work / f"warm{i}", args.small)})
    for r in rows:
        r["texts_per_s"] = r["encoded"] / r["encode_s"] if r["encode_s"] else float("nan")
        r["complete"] = "yes" if not r["missing"] else "; ".join(r["missing"])
        print(f"{r['run']}: {r['wall_s']:.0f} s (rc {r['rc']}), {r['encoded']} texts encoded")
    warm = [r["wall_s"] for r in rows if r["run"].startswith("warm") and r["rc"] == 0]
    summary = {
        "size": "small" if args.small else "full",
        "warm_median_s": statistics.median(warm) if warm else float("nan"),
        "note": args.note,
    }
    md = (
        f"Size `{summary['size']}`; warm median {summary['warm_median_s']:.0f} s"
        + (f"; {args.note}" if args.note else "")
        + ".\n\n"
        + table(
            rows,
            [
                ("run", "run"),
                ("wall_s", "wall (s)"),
                ("rc", "rc"),
                ("encoded", "texts encoded"),
                ("encode_s", "encoding (s)"),
                ("texts_per_s", "texts/s"),
                ("complete", "every section"),
                ("warnings", "warnings"),
            ],
        )
    )
    for r in rows:
        md += f"\n\nLast lines of the {r['run']} run:\n\n```\n{r['tail']}\n```"
    print(md)
    path = write_results("bench_demo", {"summary": summary, "rows": rows}, md, tag=args.tag)
    print(f"wrote {path}")
    if any(r["rc"] or r["missing"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
