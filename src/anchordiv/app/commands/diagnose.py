"""``anchordiv diagnose``: ArviZ summary, plots and retrieval stability of a saved posterior."""

from __future__ import annotations

import collections

from pathlib import Path

import numpy as np

from ..._safeio import atomic_dir
from ..._tolerance import TIE_RTOL
from ...errors import AnchorDivError
from ._io import (
    add_flags,
    check_encoder,
    check_out,
    count,
    load_card_of,
    load_embeddings,
    load_relevance,
    option_applies,
    positive_int,
    report,
)


def register(sub) -> None:
    p = sub.add_parser(
        "diagnose",
        help="ArviZ summary, plots and retrieval stability of a saved posterior",
        description="Draw from the saved POSTERIOR (`anchordiv adapt --posterior-out`), write its "
        "interpretable quantities as InferenceData (OUT/idata), the ArviZ summary "
        "(OUT/summary.csv: mean, sd, 94 % HDI, ESS, r_hat; r_hat n/a with one chain), posterior "
        "and trace plots (OUT/posterior.png, OUT/trace.png) and, given --queries and --gallery, "
        "the retrieval stability across draws (OUT/stability.csv: top-k overlap with the point "
        "model, and AUPRC with --relevance), and how much the prior drives the posterior: "
        "power-scaling sensitivity per quantity (OUT/sensitivity.csv) and per power α of the prior "
        "(OUT/sensitivity_curve.csv; with --queries and --gallery, the posterior-mean scorer's "
        "top-k overlap and AUPRC as the prior is scaled).",
    )
    p.add_argument("posterior", help="posterior directory from `anchordiv adapt --posterior-out`")
    p.add_argument("-o", "--out", required=True, help="output directory")
    add_flags(p, "overwrite", "sha256")
    p.add_argument(
        "--num-draws",
        type=positive_int,
        default=200,
        help="draws for the InferenceData and summary (default 200)",
    )
    p.add_argument("--queries", help="query embeddings, .npy [Q, d] (retrieval stability)")
    p.add_argument("--gallery", help="gallery embeddings, .npy [G, d] (retrieval stability)")
    p.add_argument("--relevance", help="binary relevance, .npy [Q, G] (adds AUPRC stability)")
    p.add_argument("-k", type=positive_int, help="top-k for the stability table (default 10)")
    p.add_argument(
        "--stability-draws",
        type=positive_int,
        help="posterior draws for the stability table (default 20)",
    )
    p.add_argument("--seed", type=count, default=0, help="seed of the draws (default 0)")
    add_flags(p, "family", "json")


#: most values per draw of a variable the diagnose figures draw (one panel each); larger
#: sites (a d × d covariance of a user's family) are in summary.csv, not the figures
PLOT_MAX_VALUES = 8


def plotted(idata) -> list[str]:
    """The posterior variables the figures draw: varying, small, within ArviZ's panel limit."""
    from ...checks.arviz import MAX_SUBPLOTS

    post = idata["posterior"]
    size = {
        v: int(np.prod([post[v].sizes[d] for d in post[v].dims[2:]]))
        for v in post.data_vars
        if _spread(post[v].values)  # a constant (a recorded fixed site) has no density
    }
    names, panels = [], 0
    for v in sorted((v for v in size if size[v] <= PLOT_MAX_VALUES), key=lambda v: size[v]):
        if panels + size[v] > MAX_SUBPLOTS // 2:  # the trace plot draws two panels per value
            break
        names.append(v)
        panels += size[v]
    return names


def _spread(x: np.ndarray) -> bool:
    """Whether a variable ``[chain, draw, ...]`` is finite and varies beyond rounding."""
    x = np.asarray(x, np.float64)
    if not np.all(np.isfinite(x)):
        return False
    flat = x.reshape(-1, *x.shape[2:])
    # values that tie (TIE_RTOL of their magnitude: a last-bit wobble) are a constant
    return bool(np.any(np.ptp(flat, axis=0) > TIE_RTOL * np.abs(flat).max(0)))


