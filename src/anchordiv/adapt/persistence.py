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


def family_arrays(prefix: str, family) -> dict[str, np.ndarray]:
    return {f"{prefix}.{f.name}": np.asarray(getattr(family, f.name))
            for f in dataclasses.fields(family)}


def save_posterior(post: Posterior, path, **card) -> Path:
    """Save ``post`` as a bundle (``arrays.npz`` + ``card.json``, the ``save_model`` format);
    extra keywords (``encoder``, ``anchor_source``, ...) go into the card.  Everything but
    ``post.raw`` (NumPyro's run objects) round-trips bit-exactly."""
    if not isinstance(post, Posterior):
        raise AnchorDivError(f"post: expected a Posterior, got {type(post).__name__}")
    arrays = {f"fixed.{k}": np.asarray(v) for k, v in post.fixed.items()}
    for prefix in ("family", "completion"):
        if getattr(post, prefix) is not None:
            arrays.update(family_arrays(prefix, getattr(post, prefix)))
    for group in ("samples", "stats"):
        arrays.update({f"{group}.{k}": v for k, v in (getattr(post, group) or {}).items()})
    for which, p in (post.points or {}).items():
        arrays.update({f"points.{which}.{k}": np.asarray(v) for k, v in p.items()})
    if post.elbo is not None:
        arrays["elbo"] = np.asarray(post.elbo)
    info = {k: v for k, v in post.info.items() if k != "model_kwargs"}
    name = lambda f: type(f).__name__ if f is not None else None  # noqa: E731
    meta = {"type": "posterior", "kind": post.kind, "method": post.method, "tau": post.tau,
            "dtype": post.dtype, "dim": info.get("d"), "info": info,
            "family": name(post.family), "completion": name(post.completion)}
    return write_bundle(path, arrays, {**meta, **card})


def _group(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def _family(arrays: dict, prefix: str, name: str | None):
    if not name:
        return None
    fields = {k: (v.item() if v.ndim == 0 else v) for k, v in _group(arrays, prefix).items()}
    return FAMILIES[name](**fields)


def load_posterior(path, *, verify: bool = True) -> Posterior:
    """Load a posterior saved by :func:`save_posterior` (bit-exact arrays)."""
    arrays, card = read_bundle(path, verify=verify)
    if card.get("type") != "posterior":
        raise AnchorDivError(f"{path}: holds a {card.get('type')!r}, not a posterior")
    points = {}
    for key, v in _group(arrays, "points.").items():
        which, site = key.split(".", 1)
        points.setdefault(which, {})[site] = v
    return Posterior(card["kind"], card["method"], card["tau"], card["dtype"], card["info"],
                     family=_family(arrays, "family.", card["family"]),
                     samples=_group(arrays, "samples.") or None,
                     stats=_group(arrays, "stats.") or None, fixed=_group(arrays, "fixed."),
                     points=points or None, elbo=arrays.get("elbo"),
                     completion=_family(arrays, "completion.", card.get("completion")))


__all__ = ["load_posterior", "save_posterior"]
