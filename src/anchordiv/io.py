"""Saving and loading anchor models: a directory with ``arrays.npz`` (bit-exact, in their own
dtypes) and ``card.json`` (kind, structure, dimension, version, ``data_hash``, caller's fields).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from ._safeio import PINS, array_specs, atomic_dir, bundle_dir, card_digest, data_hash, dumps
from ._safeio import malformed, native, read_json, read_npz, write_npz, write_text
from .anchors.base import MODEL_CLASSES, AnchorModel
from .errors import AnchorDivError, check_output

CARD = "card.json"
ARRAYS = "arrays.npz"


#: The packages :func:`stack_versions` records (``None`` for one not installed).
STACK = ("numpy", "scipy", "jax", "jaxlib", "numpyro", "arviz")


def stack_versions() -> dict[str, str | None]:
    """``{"python": ..., "numpy": ..., ..., "anchordiv": ...}``: the versions a measurement was
    made with (every benchmark result and the demo report carry them)."""
    from . import __version__

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in STACK:
        out[name] = None
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[name] = importlib.metadata.version(name)
    out["anchordiv"] = __version__
    return out


# --- the shipped priors --------------------------------------------------------------------

#: Environment variable naming a directory of priors that replaces the shipped ones.
MODELS_ENV = "ANCHORDIV_MODELS"
#: The shipped priors inside an installed package (``setup.py`` copies ``models/`` there).
PACKAGED_PRIORS = Path(__file__).resolve().parent / "resources" / "priors"
#: The checkout's top-level ``models/`` (beside ``src/``): the source of truth.
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
    return {p.name.removesuffix("-gaussian"): p for p in found}


def resolve_prior(path) -> Path:
    """The bundle ``path`` names.

    A bare name (no directory part, e.g. ``"wordnet-visual-art"`` or
    ``"wordnet-visual-art-gaussian"``) of a shipped prior means the shipped prior; a local
    folder of the same name is then reached with a path (``"./wordnet-visual-art"``), and a bare
    name that is both is an :class:`AnchorDivError` rather than a silent choice.  Anything else
    is a path to a saved bundle.  An :class:`AnchorDivError` lists the shipped names when
    ``path`` is neither."""
    name = os.fspath(path)
    p, short = Path(name), name.removesuffix("-gaussian")
    bare = os.sep not in name and "/" not in name and name not in (".", "..")
    shipped = shipped_priors()
    local = (bundle_dir(p) / CARD).is_file()
    if bare and short in shipped:
        if local and bundle_dir(p).resolve() != shipped[short].resolve():
            raise AnchorDivError(
                f"prior: {name!r} is both a shipped prior and a folder here; pass "
                f"'./{name}' for the folder, or run elsewhere for the shipped prior"
            )
        return shipped[short]
    if local:
        return p
    if p.exists() or not bare:
        raise not_a_bundle(p, f"no {CARD}")
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
    values = {
        name: unflatten_model(spec, arrays) if isinstance(spec, dict) else jnp.asarray(arrays[spec])
        for name, spec in structure["fields"].items()
    }
    return MODEL_CLASSES[kind](**values)


def write_bundle(
    path, arrays: dict[str, np.ndarray], card: dict, *, overwrite: bool = False
) -> Path:
    """Write ``arrays.npz`` + ``card.json`` to ``path`` atomically (:func:`~._safeio.atomic_dir`:
    a kill at any instant leaves the old bundle or the new one); an existing non-empty ``path``
    is refused unless ``overwrite`` (:func:`check_output`).

    The card gets the package version, the time, the arrays' dtypes and shapes
    (``array_specs``), their SHA-256 (``data_hash``) and the SHA-256 of the card's content
    (``digest``: every field but itself, :func:`~._safeio.card_digest`)."""
    with atomic_dir(path, overwrite) as tmp:
        write_bundle_files(tmp, arrays, card)
    return Path(path)


def write_bundle_files(directory: Path, arrays: dict[str, np.ndarray], card: dict) -> None:
    """The files of a bundle, written into the (new, empty) ``directory``."""
    from . import __version__

    card = {
        **card,
        "package_version": __version__,
        "data_hash": data_hash(arrays),
        "array_specs": array_specs(arrays),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    card = json.loads(json.dumps(card))  # the JSON form the digest is recomputed from
    card["digest"] = card_digest(card)
    write_npz(directory / ARRAYS, arrays)
    write_text(directory / CARD, dumps(card))


def _read_card(path: Path) -> dict:
    card = read_json(path / CARD, f"{path / CARD}")
    if not isinstance(card, dict) or "type" not in card:
        raise AnchorDivError(f"{path / CARD}: not an anchordiv card (a JSON object with 'type')")
    return card


def pinned(sha256) -> str:
    """A user's pinned digest: 64 hex digits (an optional ``sha256:`` prefix dropped)."""
    text = str(sha256).strip().lower().removeprefix("sha256:")
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise AnchorDivError(f"sha256: expected 64 hex digits, got {sha256!r}")
    return text


