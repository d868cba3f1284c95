"""What the studies' driver (:mod:`.main_job`) reads its items from: a :class:`Source`.

One driver runs every study's part on either source: :class:`TextSource`, the text analogues
(Open-i reports, WordNet glosses, object × style sentences: ``anchordiv demo``), or
:class:`.images.ImageData`, a dataset's image embeddings (``anchordiv study NAME --dataset``).
The driver computes, writes and reports; the source says what the items are, how they are
described and which of them "What each geometry retrieves" shows.  The transfer studies
(style and clinical transfer) read text only and ask no source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ...anchors import fit
from . import clinical as clin
from . import dominance
from . import object_style as ostyle
from . import wordnet_imagenet as wni
from ._common import SHOWN_QUERIES, SHOWN_TITLES, curve_scorers, show_neighbours, subsample
from .priors import CLINICAL_PRIOR, load_prior

if TYPE_CHECKING:
    from .main_job import Context


class Source(Protocol):
    """The items a study retrieves and how the report describes them.

    ``ctx`` is the driver's :class:`.main_job.Context` (encoder, size, seed, report).  Every
    ``show_*`` method appends one entry to ``ctx.shown`` ("What each geometry retrieves") and
    returns None; the other methods write nothing.
    """

    def clinical_data(self, ctx: Context) -> dict:
        """The clinical study's data: ``findings`` (list of str), ``x [n, d]`` (the items),
        ``labels [n, len(findings)]`` (bool, an item carries the finding), and the keyword
        arguments of ``clinical_study`` (``study``), ``plot_clinical`` (``plot``) and the
        clinical ``report_section`` (``section``); a source may add keys its
        :meth:`show_clinical` reads."""
        ...

    def clinical_prior(self, ctx: Context) -> Any:
        """The broad prior the clinical study adapts (``posterior-gaussian``), or None."""
        ...

    def show_clinical(self, ctx: Context, result, data: dict, anchors: dict, extra: dict) -> None:
        """Show one finding's geometries: ``result`` the ``clinical_study`` result, ``data``
        :meth:`clinical_data`, ``anchors`` finding -> anchor embeddings ``[m, d]``, ``extra``
        name -> ``build(finding, anchors)`` of the models beside the kinds."""
        ...

    def class_task(self, ctx: Context) -> tuple:
        """``(task, embeddings, curve options)`` of the class task: a ``WordNetTask``, its
        ``WordNetEmbeddings`` (``items [n, d]``, ``targets [t, d]``) and the keyword arguments
        the WordNet → ImageNet curve takes beside them (``query_mask``, ``max_queries``)."""
        ...

    def curve_target(self) -> str:
        """What the WordNet → ImageNet curve transfers to, for its figure's title."""
        ...

    def wordnet_text(self, ctx: Context, task, source: str) -> dict:
        """Keyword arguments (``title``, ``description``) of the WordNet → ImageNet section
        (empty: its defaults); ``source`` says where the broad prior came from."""
        ...

    def budget_text(self, ctx: Context, task, source: str | None) -> dict:
        """Keyword arguments (``title``, ``source``) of the anchor-budget section (empty: its
        defaults); ``source`` names the curve the budget rows come from, if any."""
        ...

    def posterior_checks(self, ctx: Context, task, emb, broad, curve) -> dict:
        """Write the sections that check the curve's posteriors (adapted from ``broad
        [2r, d]``) after the WordNet → ImageNet section; the entries they add to its result
        (the curve's dominance rows)."""
        ...

    def show_curve(self, ctx: Context, study: str, task, emb, broad, curve) -> None:
        """Show a curve's geometries: its posteriors adapted from ``broad [2r, d]``, or with
        ``broad`` None its target-only models; ``study`` keys ``SHOWN_TITLES``."""
        ...

    def budget_result(self, rows: list[dict], curve) -> dict:
        """The budget study's result: from its budget ``rows`` or its ``curve``."""
        ...

    def object_style_data(self, ctx: Context) -> tuple:
        """``(task, embeddings, options)`` of the object-vs-style study: an
        ``ObjectStyleTask``, its ``ObjectStyleEmbeddings`` (``items [n, d]``, object and style
        anchors) and the keyword arguments of ``object_style_study`` (``study``) and its
        ``report_section`` (``section``), and the entries the study adds to its result
        (``result``)."""
        ...

    def show_object_style(self, ctx: Context, task, emb, options: dict) -> None:
        """Show the pure object and style Gaussians; ``options`` as :meth:`object_style_data`."""
        ...


