"""File helpers shared by the subcommands: reading embeddings and scorers, writing results and
printing them (a short human table by default, JSON with ``--json``)."""

from __future__ import annotations

import argparse
import csv
import importlib
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np

from ...errors import AnchorDivError, no_file
from ...provenance import load_embeddings


def load_broad(path: str, name: str = "broad") -> np.ndarray:
    """Broad anchors ``[N, d]``: a ``.npy``, or the moment points of a saved model or prior."""
    if not Path(path).is_dir():
        return load_embeddings(path, name)
    from ...adaptation import broad_from_model, load_prior, stand_in_anchors
    from ...anchors.base import psd_factor
    from ...anchors.gaussian import Gaussian
    from ...io import load_card, load_model
    from ...provenance import with_provenance

    card = load_card(path)
    check_family_known(card, path, name)
    if card.get("type") == "anchor-model":
        return stand_in_anchors(load_model(path), card)
    if card.get("type") != "prior":
        raise AnchorDivError(
            f"{name}: {path} holds a {card.get('type')!r}; expected broad anchors "
            f"(.npy), a saved Gaussian model (`anchordiv build-prior`, "
            f"`anchordiv fit gaussian`) or a saved prior (`prior.save`)"
        )
    prior = load_prior(path)
    if not (hasattr(prior, "mu0") and hasattr(prior, "cov")):
        raise AnchorDivError(
            f"{name}: {path} holds a saved {prior.kind} prior, which keeps no "
            f"broad mean and covariance to stand in for the broad anchors; "
            f"pass the broad anchors (.npy) or a saved Gaussian model"
        )
    factor = psd_factor(np.asarray(prior.cov, np.float64))  # absent directions are dropped
    mean = np.asarray(prior.mu0, np.float64)
    points = broad_from_model(Gaussian(mean=mean, factor=factor, tau=1.0))
    card = {**prior.card.get("card", {}), **card}
    return with_provenance(
        points,
        encoder=card.get("encoder"),
        logit_scale=card.get("tau"),
        stand_in="moment points of a saved prior",
    )


#: file suffixes of per-item labels besides ``.npy``
LABEL_SUFFIXES = (".txt", ".csv", ".tsv")


def load_labels(path: str, name: str = "labels") -> np.ndarray:
    """Per-item labels from ``.npy``, ``.txt`` (one per line) or ``.csv``/``.tsv`` (a header, then
    one class column or one 0/1 column per label): ``[n]`` integer classes (texts numbered in
    sorted order) or ``[n, L]`` booleans."""
    suffix = Path(path).suffix.lower()
    if suffix not in LABEL_SUFFIXES:
        return np.asarray(load_embeddings(path, name))
    text = read_utf8(path, name)
    if suffix == ".txt":
        lines = text.rstrip().splitlines()
        blank = [i + 1 for i, ln in enumerate(lines) if not ln.strip()]
        if blank:
            raise AnchorDivError(
                f"{name}: {path} line {blank[0]} is blank; a .txt label file "
                f"has one label per line, one line per item"
            )
        return _classes([ln.strip() for ln in lines], name, path)
    rows = [
        r
        for r in csv.reader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ",")
        if any(c.strip() for c in r)
    ]
    if len(rows) < 2:
        raise AnchorDivError(f"{name}: {path} needs a header row and one row per item")
    header, body = rows[0], rows[1:]
    bad = [i + 2 for i, r in enumerate(body) if len(r) != len(header)]
    if bad:
        raise AnchorDivError(
            f"{name}: {path} row {bad[0]} has a different number of columns "
            f"than the header ({len(header)})"
        )
    if len(header) == 1:
        return _classes([r[0].strip() for r in body], name, path)
    cells = np.array([[c.strip().lower() for c in r] for r in body])
    ones, zeros = np.isin(cells, ("1", "true", "yes")), np.isin(cells, ("0", "false", "no", ""))
    if not (ones | zeros).all():
        i, j = np.argwhere(~(ones | zeros))[0]
        raise AnchorDivError(
            f"{name}: {path} has {len(header)} columns, read as one 0/1 "
            f"indicator per label, but row {i + 2} column {header[j]!r} holds "
            f"{body[i][j]!r}; give one column for class labels"
        )
    return ones


