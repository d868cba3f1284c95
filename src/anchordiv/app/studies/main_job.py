"""The main job (``anchordiv demo``): every study on real offline data as one markdown report
with PNG figures (docs/guides/studies-and-curves.md); :data:`SIZES` are seeded subsamples, the
same models, kinds, priors and sections at every size."""

from __future__ import annotations

import dataclasses
import datetime
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ...adaptation import stand_in_anchors
from ...anchors import fit
from ...data.cache import STATS as CACHE_STATS
from ...evaluation.curves import MODELS
from ...errors import AnchorDivError
from ...io import stack_versions
from ...evaluation.evaluate import write_json, write_rows
from ..report import Report
from . import budget
from . import clinical as clin
from . import dominance
from . import object_style as ostyle
from . import transfer as tr
from . import wordnet_imagenet as wni
from ._source import Source, TextSource, object_style_task
from ._common import (
    NEIGHBOURS_TITLE,
    SHOWN_QUERIES,
    curve_scorers,
    labelled_retrieval,
    neighbours_section,
    random_weights_note,
    show_neighbours,
    subsample,
    text_embed,
)
from .priors import (
    WORDNET_PRIOR,
    default_models_dir,
    load_prior,
    prior_spec,
    report_prior_points,
)


#: The WordNet → ImageNet curve's models at every size: every default posterior with its control,
#: spectral included (no target-only model: its dominance rows compare it with its control).
WN_MODELS = wni.DEFAULT_MODELS + ("posterior-spectral", "isotropic-spectral")
#: Chest findings of the clinical-transfer study (a size studies a prefix of them).
TR_FINDINGS = ("pleural effusion", "edema", "atelectasis", "emphysema", "opacity")


@dataclasses.dataclass(frozen=True)
class Size:
    """Data sizes, budgets and repeats of one run; the models, kinds, priors and sections are
    the same at every size (:data:`WN_MODELS`, :data:`CLINICAL_KINDS`, :data:`TR_KINDS`,
    :data:`SECTIONS`)."""

    clinical_gallery: int | None = 2000  # reports in the gallery, seeded (None: all 3,927)
    clinical_queries: int = 100  # queries per finding
    clinical_findings: int | None = None  # findings studied (None: all)
    clinical_subsets: int = 3  # random anchor subsets per finding
    wn_classes: int | None = None  # ImageNet classes in the WordNet task (None: all eligible)
    wn_items: int = 8  # hyponym items per class
    wn_queries: int = 300
    wn_templates: int = 6  # prompt templates per class (target anchors per class)
    wn_subsets: int = 3
    wn_budgets: tuple = (1, 2, 5, 10, 20, 50, 200)
    os_objects: int = 24  # ImageNet-R objects in the object/style study
    os_ps: tuple = ostyle.DEFAULT_PS  # mixture weights p of q_p = p·q_obj + (1−p)·q_style
    broad_fallback: int = 3000  # broad anchors embedded when models/ lacks a prior
    tr_objects: int = 24  # objects in the style-transfer task (× 16 styles)
    tr_queries: int = 300  # queries of the style-transfer task / per finding
    tr_subsets: int = 5  # target subsets per budget in the transfer studies
    tr_budgets: tuple = (1, 2, 5, 10, 20, 40)
    tr_n_findings: int | None = None  # the first of TR_FINDINGS studied (None: all)
    tr_gallery: int | None = 2000  # Open-i reports in the clinical-transfer gallery
    tr_prior_reports: int | None = None  # reports outside it for the report prior (None: all)
    # on a dataset's images (``anchordiv study NAME --dataset``; None: all)
    img_classes: int | None = None  # seeded classes kept
    img_per_class: int | None = None  # seeded query and gallery images kept per class (each)
    img_images: int | None = None  # datasets without classes (CheXpert): query, gallery images
    img_queries: int | None = 1000  # queries per retrieval task (seeded)
    img_min_queries: int = 5  # clinical: findings with fewer labelled queries are skipped

    # the same at every size (read as attributes by the studies)
    clinical_kinds = property(lambda self: clin.KINDS)  # target-only kinds per finding
    wn_models = property(lambda self: WN_MODELS)
    tr_kinds = property(lambda self: tr.KINDS)  # kinds adapted from each transfer prior
    tr_findings = property(lambda self: TR_FINDINGS[: self.tr_n_findings])


