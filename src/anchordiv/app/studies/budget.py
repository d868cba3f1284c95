"""Anchor budget trade-off (the paper's Fig. 4, in kind): the target-only models of an
adaptation curve, softmax vs parametric as the budget and ``coverage`` (the mean fraction of
classes with an anchor in the subsets) grow.
"""

from __future__ import annotations

import numpy as np

from ...evaluation.curves import Curve, subset
from ..report import interval_cell

ROLES = ("target", "baseline")


def coverage(target_class: np.ndarray, budget: int, n_subsets: int, seed: int) -> float:
    """Mean fraction of classes with ≥ 1 anchor over the curve's subsets of size ``budget``.

    Parameters
    ----------
    target_class : numpy.ndarray of int, shape [m]
        Class of each target anchor.
    budget : int
        Subset size.
    n_subsets : int
        Subsets (as in the curve).
    seed : int
        The curve's seed.

    Returns
    -------
    float
        Mean class coverage in [0, 1].

    Examples
    --------
    >>> from anchordiv.app.studies import coverage
    >>> round(coverage(np.array([0, 0, 1, 1, 2, 2]), 6, 5, 0), 3)
    1.0
    """
    n_classes = len(np.unique(target_class))
    fractions = [
        len(np.unique(target_class[subset(len(target_class), budget, s, seed)])) / n_classes
        for s in range(n_subsets)
    ]
    return float(np.mean(fractions))


def budget_rows(curve: Curve, target_class, seed: int) -> list[dict]:
    """The curve's target-only and baseline rows, with a ``coverage`` column.

    Parameters
    ----------
    curve : Curve
        An adaptation curve.
    target_class : numpy.ndarray of int, shape [m]
        Class of each target anchor.
    seed : int
        The curve's seed (reproduces its subsets).

    Returns
    -------
    list of dict
        Tidy rows (model, budget, auprc, ..., coverage).
    """
    target_class = np.asarray(target_class)
    return [
        {**r, "coverage": coverage(target_class, r["budget"], max(r["n_subsets"], 1), seed)}
        for r in curve.summary()
        if r["role"] in ROLES
    ]


def plot_budget(rows: list[dict], path):
    """AUPRC against the number of target anchors for the target-only models and baselines."""
    from ...plots import plot_curve

    return plot_curve(
        rows,
        path,
        prevalence=rows[0]["prevalence"],
        title="Anchor budget: softmax vs parametric (target anchors only)",
    )


def winners(rows: list[dict], tie: float = 1e-3) -> list[dict]:
    """Per budget: the best target-only model and its margin over the runner-up ("tie" when
    the margin is below ``tie``; "only X" when X is the only model defined there)."""
    out = []
    for b in sorted({r["budget"] for r in rows}):
        at_b = [r for r in rows if r["budget"] == b and r["role"] == "target"]
        cell = sorted((r for r in at_b if np.isfinite(r["auprc"])), key=lambda r: -r["auprc"])
        if cell:
            margin = cell[0]["auprc"] - cell[1]["auprc"] if len(cell) > 1 else float("nan")
            top = cell[0]["model"]
            best = f"only {top}" if len(cell) == 1 else "tie" if margin < tie else top
            out.append(
                {
                    "budget": b,
                    "coverage": cell[0]["coverage"],
                    "best": best,
                    "auprc": cell[0]["auprc"],
                    "margin": margin,
                    **{r["model"]: r["auprc"] for r in cell},
                }
            )
    return out


def report_section(
    rep, rows: list[dict], *, title: str | None = None, source: str | None = None
) -> None:
    """The anchor-budget section of a report; ``source`` names the task whose curve it reads
    (default: the WordNet → ImageNet text task)."""
    table = winners(rows)
    soft = [w["budget"] for w in table if w["best"] == "softmax"]
    rep.section(title or "Anchor budget (Fig. 4 in kind): softmax vs parametric")
    rep.text(
        f"Target-only models of {source or 'the WordNet → ImageNet curve above'}, against the "
        "number of target anchors (random subsets of the class prompts).  `coverage`: mean "
        "fraction of classes with at least one anchor; AUPRC cells: mean [95 % interval] over "
        "queries and subsets (budget.csv)."
    )
    kinds = [k for k in ("softmax", "gaussian", "latent-gaussian") if any(k in w for w in table)]
    cells = {
        (r["model"], r["budget"]): interval_cell(r["auprc"], r["low"], r["high"]) for r in rows
    }
    shown = [w | {k: cells.get((k, w["budget"]), "–") for k in kinds} for w in table]
    rep.table(shown, ["budget", "coverage", "best", *kinds, "margin"])
    rep.figure(
        "budget.png",
        "Target-only models and baselines against the anchor budget "
        "(95 % intervals).  Table: budget.csv",
    )
    para = [w["budget"] for w in table if w["best"] in ("gaussian", "latent-gaussian")]
    rep.text(
        f"**Outcome.** {_best_at('Softmax', soft)}; {_best_at('a parametric model', para)}"
        f"; the rest are ties or have one model defined."
    )


def _best_at(who: str, budgets: list[int]) -> str:
    """'X is the best target-only model (margin ≥ 0.001) at budgets 1, 2' or '... at no
    budget'."""
    where = f"at budgets {', '.join(map(str, budgets))}" if budgets else "at no budget"
    return f"{who} is the best target-only model (margin ≥ 0.001) {where}"
