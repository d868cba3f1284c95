"""``anchordiv diagnose``: ArviZ summary, plots and retrieval stability of a saved posterior."""

from __future__ import annotations

import warnings
from pathlib import Path

from ...errors import AnchorDivError
from ._io import (
    add_sha256_flag,
    add_json_flag,
    add_overwrite_flag,
    check_encoder,
    check_out,
    load_card_of,
    load_embeddings,
    load_relevance,
    option_applies,
    report,
)


def register(sub) -> None:
    p = sub.add_parser(
        "diagnose",
        help="ArviZ summary, plots and retrieval stability of a saved posterior",
        description="Draw from the saved POSTERIOR (`anchordiv adapt --posterior-out`), write "
        "its interpretable quantities as InferenceData (OUT/idata), the ArviZ "
        "summary (OUT/summary.csv: mean, sd, HDI, ESS, r_hat), posterior and trace "
        "plots (OUT/posterior.png, OUT/trace.png) and, given --queries and "
        "--gallery, the retrieval stability across draws (OUT/stability.csv: top-k "
        "overlap with the point model, and AUPRC with --relevance).",
    )
    p.add_argument("posterior", help="posterior directory from `anchordiv adapt --posterior-out`")
    p.add_argument("-o", "--out", required=True, help="output directory")
    add_overwrite_flag(p)
    add_sha256_flag(p)
    p.add_argument(
        "--num-draws",
        type=int,
        default=200,
        help="draws for the InferenceData and summary (default 200)",
    )
    p.add_argument("--queries", help="query embeddings, .npy [Q, d] (retrieval stability)")
    p.add_argument("--gallery", help="gallery embeddings, .npy [G, d] (retrieval stability)")
    p.add_argument("--relevance", help="binary relevance, .npy [Q, G] (adds AUPRC stability)")
    p.add_argument("-k", type=int, help="top-k for the stability table (default 10)")
    p.add_argument(
        "--stability-draws",
        type=int,
        help="posterior draws for the stability table (default 20)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _plots(idata, out: Path) -> dict[str, str]:
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    post = idata.posterior
    # the interpretable summaries; full mu/Sigma (kept for d <= 8) would swamp the figure
    names = [v for v in post.data_vars if not {"dim", "dim_"} & set(post[v].dims)]
    paths = {}
    for name, fn in (("posterior", az.plot_posterior), ("trace", az.plot_trace)):
        kw = {"compact": True} if name == "trace" else {}
        with az.rc_context({"plot.max_subplots": 200}), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # arviz vs new matplotlib
            axes = fn(idata, var_names=names, **kw)
        fig = axes.ravel()[0].figure if hasattr(axes, "ravel") else axes.figure
        paths[name] = str(out / f"{name}.png")
        fig.savefig(paths[name], dpi=80, bbox_inches="tight")
        plt.close(fig)
    return paths


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


def _stability(args, post, card, out: Path) -> tuple[str | None, list[dict]]:
    from ...evaluation.evaluate import write_rows
    from ...checks.uncertainty import retrieval_uncertainty

    if not (args.queries and args.gallery):
        return None, []
    q = load_embeddings(args.queries, "queries")
    g = load_embeddings(args.gallery, "gallery")
    check_encoder(card, queries=q, gallery=g)
    rel = (
        load_relevance(args.relevance, len(g), n_queries=len(q), queries_hint=None)
        if args.relevance
        else None
    )
    unc = retrieval_uncertainty(
        post,
        q,
        g,
        relevance=rel,
        seed=args.seed,
        **{  # the library's defaults where a flag is not given
            k: v for k, v in (("k", args.k), ("num_draws", args.stability_draws)) if v is not None
        },
    )
    summ = unc.summary()
    rows = [
        {
            "quantity": name,
            "mean": band["mean"],
            "low": band["low"],
            "high": band["high"],
            "interval": summ["interval"],
        }
        for name, band in summ.items()
        if isinstance(band, dict)
    ]
    return str(write_rows(out / "stability.csv", rows)), rows


def run(args) -> int:
    import arviz as az

    from ...adaptation import load_posterior
    from ...checks.uncertainty import inference_data, save_inference_data

    check_stability_options(args)
    check_out(args, args.out)
    card = load_card_of(args.posterior, "posterior")
    post = load_posterior(args.posterior)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    idata = inference_data(post, num_draws=args.num_draws, seed=args.seed)
    summary = az.summary(idata)
    written = {
        "idata": str(
            save_inference_data(
                idata, out / "idata", overwrite=args.overwrite, posterior=args.posterior
            )
        ),
        "summary": str(out / "summary.csv"),
    }
    summary.to_csv(written["summary"])
    written.update(_plots(idata, out))
    stability, rows = _stability(args, post, card, out)
    if stability:
        written["stability"] = stability
    worst = headline(summary)
    report(
        args,
        {**written, "stability_rows": rows, **worst},
        title=f"anchordiv diagnose: {post.kind} posterior ({post.method}) from {args.posterior}",
        fields={
            **written,
            "max r_hat": f"{worst['max_r_hat']:.3f} ({worst['max_r_hat_at']})",
            "min ess_bulk": f"{worst['min_ess_bulk']:.0f} ({worst['min_ess_bulk_at']})",
        },
        rows=rows,
    )
    return 0


def headline(summary) -> dict:
    """The worst R-hat and bulk ESS over every summarised quantity (the model's own sites
    included) and where they are (``az.summary`` row names)."""
    rhat, ess = summary["r_hat"], summary["ess_bulk"]
    return {
        "max_r_hat": float(rhat.max()),
        "max_r_hat_at": str(rhat.idxmax()),
        "min_ess_bulk": float(ess.min()),
        "min_ess_bulk_at": str(ess.idxmin()),
    }
