"""File helpers shared by the subcommands: reading embeddings and scorers, writing results and
printing them (a short human table by default, JSON with ``--json``)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from ...errors import AnchorDivError
from ...provenance import load_embeddings as _load_embeddings


def load_embeddings(path: str, name: str) -> np.ndarray:
    """An ``[n, d]`` array from a ``.npy`` file (memory-mapped), carrying the provenance of its
    sidecar (``X.json``: encoder, logit scale) when there is one."""
    return _load_embeddings(path, name)


def number_or_auto(text: str):
    """argparse type: a float or the word ``auto`` (bad input: an argparse usage error)."""
    if text == "auto":
        return text
    return number(text)


def number(text: str) -> float:
    """argparse type: a finite float."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def add_overwrite_flag(p) -> None:
    """``--overwrite``: without it an existing output (a non-empty ``-o`` directory, an existing
    output file) is an error, checked before any work is done."""
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing outputs (default: an existing non-empty -o is an "
                        "error, reported before anything runs)")


def check_out(args, *paths, file: bool = False) -> None:
    """Refuse existing outputs ``paths`` (directories, or files with ``file``) unless
    ``--overwrite`` (:func:`anchordiv.errors.check_output`, the rule of every writer)."""
    from ...errors import check_output

    for path in paths:
        if path is not None:
            check_output(path, args.overwrite, file=file)


def add_json_flag(p) -> None:
    p.add_argument("--json", action="store_true",
                   help="print the result as one JSON object instead of a table")


def load_card_of(path: str, name: str) -> dict:
    """The card of the bundle directory ``path`` (model or posterior)."""
    from ...io import load_card

    if not Path(path).is_dir():
        raise AnchorDivError(f"{name}: no such model or posterior directory: {path}")
    return load_card(path)


def load_scorer(path: str, name: str = "MODEL", summary: str = "mean"):
    """``(model, card)`` from a model directory or a saved posterior (scored with its
    ``summary`` point model: ``mean`` or ``map``)."""
    from ...adaptation import load_posterior
    from ...io import load_model

    card = load_card_of(path, name)
    if card.get("type") == "posterior":
        return load_posterior(path).point(summary), card
    if card.get("type") == "anchor-model":
        return load_model(path), card
    raise AnchorDivError(f"{name}: {path} holds a {card.get('type')!r}; expected a model "
                         f"(`anchordiv fit`/`adapt -o`) or a posterior (`adapt --posterior-out`)")


def check_encoder(card: dict, **named) -> None:
    """Refuse embeddings whose recorded encoder differs from the one in a model's card."""
    from ...provenance import common_provenance, provenance_of

    want = card.get("encoder")
    common_provenance(**named)
    for name, x in named.items():
        got = provenance_of(x).get("encoder")
        if want and got and got != want:
            raise AnchorDivError(f"{name}: embedded with {got}, but the model was fitted to "
                                 f"{want} embeddings; embed with the model's encoder")


def write_json(path: str | Path, obj) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(obj, indent=2, default=_plain) + "\n")
    return p


def _plain(x):
    if isinstance(x, (np.integer, np.floating, np.bool_)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


#: Longest text shown in a table cell (longer texts end in "...").
MAX_CELL = 60


def _cell(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "nan" if not math.isfinite(v) else f"{v:.4g}"
    text = "" if v is None else " ".join(str(v).split())
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 3] + "..."


def format_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A plain-text table of same-keyed dicts (floats to 4 significant digits)."""
    if not rows:
        return "(no rows)"
    cols = columns or list(rows[0])
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()
    return "\n".join([line(cols), line(["-" * w for w in widths]), *map(line, cells)])


def report(args, result: dict, *, title: str, rows: list[dict] | None = None,
           fields: dict | None = None) -> None:
    """Print ``result`` as JSON (``--json``) or as ``title``, ``key: value`` lines of ``fields``
    and a table of ``rows``."""
    if getattr(args, "json", False):
        print(json.dumps(result, default=_plain))
        return
    out = [title]
    out += [f"  {k}: {_cell(v) if isinstance(v, float) else v}"
            for k, v in (fields or {}).items() if v not in (None, "")]
    if rows:
        out += ["", format_table(rows)]
    print("\n".join(out))
