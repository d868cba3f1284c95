"""Where embeddings come from: the encoder id and its logit scale τ travel with the arrays, as
an :class:`Embeddings` array in memory and a sidecar ``X.json`` beside ``X.npy`` on disk;
:func:`resolve_tau` is every entry point's rule for τ."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from .errors import AnchorDivError, as_matrix, no_file, positive, user_stacklevel

#: Sidecar suffix beside an embeddings ``.npy``.
SIDECAR = ".json"
#: Keys of the provenance that say which encoder produced an array.
KEYS = ("encoder", "logit_scale")


class Embeddings(np.ndarray):
    """An ``[n, d]`` array that remembers its ``provenance`` (``encoder``, ``logit_scale``).

    Views and row selections (``X[:10]``, ``X[idx]``) keep it; arithmetic (``10 * X``,
    ``X - X.mean(0)``) returns plain arrays, since the result is no longer the encoder's output.
    Embeddings come from ``ad.data.embed_texts``, ``ad.data.embed_images`` and
    :func:`load_embeddings`; any array becomes one with ``provenance.with_provenance``.

    Parameters
    ----------
    shape, dtype, buffer, offset, strides, order
        As for ``numpy.ndarray`` (an ``Embeddings`` is normally made as a view, not constructed).

    Attributes
    ----------
    provenance : dict
        ``encoder`` (str) and ``logit_scale`` (float, the τ of ``ad.fit``), plus what the writer
        recorded (``texts``, ``sources``).

    Examples
    --------
    >>> from anchordiv.provenance import with_provenance
    >>> X = with_provenance(np.eye(4), encoder="toy", logit_scale=20.0)
    >>> X[:2].provenance["logit_scale"]
    20.0
    >>> type(X - X.mean(0)).__name__
    'ndarray'
    """

    provenance: dict

    def __array_finalize__(self, obj) -> None:
        self.provenance = dict(getattr(obj, "provenance", None) or {})

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, Embeddings) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(
                np.asarray(x) if isinstance(x, Embeddings) else x for x in kwargs["out"]
            )
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __reduce__(self):  # pickles (multiprocessing, Dask) as a plain array + provenance
        return (with_provenance, (np.asarray(self), self.provenance))


def with_provenance(x, provenance: dict | None = None, **fields) -> Embeddings:
    """``x`` viewed as :class:`Embeddings` carrying ``provenance`` (plus ``fields``)."""
    out = np.asarray(x).view(Embeddings)
    out.provenance = {**(provenance or {}), **fields}
    return out


def provenance_of(x) -> dict:
    """The provenance an array carries (``{}`` for a plain array)."""
    return dict(getattr(x, "provenance", None) or {})


def common_provenance(**named) -> dict:
    """The provenance shared by the named arrays; arrays of two different encoders are an error.

    Arrays without provenance are ignored (nothing is known about them)."""
    seen = {name: provenance_of(x) for name, x in named.items() if provenance_of(x).get("encoder")}
    encoders = {p["encoder"] for p in seen.values()}
    if len(encoders) > 1:
        detail = ", ".join(f"{name}: {p['encoder']}" for name, p in seen.items())
        raise AnchorDivError(
            f"embeddings of different encoders cannot be mixed ({detail}); "
            f"embed every input with the same encoder"
        )
    return next(iter(seen.values()), {})


def resolve_tau(tau, **named) -> float:
    """τ for a computation on the named embeddings.

    ``tau`` if given, else the logit scale recorded with the embeddings, else an error that says
    what to pass.  Embeddings of two different encoders are an error even when ``tau`` is given.

    Parameters
    ----------
    tau : float or None
        An explicit logit scale (> 0); wins over the provenance.
    **named : array_like
        The embeddings of the computation, by argument name (the names appear in errors).

    Returns
    -------
    float
        The logit scale τ.

    Raises
    ------
    AnchorDivError
        ``tau`` is not positive, the arrays come from different encoders, or neither ``tau`` nor a
        recorded logit scale exists.

    Warns
    -----
    AnchorDivWarning
        τ below 1 (a temperature 1/τ given for the logit scale), or an explicit ``tau`` more
        than :data:`TAU_TOLERANCE` (relative) from the logit scale recorded with the
        embeddings.

    Examples
    --------
    >>> from anchordiv.provenance import with_provenance
    >>> X = with_provenance(np.eye(4), encoder="toy", logit_scale=20.0)
    >>> ad.resolve_tau(None, anchors=X)
    20.0
    >>> ad.resolve_tau(50.0, anchors=X)
    50.0
    """
    prov = common_provenance(**named)
    provs = {name: provenance_of(x) for name, x in named.items()}
    recorded = {n: p["logit_scale"] for n, p in provs.items() if p.get("logit_scale") is not None}
    if tau is not None:
        value = check_logit_scale("tau", tau)
        for name, rec in recorded.items():
            rec = positive(f"{name} (its recorded logit_scale)", rec)
            if abs(value - rec) > TAU_TOLERANCE * rec:
                warnings.warn(
                    f"tau={value:g} differs from the logit scale {rec:g} recorded with "
                    f"{name} (encoder {prov.get('encoder') or 'unknown'}); omit tau to use "
                    f"the recorded one, or ignore this warning if the override is intended",
                    AnchorDivWarning,
                    stacklevel=user_stacklevel(),
                )
                break
        return value
    if recorded:  # the encoder's, else (no encoder recorded) the first array's
        rec = prov.get("logit_scale") or next(iter(recorded.values()))
        return check_logit_scale("tau (from the embeddings' provenance)", rec)
    raise AnchorDivError(
        "tau: not given and the embeddings carry no encoder provenance; pass tau= the encoder's "
        "logit scale (all-MiniLM-L6-v2: 20, CLIP: ~100; `enc.logit_scale`), or use embeddings "
        "from data.embed_texts / ad.load_embeddings / `anchordiv embed`, which record it"
    )


#: An explicit τ further than this fraction from the recorded logit scale warns.
TAU_TOLERANCE = 1e-3


def check_logit_scale(name: str, tau) -> float:
    """``tau`` as a finite positive float (an :class:`AnchorDivError` otherwise), with an
    :class:`AnchorDivWarning` below 1: a logit scale (CLIP ≈ 100, MiniLM 20) that small is
    almost always a temperature 1/τ given in its place."""
    value = positive(name, tau)
    if value < 1:
        warnings.warn(
            f"{name}={value:g}: tau is the logit scale (e.g. 100 for CLIP); did you pass a "
            f"temperature 1/tau? (a temperature of {value:g} is tau = {1 / value:g})",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )
    return value


# ---- files ---------------------------------------------------------------------------------


def npy_path(path) -> Path:
    """``path`` with the ``.npy`` suffix numpy adds when saving (``out`` -> ``out.npy``)."""
    p = Path(path)
    return p if p.suffix == ".npy" else p.with_name(p.name + ".npy")


def sidecar_path(path) -> Path:
    """The provenance sidecar beside an embeddings file: ``X.npy`` -> ``X.json``."""
    return npy_path(path).with_suffix(SIDECAR)


def save_embeddings(
    path,
    x,
    *,
    encoder: str | None = None,
    logit_scale: float | None = None,
    overwrite: bool = False,
    **extra,
) -> Path:
    """Write embeddings and their provenance sidecar.

    Writes ``x`` to ``path`` (``.npy`` added if missing) and the sidecar ``X.json`` beside it:
    ``encoder`` and ``logit_scale`` from the arguments or from ``x``'s own provenance, the
    ``extra`` keywords, ``rows``, ``dim``, the array's SHA-256 (``data_hash``: a loader
    refuses an array that is not the one its sidecar describes) and the sidecar's own
    ``digest`` (what ``sha256=`` pins, :func:`~anchordiv.io.bundle_digest`).  The pair is
    replaced as one unit, and concurrent writers of one path take turns
    (:func:`~anchordiv._safeio.replace_files`).

    Parameters
    ----------
    path : str or Path
        Destination; ``out`` and ``out.npy`` both write ``out.npy``.
    x : array_like, shape [n, d]
        The embeddings (an :class:`Embeddings` contributes its provenance).
    encoder : str, optional
        Encoder id (overrides ``x``'s).
    logit_scale : float, optional
        The encoder's logit scale τ (overrides ``x``'s).
    overwrite : bool, default False
        Replace an existing non-empty destination; otherwise it is refused
        (:class:`~anchordiv.errors.OutputExistsError`).
    **extra
        Further JSON-able fields for the sidecar (e.g. ``texts``, ``sources``).

    Returns
    -------
    Path
        The ``.npy`` path actually written.

    Raises
    ------
    AnchorDivError
        ``x`` that is no ``[n, d]`` floating array, a ``logit_scale`` that is not a positive
        number, or an existing destination without ``overwrite``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "anchors"
    >>> ad.save_embeddings(path, np.eye(4), encoder="toy", logit_scale=20.0).name
    'anchors.npy'
    >>> ad.load_embeddings(path.with_suffix(".npy")).provenance
    {'encoder': 'toy', 'logit_scale': 20.0}
    """
    from ._safeio import card_digest, data_hash, dumps, replace_files, write_npy, write_text

    p = npy_path(path)
    arr = as_matrix("x", x, check_finite=False)  # [n, d] floats: not texts, not [n, d, k]
    if logit_scale is not None:  # the τ every later fit reads: a bad one refused here
        logit_scale = positive("logit_scale", logit_scale)
    given = {"encoder": encoder, "logit_scale": logit_scale}
    meta = {
        "embeddings": str(p),
        **provenance_of(x),
        **{k: v for k, v in given.items() if v is not None},
        **extra,
        "rows": int(arr.shape[0]),
        "dim": int(arr.shape[-1]) if arr.ndim else 0,
        "data_hash": data_hash({"embeddings": arr}),
    }
    meta = json.loads(json.dumps(meta, default=str))  # the JSON form the digest is taken of
    meta["digest"] = card_digest(meta)
    text = dumps(meta, indent=1)
    replace_files(
        {p: lambda t: write_npy(t, arr), sidecar_path(p): lambda t: write_text(t, text)},
        overwrite=overwrite,
    )
    return p


def read_sidecar(path, side: Path | None = None) -> dict:
    """The sidecar of an embeddings file (``{}`` if there is none; an error if it is broken);
    ``side`` reads it from another file (an interrupted save's journal copy)."""
    side = sidecar_path(path) if side is None else side
    if not side.is_file():
        return {}
    from ._safeio import read_json

    meta = read_json(side, f"{side}: provenance sidecar")
    if not isinstance(meta, dict):
        raise AnchorDivError(f"{side}: provenance sidecar must hold a JSON object")
    return meta


def load_npy(path, name: str = "embeddings", *, mmap: bool = True) -> np.ndarray:
    """A ``.npy`` array (memory-mapped by default), an error for a missing or foreign file."""
    from ._safeio import native, npy_header

    p = Path(path)
    if not p.is_file():
        raise no_file(name, path)
    if p.suffix != ".npy":
        raise AnchorDivError(f"{name}: expected a .npy file, got {path}")
    try:
        with open(p, "rb") as f:
            shape, _, dtype = npy_header(f, f"{name}: {path}")
            data = p.stat().st_size - f.tell()
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dtype.itemsize != data:
            raise AnchorDivError(
                f"{name}: {path} header says {dtype.str} {list(shape)} but holds {data} data "
                f"bytes (truncated or corrupt)"
            )
        return native(np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False))
    except AnchorDivError:
        raise
    except (ValueError, OSError, EOFError) as err:
        raise AnchorDivError(f"{name}: {path} is not a readable .npy array ({err})") from None


