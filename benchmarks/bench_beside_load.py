"""A whole command timed alone and beside busy processes (the main job, the test tier).

Runs ``COMMAND`` once on the otherwise idle machine, then once beside ``--busy`` processes
(default 2) that loop NumPy matrix products on their default BLAS threads — another scientific
job, as in ``bench_contention.py`` — and records both wall times and their ratio.  ``--warm``
runs the command once first, untimed (caches, compiled programs), so both timed runs are warm.

    .venv/bin/python benchmarks/bench_beside_load.py --tag demo --warm -- .venv/bin/anchordiv demo -o /tmp/demo --overwrite
    .venv/bin/python benchmarks/bench_beside_load.py --tag tests -- .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist worksteal

The last lines of each run's output are kept with the result (what failed, if a run fails).
"""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import time

from bench_contention import busy_loop
from common import parser, table, write_results


#: lines of a run's output kept with its result (a failing run says what failed)
TAIL_LINES = 25


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """``(seconds, exit status, the last TAIL_LINES lines of its output)``."""
    t0 = time.perf_counter()
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = "\n".join(run.stdout.splitlines()[-TAIL_LINES:])
    return time.perf_counter() - t0, run.returncode, tail


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--busy", type=int, default=2, help="busy processes beside (default 2)")
    p.add_argument("--warm", action="store_true", help="run the command once first, untimed")
    p.add_argument(
        "--skip-alone",
        type=float,
        default=None,
        help="seconds of an alone run measured before (do not rerun it)",
    )
    p.add_argument("command", nargs="+", help="the command (after --)")
    args = p.parse_args()
    if not args.tag:
        p.error("--tag is required (results file: bench_beside_load-TAG)")
    if args.warm:
        print("warm-up run ...", flush=True)
        timed(args.command)
    if args.skip_alone is None:
        alone, rc_alone, tail_alone = timed(args.command)
    else:
        alone, rc_alone, tail_alone = args.skip_alone, 0, ""
    print(f"alone: {alone:.0f} s (rc {rc_alone})", flush=True)
    ctx = mp.get_context("spawn")
    busy = [ctx.Process(target=busy_loop, args=(i,), daemon=True) for i in range(args.busy)]
    for proc in busy:
        proc.start()
    time.sleep(3.0)
    try:
        loaded, rc_loaded, tail_loaded = timed(args.command)
    finally:
        for proc in busy:
            proc.terminate()
            proc.join(5)
    print(f"beside {args.busy} busy processes: {loaded:.0f} s (rc {rc_loaded})", flush=True)
    row = {
        "command": " ".join(args.command),
        "alone_s": alone,
        "loaded_s": loaded,
        "ratio": loaded / alone,
        "rc_alone": rc_alone,
        "rc_loaded": rc_loaded,
        "warm": bool(args.warm),
        "alone_rerun": args.skip_alone is None,
        "tail_alone": tail_alone,
        "tail_loaded": tail_loaded,
    }
    md = table(
        [row],
        [
            ("command", "command"),
            ("alone_s", "alone (s)"),
            ("loaded_s", f"beside {args.busy} busy (s)"),
            ("ratio", "loaded / alone"),
            ("rc_alone", "rc alone"),
            ("rc_loaded", "rc loaded"),
        ],
    )
    for name, tail in (("alone", tail_alone), ("loaded", tail_loaded)):
        md += f"\n\nLast lines of the {name} run:\n\n```\n{tail}\n```"
    print(md)
    print(f"wrote {write_results('bench_beside_load', {'rows': [row]}, md, tag=args.tag)}")


if __name__ == "__main__":
    main()