def object_style_task(ctx: Context, n_objects: int):
    """The object × style task on ``n_objects`` seeded ImageNet-R objects and all styles."""
    from ...data import imagenet

    styles = list(imagenet.IMAGENET_R_STYLES)
    objects = ostyle.styleless([n for _, n in imagenet.imagenet_r_classes()], styles)
    objects = [objects[i] for i in subsample(len(objects), n_objects, ctx.seed)]
    return ostyle.object_style_task(objects, styles, seed=ctx.seed)


class TextSource:
    """The text analogues of the paper's images (``anchordiv demo``): Open-i reports, WordNet
    glosses of ImageNet classes and object × style sentences, encoded by the text tower."""

    def clinical_data(self, ctx: Context) -> dict:
        """A seeded gallery of Open-i reports (``texts``: the reports, beside the protocol's
        keys); the findings with 5 or more labelled reports."""
        from ...data import clinical, openi

        reports = openi.load_reports()
        findings = [f for f in clinical.FINDINGS if reports.finding(f).sum() >= 5][
            : ctx.size.clinical_findings
        ]
        g = subsample(len(reports), ctx.size.clinical_gallery, ctx.seed)
        texts = [reports.texts[i] for i in g]
        return {
            "findings": findings,
            "x": ctx.embed(texts),
            "labels": np.stack([reports.finding(f) for f in findings], axis=1)[g],
            "texts": texts,
            "study": {"texts": texts, "max_queries": ctx.size.clinical_queries},
            "plot": {},
            "section": {"n_reports": len(g)},
        }

    def clinical_prior(self, ctx: Context) -> Any:
        """The shipped chest prior, if models/ has it for this encoder."""
        return load_prior(CLINICAL_PRIOR, ctx.models_dir, ctx.encoder_id)

    def show_clinical(self, ctx: Context, result, data: dict, anchors: dict, extra: dict) -> None:
        """The first finding's geometries on seeded reports carrying it."""
        f = next(iter(result.per_query))  # the first finding studied
        a = anchors[f]
        has = data["labels"][:, data["findings"].index(f)]
        models = {k: fit(k, a, tau=ctx.tau) for k in ctx.size.clinical_kinds}
        models.update({name: build(f, a) for name, build in extra.items()})
        ctx.shown.append(
            show_neighbours(
                f"Clinical retrieval: {f}",
                models,
                data["x"],
                data["texts"],
                queries=clin.finding_queries(has, SHOWN_QUERIES, ctx.seed + 1)[0],
                anchors=a,
                labels=has,
                note=f"Open-i reports carrying {f} as queries, the {len(data['texts'])} reports "
                f"as the gallery; the models fitted to all {len(a)} {f} anchor sentences; ✓ = "
                f"the report carries {f}.",
            )
        )

    def class_task(self, ctx: Context) -> tuple:
        """Hyponym glosses of seeded ImageNet classes as items, class prompts as targets."""
        from ...data import imagenet

        classes = imagenet.classes()
        task = wni.wordnet_imagenet_task(
            [w for w, _ in classes],
            [n for _, n in classes],
            imagenet.TEMPLATES[: ctx.size.wn_templates],
            n_classes=ctx.size.wn_classes,
            max_items=ctx.size.wn_items,
            seed=ctx.seed,
        )
        return task, wni.embed_task(task, ctx.embed), {}

    def curve_target(self) -> str:
        """``"ImageNet"``."""
        return "ImageNet"

    def wordnet_text(self, ctx: Context, task, source: str) -> dict:
        """The section's own title and description (empty)."""
        return {}

    def budget_text(self, ctx: Context, task, source: str | None) -> dict:
        """The section's own title and source (empty)."""
        return {}

    def posterior_checks(self, ctx: Context, task, emb, broad, curve) -> dict:
        """Retrieval uncertainty and prior sensitivity across the budget; the dominance rows."""
        from .sensitivity import sensitivity_section

        _uncertainty_section(ctx, task, emb, broad)
        sensitivity_section(ctx, task, emb, broad)  # prior sensitivity across the budget
        return {"dominance": dominance.task_rows("WordNet → ImageNet (= budget study)", curve)}

    def show_curve(self, ctx: Context, study: str, task, emb, broad, curve) -> None:
        """The curve's geometries from all class prompts on seeded hyponym glosses."""
        scorers, rows = curve_scorers(
            curve,
            emb.targets if broad is None else broad,
            emb.targets,
            ctx.tau,
            seed=ctx.seed,
            budget=len(emb.targets),
        )
        ctx.shown.append(
            show_neighbours(
                SHOWN_TITLES[study],
                scorers,
                emb.items,
                task.items,
                anchors=emb.targets[rows],
                labels=task.item_class,
                seed=ctx.seed,
                note=f"Seeded hyponym glosses as queries against all {len(task.items)} items; "
                f"each model built as on the curve from all {len(rows)} class-prompt anchors "
                f"(isotropic controls left out); ✓ = same ImageNet class.",
            )
        )

    def budget_result(self, rows: list[dict], curve) -> dict:
        """``{"summary": curve.summary()}``."""
        return {"summary": curve.summary()}

    def object_style_data(self, ctx: Context) -> tuple:
        """Sentences naming an object in a style, ``size.os_objects`` seeded objects."""
        task = object_style_task(ctx, ctx.size.os_objects)
        options: dict = {"study": {}, "section": {}, "result": {}}
        return task, ostyle.embed_task(task, ctx.embed), options

    def show_object_style(self, ctx: Context, task, emb, options: dict) -> None:
        """The object and style Gaussians on seeded items; ✓ = same object."""
        ctx.shown.append(
            show_neighbours(
                SHOWN_TITLES["object-style"],
                {
                    "object anchors": fit("gaussian", emb.object_anchors, tau=ctx.tau),
                    "style anchors": fit("gaussian", emb.style_anchors, tau=ctx.tau),
                },
                emb.items,
                task.items,
                anchors=np.concatenate([emb.object_anchors, emb.style_anchors]),
                labels=task.item_object,
                seed=ctx.seed,
                note="Seeded items as queries against all items; `object anchors` = q_obj "
                "(p = 1), `style anchors` = q_style (p = 0), both Gaussians; inversion over the "
                "union of both anchor sets; ✓ = same object (the texts name the style).",
            )
        )


def _uncertainty_section(ctx: Context, task, emb, broad, n_targets: int = 5) -> None:
    """Retrieval across draws of the Gaussian posterior from ``n_targets`` random targets."""
    from ...adaptation import adapt
    from ...checks.uncertainty import retrieval_uncertainty

    rng = np.random.default_rng(ctx.seed)
    pick = rng.choice(len(emb.targets), min(n_targets, len(emb.targets)), replace=False)
    post = adapt("gaussian", broad, emb.targets[pick], tau=ctx.tau)
    q = subsample(len(emb.items), min(ctx.size.wn_queries, len(emb.items) // 2), ctx.seed)
    rest = np.setdiff1d(np.arange(len(emb.items)), q)
    rel = task.item_class[q][:, None] == task.item_class[rest][None, :]
    opts = dict(k=min(10, len(rest)), relevance=rel, num_draws=20, seed=ctx.seed)
    retrieval_uncertainty(post, emb.items[q], emb.items[rest], **opts).to_report(
        ctx.rep,
        intro=(
            f"WordNet → ImageNet: the Gaussian posterior from the WordNet prior and {len(pick)} "
            f"random target anchors (the default held-out strengths), {len(q)} query glosses "
            f"against the {len(rest)} other items."
        ),
    )
