"""Matplotlib figures written to PNG files (Agg backend; nothing is shown on screen).

Every function takes plain rows (lists of dicts, as written to CSV) and a path, and returns the
path, so studies can rebuild a figure from a saved table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    return p


def finish(fig, path=None):
    """Lay out ``fig``; write it to the PNG ``path`` (and close it) when given.  Returns fig."""
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        _pyplot().close(fig)
    return fig


#: line styles by model role (curves.ROLES)
_STYLE = {"target": "-", "posterior": "-", "isotropic": ":", "baseline": "--", "custom": "-."}


def plot_curve(summary: list[dict], path, *, prevalence: float | None = None,
               title: str = "adaptation curve", ylabel: str = "mean AUPRC") -> Path:
    """AUPRC against target-anchor budget (log x), one line per model with its interval band.

    ``summary`` rows need ``model, budget, auprc, low, high`` (``role`` picks the line style);
    ``prevalence`` draws the random-ranking level."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for model in dict.fromkeys(r["model"] for r in summary):
        rows = [r for r in summary if r["model"] == model and np.isfinite(r["auprc"])]
        if not rows:
            continue
        b = np.array([r["budget"] for r in rows], float)
        m, lo, hi = (np.array([r[k] for r in rows], float) for k in ("auprc", "low", "high"))
        line, = ax.plot(b, m, _STYLE.get(rows[0].get("role"), "-"), marker="o", ms=3,
                        label=model)
        band = 0.07 if rows[0].get("role") == "baseline" else 0.15
        ax.fill_between(b, lo, hi, color=line.get_color(), alpha=band, linewidth=0)
    if prevalence is not None:
        ax.axhline(prevalence, color="grey", lw=0.8, ls=(0, (1, 3)), label="random (prevalence)")
    ax.set_xscale("log")
    ax.set_xlabel("target anchors")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best")
    return _save(fig, path)


def plot_scores(summary: list[dict], path, *, title: str = "retrieval",
                label: str = "scorer") -> Path:
    """Horizontal bars of mean AUPRC with interval whiskers, prevalence as a dotted line.

    ``summary`` rows need ``<label>, auprc, low, high`` and optionally ``prevalence``
    (e.g. :meth:`anchordiv.evaluation.evaluate.Evaluation.summary`)."""
    plt = _pyplot()
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
    return _save(fig, path)




def elbo_plot(elbo: np.ndarray, path, *, title: str = "SVI") -> Path:
    """The ELBO against step, symlog y so early and late steps both show."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(elbo) + 1), elbo, lw=1)
    ax.set_yscale("symlog")
    ax.set_xlabel("step")
    ax.set_ylabel("ELBO")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return _save(fig, path)


__all__ = ["elbo_plot", "finish", "plot_curve", "plot_scores"]
