"""Every notebook in its full mode, timed: wall seconds and exit status per notebook.

Runs each ``notebooks/NAME.py`` (the jupytext source of ``NAME.ipynb``) as a script with
``ANCHORDIV_NOTEBOOK_FULL=1`` — the full version a user gets by setting that variable — its
figures going to a temporary folder, one after another on the otherwise idle machine.  The
docs state these times; the target is 5 minutes each on 2 idle cores.

    .venv/bin/python benchmarks/bench_notebooks.py [NAME ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import parser, table, write_results

ROOT = Path(__file__).resolve().parents[1]
#: the target of issue 27: each full notebook within 5 minutes on 2 idle cores
LIMIT_S = 300.0


def run(script: Path) -> dict:
    """``{"notebook", "seconds", "rc", "within_limit"}`` of one full-mode run."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ANCHORDIV_NOTEBOOK_FULL": "1", "ANCHORDIV_NOTEBOOK_OUT": tmp}
        env["MPLBACKEND"] = "Agg"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True
        )
        seconds = time.perf_counter() - t0
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
    return {
        "notebook": script.stem,
        "seconds": seconds,
        "rc": proc.returncode,
        "within_limit": bool(proc.returncode == 0 and seconds <= LIMIT_S),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="notebooks (default: all)")
    args = p.parse_args()
    scripts = sorted((ROOT / "notebooks").glob("*.py"))
    if args.names:
        scripts = [s for s in scripts if s.stem in args.names]
    rows = []
    for script in scripts:
        print(f"{script.stem} ...", flush=True)
        rows.append(run(script))
        print(f"  {rows[-1]['seconds']:.0f} s (rc {rows[-1]['rc']})", flush=True)
    md = table(
        rows,
        [
            ("notebook", "notebook"),
            ("seconds", "full mode (s)"),
            ("rc", "rc"),
            ("within_limit", f"≤ {LIMIT_S:.0f} s"),
        ],
    )
    print(md)
    print(f"wrote {write_results('bench_notebooks', {'rows': rows}, md, tag=args.tag)}")


if __name__ == "__main__":
    main()