#: the full run, and the small one (the tests'), per study
SIZES = {
    "full": Size(),
    "small": dataclasses.replace(
        Size(),
        **dict(clinical_gallery=300, clinical_queries=15, clinical_findings=2, clinical_subsets=2),
        **dict(wn_classes=6, wn_items=4, wn_queries=20, wn_templates=2, wn_subsets=1),
        **dict(wn_budgets=(2,), os_objects=4, os_ps=(0.0, 0.1, 1.0), broad_fallback=200),
        **dict(tr_objects=4, tr_queries=20, tr_subsets=1, tr_budgets=(1, 2), tr_n_findings=1),
        **dict(tr_gallery=300, tr_prior_reports=100),
        **dict(img_classes=4, img_per_class=4, img_images=16, img_queries=8, img_min_queries=2),
    ),
}


@dataclasses.dataclass(frozen=True)
class Context:
    """What every part of the report needs, in either form (text or a dataset's images)."""

    rep: Report
    embed: Callable  # texts -> embeddings (the encoder's text tower)
    size: Size
    models_dir: Path
    seed: int
    tau: float  # the encoder's logit scale
    encoder_id: str  # priors in models/ built with another encoder are not used
    #: each study's part of "What each geometry retrieves" (``_common.Shown``), in report order
    shown: list = dataclasses.field(default_factory=list)
    #: what the items are (:class:`._source.Source`): the text analogues or a dataset's images
    source: Source = dataclasses.field(default_factory=TextSource)


def clinical_part(ctx: Context) -> dict:
    """Retrieval per finding with pathology anchors (Tables 2–3): Open-i reports or images."""
    from ...adaptation import adapt
    from ...data import clinical

    data = ctx.source.clinical_data(ctx)
    findings, tau = data["findings"], ctx.tau
    anchors = {f: ctx.embed(clinical.pathology_anchors(f)) for f in findings}
    negated = {f: ctx.embed(clinical.pathology_anchors(f, negated=True)) for f in findings}
    # positive + negated sentences: the covariance then spans the "X" vs "no X" direction
    extra = {
        "gaussian+negated": lambda f, a: fit("gaussian", np.concatenate([a, negated[f]]), tau=tau)
    }
    prior = ctx.source.clinical_prior(ctx)
    if prior is not None:
        broad = stand_in_anchors(prior)
        extra["posterior-gaussian"] = lambda f, a: adapt("gaussian", broad, a, tau=tau).point(
            "mean"
        )
    result = clin.clinical_study(
        data["x"],
        data["labels"],
        findings,
        anchors,
        tau=tau,
        kinds=ctx.size.clinical_kinds,
        extra_models=extra,
        n_subsets=ctx.size.clinical_subsets,
        seed=ctx.seed,
        **data["study"],
    )
    write_rows(ctx.rep.path("clinical.csv"), result.rows)
    clin.plot_clinical(result.rows, ctx.rep.path("clinical.png"), **data["plot"])
    clin.report_section(ctx.rep, result.rows, prior=prior is not None, **data["section"])
    ctx.source.show_clinical(ctx, result, data, anchors, extra)
    return {"rows": result.rows}


def prior_points(ctx: Context, name: str) -> tuple[np.ndarray, str]:
    """``(moment points [2r, d], source)`` of shipped prior ``name``: from models/ or —
    documented fallback — built now from ``broad_fallback`` anchors of its spec."""
    prior = load_prior(name, ctx.models_dir, ctx.encoder_id)
    source = f"models/{name}"
    if prior is None:
        from ..build import build_prior

        n = ctx.size.broad_fallback
        prior = build_prior(
            prior_spec(name, n), encoder=ctx.encoder_id, embed=ctx.embed, tau=ctx.tau
        ).model
        source = f"{name}: {n} anchors embedded now (models/ has no such prior)"
    return stand_in_anchors(prior), source