def _plots(idata, out: Path, final: Path) -> dict[str, str]:
    """The posterior and trace figures, written in ``out``, reported at ``final``."""
    import matplotlib

    matplotlib.use("Agg")
    from ...checks import arviz as adz

    names = plotted(idata)
    if not names:
        return {}
    adz.plot_posterior(idata, names, out / "posterior.png")
    adz.plot_trace(idata, names, out / "trace.png")
    return {"posterior": str(final / "posterior.png"), "trace": str(final / "trace.png")}


def check_stability_options(args) -> None:
    """The stability table's options are given together or not at all (before any work)."""
    if args.queries and args.gallery:
        return
    if args.queries or args.gallery or args.relevance:
        raise AnchorDivError("--queries and --gallery: give both for the stability table")
    for flag, value in (("-k", args.k), ("--stability-draws", args.stability_draws)):
        option_applies(
            flag, value, False, "applies to the stability table (--queries and --gallery)"
        )


def _retrieval(args, card) -> dict:
    """The stability table's ``queries``, ``gallery`` and ``relevance`` ({} without them)."""
    if not (args.queries and args.gallery):
        return {}
    q = load_embeddings(args.queries, "queries")
    g = load_embeddings(args.gallery, "gallery")
    check_encoder(card, queries=q, gallery=g)
    if not args.relevance:
        return {"queries": q, "gallery": g}
    rel = load_relevance(args.relevance, len(g), n_queries=len(q), queries_hint=None)
    return {"queries": q, "gallery": g, "relevance": rel}


def _stability(args, post, data: dict, out: Path) -> tuple[str | None, list[dict]]:
    from ...evaluation.evaluate import write_rows
    from ...checks.uncertainty import retrieval_uncertainty

    if not data:
        return None, []
    given = (("k", args.k), ("num_draws", args.stability_draws))  # else the library's defaults
    opts = {k: v for k, v in given if v is not None}
    summ = retrieval_uncertainty(post, **data, seed=args.seed, **opts).summary()
    rows = [
        {
            "quantity": name,
            **{k: band[k] for k in ("mean", "low", "high")},
            "interval": summ["interval"],
        }
        for name, band in summ.items()
        if isinstance(band, dict)
    ]
    return str(write_rows(out / "stability.csv", rows)), rows


def _sensitivity(args, post, retrieval: dict, out: Path) -> dict:
    """Power-scaling prior sensitivity: OUT/sensitivity.csv (per quantity),
    OUT/sensitivity_curve.csv (per α) and the printed lines; where the posterior's prior is
    unknown (a user's model, a subspace run, a delta guide), the reason instead."""
    from ...checks.sensitivity import prior_sensitivity

    if retrieval and args.k is not None:
        retrieval = {**retrieval, "k": args.k}
    try:
        res = prior_sensitivity(post, num_draws=args.num_draws, seed=args.seed, **retrieval)
    except AnchorDivError as err:
        return {
            "files": {},
            "result": {"skipped": str(err)},
            "fields": {"prior sensitivity": f"n/a ({err})"},
        }
    table, curve = res.table(), res.curve()
    files = {k: str(out / f"{k}.csv") for k in ("sensitivity", "sensitivity_curve")}
    table.to_csv(files["sensitivity"], index_label="quantity")
    curve.to_csv(files["sensitivity_curve"], index=False)
    worst = sorted(res.worst.items(), key=lambda kv: -kv[1])
    shown = ", ".join(f"{n} {v:.3f}" for n, v in worst[:3])
    counts = collections.Counter(d for d in res.diagnoses.values() if d != "-")
    fields = {
        "prior sensitivity": f"{res.method}, {len(res.sensitive)} of {len(worst)} quantities "
        f"above {res.threshold:g} (largest: {shown})",
        "prior sensitivity, diagnosis": "; ".join(f"{n} × {d}" for d, n in counts.items())
        or "no quantity prior-sensitive",
    }
    if res.topk_overlap is not None:
        # the α curve: robustness of the ranking to the prior's *strength* only (a dominant
        # prior power-scaled mostly rescales Σ, which leaves a Gaussian ranking unchanged)
        fields["prior strength, retrieval"] = "; ".join(
            f"α {row['alpha']:g}: top-{res.k} overlap {row['topk_overlap']:.3f}"
            + (f", AUPRC {row['auprc']:.3f}" if "auprc" in row else "")
            for row in curve.to_dict("records")
        )
        try:  # the endpoints: whether the prior drives the ranking at all
            fields["prior influence"] = res.influence().describe()
        except AnchorDivError as err:
            fields["prior influence"] = f"n/a ({err})"
    if res.note:
        fields["prior sensitivity, note"] = res.note
    result = {"method": res.method, "sensitivity": res.worst, "curve": curve.to_dict("records")}
    return {"files": files, "result": result, "fields": fields}


