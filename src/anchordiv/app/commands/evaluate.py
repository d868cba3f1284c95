"""``anchordiv evaluate``: AUPRC of saved anchor models and the baselines on one retrieval task."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import AnchorDivError, integer
from ...provenance import load_npy
from ._io import (
    add_flags,
    check_out,
    count,
    load_card_of,
    load_embeddings,
    load_relevance,
    load_scorer,
    option_applies,
    positive_int,
    report,
)


def register(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="per-query AUPRC of models and baselines, mean with 95%% interval",
        description="Rank the gallery for every query with each MODEL (score = -divergence) and "
        "with the cosine and inversion baselines, and report the mean per-query "
        "AUPRC with its 95% interval beside the prevalence (the AUPRC of a random "
        "ranking). Writes OUT/evaluation.json, OUT/evaluation.csv (one row per "
        "scorer), OUT/per_query.csv and OUT/evaluation.png.",
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="model directory from `anchordiv fit`/`adapt`, or a posterior directory "
        "(`adapt --posterior-out`), optionally NAME=DIR to name it in the "
        "tables (default name: the directory name)",
    )
    p.add_argument(
        "--summary",
        choices=("mean", "map"),
        help="posterior MODELs: the point summary that scores (default mean; an error "
        "when no MODEL is a posterior)",
    )
    p.add_argument(
        "--draws",
        type=positive_int,
        help="posterior MODELs: score with the mean divergence over this many posterior draws "
        "instead of the point summary (an error with --summary, or when no MODEL is a posterior)",
    )
    p.add_argument("--gallery", required=True, help="gallery embeddings, .npy [G, d]")
    p.add_argument(
        "--relevance",
        required=True,
        help="binary relevance, .npy [Q, G] (row i: which gallery items are relevant to query i); "
        "or per-item labels of the gallery when the queries are gallery rows (no --queries, or "
        "--query-index): .npy [G] classes or [G, L] 0/1 indicators, .txt (one label per line) or "
        ".csv (a header, then one column of labels or one 0/1 column per label); items sharing a "
        "label are relevant",
    )
    add_flags(p, labels="read RELEVANCE as per-item labels even when it is [G, G]")
    p.add_argument(
        "--queries",
        help="query embeddings, .npy [Q, d]; omit to use every gallery item as a "
        "query with itself removed from its own ranking",
    )
    p.add_argument(
        "--query-index",
        help="integer .npy [Q]: gallery row of each query (-1: not in the gallery); "
        "that row is removed from the query's ranking and relevance",
    )
    p.add_argument(
        "--anchors",
        help="the task's anchor embeddings, .npy [n, d] (needed by the inversion baseline)",
    )
    p.add_argument(
        "--baselines",
        default="cosine,inversion",
        help="comma-separated baselines to add (default cosine,inversion; "
        "inversion needs --anchors; pass '' for none)",
    )
    p.add_argument(
        "--interval",
        choices=("bootstrap", "t"),
        default="bootstrap",
        help="95%% interval of the mean: percentile bootstrap over queries (default) or Student-t",
    )
    p.add_argument(
        "--n-boot",
        type=positive_int,
        help="bootstrap resamples (default 2000; not with --interval t)",
    )
    p.add_argument("--seed", type=count, help="bootstrap seed (default 0; not with --interval t)")
    p.add_argument(
        "--chunk",
        type=positive_int,
        help="query rows scored at once (default: about 2M scores per block)",
    )
    p.add_argument("-o", "--out", required=True, help="output directory")
    add_flags(p, "overwrite", "sha256", "family", "json")


def _models(specs: list[str], summary: str | None, draws: int | None) -> dict:
    """``{name: scorer}`` of the MODEL arguments (``--summary``/``--draws``: posteriors)."""
    if draws is not None:
        draws = integer("--draws", draws, low=1)
        if summary is not None:
            raise AnchorDivError(
                "--draws: scores with the mean divergence over posterior draws, not a point "
                "summary; drop --summary (or --draws)"
            )
    out, kinds = {}, {}
    for spec in specs:
        name, _, path = spec.partition("=") if "=" in spec else (Path(spec).name, "", spec)
        if name in out:
            raise AnchorDivError(f"MODEL: two models are named {name!r}; use NAME=DIR")
        kinds[name] = load_card_of(path, "MODEL").get("type")
        if draws and kinds[name] == "posterior":
            out[name] = _posterior_scorer(path, draws)
        else:
            out[name] = load_scorer(path, "MODEL", summary or "mean")[0]
    for flag, value in (("--draws", draws), ("--summary", summary)):
        option_applies(flag, value, "posterior" in kinds.values(), _POINT_ONLY)
    return out


_POINT_ONLY = (
    "applies to posterior MODELs (`adapt --posterior-out`), and every MODEL given is a point "
    "model (`fit`/`adapt -o`), which scores as saved"
)


def _posterior_scorer(path: str, draws: int):
    """Score = −(mean divergence over ``draws`` posterior draws), ``f(x [c, d], g) -> [c, G]``."""
    from ...adaptation import load_posterior
    from ...retrieval.divergence import divergence

    models = load_posterior(path).sample(0, draws)
    return lambda x, g: -np.mean([np.asarray(divergence(m, x, g)) for m in models], axis=0)


def _query_setup(args, gallery):
    """``(queries, --query-index, gallery row of each query)``."""
    if args.queries is None:
        if args.query_index:
            raise AnchorDivError(
                "--query-index: only with --queries (without --queries every "
                "gallery item is its own query)"
            )
        return gallery, np.arange(len(gallery)), np.arange(len(gallery))
    index = load_npy(args.query_index, "--query-index") if args.query_index else None
    queries = load_embeddings(args.queries, "queries")
    if index is not None and (index.ndim != 1 or len(index) != len(queries)):
        # said here: the relevance is read with it (a wrong length was blamed on the relevance)
        raise AnchorDivError(
            f"--query-index: {len(index) if index.ndim == 1 else list(index.shape)} entries "
            f"for {len(queries)} query rows (one gallery row, or -1, per query)"
        )
    return queries, index, index


def run(args) -> int:
    from ...evaluation.evaluate import evaluate, write_json
    from ...plots import plot_scores
    from ...provenance import common_provenance

    for flag, value in (("--n-boot", args.n_boot), ("--seed", args.seed)):
        option_applies(flag, value, args.interval == "bootstrap", "applies to --interval bootstrap")
    check_out(args, args.out)
    if not args.models and not any(args.baselines.split(",")):
        raise AnchorDivError(
            "nothing to evaluate: give MODEL directories, or baselines with --baselines "
            "(cosine, inversion)"
        )
    gallery = load_embeddings(args.gallery, "gallery")
    queries, index, rows = _query_setup(args, gallery)
    anchors = load_embeddings(args.anchors, "anchors") if args.anchors else None
    common_provenance(gallery=gallery, queries=queries, anchors=anchors)  # one encoder
    baselines = tuple(b for b in args.baselines.split(",") if b)
    relevance = load_relevance(
        args.relevance, len(gallery), rows, n_queries=len(queries), as_labels=args.labels
    )
    boot = {k: v for k, v in (("n_boot", args.n_boot), ("seed", args.seed)) if v is not None}
    kw = dict(anchors=anchors, query_index=index, baselines=baselines, interval=args.interval)
    models = _models(args.models, args.summary, args.draws)
    ev = evaluate(
        models, queries, gallery, relevance, **kw, **boot, chunk=args.chunk, progress=True
    )
    out = Path(args.out)
    result = ev.to_json()
    title = f"retrieval AUPRC, {len(queries)} queries"
    written = {
        "json": str(write_json(out / "evaluation.json", result)),
        "csv": str(ev.write_csv(out / "evaluation.csv")),
        "per_query": str(ev.write_per_query_csv(out / "per_query.csv")),
        "plot": str(plot_scores(ev.summary(), out / "evaluation.png", title=title)),
    }
    shown = ("scorer", "auprc", "low", "high", "prevalence", "n_queries")
    table = [{k: r[k] for k in shown} for r in result["summary"]]
    title = (
        f"anchordiv evaluate: per-query AUPRC, {len(queries)} queries x "
        f"{len(gallery)} gallery items (mean, {ev.interval} {ev.level:.0%} interval)"
    )
    report(args, {"out": str(out), **written, **result}, title=title, fields=written, rows=table)
    return 0