def study_curve(ctx: Context, task, emb, broad, models, query_mask=None, max_queries=None):
    """The WordNet → ImageNet curve of ``task`` at the context's size (``budgets``,
    ``max_queries``: the size's unless given; ``query_mask``: a dataset's split)."""
    size, max_queries = ctx.size, max_queries or ctx.size.wn_queries
    opts = dict(budgets=size.wn_budgets, n_subsets=size.wn_subsets, max_queries=max_queries)
    return wni.wordnet_imagenet_study(
        task, emb, broad, tau=ctx.tau, models=models, seed=ctx.seed, query_mask=query_mask, **opts
    )


def budget_section(ctx: Context, task, curve, source: str | None = None) -> list[dict]:
    """budget.csv, budget.png and the anchor-budget section from ``curve``'s target-only rows
    (``section``: title/source of :func:`.budget.report_section`)."""
    rows = budget.budget_rows(curve, task.target_class, ctx.seed)
    write_rows(ctx.rep.path("budget.csv"), rows)
    budget.plot_budget(rows, ctx.rep.path("budget.png"))
    budget.report_section(ctx.rep, rows, **ctx.source.budget_text(ctx, task, source))
    return rows


def wordnet_part(ctx: Context) -> dict:
    """The adaptation curve (Fig. 5) and, from the same curve, the anchor budget (Fig. 4)."""
    task, emb, kw = ctx.source.class_task(ctx)
    broad, source = prior_points(ctx, WORDNET_PRIOR)
    curve = study_curve(ctx, task, emb, broad, ctx.size.wn_models, **kw)
    files = curve.write(
        ctx.rep.out_dir / "wordnet_imagenet",
        overwrite=True,
        title=f"WordNet → {ctx.source.curve_target()}: AUPRC vs target anchors",
    )
    needs = curve.needs(0.9)
    text = ctx.source.wordnet_text(ctx, task, source)
    wni.report_section(ctx.rep, task, curve, needs, source, **text)
    ctx.source.show_curve(ctx, "wordnet-imagenet", task, emb, broad, curve)
    checks = ctx.source.posterior_checks(ctx, task, emb, broad, curve)
    budget_section(ctx, task, curve, "the curve above")
    return {"files": files, "needs": needs, **checks}


def budget_part(ctx: Context) -> dict:
    """The anchor budget alone: the same task and budgets, target-only models and baselines."""
    task, emb, kw = ctx.source.class_task(ctx)
    models = [m for m in ctx.size.wn_models if MODELS[m].role in budget.ROLES]
    curve = study_curve(ctx, task, emb, emb.targets, models, **kw)  # broad unused by these
    rows = budget_section(ctx, task, curve)
    ctx.source.show_curve(ctx, "budget", task, emb, None, curve)
    return ctx.source.budget_result(rows, curve)


def object_style_part(ctx: Context) -> dict:
    """Object vs style retrieval as p of q_p = p·q_obj + (1−p)·q_style moves (Fig. 3)."""
    task, emb, kw = ctx.source.object_style_data(ctx)
    rows = ostyle.object_style_study(
        task, emb, ps=ctx.size.os_ps, tau=ctx.tau, seed=ctx.seed, **kw["study"]
    )
    write_rows(ctx.rep.path("object_style.csv"), rows)
    ostyle.plot_object_style(rows, ctx.rep.path("object_style.png"))
    ostyle.report_section(ctx.rep, task, rows, **kw["section"])
    ctx.source.show_object_style(ctx, task, emb, kw)
    return {"rows": rows, **kw["result"]}


#: prior label -> shipped prior, per transfer study (the first is the domain-matched one)
STYLE_PRIORS = {
    "domain": "wordnet-visual-art-gaussian",
    "generic": "wordnet-generic-gaussian",
    "wrong-domain": "imagenet-names-gaussian",
}
CLINICAL_PRIORS = {"chest-hpo": "hpo-respiratory-thorax-gaussian", "all-hpo": "hpo-all-gaussian"}
#: label of the leave-finding-out report-sentence prior (built per finding, first candidate)
REPORT_PRIOR = "reports"


