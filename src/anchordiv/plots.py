"""Matplotlib figures written to PNG files (Agg backend; nothing is shown on screen).

Every function takes plain rows (lists of dicts, as written to CSV) and a path, and returns the
path, so studies can rebuild a figure from a saved table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import integer


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
    """
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
        ax.plot(
            b,
            m,
            _STYLE.get(rows[0].get("role"), "-"),
            color=colours[i],
            marker=MARKERS[i % len(MARKERS)],
            ms=3,
            label=model,
        )
        band = 0.07 if rows[0].get("role") == "baseline" else 0.15
        ax.fill_between(b, lo, hi, color=colours[i], alpha=band, linewidth=0)
    if prevalence is not None:
        ax.axhline(prevalence, color="grey", lw=0.8, ls=(0, (1, 3)), label="random (prevalence)")
    ax.set_xscale("log")
    ax.set_xlabel("target anchors")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    if len(models) <= 8:
        ax.legend(fontsize=8, loc="best")
    else:  # many lines: the legend beside the axes
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
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
    """
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
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(elbo) + 1), elbo, lw=1)
    ax.set_yscale("symlog")
    ax.set_xlabel("step")
    ax.set_ylabel("ELBO")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


__all__ = [
    "MARKERS",
    "distinct_colours",
    "elbo_plot",
    "finish",
    "plot_curve",
    "plot_scores",
    "pyplot",
    "save_figure",
]