def read_utf8(path: str, name: str) -> str:
    """The text of the UTF-8 file ``path`` (errors name the option ``name``)."""
    if not Path(path).is_file():
        raise no_file(name, path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnchorDivError(f"{name}: {path} is not a UTF-8 text file") from None


def _classes(values: list[str], name: str, path) -> np.ndarray:
    if not values:
        raise AnchorDivError(f"{name}: {path} holds no labels")
    try:
        return np.array([int(v) for v in values])
    except ValueError:
        return np.unique(np.array(values), return_inverse=True)[1]


def load_relevance(
    path: str,
    n_gallery: int,
    query_rows=None,
    *,
    n_queries: int | None = None,
    as_labels: bool = False,
    name: str = "relevance",
    queries_hint: str | None = "omit --queries, or pass --query-index",
) -> np.ndarray:
    """``[Q, G]`` relevance: a ``[Q, G]`` matrix (unless ``as_labels``), or per-item labels of the
    gallery (:func:`load_labels`; ``[G, L]`` indicators only ``as_labels``, ``--labels``) for
    queries that are gallery rows ``query_rows``; ``queries_hint`` says how to make them so."""
    from ...evaluation.evaluate import check_labels, shared_label_relevance

    rel = load_labels(path, name)
    nq = len(query_rows) if query_rows is not None else n_queries
    from_text = Path(path).suffix.lower() in LABEL_SUFFIXES
    if rel.ndim == 2 and rel.shape == (nq, n_gallery) and not as_labels and not from_text:
        return rel
    wanted = (
        f"expected a [{nq}, {n_gallery}] relevance matrix (queries x gallery), [{n_gallery}] "
        f"labels or, with --labels, [{n_gallery}, L] 0/1 label indicators; got {list(rel.shape)}"
    )
    if rel.ndim not in (1, 2) or rel.shape[0] != n_gallery:
        raise AnchorDivError(f"{name}: {wanted}")
    if rel.ndim == 2 and not (as_labels or from_text):
        raise AnchorDivError(
            f"{name}: {wanted} (pass --labels if it holds one 0/1 column per label)"
        )
    labels = check_labels(name, rel)
    if query_rows is None:
        hint = f" ({queries_hint})" if queries_hint else ""
        raise AnchorDivError(
            f"{name}: per-item labels give the queries' relevance only when the queries are "
            f"gallery rows{hint}; otherwise pass a [{nq}, {n_gallery}] relevance matrix"
        )
    rows = np.asarray(query_rows)
    if (rows < 0).any():
        raise AnchorDivError(
            f"{name}: per-item labels need every query's gallery row; "
            f"{int((rows < 0).sum())} query index entries are -1"
        )
    return shared_label_relevance(labels[rows], labels)


def import_object(spec: str, name: str):
    """The object ``module:attr`` or ``file.py:attr`` names; errors name the flag ``name``."""
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr:
        what = "Class" if name == "--family" else "function"  # --family names a class
        raise AnchorDivError(f"{name}: expected module:{what} or file.py:{what}, got {spec!r}")
    try:
        if module.endswith(".py"):
            if not Path(module).is_file():
                raise AnchorDivError(f"{name}: no such file: {module}")
            key = f"anchordiv_user_{abs(hash(str(Path(module).resolve())))}"
            loader = importlib.util.spec_from_file_location(key, module)
            mod = importlib.util.module_from_spec(loader)
            sys.modules[key] = mod  # dataclasses look the module up (string annotations)
            try:
                loader.loader.exec_module(mod)
            except BaseException:
                del sys.modules[key]
                raise
        else:
            current_directory_importable()
            mod = importlib.import_module(module)
    except AnchorDivError as err:
        raise AnchorDivError(
            str(err) if str(err).startswith(f"{name}:") else f"{name}: {module}: {err}"
        ) from None
    except ImportError as err:
        raise AnchorDivError(f"{name}: cannot import {module!r} ({err})") from None
    except SyntaxError as err:
        raise AnchorDivError(
            f"{name}: {err.filename or module}, line {err.lineno}: syntax error: {err.msg}"
        ) from None
    except Exception as err:  # noqa: BLE001 — the user's module code: reported with its name
        raise AnchorDivError(
            f"{name}: importing {module!r} raised {type(err).__name__}: {err}"
        ) from err
    if not hasattr(mod, attr):
        raise AnchorDivError(f"{name}: {module!r} has no {attr!r}")
    return getattr(mod, attr)


def current_directory_importable() -> None:
    """Put the current directory on ``sys.path`` (a user's module beside the command line)."""
    if "" not in sys.path and "." not in sys.path:
        sys.path.append("")


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (a count, a size, a batch)."""
    return _whole(text, 1)


def count(text: str) -> int:
    """argparse type: a whole number >= 0 (a count where 0 means none, a seed)."""
    return _whole(text, 0)


def _whole(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}")
    return value


def number(text: str) -> float:
    """argparse type: a finite float."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


#: The flags several commands share: ``{name: add_argument keywords}`` (:func:`add_flags`).
FLAGS = {
    "overwrite": dict(
        action="store_true",
        help="replace existing outputs (default: an existing non-empty -o is an "
        "error, reported before anything runs)",
    ),
    "sha256": dict(
        action="append",
        metavar="DIGEST",
        help="refuse any saved prior/posterior/model or embeddings sidecar read whose digest "
        "is not one of these, and any embeddings file without a sidecar whose array is not "
        "(repeatable; `anchordiv priors` prints the shipped priors' digests, "
        "ad.bundle_digest('X.npy') a sidecar's or a plain array's)",
    ),
    "family": dict(
        metavar="MODULE:CLASS",
        help="a prior family of your own (an anchordiv.Family subclass its module registers with "
        "ad.family), as module:Class (importable, the current directory included) or "
        "path/to/file.py:Class; imported before anything is read, so that its kind is known",
    ),
    "random-weights": dict(
        action="store_true",
        help="allow an open_clip model without --pretrained, randomly initialised from --seed "
        "(default 0; so a rerun reuses its cached embeddings) — for tests and speed "
        "measurements: its embeddings mean nothing; a report says so first",
    ),
    "json": dict(
        action="store_true", help="print the result as one JSON object instead of a table"
    ),
}


def add_flags(p, *names: str, **helps: str) -> None:
    """Add the shared flags ``names`` to ``p``, then ``helps``' (unknown: an on/off switch)."""
    for name in names:
        p.add_argument(f"--{name}", **FLAGS[name])
    for name, text in helps.items():
        p.add_argument(f"--{name}", **{**FLAGS.get(name, {"action": "store_true"}), "help": text})


def check_out(args, *paths, file: bool = False) -> None:
    """Refuse existing outputs ``paths`` (files with ``file``) unless ``--overwrite``, and two
    outputs in one place (one the other, or inside it: the second write would replace the
    first)."""
    from ...errors import check_output

    given = [Path(p).absolute() for p in paths if p is not None]
    for i, a in enumerate(given):
        for b in given[i + 1 :]:
            if a == b or a in b.parents or b in a.parents:
                raise AnchorDivError(
                    f"output {b}: the same place as, or inside, the output {a}; give each "
                    f"output a folder of its own"
                )
    for path in paths:
        if path is not None:
            check_output(path, args.overwrite, file=file)
            writable_place(path)


def writable_place(path) -> None:
    """Refuse an output ``path`` that cannot be made: a file where a folder above it must be
    (reported before any work, not as "Not a directory" after it)."""
    above = next((p for p in Path(path).absolute().parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise AnchorDivError(f"output {path}: {above} is a file, not a folder")


def option_applies(flag: str, value, applies: bool, why: str) -> None:
    """Refuse an option given (``value`` not None) where it does not apply."""
    if value is not None and not applies:
        raise AnchorDivError(f"{flag}: {why}")


def load_card_of(path: str, name: str) -> dict:
    """The card of the bundle directory ``path`` (model or posterior)."""
    from ...io import load_card

    if not Path(path).is_dir():
        raise AnchorDivError(f"{name}: no such model or posterior directory: {path}")
    card = load_card(path)
    check_family_known(card, path, name)
    return card


def load_scorer(path: str, name: str = "MODEL", summary: str = "mean"):
    """``(model, card)`` of a model directory or a saved posterior (its ``summary`` point)."""
    from ...adaptation import load_posterior
    from ...io import load_model

    card = load_card_of(path, name)
    if card.get("type") == "posterior":
        return load_posterior(path).point(summary), card
    if card.get("type") == "anchor-model":
        return load_model(path), card
    raise AnchorDivError(
        f"{name}: {path} holds a {card.get('type')!r}; expected a model "
        f"(`anchordiv fit`/`adapt -o`) or a posterior (`adapt --posterior-out`)"
    )


def check_encoder(card: dict, **named) -> None:
    """Refuse embeddings whose recorded encoder differs from the one in a model's card."""
    from ...provenance import common_provenance, provenance_of

    want = card.get("encoder")
    common_provenance(**named)
    for name, x in named.items():
        got = provenance_of(x).get("encoder")
        if want and got and got != want:
            raise AnchorDivError(
                f"{name}: embedded with {got}, but the model was fitted to "
                f"{want} embeddings; embed with the model's encoder"
            )


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
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."


def format_table(rows: list[dict]) -> str:
    """A plain-text table of same-keyed dicts (floats to 4 significant digits)."""
    cols = list(rows[0])
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(vals):
        return "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()

    return "\n".join([line(cols), line(["-" * w for w in widths]), *map(line, cells)])


def report(
    args, result: dict, *, title: str, rows: list[dict] | None = None, fields: dict | None = None
) -> None:
    """Print ``result`` as JSON (``--json``) or as ``title``, ``fields`` and a table of ``rows``."""
    if getattr(args, "json", False):
        print(json.dumps(result, default=_plain))
        return
    out = [title]
    out += [
        f"  {k}: {_cell(v) if isinstance(v, float) else v}"
        for k, v in (fields or {}).items()
        if v not in (None, "")
    ]
    if rows:
        out += ["", format_table(rows)]
    print("\n".join(out))


def check_family_known(card: dict, path, name: str) -> None:
    """Refuse a saved posterior or prior (``card``, read from ``path``) whose kind no family
    registers in this process, saying which ``--family`` to pass (before anything loads)."""
    from ...adaptation import FAMILIES
    from ...errors import AnchorDivError

    kind = card.get("kind")
    if card.get("type") not in ("posterior", "prior") or not isinstance(kind, str):
        return
    if kind in FAMILIES:
        return
    module = card.get("family_class_module") or card.get("family_module")
    if not isinstance(module, str) or module.startswith("anchordiv_user_"):
        spec = "path/to/file.py:Class"  # a family imported from a file has no module name
    else:
        spec = f"{module}:Class"
    raise AnchorDivError(
        f"kind: unknown {kind!r}, the kind of the {card['type']} {name} {path}: a family of your "
        f"own, not registered here; pass --family {spec} (the class that registers it with "
        f"ad.family)"
    )