def _transfer(
    ctx: Context,
    priors: dict,
    targets,
    setup,
    folder: str,
    title: str,
    task: str,
    show: dict | None = None,
    **tag,
) -> dict:
    """Curve, contrasts, diagnostics, ranking and dominance rows (``task``, ``tag``) of one
    transfer task; writes its files.  With ``show`` (``title, texts, labels, note``) its first
    kind's geometries go to "What each geometry retrieves"."""
    size = ctx.size
    opts = dict(kinds=size.tr_kinds, budgets=size.tr_budgets, n_subsets=size.tr_subsets)
    curve = tr.transfer_curve(priors, targets, setup, tau=ctx.tau, seed=ctx.seed, **opts)
    summary = curve.summary()
    files = tr.write_curve(curve, summary, ctx.rep.out_dir / folder, size.tr_kinds, title)
    contrasts = tr.contrast_rows(curve, list(priors), size.tr_kinds)
    diagnostics = tr.diagnostic_rows(
        priors, targets, budget=min(5, len(targets)), n_subsets=size.tr_subsets, seed=ctx.seed
    )
    gains = {p: tr.retrieval_gain(contrasts, p) for p in priors}
    for row in diagnostics:
        row["retrieval_gain"] = gains[row["prior"]]
    write_rows(ctx.rep.path(f"{folder}/contrasts.csv"), contrasts)
    write_rows(ctx.rep.path(f"{folder}/diagnostics.csv"), diagnostics)
    if show is not None:
        broad = next(iter(priors.values()))
        scorers, rows = curve_scorers(
            curve, broad, targets, ctx.tau, seed=ctx.seed, kinds=size.tr_kinds[:1]
        )
        qi = setup["query_index"]
        ctx.shown.append(
            show_neighbours(
                show["title"],
                scorers,
                setup["gallery"],
                show["texts"],
                queries=qi[subsample(len(qi), SHOWN_QUERIES, ctx.seed)],
                anchors=targets[rows],
                labels=show["labels"],
                note=f"{show['note']}  Each model built as on the curve from its first seeded "
                f"subset of {len(rows)} target anchors (isotropic controls left out).",
            )
        )
    return {
        "summary": summary,
        "files": files,
        "contrasts": contrasts,
        "diagnostics": diagnostics,
        "ranking": tr.ranking_rows(diagnostics, gains),
        "dominance": dominance.task_rows(
            task, curve, dominance.transfer_names(list(priors), size.tr_kinds, curve.models), **tag
        ),
    }


def _priors(ctx: Context, names: dict) -> tuple[dict, str]:
    points = {label: prior_points(ctx, name) for label, name in names.items()}
    return (
        {k: v[0] for k, v in points.items()},
        "; ".join(f"`{k}` = {v[1]}" for k, v in points.items()),
    )


def style_transfer_part(ctx: Context) -> dict:
    """Style retrieval from a few style anchors, adapted from three priors (:mod:`.transfer`)."""
    task = object_style_task(ctx, ctx.size.tr_objects)
    emb = ostyle.embed_task(task, ctx.embed)
    priors, source = _priors(ctx, STYLE_PRIORS)
    setup = labelled_retrieval(emb.items, task.item_style, ctx.size.tr_queries, ctx.seed)
    out = _transfer(
        ctx,
        priors,
        emb.style_anchors,
        setup,
        "style_transfer",
        "Style retrieval from few style anchors",
        "style transfer",
        show={
            "title": "Prior transfer: style retrieval from few style anchors",
            "texts": task.items,
            "labels": task.item_style,
            "note": "Seeded object × style items as queries against all items; posteriors "
            "from each prior (`domain-`, `generic-`, `wrong-domain-`); ✓ = same style.",
        },
    )
    tr.report_section(
        ctx.rep,
        "Prior transfer with headroom: style retrieval from few style anchors",
        f"{len(task.items)} object × style items ({len(task.objects)} objects × "
        f"{len(task.styles)} ImageNet-R styles, as in the object-vs-style study); relevant = "
        f"same style; targets = the {len(task.style_anchors)} style anchors, random subsets "
        f"per budget ({ctx.size.tr_subsets} each, shared by all models).  Priors: {source}.  "
        f"Every prior excludes every WordNet sense of each style word with its subtree "
        f"(`studies.priors.style_senses`).  Posteriors: exact conjugate adaptation with the "
        f"library's defaults (the held-out recipe: strengths, latent rank and target weight "
        f"chosen from the targets); `*-isotropic-*`: the same prior and strengths with "
        f"an isotropic covariance of the same trace (the control).",
        out["summary"],
        "style_transfer",
        out["contrasts"],
        out["diagnostics"],
        out["ranking"],
        ctx.size.tr_kinds,
        list(priors),
    )
    return out


