"""``anchordiv embed``: embed a text file, a CSV column or an image folder into a ``.npy``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from ..errors import AnchorDivError
from ._io import write_json

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"}


def register(sub) -> None:
    p = sub.add_parser(
        "embed", help="embed texts (text file, CSV column) or an image folder into .npy",
        description="Encode INPUT with an encoder and write unit-norm float32 embeddings "
                    "[n, d] to OUT (.npy) and a sidecar OUT.json (encoder id, logit scale to "
                    "use as --tau, row sources). INPUT is a text file (one text per line; blank "
                    "lines are skipped), a .csv/.tsv file with --column, or a folder of images "
                    "(open_clip encoders). Embeddings are cached by content, so a second run "
                    "does not re-encode.")
    p.add_argument("input", help="text file, .csv/.tsv file, or image folder")
    p.add_argument("-o", "--out", required=True, help="output .npy file")
    p.add_argument("--encoder", default="minilm",
                   help="'minilm' (default, offline), 'open_clip:<model name>', 'chexzero', or "
                        "'sentence-transformers:<name or path>'")
    p.add_argument("--pretrained",
                   help="open_clip/chexzero: pretrained tag or local checkpoint path")
    p.add_argument("--column", help="CSV/TSV input: the column holding the texts")
    p.add_argument("--recursive", action="store_true", help="image folder: include subfolders")
    p.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                   help="image folder: fail on an unreadable image (default) or report it by "
                        "name and skip it")
    p.add_argument("--batch-size", type=int, default=64, help="inputs per batch (default 64)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.set_defaults(func=run)


def read_texts(path: Path, column: str | None) -> list[str]:
    """Texts from a text file (non-blank lines) or from ``column`` of a CSV/TSV file."""
    if path.suffix.lower() in (".csv", ".tsv"):
        if not column:
            raise AnchorDivError(f"input {path}: a CSV/TSV file needs --column")
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
            if column not in (reader.fieldnames or []):
                raise AnchorDivError(f"--column: {column!r} is not a column of {path}; "
                                     f"columns: {reader.fieldnames}")
            texts = [row[column] or "" for row in reader]
    else:
        if column:
            raise AnchorDivError("--column applies only to .csv/.tsv input")
        texts = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
        texts = [t for t in texts if t]
    if not texts:
        raise AnchorDivError(f"input {path}: contains no texts")
    return texts


def image_files(folder: Path, recursive: bool) -> list[Path]:
    files = sorted(p for p in (folder.rglob("*") if recursive else folder.iterdir())
                   if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise AnchorDivError(f"input {folder}: no image files "
                             f"({', '.join(sorted(IMAGE_SUFFIXES))})")
    return files


def run(args) -> int:
    from ..data import embed_images, embed_texts, get_encoder

    src = Path(args.input)
    if not src.exists():
        raise AnchorDivError(f"input: no such file or folder: {src}")
    enc = get_encoder(args.encoder, pretrained=args.pretrained, device=args.device)
    cache = not args.no_cache
    if src.is_dir():
        emb, rows = embed_images(enc, image_files(src, args.recursive), cache=cache,
                                 batch_size=args.batch_size, progress=True,
                                 on_error=args.on_error)
        kind = "image"
    else:
        rows = read_texts(src, args.column)
        emb = embed_texts(enc, rows, cache=cache, batch_size=args.batch_size, progress=True)
        kind = "text"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, emb)
    info = {"embeddings": str(out), "encoder": enc.id, "logit_scale": enc.logit_scale,
            "kind": kind, "rows": int(emb.shape[0]), "dim": int(emb.shape[1]),
            "input": str(src)}
    write_json(out.with_suffix(".json"), {**info, "sources": rows if kind == "image" else None,
                                          "column": args.column})
    print(json.dumps(info))
    return 0
