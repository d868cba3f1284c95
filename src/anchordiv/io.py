"""Saving and loading anchor models: a directory with ``arrays.npz`` and ``card.json``.

The card records what a reader needs to trust the arrays: the model's kind and structure, its
dimension, the package version, a SHA-256 of the arrays (``data_hash``) and whatever the caller
adds (``encoder``, ``anchor_source``, ...).  Arrays are stored bit-exactly in their own dtypes,
so a loaded model scores exactly like the saved one.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import zipfile
import zlib
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from .anchors.base import MODEL_CLASSES, AnchorModel
from .errors import AnchorDivError, check_output

CARD = "card.json"
ARRAYS = "arrays.npz"


def package_version() -> str:
    from . import __version__

    return __version__


#: What :func:`stack_versions` records: the interpreter and the numerical stack the results
#: depend on (``None`` for a package that is not installed).
STACK = ("numpy", "scipy", "jax", "jaxlib", "numpyro", "arviz")


def stack_versions() -> dict[str, str | None]:
    """``{"python": ..., "numpy": ..., ..., "anchordiv": ...}``: the versions a measurement was
    made with (every benchmark result and the demo report carry them)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in STACK:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    out["anchordiv"] = package_version()
    return out


# --- the shipped priors --------------------------------------------------------------------

#: Environment variable naming a directory of priors that replaces the shipped ones.
MODELS_ENV = "ANCHORDIV_MODELS"
#: The shipped priors inside an installed package: a wheel carries the checkout's ``models/``
#: here (``setup.py`` copies it at build time).
PACKAGED_PRIORS = Path(__file__).resolve().parent / "resources" / "priors"
#: The checkout's top-level ``models/`` (beside ``src/``): the source of truth, which
#: ``make models`` rebuilds; an editable install reads it in place.
CHECKOUT_PRIORS = Path(__file__).resolve().parents[2] / "models"


def models_dir() -> Path:
    """The directory of the shipped priors: ``$ANCHORDIV_MODELS`` if set, else the installed
    package's ``resources/priors`` (a wheel), else the checkout's ``models/``, else
    ``./models``.  The library, the demo and the studies all look here."""
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV])
    for candidate in (PACKAGED_PRIORS, CHECKOUT_PRIORS):
        if candidate.is_dir() and any(candidate.glob(f"*/{CARD}")):
            return candidate
    return Path("models")


def short_name(name: str) -> str:
    """A shipped prior's short name: its directory name without the ``-gaussian`` suffix."""
    return name.removesuffix("-gaussian")


def shipped_priors() -> dict[str, Path]:
    """The shipped broad priors, by short name.

    Every prior in :func:`models_dir` (``$ANCHORDIV_MODELS``, the installed package's priors,
    or the checkout's ``models/``), sorted by name; each loads by either name with
    ``ad.load_prior`` (``"wordnet-visual-art"`` for ``models/wordnet-visual-art-gaussian``).

    Returns
    -------
    dict of str to Path
        ``{short name: directory}``.

    Examples
    --------
    >>> "wordnet-visual-art" in ad.shipped_priors()
    True
    """
    root = models_dir()
    found = sorted(p.parent for p in root.glob(f"*/{CARD}") if (p.parent / ARRAYS).is_file())
    return {short_name(p.name): p for p in found}


def resolve_prior(path) -> Path:
    """``path`` itself when it is a saved bundle (a directory with a card), else the shipped
    prior of that short or full name (``"wordnet-visual-art"``,
    ``"wordnet-visual-art-gaussian"``); an :class:`AnchorDivError` listing the shipped names
    when it is neither."""
    p = Path(path)
    if (p / CARD).is_file():
        return p
    name = str(path)
    shipped = shipped_priors()
    if os.sep not in name and "/" not in name and short_name(name) in shipped:
        return shipped[short_name(name)]
    if p.exists() or os.sep in name or "/" in name:
        raise AnchorDivError(f"{p}: not a saved anchordiv bundle (no {CARD})")
    names = ", ".join(shipped) or f"none found in {models_dir()}"
    raise AnchorDivError(
        f"prior: {name!r} is neither a saved bundle nor a shipped prior; shipped: {names}"
    )


def flatten_model(model: AnchorModel, prefix: str = "") -> tuple[dict, dict[str, np.ndarray]]:
    """``(structure, arrays)``: a JSON-able description and a flat ``name -> array`` dict."""
    fields, arrays = {}, {}
    for f in dataclasses.fields(model):
        value = getattr(model, f.name)
        key = f"{prefix}{f.name}"
        if isinstance(value, AnchorModel):
            fields[f.name], sub = flatten_model(value, key + ".")
            arrays.update(sub)
        else:
            fields[f.name] = key
            arrays[key] = np.asarray(value)
    return {"kind": model.kind, "fields": fields}, arrays


def unflatten_model(structure: dict, arrays) -> AnchorModel:
    """Inverse of :func:`flatten_model`."""
    kind = structure["kind"]
    if kind not in MODEL_CLASSES:
        raise AnchorDivError(f"unknown model kind {kind!r} in saved file")
    values = {}
    for name, spec in structure["fields"].items():
        values[name] = (
            unflatten_model(spec, arrays) if isinstance(spec, dict) else jnp.asarray(arrays[spec])
        )
    return MODEL_CLASSES[kind](**values)