def clinical_transfer_part(ctx: Context) -> dict:
    """Per chest finding: its anchor sentences as targets, adapted from its leave-finding-out
    report-sentence prior vs the chest HPO region vs all of HPO (:mod:`.transfer`); the results
    of all findings in one section."""
    from ...data import clinical, openi

    reports = openi.load_reports()
    g = subsample(len(reports), ctx.size.tr_gallery, ctx.seed)
    texts = [reports.texts[i] for i in g]
    x = ctx.embed(texts)
    priors, source = _priors(ctx, CLINICAL_PRIORS)
    reps = report_prior_points(
        reports,
        g,
        ctx.size.tr_findings,
        embed=ctx.embed,
        encoder_id=ctx.encoder_id,
        tau=ctx.tau,
        max_reports=ctx.size.tr_prior_reports,
        seed=ctx.seed,
    )
    results = {}
    for f in ctx.size.tr_findings:
        if reports.finding(f)[g].sum() < 5:  # too few labelled reports to query with
            continue
        q, relevance = clin.finding_queries(reports.finding(f)[g], ctx.size.tr_queries, ctx.seed)
        setup = {"queries": x[q], "gallery": x, "relevance": relevance, "query_index": q}
        folder = f"clinical_transfer/{f.replace(' ', '_')}"
        results[f] = _transfer(
            ctx,
            {REPORT_PRIOR: reps[f], **priors},
            ctx.embed(clinical.pathology_anchors(f)),
            setup,
            folder,
            f"Open-i: {f} from few anchors",
            "clinical transfer",
            show=None
            if results
            else {
                "title": f"Prior transfer, clinical: {f} from few sentences",
                "texts": texts,
                "labels": reports.finding(f)[g],
                "note": f"Seeded reports carrying {f} as queries against the {len(g)} "
                f"reports; posteriors from each prior (`{REPORT_PRIOR}-`, `chest-hpo-`, "
                f"`all-hpo-`); ✓ = the report carries {f}.",
            },
            finding=f,
        )
    if not results:
        raise AnchorDivError("clinical transfer: no finding has 5 labelled reports in the gallery")
    merged = {
        key: [{"finding": f, **r} for f, res in results.items() for r in res[key]]
        for key in ("contrasts", "diagnostics", "ranking")
    }
    merged["dominance"] = dominance.merge([res["dominance"] for res in results.values()])
    shown = next(iter(results))
    tr.report_section(
        ctx.rep,
        "Prior transfer, clinical: finding anchors from few sentences",
        f"{len(g)} Open-i reports as the gallery; per finding, its labelled reports as "
        f"queries (≤ {ctx.size.tr_queries}) and its report-style anchor sentences as targets; "
        f"priors: `{REPORT_PRIOR}` = the finding's leave-finding-out Open-i report-sentence "
        f"prior, built now from the reports outside the gallery without the reports carrying "
        f"the finding and every sentence mentioning it (`studies.priors.report_prior_points`); "
        f"{source} (both without the subtrees of every chest finding's HPO terms).  "
        f"Curves shown for {shown}; the tables cover every finding ({', '.join(results)}); "
        f"curves of the others under clinical_transfer/.",
        results[shown]["summary"],
        f"clinical_transfer/{shown.replace(' ', '_')}",
        merged["contrasts"],
        merged["diagnostics"],
        merged["ranking"],
        ctx.size.tr_kinds,
        [REPORT_PRIOR, *priors],
    )
    return merged


