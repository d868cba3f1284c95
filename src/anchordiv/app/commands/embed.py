"""``anchordiv embed``: embed a text file, a CSV column or an image folder into a ``.npy``."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ...errors import AnchorDivError
from ...provenance import save_embeddings, sidecar_path
from ._io import add_flags, check_out, count, option_applies, positive_int, report

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"}


def register(sub) -> None:
    p = sub.add_parser(
        "embed",
        help="embed texts (text file, CSV column) or an image folder into .npy",
        description="Encode INPUT with an encoder and write unit-norm float32 embeddings [n, d] to "
        "OUT (.npy) and a sidecar OUT.json (encoder id, logit scale that fit/adapt/curve use as "
        "--tau, the texts or image files behind the rows). INPUT is a text file (one text per "
        "line; blank lines are skipped), a .csv/.tsv file with --column, or a folder of images "
        "(open_clip encoders). Embeddings are cached by content, so a second run does not "
        "re-encode.",
    )
    p.add_argument("input", help="text file, .csv/.tsv file, or image folder")
    p.add_argument(
        "-o",
        "--out",
        required=True,
        help="output .npy file (.npy is added when missing; the sidecar is OUT.json)",
    )
    add_flags(p, "overwrite")
    p.add_argument(
        "--encoder",
        default="minilm",
        help="'minilm' (default, offline), 'open_clip:<model name>', 'chexzero', or "
        "'sentence-transformers:<name or path>'",
    )
    p.add_argument(
        "--pretrained", help="open_clip/chexzero: pretrained tag or local checkpoint path"
    )
    p.add_argument("--column", help="CSV/TSV input: the column holding the texts")
    p.add_argument("--recursive", action="store_true", help="image folder: include subfolders")
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        help="image folder: fail on an unreadable image (default) or report it by name and skip it",
    )
    p.add_argument(
        "--batch-size", type=positive_int, default=64, help="inputs per batch (default 64)"
    )
    add_workers_option(p)
    add_flags(p, "random-weights")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    add_flags(p, "json")


def read_texts(path: Path, column: str | None) -> list[str]:
    """Texts from a text file (non-blank lines) or from ``column`` of a CSV/TSV file."""
    if path.suffix.lower() in (".csv", ".tsv"):
        if not column:
            raise AnchorDivError(f"input {path}: a CSV/TSV file needs --column")
        reader = csv.DictReader(
            io.StringIO(_read_text(path), newline=""),
            delimiter="\t" if path.suffix.lower() == ".tsv" else ",",
        )
        if column not in (reader.fieldnames or []):
            raise AnchorDivError(
                f"--column: {column!r} is not a column of {path}; columns: {reader.fieldnames}"
            )
        texts = [row[column] or "" for row in reader]
    else:
        if column:
            raise AnchorDivError("--column applies only to .csv/.tsv input")
        if path.suffix.lower() in IMAGE_SUFFIXES:
            raise AnchorDivError(
                f"input {path}: is an image; pass the folder that holds the "
                f"images (with an open_clip encoder)"
            )
        texts = [ln.strip() for ln in _read_text(path).splitlines()]
        texts = [t for t in texts if t]
    if not texts:
        raise AnchorDivError(f"input {path}: contains no texts")
    return texts


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnchorDivError(
            f"input {path}: is not a UTF-8 text file (binary or another encoding); pass a text "
            "file, a .csv/.tsv file or an image folder"
        ) from None


def image_files(folder: Path, recursive: bool) -> list[Path]:
    files = sorted(
        p
        for p in (folder.rglob("*") if recursive else folder.iterdir())
        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
    )
    if not files:
        raise AnchorDivError(
            f"input {folder}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})"
        )
    return files


def default_workers() -> int:
    """Image worker processes by default: one per CPU core but one, at most 8."""
    import os

    return max(0, min(8, (os.cpu_count() or 1) - 1))


def add_workers_option(p) -> None:
    """``--workers``: processes that read, hash, decode and preprocess images."""
    p.add_argument(
        "--workers",
        type=count,
        metavar="N",
        help="image worker processes that read, hash, decode and preprocess while the model "
        f"encodes (default: CPU cores - 1, at most 8; here {default_workers()}; 0: none)",
    )


def workers(args) -> int:
    """The ``--workers`` value (its default when not given); a negative one, or more than
    4 per CPU core, is refused (:func:`anchordiv.data.encoders.check_workers`)."""
    from ...data.encoders import check_workers

    return check_workers(default_workers() if args.workers is None else args.workers, "--workers")


def run(args) -> int:
    from ...data import check_images, embed_images, embed_texts, get_encoder
    from ...provenance import npy_path

    check_out(args, npy_path(args.out), sidecar_path(args.out), file=True)
    src = Path(args.input)
    if not src.exists():
        raise AnchorDivError(f"input: no such file or folder: {src}")
    kind = "image" if src.is_dir() else "text"
    for flag, value in (("--recursive", args.recursive or None), ("--on-error", args.on_error)):
        option_applies(flag, value, kind == "image", f"applies to an image folder; {src} is a file")
    inputs = image_files(src, args.recursive) if kind == "image" else read_texts(src, args.column)
    opts = dict(cache=not args.no_cache, batch_size=args.batch_size, progress=True)
    if kind == "image":  # every unreadable file named before the model loads
        on_error, n = args.on_error or "raise", workers(args)
        inputs = check_images(inputs, on_error, workers=n, cache=opts["cache"])[0]
    enc = get_encoder(
        args.encoder,
        pretrained=args.pretrained,
        device=args.device,
        random_weights=args.random_weights,
    )
    if kind == "image":
        emb, rows = embed_images(enc, inputs, on_error=on_error, workers=n, **opts)
    else:
        rows, emb = inputs, embed_texts(enc, inputs, **opts)
    meta = {"encoder": enc.id, "logit_scale": enc.logit_scale, "kind": kind}
    behind = {"sources" if kind == "image" else "texts": rows}
    out = save_embeddings(
        args.out,
        emb,
        overwrite=args.overwrite,
        **meta,
        input=str(src),
        column=args.column,
        **behind,
    )
    info = {"embeddings": str(out), "sidecar": str(sidecar_path(out)), **meta}
    info.update(rows=int(emb.shape[0]), dim=int(emb.shape[1]), input=str(src))
    fields = {k: info[k] for k in ("sidecar", "encoder", "logit_scale", "dim")}
    title = f"anchordiv embed: {info['rows']} {kind}s of {src} -> {out}"
    report(args, info, title=title, fields=fields)
    return 0