def load_embeddings(path, name: str = "embeddings", *, mmap: bool = True) -> np.ndarray:
    """Embeddings from a ``.npy`` file, with the provenance of its sidecar.

    Parameters
    ----------
    path : str or Path
        A ``.npy`` file; its sidecar ``X.json`` (written by :func:`save_embeddings` or
        ``anchordiv embed``) is read when present.
    name : str, default "embeddings"
        The argument name used in error messages.
    mmap : bool, default True
        Memory-map the array (read-only) instead of reading it into memory.

    Returns
    -------
    numpy.ndarray or Embeddings, shape [n, d]
        An :class:`Embeddings` carrying ``encoder``, ``logit_scale`` (and ``texts``, ``sources``)
        when a sidecar exists, else the plain array.

    Raises
    ------
    AnchorDivError
        The file is missing, not ``.npy``, unreadable, or its sidecar is broken or disagrees with
        the array's ``rows``/``dim``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = ad.save_embeddings(pathlib.Path(tempfile.mkdtemp()) / "x.npy", np.eye(3),
    ...                           encoder="toy", logit_scale=20.0)
    >>> X = ad.load_embeddings(path)
    >>> X.shape, X.provenance["encoder"]
    ((3, 3), 'toy')
    """
    from ._safeio import PINS, card_digest, data_hash, group_paths

    if Path(path).suffix != ".npy":
        return load_npy(path, name, mmap=mmap)
    npy, sp = npy_path(path), sidecar_path(path)
    files = group_paths([npy, sp])
    array_file, side = files[npy], files[sp]
    if array_file is None:
        raise no_file(name, path)
    arr = load_npy(array_file, name, mmap=mmap)
    meta = read_sidecar(path, side) if side is not None else {}
    for key, actual in (
        ("rows", arr.shape[0] if arr.ndim else None),
        ("dim", arr.shape[-1] if arr.ndim else None),
    ):
        if meta.get(key) is not None and meta[key] != actual:
            raise AnchorDivError(
                f"{name}: {path} has {key} = {actual} but its sidecar "
                f"{sp.name} says {meta[key]} (stale sidecar?)"
            )
    # refuse a sidecar off its digest, an array off its data_hash, or an unpinned sidecar
    digest = card_digest(meta) if meta else None
    if "digest" in meta and meta["digest"] != digest:
        raise AnchorDivError(f"{path}: its sidecar {sp.name} does not match its digest (edited?)")
    if "data_hash" in meta and meta["data_hash"] != data_hash({"embeddings": np.asarray(arr)}):
        raise AnchorDivError(
            f"{path}: the array is not the one its sidecar {sp.name} describes (the pair was "
            f"mixed by another writer, or a file edited)"
        )
    pins = PINS.get()
    if pins and not meta:  # a deleted sidecar must not skip the check it carries
        if data_hash({"embeddings": np.asarray(arr)}) in pins:
            return arr  # a plain array pinned by its own digest
        raise AnchorDivError(
            f"{path}: has no provenance sidecar {sp.name}, so it cannot be checked against the "
            f"digests pinned with --sha256 (restore the sidecar, or pin the plain array too: "
            f"ad.bundle_digest({str(npy)!r}))"
        )
    if pins and ("digest" not in meta or digest not in pins):
        raise AnchorDivError(
            f"{path}: its sidecar's digest {digest} is not one pinned with --sha256 (pin it "
            f"too: ad.bundle_digest({str(npy)!r}))"
        )
    if not meta:
        return arr
    enc, tau = meta.get("encoder"), meta.get("logit_scale")
    bad = [] if enc is None or isinstance(enc, str) else ["encoder"]
    if tau is not None and (
        isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau < float("inf")
    ):
        bad.append("logit_scale")
    for key in ("texts", "sources"):
        v = meta.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(t, str) for t in v)):
            bad.append(key)
    if bad:
        raise AnchorDivError(f"{sp}: provenance sidecar has malformed {', '.join(bad)}")
    return with_provenance(arr, {k: meta[k] for k in (*KEYS, "texts", "sources") if k in meta})