def data_hash(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the arrays' names, dtypes, shapes and bytes (order-independent)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def write_bundle(
    path, arrays: dict[str, np.ndarray], card: dict, *, overwrite: bool = False
) -> Path:
    """Write ``arrays.npz`` + ``card.json`` (adding version, time and data hash) to ``path``;
    an existing non-empty ``path`` is refused unless ``overwrite`` (:func:`check_output`)."""
    path = check_output(path, overwrite)
    path.mkdir(parents=True, exist_ok=True)
    card = {
        **card,
        "package_version": package_version(),
        "data_hash": data_hash(arrays),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    np.savez(path / ARRAYS, **arrays)
    (path / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    return path


def _read_card(path: Path) -> dict:
    try:
        card = json.loads((path / CARD).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AnchorDivError(
            f"{path / CARD}: not valid JSON ({err}); the bundle's card is corrupt"
        ) from None
    if not isinstance(card, dict) or "type" not in card:
        raise AnchorDivError(f"{path / CARD}: not an anchordiv card (a JSON object with 'type')")
    return card


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path / ARRAYS, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, KeyError) as err:
        raise AnchorDivError(
            f"{path / ARRAYS}: unreadable or truncated array archive ({type(err).__name__}: {err})"
        ) from None


def read_bundle(path, *, verify: bool = True) -> tuple[dict[str, np.ndarray], dict]:
    """Read ``(arrays, card)``; with ``verify`` the arrays must match the card's data hash.

    A missing, truncated or corrupt ``arrays.npz`` or ``card.json`` raises
    :class:`AnchorDivError` naming the file and the problem; so does a card ``dim`` that is no
    array's axis length (the loaders check it exactly against what they build)."""
    path = Path(path)
    if not (path / CARD).is_file() or not (path / ARRAYS).is_file():
        raise AnchorDivError(f"{path}: not a saved anchordiv bundle (needs {CARD} and {ARRAYS})")
    card = _read_card(path)
    arrays = _read_arrays(path)
    if verify and card.get("data_hash") != data_hash(arrays):
        raise AnchorDivError(f"{path}: arrays do not match the card's data_hash (corrupt?)")
    if card.get("dim") is not None and card["dim"] not in {
        n for a in arrays.values() for n in a.shape
    }:
        raise AnchorDivError(
            f"{path / CARD}: says dim = {card['dim']} but no array has an "
            f"axis of that length (card edited or mismatched files)"
        )
    return arrays, card


def expect_type(path, card: dict, expected: str, what: str) -> None:
    """Raise unless the bundle at ``path`` holds ``expected`` (the card's ``type``)."""
    if card.get("type") != expected:
        raise AnchorDivError(f"{path}: holds a {card.get('type')!r}, not {what}")


def check_card_dim(path, card: dict, dim: int) -> None:
    """The card's ``dim`` field must equal the dimension of the loaded arrays."""
    if card.get("dim") is not None and card["dim"] != dim:
        raise AnchorDivError(
            f"{Path(path) / CARD}: says dim = {card['dim']} but the arrays have "
            f"d = {dim} (card edited or mismatched files)"
        )


def save_model(model: AnchorModel, path, *, overwrite: bool = False, **card) -> Path:
    """Save an anchor model to a directory (``arrays.npz`` + ``card.json``).

    Parameters
    ----------
    model : AnchorModel
        The model to save (any kind, including mixtures).
    path : str or Path
        Destination directory (created).
    overwrite : bool, default False
        Replace an existing, non-empty ``path``.
    **card
        Extra JSON-able fields for the card (e.g. ``encoder="all-MiniLM-L6-v2",
        anchor_source="wordnet nouns"``).

    Returns
    -------
    Path
        The directory written.

    Raises
    ------
    AnchorDivError
        ``model`` is not an anchor model, ``path`` is a file, or it is a non-empty directory and
        ``overwrite`` is false.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> model = ad.fit("gaussian", np.eye(4), tau=20.0)
    >>> out = ad.save_model(model, pathlib.Path(tempfile.mkdtemp()) / "model", encoder="toy")
    >>> ad.load_model(out)
    Gaussian(mean[4], factor[4, 4], tau=20)
    """
    if not isinstance(model, AnchorModel):
        raise AnchorDivError(f"save_model: expected an anchor model, got {type(model).__name__}")
    check_output(path, overwrite)
    structure, arrays = flatten_model(model)
    meta = {"type": "anchor-model", "kind": model.kind, "dim": model.dim, "structure": structure}
    if hasattr(model, "tau"):
        meta["tau"] = float(model.tau)
    return write_bundle(path, arrays, {**meta, **card}, overwrite=overwrite)


def load_model(path, *, verify: bool = True) -> AnchorModel:
    """Load a model saved by :func:`save_model` (bit-exact).

    Parameters
    ----------
    path : str or Path
        The model directory.
    verify : bool, default True
        Check the arrays against the card's data hash.

    Returns
    -------
    AnchorModel
        The model, of the kind it was saved as.

    Raises
    ------
    AnchorDivError
        ``path`` is not a saved bundle, holds something other than an anchor model, or fails the
        hash check.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0),
    ...                     pathlib.Path(tempfile.mkdtemp()) / "model")
    >>> float(ad.load_model(out).tau)
    20.0
    """
    arrays, card = read_bundle(path, verify=verify)
    expect_type(path, card, "anchor-model", "an anchor model")
    try:
        model = unflatten_model(card["structure"], arrays)
    except (KeyError, TypeError, AttributeError) as err:
        raise AnchorDivError(
            f"{Path(path) / CARD}: its structure does not match the arrays (missing {err})"
        ) from None
    check_card_dim(path, card, model.dim)
    return model


def load_card(path) -> dict:
    """The card of a saved bundle (an error naming the file if it is missing or corrupt)."""
    path = Path(path)
    if not (path / CARD).is_file():
        raise AnchorDivError(f"{path}: not a saved anchordiv bundle (no {CARD})")
    return _read_card(path)