@contextlib.contextmanager
def pinned_digests(digests):
    """Within the block, every bundle :func:`read_bundle` reads must have one of ``digests``
    (what ``--sha256`` does on the command line; ``()`` or None pins nothing)."""
    token = PINS.set(frozenset(pinned(d) for d in digests or ()))
    try:
        yield
    finally:
        PINS.reset(token)


def bundle_digest(path) -> str:
    """The digest of a saved bundle (prior, posterior, model, index, InferenceData).

    SHA-256 of its card's content (every field but ``digest``); the card's ``data_hash`` covers
    the arrays, so the digest covers the whole bundle.  It is what ``sha256=`` on the loaders
    and ``--sha256`` on the command line pin, and what ``anchordiv priors`` prints.  It detects
    corruption and swapped files, not tampering: anyone can recompute it, so pin a digest you
    obtained from a source you trust.

    Parameters
    ----------
    path : str or Path
        A bundle directory or a shipped prior's name; or an embeddings ``.npy``, whose sidecar
        (covering the array through its ``data_hash``) has a digest too (a ``.npy`` without a
        sidecar: the digest of its array, what pins it as a plain array).

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0),
    ...                     pathlib.Path(tempfile.mkdtemp()) / "model")
    >>> digest = ad.bundle_digest(out)
    >>> len(digest), float(ad.load_model(out, sha256=digest).tau)
    (64, 20.0)
    """
    if os.fspath(path).endswith(".npy"):  # embeddings: their sidecar's digest
        from .provenance import load_npy, read_sidecar

        meta = read_sidecar(path)
        if not meta:  # a plain array: the digest of its contents
            return data_hash({"embeddings": np.asarray(load_npy(path, mmap=False))})
        return card_digest(meta)
    return card_digest(load_card(resolve_prior(path)))


