"""The paper's image studies on a dataset on disk (``anchordiv study NAME --dataset LAYOUT:ROOT``):
the text studies' parts (:mod:`.main_job`) fed image embeddings as items (docs/guides/images.md).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from pathlib import Path

import numpy as np

from ...anchors import fit
from ...data import layouts
from ...errors import AnchorDivError
from ..report import Report
from . import object_style as ostyle
from . import wordnet_imagenet as wni
from ._common import (
    SHOWN_QUERIES,
    SHOWN_TITLES,
    Shown,
    curve_scorers,
    random_weights_note,
    show_neighbours,
    split_rows,
    subsample,
    text_embed,
)
from .main_job import PARTS, SIZES, Context, finish
from .priors import default_models_dir

#: studies that run on images (``--dataset``)
IMAGE_STUDIES = ("object-style", "budget", "wordnet-imagenet", "clinical")
#: layouts whose classes are folders: a report written inside their root would become a class
FOLDER_LAYOUTS = ("imagefolder", "imagenet", "imagenet-r", "sketchy")
#: the baselines every view holds beside its anchor models
BASELINES = {"cosine": "cosine", "inversion": "inversion"}


@dataclasses.dataclass
class RetrievalView:
    """What a picture of "what each geometry retrieves" needs for one study.

    Attributes
    ----------
    study : str
        The study (``"object-style"``).
    scorers : dict
        ``{name: scorer}``: anchor models, ``"cosine"``, ``"inversion"`` (as
        :func:`anchordiv.evaluation.evaluate.evaluate` takes them).
    anchors : numpy.ndarray, shape [m, d]
        The anchors inversion picks its text proxy from.
    queries : numpy.ndarray, shape [Q, d]
        Query image embeddings.
    gallery : numpy.ndarray, shape [G, d]
        Gallery image embeddings.
    query_paths, gallery_paths : list of str
        The image files behind ``queries`` / ``gallery``.
    query_index : numpy.ndarray of int, shape [Q], or None
        Gallery row of each query (to leave out of its own neighbours); None when disjoint.
    query_labels, gallery_labels : numpy.ndarray, shape [Q] / [G], or None
        Labels that make a neighbour relevant (class, or the shown pathology).
    captions : list of str, length G, or None
        A caption per gallery image (its class name, and its rendition where there are
        several).
    note : str
        What the view shows, for the report.
    query_domains : numpy.ndarray, shape [Q], or None
        Each query's rendition (photo / sketch, art / cartoon ...): the shown queries are
        spread over renditions and classes.
    query_captions : list of str, length Q, or None
        A caption per query image (as ``captions``).
    """

    study: str
    scorers: dict
    anchors: np.ndarray
    queries: np.ndarray
    gallery: np.ndarray
    query_paths: list[str]
    gallery_paths: list[str]
    query_index: np.ndarray | None = None  # each query's gallery row; None: disjoint
    query_labels: np.ndarray | None = None  # labels that make a neighbour relevant
    gallery_labels: np.ndarray | None = None
    captions: list[str] | None = None  # per gallery image: its class (and rendition)
    note: str = ""  # what the view shows, for the report
    query_domains: np.ndarray | None = None  # renditions: the shown queries spread over them
    query_captions: list[str] | None = None


@dataclasses.dataclass
class ImageStudyResult:
    """What :func:`run_image_study` wrote and kept.

    Attributes
    ----------
    report : Path
        ``OUT/report.md``.
    embeddings : Path
        ``OUT/embeddings/images.npy`` (sidecar ``images.json``: files, encoder, dataset).
    dataset : ImageDataset
        The images studied (after the size's subsample).
    views : dict of str to RetrievalView
        Per study, its scorers, queries and gallery with their files.
    results : dict
        What ``results.json`` holds.
    """

    report: Path
    embeddings: Path
    dataset: layouts.ImageDataset
    views: dict[str, RetrievalView]
    results: dict


@dataclasses.dataclass
class ImageData:
    """The image :class:`._source.Source` of a study: the dataset, its embeddings ``x [n, d]``
    (one row per image) and the views recorded so far (study -> :class:`RetrievalView`)."""

    dataset: layouts.ImageDataset
    x: np.ndarray
    spec: str
    views: dict = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        """The dataset in one phrase: images, queries, gallery, split."""
        ds = self.dataset
        return (
            f"{len(ds)} images of `{self.spec}` ({int(ds.query.sum())} queries, "
            f"{int((~ds.query).sum())} gallery; split: {ds.split_source})"
        )

    def title(self, name: str) -> str:
        """A section title on this dataset's images."""
        return f"{name} on `{self.dataset.layout}` images"

    def object_style_data(self, ctx) -> tuple:
        """``(task, embeddings, options)`` of the object-style study: classes × renditions."""
        ds = self.dataset
        objects, styles = list(ds.class_names), list(ds.renditions)
        task = ostyle.ObjectStyleTask(
            objects, styles, ds.paths, ds.label, ds.rendition, *ostyle.anchor_texts(objects, styles)
        )
        emb = ostyle.ObjectStyleEmbeddings(
            self.x, ctx.embed(task.object_anchors), ctx.embed(task.style_anchors)
        )
        q_styles = set(ds.rendition[ds.query].tolist())
        split = bool(ds.query.any()) and q_styles <= set(ds.rendition[~ds.query].tolist())
        description = (
            f"{self.describe()}; {len(objects)} classes × {len(styles)} renditions "
            f"({', '.join(styles)}).  "
            + (
                "Queries: the split's queries against its gallery."
                if split
                else "The split's gallery lacks some of its queries' renditions, so every "
                "image is a query against all the others (itself removed)."
            )
            + f"  Object anchors: {len(task.object_anchors)} prompts naming a class alone; "
            f"style anchors: {len(task.style_anchors)} prompts naming a rendition alone, both "
            f"through the model's text tower.  The model is q_p = p·q_obj + (1−p)·q_style "
            f"(two Gaussians, `ad.mix`); relevant = same class (object) or same rendition "
            f"(style)."
        )
        study = {"max_queries": ctx.size.img_queries, "query_mask": ds.query if split else None}
        section = {"title": self.title("Object vs style (Fig. 3)"), "description": description}
        return task, emb, {"study": study, "section": section, "result": {"split_used": split}}

    def show_object_style(self, ctx, task, emb, options: dict) -> None:
        """The pure object and style Gaussians (p = 1, p = 0) on seeded query images (the
        split's, or every image against the others: ``options["study"]["query_mask"]``)."""
        mask = options["study"]["query_mask"]
        pure = ostyle.mixture_scorers(emb, "gaussian", ctx.tau, (0.0, 1.0))
        scorers = BASELINES | {
            "object anchors (p = 1)": pure["p=1.00"],
            "style anchors (p = 0)": pure["p=0.00"],
        }
        anchors = np.concatenate([emb.object_anchors, emb.style_anchors])
        note = (
            "Seeded query images against the gallery; `object anchors` = q_obj (p = 1), `style "
            "anchors` = q_style (p = 0), both Gaussians; inversion over the union of both anchor "
            "sets; framed green = same class, red = another."
        )
        self.record(ctx, _view(ctx, "object-style", scorers, anchors, mask, note))

    def record(self, ctx, view: RetrievalView) -> None:
        """Keep ``view`` and show it in "What each geometry retrieves"."""
        self.views[view.study] = view
        ctx.shown.append(shown(view, self.title(SHOWN_TITLES[view.study]), ctx.seed))

    def class_task(self, ctx) -> tuple:
        """``(task, embeddings, curve options)``: images as items, class prompts as targets."""
        from ...data import imagenet

        ds = self.dataset
        templates = imagenet.TEMPLATES[: ctx.size.wn_templates]
        targets, target_class = wni.class_prompts(ds.class_names, templates)
        task = wni.WordNetTask(
            list(ds.class_ids), list(ds.class_names), ds.paths, ds.label, targets, target_class
        )
        curve = {"query_mask": ds.query, "max_queries": ctx.size.img_queries}
        return task, wni.WordNetEmbeddings(self.x, ctx.embed(targets)), curve

    def curve_target(self) -> str:
        """The dataset's layout."""
        return self.dataset.layout

    def budget_result(self, rows: list[dict], curve) -> dict:
        """``{"rows": rows}``."""
        return {"rows": rows}

    def posterior_checks(self, ctx, task, emb, broad, curve) -> dict:
        """None on images yet (no section, no entry)."""
        return {}

    def show_curve(self, ctx, study: str, task, emb, broad, curve) -> None:
        """Record and show :meth:`curve_view`."""
        self.record(ctx, self.curve_view(ctx, study, curve, task, emb, broad))

    def budget_text(self, ctx, task, source: str | None) -> dict:
        """Title and source of the anchor-budget section on images."""
        return {
            "title": self.title("Anchor budget (Figs. 4/6): softmax vs parametric"),
            "source": source or _task_text(self, task),
        }

    def wordnet_text(self, ctx, task, source: str) -> dict:
        """Title and description of the WordNet → ImageNet section on images."""
        return {
            "title": self.title("WordNet → ImageNet adaptation (Fig. 5)"),
            "description": (
                f"{_task_text(self, task)}; broad prior: {source} (WordNet glosses outside all "
                f"1,000 ImageNet classes and their subtrees, encoded by the same text tower).  "
                f"Budgets are random target subsets ({ctx.size.wn_subsets} per budget below all "
                f"targets, shared by all models).  `isotropic-*` is the control: the same prior "
                f"strength with an isotropic prior covariance of the same trace."
            ),
        }

    def curve_view(self, ctx, study: str, curve, task, emb, broad=None) -> RetrievalView:
        """The curve's Gaussian models (with ``broad``) or its target-only ones on all prompts."""
        if broad is not None:
            scorers, rows = curve_scorers(
                curve, broad, emb.targets, ctx.tau, seed=ctx.seed, kinds=("gaussian", "softmax")
            )
            note = (
                f"Seeded query images against the gallery; each model built on the curve's first "
                f"subset of {len(rows)} class prompts (`posterior-gaussian`: the WordNet prior "
                f"adapted to them; `gaussian`: those prompts alone); framed green = same class, "
                f"red = another."
            )
        else:
            scorers = BASELINES | {
                f"{kind} (all prompts)": fit(kind, emb.targets, tau=ctx.tau)
                for kind in ("gaussian", "softmax")
                if kind in curve.models
            }
            note = (
                f"Seeded query images against the gallery; the target-only models fitted to all "
                f"{len(emb.targets)} class prompts; framed green = same class, red = another."
            )
        return _view(ctx, study, scorers, emb.targets, self.dataset.query, note)

    def clinical_data(self, ctx) -> dict:
        """The image form of :func:`.main_job.clinical_part`'s data."""
        ds = self.dataset
        columns = clinical_columns(ds, ctx.size)
        findings = [layouts.CHEXPERT_FINDINGS[c] for c in columns]
        pairs = ", ".join(f"{c} → {f}" for c, f in zip(columns, findings))
        return {
            "findings": findings,
            "x": self.x,
            "labels": ds.pathology[:, [ds.pathologies.index(c) for c in columns]],
            "study": {
                "max_queries": ctx.size.img_queries,
                "min_queries": ctx.size.img_min_queries,
                "query_mask": ds.query,
            },
            "plot": {
                "title": f"{ds.layout} image retrieval per pathology: pathology anchors vs baselines"
            },
            "section": {
                "n_reports": len(ds),
                "title": self.title("Clinical retrieval (Tables 2–3): pathology anchors"),
                "description": (
                    f"{self.describe()}.  Per pathology ({pairs}): "
                    f"the queries are the split's query images carrying it, the gallery the split's "
                    f"gallery, relevant = gallery images carrying it.  Anchor models are fitted to "
                    f"the finding's report-style sentences built from HPO and ICD-10-CM "
                    f"(`data.clinical.pathology_anchors`) encoded by the model's text tower; "
                    f"intervals are 95 % two-level bootstraps over queries and random 80 % anchor "
                    f"subsets."
                ),
            },
        }

    def clinical_prior(self, ctx) -> None:
        """None: no chest prior is built with an image-text encoder's text tower."""
        return None

    def show_clinical(self, ctx, result, data: dict, anchors: dict, extra: dict) -> None:
        """The Gaussian of the first finding in ``result``'s rows on seeded query images
        carrying it (``extra`` unused)."""
        finding = result.rows[0]["finding"]
        ds, a = self.dataset, anchors[finding]
        column = data["labels"][:, data["findings"].index(finding)]
        positives = np.flatnonzero(ds.query & column)
        q = positives[subsample(len(positives), ctx.size.img_queries, ctx.seed)]
        scorers = BASELINES | {f"gaussian ({finding})": fit("gaussian", a, tau=ctx.tau)}
        note = (
            f"Seeded query images carrying {finding} against the gallery; the Gaussian fitted to its "
            f"{len(a)} anchor sentences; framed green = the neighbour carries {finding} too, red "
            f"= it does not."
        )
        gallery = np.flatnonzero(~ds.query)
        self.record(ctx, _rows_view(self, "clinical", scorers, a, q, gallery, None, column, note))


def clinical_columns(ds: layouts.ImageDataset, size) -> list[str]:
    """The pathology columns the clinical study reads: those with anchors
    (:data:`.layouts.CHEXPERT_FINDINGS`), carried by ``size.img_min_queries`` or more query
    images and by one or more gallery images, at most ``size.clinical_findings``.

    Raises
    ------
    AnchorDivError
        No such column (checked before any image is encoded), naming how many positive query
        and gallery images each pathology with anchors has.
    """
    need = size.img_min_queries
    q = (ds.query[:, None] & ds.pathology).sum(0)  # positive queries per pathology
    g = (~ds.query[:, None] & ds.pathology).sum(0)  # positive gallery images
    with_anchors = [c for c in ds.pathologies if c in layouts.CHEXPERT_FINDINGS]
    at = {c: ds.pathologies.index(c) for c in with_anchors}
    columns = [c for c in with_anchors if q[at[c]] >= need and g[at[c]] >= 1]
    if not columns:
        counts = ", ".join(f"{c} {q[at[c]]}/{g[at[c]]}" for c in with_anchors)
        raise AnchorDivError(
            f"study clinical: no pathology with anchors has {need} or more positive query "
            f"images and a positive gallery image (positive queries/gallery: {counts}); check "
            f"the labels (CheXpert: 1 = present; --uncertain ones counts -1 as present)"
        )
    return columns[: size.clinical_findings]


def cross_class_copies(ds: layouts.ImageDataset, paths, digests) -> list[list[str]]:
    """Groups of ``paths`` with the same content (``digests``, one per path) filed under two or
    more classes of ``ds`` (each group sorted; empty without classes)."""
    if ds.label is None:
        return []
    label = dict(zip(ds.paths, ds.label.tolist()))
    same: dict[str, list[str]] = {}
    for p, d in zip(paths, digests):
        same.setdefault(d, []).append(p)
    return [
        sorted(group) for group in same.values() if len({label[p] for p in group if p in label}) > 1
    ]


def warn_cross_class_copies(ds: layouts.ImageDataset, paths, digests) -> None:
    """A warning naming the images whose identical copies sit in two or more classes
    (:func:`cross_class_copies`): a query of one copy finds the other first, as irrelevant."""
    groups = cross_class_copies(ds, paths, digests)
    if groups:
        import warnings

        from ...errors import user_stacklevel

        label = dict(zip(ds.paths, ds.label.tolist()))
        first = " = ".join(f"{p} ({ds.class_names[label[p]]})" for p in groups[0][:3])
        warnings.warn(
            f"dataset: {len(groups)} image(s) are filed, byte for byte, under two or more "
            f"classes (e.g. {first}); a query of one copy finds the other as its closest "
            f"neighbour, counted as of another class — remove the copies that are mislabelled",
            stacklevel=user_stacklevel(),
        )


def inside(path, root) -> bool:
    """Whether ``path`` is ``root`` or lies inside it, symlinks resolved."""
    a, b = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([a, b]) == b


def restrict(ds: layouts.ImageDataset, size, seed: int) -> layouts.ImageDataset:
    """The size's seeded subsample: ``classes`` classes, then per class (or, without classes,
    overall) up to ``per_class`` (``images``) query images and as many gallery images."""
    if ds.label is None:
        return ds.subset(_per_split(np.arange(len(ds)), ds.query, size.img_images, seed))
    chosen = subsample(len(ds.class_names), size.img_classes, seed)
    rows = [
        _per_split(np.flatnonzero(ds.label == c), ds.query, size.img_per_class, seed + 1 + k)
        for k, c in enumerate(chosen)
    ]
    out = ds.subset(np.concatenate(rows))
    remap = np.full(len(ds.class_names), -1)
    remap[chosen] = np.arange(len(chosen))
    return dataclasses.replace(
        out,
        label=remap[out.label],
        class_names=[ds.class_names[c] for c in chosen],
        class_ids=[ds.class_ids[c] for c in chosen],
    )


def _per_split(rows: np.ndarray, query: np.ndarray, n: int | None, seed: int) -> np.ndarray:
    """Up to ``n`` seeded query rows and ``n`` gallery rows of ``rows`` (``query [N]``), sorted."""
    q, g = rows[query[rows]], rows[~query[rows]]
    return np.sort(
        np.concatenate([q[subsample(len(q), n, seed)], g[subsample(len(g), n, seed + 7)]])
    )


def _need(ds: layouts.ImageDataset, study: str) -> None:
    """Refuse a dataset that lacks what ``study`` reads, before any encoding: classes (all but
    clinical), renditions (object-style), pathology labels (clinical)."""
    if study != "clinical" and (ds.label is None or len(ds.class_names) < 2):
        raise AnchorDivError(
            f"study {study}: needs a dataset with 2 or more classes; layout {ds.layout} has "
            f"{len(ds.class_names)}"
        )
    if study == "object-style" and len(ds.renditions) < 2:
        raise AnchorDivError(
            f"study {study}: needs renditions (imagenet-r: art_0.jpg, ...; sketchy: photo and "
            f"sketch); layout {ds.layout} has {len(ds.renditions)}"
        )
    if study == "clinical" and ds.pathology is None:
        raise AnchorDivError(
            f"study {study}: needs pathology labels (chexpert:ROOT); layout {ds.layout} has none"
        )


def _view(ctx, study: str, scorers: dict, anchors, mask, note: str) -> RetrievalView:
    """The view over the study's queries: the split's (``mask``), or every image against all
    the others (``mask`` None); relevant = same class."""
    data, n = ctx.source, ctx.size.img_queries
    if mask is None:
        q = subsample(len(data.dataset), n, ctx.seed)
        g, index = np.arange(len(data.dataset)), q
    else:
        (q, g), index = split_rows(mask, n, ctx.seed), None
    return _rows_view(data, study, scorers, anchors, q, g, index, data.dataset.label, note)


def _rows_view(data, study, scorers, anchors, q, g, index, labels, note) -> RetrievalView:
    """The view of query rows ``q`` against gallery rows ``g`` (``index``: each query's gallery
    row, or None when disjoint); ``labels [n]`` per image; captions = class names."""
    ds = data.dataset
    return RetrievalView(
        study,
        scorers,
        np.asarray(anchors),
        data.x[q],
        data.x[g],
        [ds.paths[i] for i in q],
        [ds.paths[i] for i in g],
        index,
        np.asarray(labels)[q],
        np.asarray(labels)[g],
        None if ds.label is None else [_caption(ds, i) for i in g],
        note,
        None if ds.rendition is None else np.asarray(ds.rendition)[q],
        None if ds.label is None else [_caption(ds, i) for i in q],
    )


def _caption(ds: layouts.ImageDataset, i: int) -> str:
    """An image's class, with its rendition when the dataset has several."""
    name = ds.class_names[ds.label[i]]
    if ds.rendition is not None and len(ds.renditions) > 1:
        return f"{name} ({ds.renditions[ds.rendition[i]]})"
    return name


def spread(labels, domains, k: int, seed: int) -> np.ndarray:
    """``k`` seeded rows of a view's queries spread over domains and classes: each pick takes
    the next domain in turn and, within it, a class not shown yet where one is left."""
    n = len(labels) if labels is not None else len(domains) if domains is not None else 0
    order = np.random.default_rng(seed).permutation(n)
    lab = np.zeros(n, int) if labels is None else np.asarray(labels).reshape(n, -1)[:, 0]
    dom = np.zeros(n, int) if domains is None else np.asarray(domains)
    cycle = list(dict.fromkeys(dom[order].tolist()))
    chosen: list[int] = []
    seen: set = set()
    while len(chosen) < min(k, n):
        for d in cycle:
            if len(chosen) >= min(k, n):
                break
            if free := [i for i in order if dom[i] == d and i not in chosen]:
                pick = ([i for i in free if lab[i] not in seen] or free)[0]
                chosen.append(int(pick))
                seen.add(lab[pick])
    return np.array(chosen, int)


def shown(view: RetrievalView, title: str, seed: int = 0) -> Shown:
    """The view's part of "What each geometry retrieves": :data:`SHOWN_QUERIES` of its
    queries spread over renditions and classes (:func:`spread`), their top neighbours under cosine, inversion and each of its anchor models
    (:func:`._common.show_neighbours`; a grid of thumbnails, the query first).

    Parameters
    ----------
    view : RetrievalView
        One study's geometries, anchors, queries and gallery (``run_image_study(...).views``).
    title : str
        The part's title in the report.
    seed : int, default 0
        Seed of the choice of queries.

    Returns
    -------
    Shown
        ``title``, the neighbours (:class:`~anchordiv.evaluation.Neighbours`), the gallery's
        image files, a note and captions: what :func:`anchordiv.plots.neighbours` draws and the
        report's neighbour grid shows.
    """
    scorers = {k: v for k, v in view.scorers.items() if k not in BASELINES}
    pick = spread(view.query_labels, view.query_domains, SHOWN_QUERIES, seed)
    common = dict(anchors=view.anchors, labels=view.gallery_labels, seed=seed, note=view.note)
    if view.query_index is not None:  # the queries are gallery rows
        chosen = dict(queries=view.query_index[pick])
    else:  # queries of their own: their labels and images come with them
        chosen = dict(
            queries=view.queries[pick],
            query_labels=None if view.query_labels is None else view.query_labels[pick],
            query_items=[view.query_paths[i] for i in pick],
            query_captions=None
            if view.query_captions is None
            else [view.query_captions[i] for i in pick],
        )
    return show_neighbours(
        title,
        scorers,
        view.gallery,
        view.gallery_paths,
        captions=view.captions,
        **chosen,
        **common,
    )


def _task_text(data: ImageData, task) -> str:
    """The class-prompt task in one sentence."""
    return (
        f"{data.describe()}; {len(task.names)} classes; relevant = same class.  Target anchors: "
        f"{len(task.targets)} class prompts ({len(task.targets) // len(task.names)} CLIP "
        f"templates × class name) through the model's text tower"
    )


def run_image_study(
    name: str,
    dataset: str,
    out_dir,
    *,
    encoder: str,
    pretrained=None,
    device: str = "cpu",
    size: str = "full",
    models_dir=None,
    seed: int = 0,
    batch_size: int = 32,
    overwrite: bool = False,
    workers: int = 0,
    on_error: str = "raise",
    random_weights: bool = False,
    uncertain: str | None = None,
    views: str | None = None,
    allow_outside_root: bool = False,
) -> ImageStudyResult:
    """Run one of the paper's image studies on a dataset on disk and write its report.

    Parameters
    ----------
    name : str
        ``"object-style"``, ``"budget"``, ``"wordnet-imagenet"`` or ``"clinical"``.
    dataset : str
        ``LAYOUT:ROOT`` (:func:`anchordiv.data.layouts.load_dataset`).
    out_dir : str or Path
        Report directory (report.md, CSVs, PNGs, ``embeddings/images.npy``).
    encoder : str
        An image-text encoder: ``open_clip:<model or config.json>`` or ``chexzero``.
    pretrained : str or Path, optional
        Its weights (tag or checkpoint).
    device : str, default "cpu"
        Torch device of the encoder (``"cuda"``).
    size : {"full", "small"}, default "full"
        A key of :data:`.main_job.SIZES` (its ``img_*`` fields: how much of the dataset).
    models_dir : str or Path, optional
        Where saved priors are (used only when built with this encoder).
    seed : int, default 0
        Seed of every subsample and of a seeded split.
    batch_size : int, default 32
        Images per encoder batch.
    overwrite : bool, default False
        Replace an existing non-empty ``out_dir``.
    workers : int, default 0
        Worker processes that read, hash, decode and preprocess images.
    on_error : {"raise", "skip"}, default "raise"
        Unreadable images: one error naming all of them before the model loads, or skipped
        and listed in the report.
    random_weights : bool, default False
        Allow an open_clip model without ``pretrained`` (randomly initialised); the report's
        first paragraph says so.
    uncertain, views : str, optional
        CheXpert: uncertain labels as absent (``"zeros"``, default) or present (``"ones"``);
        the views read (``"frontal"``, default, ``"lateral"`` or ``"all"``).
    allow_outside_root : bool, default False
        Read image files that lie outside the dataset folder (symlinks, absolute or ``..``
        CSV paths); by default they are an error (:func:`.layouts.load_dataset`).

    Returns
    -------
    ImageStudyResult
        The report's path, the embeddings' path, the dataset and each study's
        :class:`RetrievalView`.

    Raises
    ------
    AnchorDivError
        An unknown study or size, a bad dataset, a text-only encoder, a dataset the study
        cannot use (object-style needs renditions, clinical pathologies with positive
        images), or ``out_dir`` inside the folder of a layout of class folders
        (:data:`FOLDER_LAYOUTS`).
    """
    from ...data import check_images, embed_images, get_encoder
    from ...data.imageio import start_workers
    from ...errors import check_output
    from ...provenance import save_embeddings

    if name not in IMAGE_STUDIES:
        raise AnchorDivError(
            f"study {name!r} does not run on images; with --dataset choose one of "
            f"{', '.join(IMAGE_STUDIES)}"
        )
    if size not in SIZES:
        raise AnchorDivError(f"size: unknown {size!r}; choose one of {', '.join(SIZES)}")
    check_output(out_dir, overwrite)
    layout, root = layouts.parse_spec(dataset)
    if layout in FOLDER_LAYOUTS and inside(out_dir, root.expanduser()):
        raise AnchorDivError(
            f"out_dir: {out_dir} is inside the dataset folder {root}: the next run would read "
            f"the report's folder as a class; write it elsewhere (-o outside {root})"
        )
    start = time.time()
    ds = layouts.load_dataset(
        dataset,
        seed=seed,
        uncertain=uncertain,
        views=views,
        allow_outside_root=allow_outside_root,
    )
    _need(ds, name)
    ds = restrict(ds, SIZES[size], seed)
    if name == "clinical":
        clinical_columns(ds, SIZES[size])  # before any image is encoded
    if not ds.query.any() or ds.query.all():
        raise AnchorDivError(
            f"dataset {dataset}: {int(ds.query.sum())} query and {int((~ds.query).sum())} "
            f"gallery images ({ds.split_source}); a study needs both"
            + (
                " (a class of one image has no query: each class needs 2 or more images)"
                if ds.label is not None and not ds.query.any()
                else ""
            )
        )
    # every unreadable file named before the model loads (or skipped, once)
    readable, digests, skipped = check_images(ds.paths, on_error, workers=workers, progress=True)
    warn_cross_class_copies(ds, readable, digests)
    start_workers(workers, len(readable))  # their imports overlap the model's loading
    enc = get_encoder(
        encoder, pretrained=pretrained, device=device, random_weights=random_weights, seed=seed
    )
    before = enc.encoded
    x, kept = embed_images(
        enc,
        readable,
        batch_size=batch_size,
        progress=True,
        on_error=on_error,
        workers=workers,
        skipped=skipped,
    )
    encoded = enc.encoded - before
    if skipped:
        keep = set(kept)
        ds = ds.subset(np.array([i for i, p in enumerate(ds.paths) if p in keep], int))
    rep = Report(
        f"anchordiv study {name}{' (small)' if size == 'small' else ''} on images", out_dir
    )
    rep.path("embeddings").mkdir(exist_ok=True)
    emb_path = save_embeddings(
        rep.path("embeddings/images.npy"),
        x,
        overwrite=True,
        kind="image",
        sources=kept,
        sources_absolute=[os.path.abspath(p) for p in kept],
        dataset={**ds.summary(), "spec": dataset, "root_absolute": os.path.abspath(ds.root)},
        query=ds.query.tolist(),
    )
    models_dir = Path(models_dir) if models_dir else default_models_dir()
    data = ImageData(ds, np.asarray(x), dataset)
    ctx = Context(
        rep, text_embed(enc), SIZES[size], models_dir, seed, enc.logit_scale, enc.id, source=data
    )
    random_weights_note(rep, enc)
    rep.text(
        f"Encoder `{enc.id}` (d = {enc.dim}, τ = {enc.logit_scale:g}) on `{device}`: its image "
        f"tower encodes the images, its text tower every anchor.  Dataset: {data.describe()}.  Images encoded in this run: {encoded} (the others "
        f"from the embedding cache); embeddings and the list of image files: "
        f"`embeddings/images.npy` + `embeddings/images.json`.  Size `{size}`; seed {seed}; "
        f"written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC."
    )
    if skipped:
        rep.text(
            f"**{len(skipped)} unreadable image file(s) skipped** (`--on-error skip`): "
            + "; ".join(f"`{p}` ({why})" for p, why in skipped.items())
            + "."
        )
    results = PARTS[name](ctx)
    summary = {**ds.summary(), "spec": dataset, "encoded_now": encoded, "skipped": skipped}
    path = finish(
        ctx, f"Total time {time.time() - start:.0f} s.", {name: results, "dataset": summary}
    )
    return ImageStudyResult(path, emb_path, ds, data.views, results)