#: what the dominance section says about the tasks it covers
DOMINANCE_NOTE = (
    "The budget study reads the WordNet → ImageNet curve (its target-only "
    "models), so its rows are that curve's; `anchordiv study budget` alone "
    "adapts nothing.  Clinical rows are per finding."
)

#: the studies, in report order: name -> part(ctx).  The demo runs DEMO_PARTS; ``budget``
#: alone is for ``anchordiv study budget`` (the demo gets it from the wordnet-imagenet curve).
PARTS = {
    "clinical": clinical_part,
    "wordnet-imagenet": wordnet_part,
    "object-style": object_style_part,
    "budget": budget_part,
    "style-transfer": style_transfer_part,
    "clinical-transfer": clinical_transfer_part,
}
DEMO_PARTS = ("clinical", "wordnet-imagenet", "object-style", "style-transfer", "clinical-transfer")
#: the studies whose results carry dominance rows
DOMINANCE_PARTS = ("wordnet-imagenet", "style-transfer", "clinical-transfer")


#: The report's ``## `` sections of each study (by title prefix), in report order, and those
#: every report of studies ends with (the dominance table only where a study has posteriors).
PART_SECTIONS = {
    "clinical": ("Clinical retrieval",),
    "wordnet-imagenet": (
        "WordNet → ImageNet adaptation",
        "Retrieval uncertainty across posterior draws",
        "Prior sensitivity across the budget",
        "Anchor budget",
    ),
    "object-style": ("Object vs style",),
    "budget": ("Anchor budget",),
    "style-transfer": ("Prior transfer with headroom",),
    "clinical-transfer": ("Prior transfer, clinical",),
}
CLOSING_SECTIONS = (NEIGHBOURS_TITLE, "Run")


def sections(parts=DEMO_PARTS) -> list[str]:
    """The ``## `` sections (title prefixes) a report of ``parts`` has, in order — the same at
    every size."""
    out = [t for p in parts for t in PART_SECTIONS[p]]
    if any(p in DOMINANCE_PARTS for p in parts):
        out.append(dominance.TITLE)
    return out + list(CLOSING_SECTIONS)


def check_report(out_dir, parts=DEMO_PARTS) -> list[str]:
    """What a written report lacks: each missing section (:func:`sections`) and each posterior
    of :data:`WN_MODELS` without WordNet → ImageNet dominance rows.  Empty: complete.

    Parameters
    ----------
    out_dir : str or Path
        The report's directory (``report.md``, ``dominance.json``).
    parts : tuple of str
        The studies it ran (default the demo's).

    Returns
    -------
    list of str
        One line per problem.
    """
    import json

    out_dir = Path(out_dir)
    report = out_dir / "report.md"
    if not report.is_file():
        return [f"{report}: no report"]
    heads = [line[3:] for line in report.read_text().splitlines() if line.startswith("## ")]
    problems = [
        f"section missing: ## {t}"
        for t in sections(parts)
        if not any(h.startswith(t) for h in heads)
    ]
    if "wordnet-imagenet" in parts:
        table = out_dir / "dominance.json"
        claims = json.loads(table.read_text())["claims"] if table.is_file() else []
        have = {c["posterior"] for c in claims if c["task"].startswith("WordNet")}
        problems += [
            f"dominance rows missing: WordNet → ImageNet {m}"
            for m in WN_MODELS
            if MODELS[m].role == "posterior" and m not in have
        ]
    return problems


def _encoding_text(run: dict, encoder: str) -> str:
    if not run["encoded"]:
        return f"every embedding from the cache ({run['hits']} entries)"
    rate = run["encoded"] / max(run["encode_s"], 1e-9)
    return (
        f"`{encoder}` encoded {run['encoded']:,} texts in {run['encode_s']:.0f} s "
        f"({rate:.0f} texts/s), {run['hits']} cache entries read"
    )