def read_bundle(
    path, *, verify: bool = True, sha256: str | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """Read ``(arrays, card)``; with ``verify`` the arrays must match the card's ``data_hash``
    and the card its ``digest`` (cards written before the digest existed: the arrays only);
    with ``sha256`` the bundle's digest (:func:`bundle_digest`) must equal it (checked whatever
    ``verify`` says).

    Every member's dtype and shape is checked before it is read (:func:`~._safeio.read_npz`;
    against the card's ``array_specs`` where it has them); a missing, truncated or corrupt
    ``arrays.npz`` or ``card.json`` raises :class:`AnchorDivError` naming the file and the
    problem; so does a card ``dim`` that is no array's axis length (the loaders check it
    exactly against what they build).  Arrays come back in the machine's byte order."""
    path = Path(path)
    where = bundle_dir(path)
    if not (where / CARD).is_file() or not (where / ARRAYS).is_file():
        raise not_a_bundle(path, f"needs {CARD} and {ARRAYS}")
    card = _read_card(where)
    specs = card.get("array_specs")
    if specs is not None and not (
        isinstance(specs, dict)
        and all(
            isinstance(v, list)
            and len(v) == 2
            and isinstance(v[0], str)
            and isinstance(v[1], list)
            and all(isinstance(n, int) and n >= 0 for n in v[1])
            for v in specs.values()
        )
    ):
        raise AnchorDivError(f"{path / CARD}: array_specs is malformed")
    arrays = read_npz(where / ARRAYS, expect=specs)
    if verify or sha256 is not None or PINS.get():
        if card.get("data_hash") != data_hash(arrays):
            raise AnchorDivError(f"{path}: arrays do not match the card's data_hash (corrupt?)")
        if "digest" in card and card["digest"] != card_digest(card):
            raise AnchorDivError(f"{path / CARD}: the card does not match its digest (corrupt?)")
    if sha256 is not None and card_digest(card) != pinned(sha256):
        raise AnchorDivError(
            f"{path}: its digest is {card_digest(card)}, not the pinned {pinned(sha256)}; "
            f"refusing a bundle that differs from the one pinned"
        )
    pins = PINS.get()
    if pins and card_digest(card) not in pins:
        raise AnchorDivError(
            f"{path}: its digest is {card_digest(card)}, not one pinned with --sha256; "
            f"refusing a bundle that differs from the one pinned"
        )
    arrays = {k: native(v) for k, v in arrays.items()}
    dim = card.get("dim")
    if dim is not None and (
        not isinstance(dim, int) or dim not in {n for a in arrays.values() for n in a.shape}
    ):
        raise AnchorDivError(
            f"{path / CARD}: says dim = {dim!r} but no array has an "
            f"axis of that length (card edited or mismatched files)"
        )
    return arrays, card


#: The loader of each bundle type (a card's ``type``), named where another loader is given it.
LOADERS = {
    "anchor-model": "ad.load_model",
    "posterior": "ad.load_posterior",
    "prior": "ad.load_prior",
    "inference-data": "ad.load_inference_data",
    "faiss-index": "ad.FaissIndex.load",
}


def expect_type(path, card: dict, expected: str, what: str) -> None:
    """Raise unless the bundle at ``path`` holds ``expected`` (the card's ``type``); the
    message names the loader of what it does hold."""
    held = card.get("type")
    if held != expected:
        loader = LOADERS.get(held) if isinstance(held, str) else None
        hint = f" (load it with {loader})" if loader else ""
        raise AnchorDivError(f"{path}: holds a {held!r}, not {what}{hint}")


def not_a_bundle(path, needs: str) -> AnchorDivError:
    """The error for ``path`` that holds no saved bundle: a path that does not exist is said
    so (not "not a bundle"), a file is named as a file."""
    path = Path(path)
    if not path.exists():
        return AnchorDivError(f"{path}: no such file or directory")
    what = "a file, " if path.is_file() else ""
    return AnchorDivError(f"{path}: {what}not a saved anchordiv bundle ({needs})")


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


def load_model(path, *, verify: bool = True, sha256: str | None = None) -> AnchorModel:
    """Load a model saved by :func:`save_model` (bit-exact).

    Parameters
    ----------
    path : str or Path
        The model directory.
    verify : bool, default True
        Check the arrays against the card's data hash and the card against its digest.
    sha256 : str, optional
        A pinned digest (:func:`bundle_digest`): a bundle with another one is refused.

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
    arrays, card = read_bundle(path, verify=verify, sha256=sha256)
    expect_type(path, card, "anchor-model", "an anchor model")
    with malformed(Path(path) / CARD, "anchor model (its structure does not match the arrays)"):
        model = unflatten_model(card["structure"], arrays)
        check_card_dim(path, card, model.dim)
        check_loaded_model(model)
    return model


#: The largest τ a loaded model may have (logit scales are ~20-100; 1e300 is no encoder's).
MAX_LOADED_TAU = 1e6


def check_loaded_model(model: AnchorModel) -> None:
    """Refuse a loaded model whose arrays could not score, before any query meets it.

    A model read from a file (a stranger's, possibly) is checked in this order; the first
    failure is an :class:`AnchorDivError` naming the kind and what is wrong:

    1. every array leaf is floating point;
    2. every field has the shape its kind declares (:attr:`~anchordiv.AnchorModel.axes`:
       one length per axis letter, shared across fields) and is finite (log-weights may be
       −inf) — :func:`check_model_fields`;
    3. ``tau``, where the kind has one, is a positive scalar of at most
       :data:`MAX_LOADED_TAU`;
    4. ``dim`` is a positive int;
    5. ψ of ``[2, d]`` parameters has shape ``[2]`` and, on the fast (quadratic) path, the
       embedding has shape ``[2, m]`` — traced abstractly with ``jax.eval_shape``, so no
       compilation happens;
    6. ψ (and the embedding) of two unit vectors, evaluated once in float32, is finite: finite
       fields can still overflow, and such a model would score every pair NaN.

    Parameters
    ----------
    model : AnchorModel
        The model as loaded.

    Returns
    -------
    None
        It returns only when every check passes.

    Raises
    ------
    AnchorDivError
        The first check that fails.
    """
    import jax

    leaves = jax.tree_util.tree_leaves(model)
    if not leaves or not all(jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating) for v in leaves):
        raise AnchorDivError(f"{model.kind}: a loaded model's arrays must be floating")
    check_model_fields(model)
    tau = getattr(model, "tau", None)
    if tau is not None and not 0 < float(tau) <= MAX_LOADED_TAU:
        raise AnchorDivError(
            f"{model.kind}: field tau = {float(tau):g}; a loaded model's tau must be positive "
            f"and at most {MAX_LOADED_TAU:g}"
        )
    dim = model.dim
    if not isinstance(dim, int) or dim < 1:
        raise AnchorDivError(f"{model.kind}: loaded model of dimension {dim!r}")
    theta = jax.ShapeDtypeStruct((2, dim), jnp.float32)
    if jax.eval_shape(model.cumulant, theta).shape != (2,):
        raise AnchorDivError(f"{model.kind}: its arrays do not give one cumulant per row")
    if model.quadratic:
        out = jax.eval_shape(model.embed, theta)
        if len(out.shape) != 2 or out.shape[0] != 2:
            raise AnchorDivError(f"{model.kind}: its arrays do not give one embedding per row")
    # finite fields can still overflow in float32: ψ of two unit vectors must be finite
    probe = np.zeros((2, dim), np.float32)
    probe[0, 0], probe[1] = 1.0, 1.0 / np.sqrt(dim)
    values = [model.cumulant(jnp.asarray(probe))]
    if model.quadratic:
        values.append(model.embed(jnp.asarray(probe)))
    if not all(np.all(np.isfinite(np.asarray(v))) for v in values):
        raise AnchorDivError(
            f"{model.kind}: its parameters overflow (ψ of a unit vector is not finite in "
            f"{np.asarray(values[0]).dtype}); refused, every score would be NaN"
        )


def check_axes(what: str, values: dict, axes: dict[str, str], *, scalars: bool = False) -> None:
    """Each array of ``values`` named in ``axes`` of the shape declared there (one letter per
    axis, ``""`` a scalar; one length per letter across the fields; every axis but a factor's
    rank ``r`` non-empty) — with ``scalars``, every other number a scalar: an
    :class:`AnchorDivError` naming the field otherwise (what a loader checks a file's arrays
    against, as a constructor would)."""
    sizes: dict[str, int] = {}
    for name, value in values.items():
        if value is None or isinstance(value, str):
            continue
        shape = np.shape(value)
        spec = axes.get(name, "" if scalars else None)
        if spec is not None and (
            len(shape) != len(spec)
            or any(sizes.setdefault(c, n) != n or (n < 1 and c != "r") for c, n in zip(spec, shape))
        ):
            want = "a scalar" if not spec else f"[{', '.join(spec)}]"
            raise AnchorDivError(
                f"{what}: field {name} has shape {list(shape)}, not {want} consistent with the "
                f"other fields"
            )


def check_model_fields(model: AnchorModel, prefix: str = "") -> None:
    """Every array field of ``model`` (and of the models it holds) of the shape its kind
    declares (:func:`check_axes`), with no NaN or +inf (and no −inf but in log-weights, whose
    mass must not all be −inf): an :class:`AnchorDivError` naming the field otherwise."""
    values = {}
    for f in dataclasses.fields(model):
        value = getattr(model, f.name)
        if isinstance(value, AnchorModel):
            check_model_fields(value, f"{prefix}{f.name}.")
        else:
            values[f"{prefix}{f.name}"] = value
    check_axes(model.kind, values, {f"{prefix}{k}": v for k, v in model.axes.items()})
    for name, value in values.items():
        a, minus_inf = np.asarray(value), name.endswith("log_weights")
        if np.isnan(a).any() or np.isposinf(a).any() or (not minus_inf and np.isneginf(a).any()):
            raise AnchorDivError(f"{model.kind}: field {name} holds NaN or inf values")
        if minus_inf and a.size and not np.isfinite(a).any():
            raise AnchorDivError(f"{model.kind}: field {name} gives every component no mass")
    if model.kind == "mix":
        p = float(np.asarray(model.p))  # type: ignore[attr-defined]
        if not 0 <= p <= 1:
            raise AnchorDivError(f"mix: field {prefix}p = {p:g} is not in [0, 1]")
        if model.first.dim != model.second.dim:  # type: ignore[attr-defined]
            raise AnchorDivError(
                f"mix: fields {prefix}first and {prefix}second differ in dimension"
            )


def load_card(path) -> dict:
    """The card of a saved bundle (an error naming the file if it is missing or corrupt)."""
    path = bundle_dir(path)
    if not (path / CARD).is_file():
        raise not_a_bundle(path, f"no {CARD}")
    return _read_card(path)
