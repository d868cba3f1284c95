"""Matplotlib figures written to PNG files (Agg backend): curves and bars from plain rows (as
written to CSV), and :func:`neighbours`, what each geometry retrieves.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .errors import AnchorDivError, integer, positive


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (every figure here goes to a file).

    Returns
    -------
    module
        ``matplotlib.pyplot``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path) -> Path:
    """Write a figure as PNG at 120 dpi (parent folders made) and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or Path
        Destination.

    Returns
    -------
    Path
        The path written.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=120, bbox_inches="tight")
    pyplot().close(fig)
    return p


def finish(fig, path=None):
    """Lay out a figure; write it to a PNG (and close it) when a path is given.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or Path, optional
        The PNG to write.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig``.
    """
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        pyplot().close(fig)
    return fig


#: line styles by model role (curves.ROLES)
_STYLE = {"target": "-", "posterior": "-", "isotropic": ":", "baseline": "--", "custom": "-."}


def plot_curve(
    summary: list[dict],
    path,
    *,
    prevalence: float | None = None,
    title: str = "adaptation curve",
    ylabel: str = "mean AUPRC",
) -> Path:
    """AUPRC against target-anchor budget (log x), one line per model with its interval band.

    Parameters
    ----------
    summary : list of dict
        Rows with ``model, budget, auprc, low, high`` (``role`` picks the line style), e.g.
        ``Curve.summary()``.
    path : str or Path
        The PNG to write.
    prevalence : float, optional
        Draw the random-ranking level.
    title : str, default "adaptation curve"
        Plot title.
    ylabel : str, default "mean AUPRC"
        y-axis label.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    AnchorDivError
        ``summary`` that is not a list of row dicts (a Curve itself: pass
        ``curve.summary()``).
    """
    summary = summary_rows(summary, ("model", "budget", "auprc"), "Curve.summary()")
    plt = pyplot()
    models = list(dict.fromkeys(r["model"] for r in summary))
    colours = distinct_colours(len(models))
    fig, ax = plt.subplots(figsize=(7, 4.5) if len(models) <= 8 else (8.8, 4.5))
    for i, model in enumerate(models):
        rows = [r for r in summary if r["model"] == model and np.isfinite(r["auprc"])]
        if not rows:
            continue
        b = np.array([r["budget"] for r in rows], float)
        m, lo, hi = (np.array([r[k] for r in rows], float) for k in ("auprc", "low", "high"))
        style, marker = _STYLE.get(rows[0].get("role"), "-"), MARKERS[i % len(MARKERS)]
        ax.plot(b, m, style, color=colours[i], marker=marker, ms=3, label=model)
        band = 0.07 if rows[0].get("role") == "baseline" else 0.15
        ax.fill_between(b, lo, hi, color=colours[i], alpha=band, linewidth=0)
    if prevalence is not None:
        ax.axhline(prevalence, color="grey", lw=0.8, ls=(0, (1, 3)), label="random (prevalence)")
    ax.set_xscale("log")
    ax.set_xlabel("target anchors")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    beside = {"loc": "center left", "bbox_to_anchor": (1.01, 0.5)}  # many lines: beside the axes
    ax.legend(fontsize=8, **({"loc": "best"} if len(models) <= 8 else beside))
    return save_figure(fig, path)


#: marker cycle of :func:`plot_curve` (lines stay apart in grey-scale prints)
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def distinct_colours(n: int) -> list:
    """``n`` colours no two alike.

    matplotlib's tab10 up to 10; up to 20, tab20's ten dark shades first and then its ten light
    ones; beyond, evenly spaced hues of turbo (the default colour cycle repeats after ten).

    Parameters
    ----------
    n : int
        Number of colours.

    Returns
    -------
    list
        ``n`` RGBA colours.

    Examples
    --------
    >>> from anchordiv.plots import distinct_colours
    >>> colours = distinct_colours(12)
    >>> len(colours), len({tuple(c) for c in colours})
    (12, 12)
    """
    from matplotlib import colormaps

    integer("n", n, low=0)
    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](2 * i if i < 10 else 2 * (i - 10) + 1) for i in range(n)]
    return [colormaps["turbo"](x) for x in np.linspace(0.05, 0.95, n)]


