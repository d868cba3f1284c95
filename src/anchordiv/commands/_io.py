"""File helpers shared by the subcommands: reading embeddings and writing results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import AnchorDivError


def load_embeddings(path: str, name: str) -> np.ndarray:
    """An ``[n, d]`` float array from a ``.npy`` file (memory-mapped)."""
    p = Path(path)
    if not p.is_file():
        raise AnchorDivError(f"{name}: no such file: {path}")
    if p.suffix != ".npy":
        raise AnchorDivError(f"{name}: expected a .npy file of embeddings, got {path}")
    return np.load(p, mmap_mode="r")


def write_json(path: str | Path, obj) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(obj, indent=2) + "\n")
    return p