# ---- unit norm -----------------------------------------------------------------------------

#: Rows whose Euclidean norm differs from 1 by more than this count as not unit-norm.
UNIT_NORM_TOLERANCE = 1e-3


class AnchorDivWarning(UserWarning):
    """Input that is legal but probably not what was meant (e.g. non-unit-norm embeddings).

    A subclass of ``UserWarning``; filter it with ``warnings.simplefilter("error",
    ad.AnchorDivWarning)`` to make such inputs fail.

    Parameters
    ----------
    message : str
        What looks wrong and how to silence it.

    Examples
    --------
    >>> import warnings
    >>> x = np.eye(4)[:3] * 2.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = ad.fit("gaussian", np.vstack([x, [[0.0, 0.0, 0.0, 2.0]]]), tau=20.0)
    >>> any(issubclass(w.category, ad.AnchorDivWarning) for w in caught)
    True
    """


class NormTally:
    """The rows off unit norm of one array read in blocks (a streamed gallery): :meth:`add`
    each block ``[n, d]`` as it is read, then :meth:`warn` once — the warning of
    :func:`warn_not_unit` for the whole array.  Norms are computed in the block's own dtype
    (one pass, no float64 copy: cheap beside the divergences it guards); a row whose squared
    norm overflows has norm inf and counts as off."""

    def __init__(self) -> None:
        self.rows = self.off = 0
        self.low, self.high = np.inf, -np.inf

    def add(self, x) -> None:
        """Count the rows of ``x [n, d]`` (a numpy or JAX array)."""
        x = np.asarray(x)
        if not len(x):
            return
        with np.errstate(over="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", x, x))
        self.rows += len(norms)
        self.off += int(np.count_nonzero(~(np.abs(norms - 1) <= UNIT_NORM_TOLERANCE)))
        self.low = min(self.low, float(norms.min()))
        self.high = max(self.high, float(norms.max()))

    def warn(self, name: str) -> None:
        """An :class:`AnchorDivWarning` naming ``name`` if any row counted is off unit norm."""
        if self.off:
            warnings.warn(
                f"{name}: {self.off} of {self.rows} rows are not unit-norm (norms "
                f"{self.low:.3g}..{self.high:.3g}); contrastive embeddings and tau "
                f"assume unit vectors — normalise them (x / ||x||) first",
                AnchorDivWarning,
                stacklevel=user_stacklevel(),
            )


