"""``anchordiv curve``: adaptation curve over target-anchor budgets (CSV + PNG + summary)."""

from __future__ import annotations

import argparse

import numpy as np

from ...errors import AnchorDivError, in_unit_interval
from ._cluster import add_cluster_options, cluster
from ._io import (
    add_flags,
    check_out,
    count,
    current_directory_importable,
    import_object,
    load_broad,
    load_embeddings,
    load_relevance,
    number,
    positive_int,
    report,
)
from .fit import TAU_HELP


def _ints(text: str) -> list[int]:
    """argparse type of ``--budgets``: comma-separated whole numbers >= 1."""
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers >= 1, got {text!r}"
        )
    return values


def register(sub) -> None:
    from ...evaluation.curves import DEFAULT_BUDGETS, DEFAULT_MODELS, ENTRY_POINTS, MODELS

    p = sub.add_parser(
        "curve",
        help="retrieval quality vs number of target anchors, per model",
        description="For each target-anchor budget and several seeded random subsets of the target "
        "anchors, build every model (target-only fits, posteriors adapted from the broad anchors, "
        "the isotropic-prior control, baselines) and evaluate per-query AUPRC on ITEMS (every item "
        "is a query, itself removed from its ranking). Writes OUT/curve.csv (one row per model x "
        "budget x subset), OUT/curve_summary.csv (mean and 95% interval per model x budget), "
        "OUT/curve.png and OUT/needs.json (target anchors each model needs to reach --fraction of "
        "its full-coverage quality, and posterior vs target-only ratios). With --scheduler or "
        "--workers the (budget x subset) cells run as tasks on a Dask cluster; the results are "
        "identical. Prints the mean AUPRC per model and budget as a table (--json: one JSON "
        "object).",
    )
    p.add_argument(
        "broad",
        help="broad anchor embeddings, .npy [m, d] (the prior's source), or a saved prior: a "
        "Gaussian model directory (`anchordiv build-prior`, models/*) or a `prior.save` directory, "
        "standing in as its moment points (exact for the gaussian and latent families; a mixture's "
        "EM would see only those points)",
    )
    p.add_argument("target", help="target anchor embeddings, .npy [N, d] (budgets subsample it)")
    p.add_argument("items", help="item embeddings, .npy [n, d]: queries and gallery")
    p.add_argument(
        "relevance",
        help="binary relevance among items, .npy [n, n]; or per-item labels (items sharing a label "
        "are relevant to each other): .npy [n] classes or [n, L] 0/1 indicators, .txt (one label "
        "per line) or .csv (a header, then one column of labels or one 0/1 column per label)",
    )
    add_flags(p, labels="read RELEVANCE as per-item labels even when it is [n, n] (n labels)")
    p.add_argument("--tau", type=number, help=TAU_HELP)
    p.add_argument("-o", "--out", required=True, help="output directory")
    add_flags(p, "overwrite", "sha256")
    p.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"comma-separated models (default {','.join(DEFAULT_MODELS)}); "
        f"registered: {', '.join(MODELS)}",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="SPEC",
        help="add a model (repeatable): module:function or path/to/file.py:function (a factory "
        "f(broad, target, tau) -> scorer, named after the function; NAME=module:function names "
        "it; modules in the current directory are importable), a module whose import calls "
        "anchordiv.register_model, or a model an installed package registers under the "
        f"{ENTRY_POINTS!r} entry points",
    )
    p.add_argument(
        "--budgets",
        type=_ints,
        default=",".join(map(str, DEFAULT_BUDGETS[:8])),
        help="comma-separated target-anchor budgets; those >= the number of targets "
        "are dropped and 'all targets' is always added (default %(default)s)",
    )
    p.add_argument(
        "--subsets",
        type=positive_int,
        default=5,
        help="random target subsets per budget (default 5)",
    )
    p.add_argument(
        "--queries",
        type=positive_int,
        help="evaluate only this many items (seeded random choice) as queries; "
        "the gallery stays all items (default, and N >= the number of items: every item)",
    )
    p.add_argument(
        "--fraction",
        type=number,
        default=0.9,
        help="quality fraction for the anchors-needed summary (default 0.9), "
        "measured above chance (prevalence)",
    )
    p.add_argument("--seed", type=count, default=0, help="seed for subsets and bootstrap")
    p.add_argument(
        "--n-boot", type=positive_int, default=1000, help="bootstrap resamples (default 1000)"
    )
    p.add_argument("--title", default="adaptation curve", help="plot title")
    add_flags(p, "family", "json")
    add_cluster_options(p)


def _query_rows(n_items: int, n_queries: int | None, seed: int) -> np.ndarray:
    if n_queries is None or n_queries >= n_items:
        return np.arange(n_items)
    if n_queries < 1:
        raise AnchorDivError(f"--queries: must be >= 1, got {n_queries}")
    return np.sort(np.random.default_rng(seed).choice(n_items, n_queries, replace=False))


def curve_models(specs: list[str]) -> dict:
    """``{name: model}`` of ``--models`` names and ``--model`` specs (imported)."""
    from ...evaluation.curves import resolve_model

    out: dict = {}
    for spec in specs:
        name, _, target = spec.rpartition("=") if "=" in spec else ("", "", spec)
        if ":" in target:
            out[name or target.rpartition(":")[2]] = import_object(target, "--model")
        else:
            current_directory_importable()
            out.update(resolve_model(spec))
    return out


def run(args) -> int:
    from ...evaluation.curves import adaptation_curve
    from ...provenance import resolve_tau

    check_out(args, args.out)
    in_unit_interval("--fraction", args.fraction)  # used at the end: checked before the cells
    models = curve_models([m for m in args.models.split(",") if m] + list(args.model))
    items = load_embeddings(args.items, "items")
    broad = load_broad(args.broad, "broad")
    target = load_embeddings(args.target, "target")
    tau = resolve_tau(args.tau, broad=broad, target=target, items=items)
    rows = _query_rows(len(items), args.queries, args.seed)
    relevance = load_relevance(
        args.relevance, len(items), np.arange(len(items)), as_labels=args.labels
    )
    with cluster(args) as client:
        queries, rel = np.asarray(items[rows]), np.asarray(relevance[rows])
        kw = dict(tau=tau, query_index=rows, models=models, budgets=args.budgets)
        kw.update(n_subsets=args.subsets, seed=args.seed, n_boot=args.n_boot, client=client)
        curve = adaptation_curve(broad, target, queries, items, rel, progress=True, **kw)
    paths = curve.write(
        args.out, fraction=args.fraction, title=args.title, overwrite=args.overwrite
    )
    if args.json:
        result = {"paths": paths, "prevalence": curve.prevalence, "summary": curve.summary()}
        report(args, result, title="")
    else:
        print(curve.table())
        print("\nwrote " + ", ".join(f"{k} {v}" for k, v in paths.items()))
    return 0