def plot_scores(
    summary: list[dict], path, *, title: str = "retrieval", label: str = "scorer"
) -> Path:
    """Horizontal bars of mean AUPRC with interval whiskers, prevalence as a dotted line.

    Parameters
    ----------
    summary : list of dict
        Rows with ``<label>, auprc, low, high`` and optionally ``prevalence`` (e.g.
        :meth:`anchordiv.evaluation.evaluate.Evaluation.summary`).
    path : str or Path
        The PNG to write.
    title : str, default "retrieval"
        Plot title.
    label : str, default "scorer"
        The row key that names a bar.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    AnchorDivError
        ``summary`` that is not a list of row dicts (an Evaluation itself:
        pass ``ev.summary()``).
    """
    summary = summary_rows(summary, (label, "auprc", "low", "high"), "Evaluation.summary()")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(summary) + 1.2))
    names = [str(r[label]) for r in summary]
    m = np.array([r["auprc"] for r in summary], float)
    err = np.abs(np.array([[r["low"], r["high"]] for r in summary], float).T - m)
    ax.barh(names, m, xerr=err, color="tab:blue", alpha=0.7, capsize=3)
    prev = [r.get("prevalence") for r in summary if r.get("prevalence") is not None]
    if prev:
        ax.axvline(float(np.mean(prev)), color="grey", ls=":", label="random (prevalence)")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    ax.invert_yaxis()
    ax.set_xlabel("mean AUPRC (95 % interval)")
    ax.set_title(title)
    return save_figure(fig, path)


def summary_rows(summary, keys: tuple, source: str) -> list[dict]:
    """``summary`` as a list of row dicts that have ``keys``, or an :class:`AnchorDivError`
    naming what it was (a Curve or an Evaluation itself: its ``source`` gives the rows)."""
    rows = list(summary) if isinstance(summary, (list, tuple)) else None
    if rows is None or not all(isinstance(r, dict) and all(k in r for k in keys) for r in rows):
        what = type(summary).__name__ if rows is None else "rows without " + ", ".join(keys)
        raise AnchorDivError(f"summary: a list of row dicts ({source}), got {what}")
    return rows


def elbo_plot(elbo: np.ndarray, path, *, title: str = "SVI") -> Path:
    """The ELBO against step, symlog y so early and late steps both show.

    Parameters
    ----------
    elbo : numpy.ndarray, shape [steps]
        The ELBO (or loss) per step.
    path : str or Path
        The PNG to write.
    title : str, default "SVI"
        Plot title.

    Returns
    -------
    Path
        The path written.

    Raises
    ------
    AnchorDivError
        ``elbo`` that is not a non-empty 1-D array.
    """
    try:
        values = np.asarray(elbo, np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim != 1 or len(values) == 0:
        raise AnchorDivError(
            f"elbo: a non-empty 1-D array of the loss per step, got {type(elbo).__name__}"
            + (f" of shape {list(values.shape)}" if values is not None else "")
        )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(values) + 1), values, lw=1)
    ax.set_yscale("symlog")
    ax.set_xlabel("step")
    ax.set_ylabel("ELBO")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