def warn_not_unit(name: str, x: np.ndarray) -> None:
    """The :func:`unit_norm` warning for rows of ``x [n, d]`` off unit norm (a
    :class:`NormTally` of the one block ``x``)."""
    tally = NormTally()
    tally.add(x)
    tally.warn(name)


def unit_norm(name: str, x: np.ndarray, normalize: bool) -> np.ndarray:
    """``x [n, d]`` with unit-norm rows when ``normalize``; otherwise ``x`` unchanged, with a
    warning if some row's norm is off 1 by more than :data:`UNIT_NORM_TOLERANCE` (contrastive
    encoders produce unit vectors, and τ is calibrated for them)."""
    norms = np.linalg.norm(np.asarray(x, np.float64), axis=-1)
    if normalize:
        if np.any(norms == 0):
            raise AnchorDivError(
                f"{name}: row {int(np.argmin(norms))} is all zeros and cannot be normalised"
            )
        return (np.asarray(x) / norms[:, None]).astype(np.asarray(x).dtype)
    off = np.abs(norms - 1) > UNIT_NORM_TOLERANCE
    if off.any():
        warnings.warn(
            f"{name}: {int(off.sum())} of {len(norms)} rows are not unit-norm (norms "
            f"{norms.min():.3g}..{norms.max():.3g}); contrastive embeddings and tau "
            f"assume unit vectors — pass normalize=True to normalise them",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )
    return x
