"""Write the golden outputs of every case in :mod:`cases` to ``<case>.npz`` next to this file.

Run from the repository root, once, on the code whose behaviour is the reference (it was run on
the adaptation layer before the family refactor):

    PYTHONPATH=src python tests/adaptation/golden/make_golden.py

Runs in float64 JAX, like the test suite (``tests/conftest.py``)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import anchordiv as ad  # noqa: E402
from cases import CASES, TAU, data, outputs  # noqa: E402


def inference_data(post, **kw):
    """The ArviZ conversion as the reference code exposed it."""
    return ad.inference_data(post, **kw)


def main(names=None) -> None:
    broad, targets, queries = data()
    for name in names or CASES:
        kind, opts = CASES[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = ad.adapt(kind, broad, targets, tau=TAU, **opts)
        np.savez_compressed(HERE / f"{name}.npz", **outputs(post, queries, targets,
                                                             inference_data))
        print(name, "ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or None)