#: file suffixes read as images by :func:`neighbours`
IMAGE_SUFFIXES = (".bmp", ".gif", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")
#: border colours of :func:`neighbours`: query, relevant, not relevant, unlabelled
BORDERS = {"query": "#1f77b4", True: "#2ca02c", False: "#d62728", None: "#bbbbbb"}


def item_kind(items) -> str:
    """What :func:`neighbours` was given: texts, image files or image arrays.

    Parameters
    ----------
    items : sequence or numpy.ndarray
        Texts; image files (``Path``, or names ending in :data:`IMAGE_SUFFIXES`); images
        ``[G, H, W(, C)]`` or a list of ``[H, W(, C)]`` arrays.

    Returns
    -------
    str
        ``"text"``, ``"path"`` or ``"array"``.

    Raises
    ------
    AnchorDivError
        Anything else.

    Examples
    --------
    >>> from anchordiv.plots import item_kind
    >>> item_kind(["a cat", "a dog"]), item_kind(["cat.jpg"]), item_kind(np.zeros((2, 8, 8)))
    ('text', 'path', 'array')
    """
    if isinstance(items, np.ndarray) and items.ndim >= 3:
        return "array"
    seq = list(items)
    if seq and all(isinstance(i, np.ndarray) for i in seq):
        return "array"
    if seq and all(
        isinstance(i, Path) or (isinstance(i, str) and i.lower().endswith(IMAGE_SUFFIXES))
        for i in seq
    ):
        return "path"
    if seq and all(isinstance(i, str) for i in seq):
        return "text"
    raise AnchorDivError(
        "items: expected texts, image file paths or image arrays ([G, H, W(, C)] or a list of "
        f"[H, W(, C)]), got {type(seq[0]).__name__ if seq else 'nothing'}"
    )


def thumbnail(image, size: int = 160) -> np.ndarray:
    """An image as a square RGB thumbnail: the centre square, resized (not squashed).

    Parameters
    ----------
    image : str, Path or numpy.ndarray, shape [H, W] or [H, W, C]
        An image file, or pixels (uint8, or floats in [0, 1]; C = 1, 3 or 4).
    size : int, default 160
        Side of the thumbnail in pixels.

    Returns
    -------
    numpy.ndarray of uint8, shape [size, size, 3]
        The thumbnail.

    Raises
    ------
    AnchorDivError
        An unreadable file or an array that is not an image.

    Examples
    --------
    >>> from anchordiv.plots import thumbnail
    >>> thumbnail(np.zeros((30, 50)), size=16).shape
    (16, 16, 3)
    """
    from PIL import Image

    size = integer("size", size, low=8)
    if isinstance(image, (str, Path)):
        try:
            with Image.open(image) as im:
                img = im.convert("RGB")
        except (OSError, ValueError) as e:
            raise AnchorDivError(f"items: cannot read image {str(image)!r}: {e}") from e
    else:
        a = np.asarray(image)
        if a.ndim == 3 and a.shape[2] == 1:
            a = a[..., 0]
        if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
            raise AnchorDivError(f"items: expected an image [H, W(, C)], got {list(a.shape)}")
        if a.dtype != np.uint8:
            a = (np.clip(np.asarray(a, float), 0, 1) * 255).round().astype(np.uint8)
        img = Image.fromarray(a).convert("RGB")
    w, h = img.size
    side = min(w, h)
    left, top = (w - side) // 2, (h - side) // 2
    img = img.crop((left, top, left + side, top + side))
    return np.asarray(img.resize((size, size), Image.Resampling.LANCZOS))


def _frame(ax, colour, width: float) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(True)
        spine.set_edgecolor(colour)
        spine.set_linewidth(width)


def neighbours(
    result,
    items,
    path=None,
    *,
    query_items=None,
    captions=None,
    query_captions=None,
    group: str = "geometry",
    thumb: float = 1.2,
    title: str | None = None,
    width: int = 70,
):
    """What each geometry retrieves: a markdown table for texts, a thumbnail grid for images.

    For images, each row is one query under one geometry: the query first (blue frame), then
    its neighbours, closest first — framed green when they share a label with the query and red
    when not (grey without labels).  Rows come in one block per geometry (``group="geometry"``)
    or one block per query (``group="query"``), each row labelled with its geometry.

    Parameters
    ----------
    result : anchordiv.evaluation.Neighbours
        From :func:`anchordiv.evaluation.neighbours`.
    items : sequence of str, sequence of str or Path, or array_like, length G
        The gallery: texts, image files (names ending in an image suffix, or ``Path``), or
        images ``[G, H, W(, C)]`` / a list of ``[H, W(, C)]`` arrays.
    path : str or Path, optional
        Where to write the PNG (images) or markdown (texts).
    query_items : sequence, optional, length Q
        The queries' texts or images (default: their gallery items; needed for queries from
        outside the gallery).
    captions : sequence of str, optional, length G
        A short caption under each thumbnail (e.g. the item's class).
    query_captions : sequence of str, optional, length Q
        A caption under each query (default: its gallery item's caption; queries from outside
        the gallery have one only from here).
    group : {"geometry", "query"}, default "geometry"
        Row blocks per geometry or per query.
    thumb : float, default 1.2
        Thumbnail side in inches.
    title : str, optional
        Figure title.
    width : int, default 70
        Characters kept of each text (texts only).

    Returns
    -------
    matplotlib.figure.Figure or str
        The figure (images; closed once written to ``path``) or the markdown (texts).

    Raises
    ------
    AnchorDivError
        Items of no known kind, too few items, an unknown ``group``, or outside queries without
        ``query_items``.

    Examples
    --------
    >>> from anchordiv.evaluation import neighbours as find
    >>> from anchordiv.plots import neighbours
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(6, 3))
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> result = find({}, x, [0], k=2, baselines=("cosine",))
    >>> print(neighbours(result, ["a", "b", "c", "d", "e", "f"]).splitlines()[0])
    **Query 1** (gallery row 0): a
    >>> fig = neighbours(result, rng.uniform(size=(6, 20, 30, 3)))
    >>> len(fig.axes)  # the block's header, the query and its 2 neighbours
    4
    """
    kind = item_kind(items)
    if group not in ("geometry", "query"):
        raise AnchorDivError(f"group: expected 'geometry' or 'query', got {group!r}")
    if kind == "text":
        md = result.to_markdown(list(items), query_texts=query_items, width=width)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(md + "\n")
        return md
    top = max(int(result.indices[n].max()) for n in result.names)
    if len(items) <= max(top, int(result.queries.max())):
        raise AnchorDivError(f"items: {len(items)} items, but the neighbours reference row {top}")
    if query_items is None and (result.queries < 0).any():
        raise AnchorDivError("query_items: queries from outside the gallery need their images")
    if query_items is not None and len(query_items) != len(result.queries):
        raise AnchorDivError(f"query_items: expected {len(result.queries)} images")
    if query_captions is not None and len(query_captions) != len(result.queries):
        raise AnchorDivError(f"query_captions: expected {len(result.queries)} captions")
    positive("thumb", thumb)
    px = int(round(thumb * 120))

    @functools.cache
    def image(row: int) -> np.ndarray:
        return thumbnail(items[row], px)

    n_q, k, names = len(result.queries), result.k, result.names
    if group == "geometry":
        blocks = [[(g, q) for q in range(n_q)] for g in names]
    else:
        blocks = [[(g, q) for g in names] for q in range(n_q)]
    # layout in inches: a label column, the query, a gap, k neighbours; a header over each block
    label_w, gap_w = 1.6, 0.25
    cap_h = 0.22 if captions is not None or query_captions is not None else 0.0
    head_h, block_gap = 0.3, 0.25
    rows: list = []  # (height, cell): a gap between blocks, each block's header, its rows
    for b, block in enumerate(blocks):
        rows += [(block_gap, None)] * bool(b) + [(head_h, ("head", block))]
        rows += [(thumb + cap_h, cell) for cell in block]
    heights, cells = [h for h, _ in rows], [c for _, c in rows]
    title_h = 0.45 if title else 0.1
    legend_h = 0.35 if result.relevant is not None else 0.0
    fig_w = label_w + thumb * (k + 1) + gap_w + 0.1
    fig_h = title_h + sum(heights) + legend_h + 0.05
    plt = pyplot()
    fig = plt.figure(figsize=(fig_w, fig_h))
    layout = dict(width_ratios=[thumb, gap_w] + [thumb] * k, height_ratios=heights, wspace=0.06)
    edges = dict(left=label_w / fig_w, right=1 - 0.1 / fig_w, top=1 - title_h / fig_h, hspace=0.0)
    grid = fig.add_gridspec(len(heights), k + 2, bottom=legend_h / fig_h, **layout, **edges)
    for r, cell in enumerate(cells):
        if cell is None:
            continue
        if cell[0] == "head":
            block = cell[1]
            head = fig.add_subplot(grid[r, :])
            head.axis("off")
            label = f"{block[0][0]}" if group == "geometry" else _query_label(result, block[0][1])
            bold = dict(ha="right", va="bottom", fontsize=9, weight="bold")
            head.text(-0.02, 0.1, label, transform=head.transAxes, **bold)
            continue
        g, q = cell
        qrow = int(result.queries[q])
        qimg = thumbnail(query_items[q], px) if query_items is not None else image(qrow)
        first = cells[r - 1] is not None and cells[r - 1][0] == "head"
        ax = fig.add_subplot(grid[r, 0])
        ax.imshow(qimg)
        if first:
            ax.set_title("query", fontsize=8, color="dimgray", pad=3)
        _frame(ax, BORDERS["query"], 3.0)
        side = g if group == "query" else f"{g}\n{_query_label(result, q)}"
        ax.set_ylabel(side, rotation=0, ha="right", va="center", fontsize=9, labelpad=8)
        if query_captions is not None:
            ax.set_xlabel(_short(query_captions[q]), fontsize=7, labelpad=2)
        elif captions is not None and qrow >= 0:
            ax.set_xlabel(_short(captions[qrow]), fontsize=7, labelpad=2)
        for c in range(k):
            item = int(result.indices[g][q, c])
            ax = fig.add_subplot(grid[r, c + 2])
            ax.imshow(image(item))
            if first:
                ax.set_title(str(c + 1), fontsize=8, color="dimgray", pad=3)
            rel = None if result.relevant is None else bool(result.relevant[g][q, c])
            _frame(ax, BORDERS[rel], 3.0 if rel is not None else 0.8)
            if captions is not None:
                ax.set_xlabel(_short(captions[item]), fontsize=7, labelpad=2)
    if title:
        fig.suptitle(title, y=1 - 0.08 / fig_h, va="top", fontsize=11)
    if result.relevant is not None:
        legend = "frames: blue = query, green = shares a label with it, red = does not"
        fig.text(0.5, 0.1 / fig_h, legend, ha="center", va="bottom", fontsize=8, color="dimgray")
    if path is not None:
        save_figure(fig, path)
    return fig


def _query_label(result, q: int) -> str:
    row = int(result.queries[q])
    return f"query {q + 1}" + (f" (row {row})" if row >= 0 else "")


def _short(text, width: int = 18) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 1] + "…"