def run(args) -> int:
    from ...adaptation import load_posterior
    from ...checks import arviz as adz
    from ...checks.uncertainty import inference_data, save_inference_data

    check_stability_options(args)
    check_out(args, args.out)
    card = load_card_of(args.posterior, "posterior")
    post = load_posterior(args.posterior)
    out = Path(args.out)
    idata = inference_data(post, num_draws=args.num_draws, seed=args.seed)
    summary = adz.summary(idata)
    if post.variational:  # guide draws are independent, not chains: no R-hat to report
        summary["r_hat"] = np.nan
    worst = headline(summary)
    # every file in a temporary sibling, swapped in complete: never a half-finished folder
    with atomic_dir(out, overwrite=args.overwrite) as tmp:
        save_inference_data(idata, tmp / "idata", posterior=args.posterior)
        summary.to_csv(tmp / "summary.csv")
        written = {"idata": str(out / "idata"), "summary": str(out / "summary.csv")}
        written.update(_plots(idata, tmp, out))
        data = _retrieval(args, card)
        stability, rows = _stability(args, post, data, tmp)
        if stability:
            written["stability"] = str(out / Path(stability).name)
        sensitivity = _sensitivity(args, post, data, tmp)  # power-scaling the prior
        written.update({k: str(out / Path(v).name) for k, v in sensitivity["files"].items()})
    result = {
        **written,
        "stability_rows": rows,
        **worst,
        "prior_sensitivity": sensitivity["result"],
    }
    fields = {**written, "max r_hat": _shown(worst["max_r_hat"], worst["max_r_hat_at"], ".3f")}
    fields["min ess_bulk"] = _shown(worst["min_ess_bulk"], worst["min_ess_bulk_at"], ".0f")
    title = f"anchordiv diagnose: {post.kind} posterior ({post.method}) from {args.posterior}"
    report(args, result, title=title, fields={**fields, **sensitivity["fields"]}, rows=rows)
    return 0


def _worst(column, pick: str) -> tuple[float | None, str]:
    """The largest (``pick="max"``) or smallest finite value and its row name, or None."""
    finite = column[np.isfinite(column.to_numpy(float))]
    if finite.empty:
        return None, "n/a"
    at = finite.idxmax() if pick == "max" else finite.idxmin()
    return float(finite[at]), str(at)


def headline(summary) -> dict:
    """The worst R-hat and bulk ESS over every summarised quantity (the model's own sites
    included) and where they are (``az.summary`` row names); None and ``"n/a"`` where no
    quantity has one (R-hat needs two chains: a single-chain NUTS run has none).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"r_hat": [float("nan")] * 2, "ess_bulk": [80.0, 60.0]}, ["a", "b"])
    >>> h = headline(table)
    >>> h["max_r_hat"], h["max_r_hat_at"], h["min_ess_bulk"], h["min_ess_bulk_at"]
    (None, 'n/a', 60.0, 'b')
    """
    values = (*_worst(summary["r_hat"], "max"), *_worst(summary["ess_bulk"], "min"))
    return dict(zip(("max_r_hat", "max_r_hat_at", "min_ess_bulk", "min_ess_bulk_at"), values))


def _shown(value: float | None, at: str, fmt: str) -> str:
    return "n/a" if value is None else f"{value:{fmt}} ({at})"