def report_title(parts, size: str) -> str:
    """What was run: ``anchordiv demo`` for all studies, ``anchordiv study NAME`` for some."""
    demo = tuple(parts) == tuple(DEMO_PARTS)
    what = "anchordiv demo" if demo else f"anchordiv study {', '.join(parts)}"
    small = " (small)" if size == "small" else ""
    return f"{what}{small}: anchor divergences on real offline text"


def run_demo(
    out_dir,
    *,
    size: str = "full",
    encoder: str = "minilm",
    models_dir=None,
    seed: int = 0,
    parts=DEMO_PARTS,
    overwrite: bool = False,
    pretrained=None,
    device: str = "cpu",
    random_weights: bool = False,
) -> Path:
    """Run the studies and write ``out_dir/report.md`` (``anchordiv demo``).

    ``wordnet-imagenet`` includes the anchor-budget section (same curve).

    Parameters
    ----------
    out_dir : str or Path
        Output directory (report, tables, figures).
    size : str, default "full"
        A key of :data:`SIZES` (``"small"`` for a quick run).
    encoder : str, default "minilm"
        The text encoder (:func:`anchordiv.data.get_encoder`).
    models_dir : str or Path, optional
        Where the shipped priors are.
    seed : int, default 0
        Seed of every study.
    parts : tuple of str
        The studies to run (default all).
    overwrite : bool, default False
        Replace an existing non-empty destination; otherwise it is refused
        (:class:`~anchordiv.errors.OutputExistsError`).
    pretrained : str or Path, optional
        open_clip / chexzero weights of ``encoder`` (its text tower encodes the texts).
    device : str, default "cpu"
        The encoder's torch device.
    random_weights : bool, default False
        Allow an open_clip model without ``pretrained`` (randomly initialised); the report's
        first paragraph says so.

    Returns
    -------
    Path
        The report's path.

    Raises
    ------
    AnchorDivError
        An unknown ``size`` or an unknown study name.
    """
    from ...data import get_encoder
    from ...errors import check_output

    if size not in SIZES:
        raise AnchorDivError(f"size: unknown {size!r}; choose one of {', '.join(SIZES)}")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise AnchorDivError(f"studies: unknown {unknown}; choose from {', '.join(PARTS)}")
    check_output(out_dir, overwrite)
    start, before = time.time(), dict(CACHE_STATS)
    models_dir = Path(models_dir) if models_dir else default_models_dir()
    enc = get_encoder(
        encoder, pretrained=pretrained, device=device, random_weights=random_weights, seed=seed
    )
    rep = Report(report_title(parts, size), out_dir)
    random_weights_note(rep, enc)
    rep.text(
        f"Encoder `{enc.id}` (d = {enc.dim}, τ = {enc.logit_scale:g}); size `{size}`; "
        f"seed {seed}; priors from `{models_dir}`; written "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.  Every number "
        f"below is measured in this run; the constructions are documented in the README "
        f"(\"Studies and the main job\")."
    )
    ctx = Context(rep, text_embed(enc), SIZES[size], models_dir, seed, enc.logit_scale, enc.id)
    results = {name: PARTS[name](ctx) for name in parts}
    table = dominance.merge([r["dominance"] for r in results.values() if "dominance" in r])
    if table["dominance"]:
        dominance.section(rep, table, note=DOMINANCE_NOTE)
        write_json(rep.path("dominance.json"), {**table, "claims": dominance.claims(table)})
    run = {"total_s": time.time() - start}
    run |= {k: CACHE_STATS[k] - before.get(k, 0) for k in ("hits", "encoded", "encode_s")}
    return finish(
        ctx,
        f"Total time {run['total_s']:.0f} s; {_encoding_text(run, enc.id)} (embeddings cached "
        f"under the anchordiv cache directory; a second run skips encoding).",
        {**results, "run": run},
    )


def finish(ctx: Context, run: str, results: dict) -> Path:
    """The report's closing sections and ``results.json``; the report's path."""
    neighbours_section(ctx.rep, ctx.shown)
    ctx.rep.section("Run")
    ctx.rep.text(run)
    versions = stack_versions()
    ctx.rep.text("Measured with " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".")
    write_json(ctx.rep.path("results.json"), {**results, "versions": versions})
    return ctx.rep.write()
