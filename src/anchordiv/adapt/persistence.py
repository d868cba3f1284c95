"""Save and load posteriors as bundles (``arrays.npz`` + ``card.json``, the ``save_model``
format)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .. import priors
from ..errors import AnchorDivError
from ..io import read_bundle, write_bundle
from .posterior import Posterior

FAMILIES = {c.__name__: c for c in (priors.NIW, priors.BinghamPosterior,
                                    priors.DirichletNIW)}


def family_arrays(family) -> dict[str, np.ndarray]:
    return {f"family.{f.name}": np.asarray(getattr(family, f.name))
            for f in dataclasses.fields(family)}


def save_posterior(post: Posterior, path, **card) -> Path:
    """Save ``post`` as a bundle (``arrays.npz`` + ``card.json``, the ``save_model`` format);
    extra keywords (``encoder``, ``anchor_source``, ...) go into the card."""
    if not isinstance(post, Posterior):
        raise AnchorDivError(f"post: expected a Posterior, got {type(post).__name__}")
    arrays = {f"fixed.{k}": np.asarray(v) for k, v in post.fixed.items()}
    if post.family is not None:
        arrays.update(family_arrays(post.family))
    for group in ("samples", "stats"):
        arrays.update({f"{group}.{k}": v for k, v in (getattr(post, group) or {}).items()})
    info = {k: v for k, v in post.info.items() if k != "model_kwargs"}
    meta = {"type": "posterior", "kind": post.kind, "method": post.method, "tau": post.tau,
            "dtype": post.dtype, "dim": info.get("d"), "info": info,
            "family": type(post.family).__name__ if post.family is not None else None}
    return write_bundle(path, arrays, {**meta, **card})


def _group(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def load_posterior(path, *, verify: bool = True) -> Posterior:
    """Load a posterior saved by :func:`save_posterior` (bit-exact arrays)."""
    arrays, card = read_bundle(path, verify=verify)
    if card.get("type") != "posterior":
        raise AnchorDivError(f"{path}: holds a {card.get('type')!r}, not a posterior")
    family = None
    if card["family"]:
        fields = {k: (v.item() if v.ndim == 0 else v)
                  for k, v in _group(arrays, "family.").items()}
        family = FAMILIES[card["family"]](**fields)
    return Posterior(card["kind"], card["method"], card["tau"], card["dtype"], card["info"],
                     family=family, samples=_group(arrays, "samples.") or None,
                     stats=_group(arrays, "stats.") or None, fixed=_group(arrays, "fixed."))


