"""The report-sentence prior against the HPO priors in the clinical prior-transfer study.

Task (as ``anchordiv study clinical-transfer``, :func:`anchordiv.app.studies.main_job.
clinical_transfer_part`): a seeded gallery of 2,000 Open-i reports (MiniLM embeddings, cached);
per chest finding its labelled reports as queries (≤ 300, each removed from its own ranking),
relevant = the other reports carrying it; targets = the finding's report-style anchor
sentences (``data.clinical.pathology_anchors``), random subsets per budget shared by every
model.  Priors (moment points of a Gaussian, exact conjugate adaptation with the transfer
study's fixed strengths, ``studies.transfer.adapt_options``):

* ``reports`` — the leave-finding-out report-sentence prior
  (:func:`anchordiv.app.studies.priors.report_prior_points`): sentences of the 1,927 reports
  *outside* the gallery, without the reports carrying the finding and every sentence
  mentioning it (``data.openi.report_corpus``), one prior per finding;
* ``chest-hpo`` / ``all-hpo`` — the shipped ``models/hpo-respiratory-thorax-gaussian`` and
  ``models/hpo-all-gaussian`` (HPO definitions without the findings' subtrees);

each with its isotropic control (same strengths, broad mean and trace, no directions), beside
target-only and cosine.  Reported per finding × kind × budget: paired differences (same target
subsets and queries; 95 % two-level bootstrap over subsets × queries) of ``reports`` − its
control, − target-only, − each HPO prior, − cosine.

    .venv/bin/python benchmarks/bench_clinical_prior.py              # 5 findings, ~15 min
    .venv/bin/python benchmarks/bench_clinical_prior.py --subsets 3  # the recorded run
    .venv/bin/python benchmarks/bench_clinical_prior.py --quick      # 1 finding, smoke run
    .venv/bin/python benchmarks/bench_clinical_prior.py --subsets 3 --kinds gaussian \
        --unguarded --tag unguarded      # + the ablation without the leave-finding-out guard
"""

from __future__ import annotations

import time

import numpy as np

from common import parser, table, write_results

ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
TAU = 20.0
FINDINGS = ("pleural effusion", "edema", "atelectasis", "emphysema", "opacity")
HPO_PRIORS = {"chest-hpo": "hpo-respiratory-thorax-gaussian", "all-hpo": "hpo-all-gaussian"}
REPORTS = "reports"


def clinical_setup(gallery: int, seed: int):
    """``(reports, gallery rows [G], gallery embeddings [G, d], embed)``, as the main job."""
    from anchordiv.app.studies._common import text_embed, subsample
    from anchordiv.data.encoders import get_encoder
    from anchordiv.data import openi

    reports = openi.load_reports()
    embed = text_embed(get_encoder("minilm"))
    g = subsample(len(reports), gallery, seed)
    return reports, g, embed([reports.texts[i] for i in g]), embed


def hpo_points() -> dict[str, np.ndarray]:
    from anchordiv.adaptation import broad_from_model
    from anchordiv.app.studies.priors import load_prior

    return {label: broad_from_model(load_prior(name)) for label, name in HPO_PRIORS.items()}


def contrasts(curve, finding: str, kinds, others) -> list[dict]:
    """``reports`` − control / target-only / each other prior / cosine, per kind and budget."""
    rows = []
    for kind in kinds:
        a = f"{REPORTS}-{kind}"
        versus = {
            "control": f"{REPORTS}-isotropic-{kind}",
            "target-only": kind,
            **{p: f"{p}-{kind}" for p in others},
            "cosine": "cosine",
        }
        for label, b in versus.items():
            rows += [
                {"finding": finding, "kind": kind, "versus": label, **c}
                for c in curve.contrast(a, b)
            ]
    return rows


def _cell(r: dict) -> str:
    if r["difference"] != r["difference"]:
        return "—"
    mark = " ▲" if r["low"] > 0 else " ▼" if r["high"] < 0 else ""
    return f"{r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]{mark}"


def contrast_table(rows: list[dict], finding: str, kind: str) -> str:
    cells = [r for r in rows if r["finding"] == finding and r["kind"] == kind]
    budgets = sorted({r["budget"] for r in cells})
    out = []
    for v in dict.fromkeys(r["versus"] for r in cells):
        row = {"versus": f"reports − {v}"}
        row.update({f"n={b}": _cell(r) for r in cells if r["versus"] == v for b in [r["budget"]]})
        out.append(row)
    return table(out, [("versus", "contrast")] + [(f"n={b}", f"n={b}") for b in budgets])


def means_table(summary: list[dict], kind: str) -> str:
    rows = [r for r in summary if r["kind"] in (kind, "")]
    budgets = sorted({r["budget"] for r in rows})
    out = {}
    for r in rows:
        out.setdefault(r["model"], {"model": r["model"]})[f"n={r['budget']}"] = (
            f"{r['auprc']:.3f}" if r["auprc"] == r["auprc"] else "—"
        )
    return table(list(out.values()), [("model", "model")] + [(f"n={b}", f"n={b}") for b in budgets])


