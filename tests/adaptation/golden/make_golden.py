"""Write the golden outputs of every case in :mod:`cases` to ``<case>.npz`` next to this file.

Run from the repository root, once, on the code whose behaviour is the reference (it was run on
the adaptation layer before the family refactor):

    PYTHONPATH=src python tests/adaptation/golden/make_golden.py [CASE ...]

(with case names: only those; ``--missing``: only cases that have no file yet).

Runs in float64 JAX, like the test suite (``tests/conftest.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import os

# the cap tests/conftest.py sets: the compiled arithmetic is the same on every x86-64 host
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX2").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import anchordiv as ad  # noqa: E402
from cases import CASES, data, fit, outputs  # noqa: E402


def inference_data(post, **kw):
    """The ArviZ conversion as the reference code exposed it."""
    return ad.inference_data(post, **kw)


def main(names=None) -> None:
    broad, targets, queries = data()
    for name in names or CASES:
        post = fit(name, broad, targets)
        np.savez_compressed(HERE / f"{name}.npz", **outputs(post, queries, targets, inference_data))
        print(name, "ok", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--missing"]:
        args = [n for n in CASES if not (HERE / f"{n}.npz").exists()]
    main(args or None)