def counts(rows: list[dict]) -> list[dict]:
    """Per kind × contrast: cells (finding × budget) above / below zero at 95 %."""
    out = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        for v in dict.fromkeys(r["versus"] for r in rows):
            c = [
                r
                for r in rows
                if r["kind"] == kind and r["versus"] == v and r["difference"] == r["difference"]
            ]
            out.append(
                {
                    "kind": kind,
                    "contrast": f"reports − {v}",
                    "cells": len(c),
                    "above": sum(r["low"] > 0 for r in c),
                    "below": sum(r["high"] < 0 for r in c),
                    "mean_difference": float(np.mean([r["difference"] for r in c])),
                }
            )
    return out


def unguarded_points(reports, g, embed) -> np.ndarray:
    """The ablation: every sentence of the reports outside the gallery, the finding's reports
    and mentions kept (no leave-finding-out), as moment points."""
    from anchordiv.adaptation import broad_from_model
    from anchordiv.app.build import PriorSpec, build_prior
    from anchordiv.data.vocab import Source

    held = tuple(sorted(reports.uids[i] for i in g))
    spec = PriorSpec("openi-sentences-unguarded", [Source("openi", exclude=held)], None)
    return broad_from_model(build_prior(spec, encoder=ENCODER, embed=embed, tau=TAU).model)


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--subsets", type=int, default=5, help="target subsets per budget")
    p.add_argument("--queries", type=int, default=300, help="queries per finding")
    p.add_argument("--gallery", type=int, default=2000, help="reports in the gallery")
    p.add_argument("--findings", nargs="+", default=list(FINDINGS))
    p.add_argument("--kinds", nargs="+", default=["gaussian", "latent-gaussian"])
    p.add_argument("--budgets", nargs="+", type=int, default=[1, 2, 5, 10, 20, 40])
    p.add_argument(
        "--unguarded",
        action="store_true",
        help="ablation: add the prior of every sentence outside the gallery, the "
        "finding's reports and sentences kept ('unguarded')",
    )
    args = p.parse_args()
    if args.quick:
        args.subsets, args.queries, args.findings = 1, 100, args.findings[:1]
        args.budgets, args.kinds = [1, 2, 5], ["gaussian"]
    from anchordiv.app.studies import clinical as clin, transfer as tr
    from anchordiv.app.studies.priors import report_prior_points
    from anchordiv.data import clinical

    t0 = time.time()
    reports, g, x, embed = clinical_setup(args.gallery, 0)
    t_prior = time.time()
    reps = report_prior_points(reports, g, args.findings, embed=embed, encoder_id=ENCODER, tau=TAU)
    t_prior = time.time() - t_prior
    others = hpo_points()
    if args.unguarded:
        others["unguarded"] = unguarded_points(reports, g, embed)
    rows, summaries, sizes = [], {}, {}
    for f in args.findings:
        q, relevance = clin.finding_queries(reports.finding(f)[g], args.queries, 0)
        setup = {"queries": x[q], "gallery": x, "relevance": relevance, "query_index": q}
        targets = embed(clinical.pathology_anchors(f))
        curve = tr.transfer_curve(
            {REPORTS: reps[f], **others},
            targets,
            setup,
            tau=TAU,
            kinds=args.kinds,
            budgets=args.budgets,
            n_subsets=args.subsets,
            seed=0,
            progress=False,
        )
        summaries[f] = curve.summary()
        rows += contrasts(curve, f, args.kinds, others)
        sizes[f] = {
            "queries": len(q),
            "targets": len(targets),
            "prior_points": len(reps[f]),
            "prevalence": curve.prevalence,
        }
        print(f, f"{time.time() - t0:.0f} s", flush=True)
    total = time.time() - t0
    md = [
        f"Open-i clinical transfer, gallery {len(g)} reports (seed 0), ≤ {args.queries} "
        f"queries per finding, {args.subsets} target subsets per budget, kinds "
        f"{', '.join(args.kinds)}, τ = {TAU:g}, fixed strengths "
        f"{tr.PRIOR_ANCHORS:g} pseudo-anchors (latent rank {tr.LATENT_RANK}); run time "
        f"{total:.0f} s (report priors: {t_prior:.0f} s including embedding their "
        f"sentences).  ▲ / ▼: paired 95 % interval above / below zero.",
        "",
        "## Cells above / below zero (finding × budget)",
        "",
        table(
            counts(rows),
            [
                ("kind", "kind"),
                ("contrast", "contrast"),
                ("cells", "cells"),
                ("above", "above"),
                ("below", "below"),
                ("mean_difference", "mean difference"),
            ],
        ),
    ]
    for f in args.findings:
        md += [
            "",
            f"## {f} ({sizes[f]['queries']} queries, {sizes[f]['targets']} targets, "
            f"prevalence {sizes[f]['prevalence']:.3f})",
        ]
        for kind in args.kinds:
            md += [
                "",
                f"### {kind}: mean AUPRC",
                "",
                means_table(summaries[f], kind),
                "",
                f"### {kind}: paired differences",
                "",
                contrast_table(rows, f, kind),
            ]
    write_results(
        "bench_clinical_prior",
        {
            "args": vars(args),
            "seconds": total,
            "report_prior_seconds": t_prior,
            "sizes": sizes,
            "counts": counts(rows),
            "contrasts": rows,
            "summaries": summaries,
        },
        "\n".join(md),
        tag=args.tag or ("quick" if args.quick else ""),
    )


if __name__ == "__main__":
    main()
