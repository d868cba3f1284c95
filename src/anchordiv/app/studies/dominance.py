"""The main job's dominance table (numbers from :mod:`anchordiv.evaluation.dominance`): per task
and default posterior, the paired differences to max(target-only, isotropic control) and to
cosine per budget, the "anchors needed" ratio against target-only and the falls.
:func:`claims` states, per task and posterior, which parts of the claim hold:

* ``small``: above max(target-only, control) with the interval above zero at budgets ≤ 5;
* ``large``: within :data:`TOLERANCE` of max(target-only, control) or above at budgets ≥ 40
  and at all targets;
* ``cosine_5``: the difference to cosine at 5 anchors;
* ``never_falls``: no budget-to-budget fall beyond the interval;
* ``no_own_falls``: none but falls toward a target-only limit below the curve's start.

A posterior whose curve lacks a partner (``spectral`` has no target-only model) is compared
with what the curve has; the parts that need the missing model are "–".
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ...evaluation import dominance as dom
from ..report import interval_cell

#: "within 0.01 AUPRC of target-only or above" at large budgets
TOLERANCE = 0.01
#: the section's title
TITLE = "Does adaptation keep its promise? (dominance table)"
#: budgets counted as "few anchors" / "many anchors"
SMALL, LARGE = 5, 40


def transfer_names(
    priors: Sequence[str], kinds: Sequence[str], models=None
) -> dict[str, tuple[str | None, str | None]]:
    """``{posterior: (control, target-only)}`` of a transfer curve.

    Parameters
    ----------
    priors : sequence of str
        Prior names P.
    kinds : sequence of str
        Kinds.
    models : collection of str, optional
        The curve's model names: a partner not among them is None (a kind without a
        target-only model); None: all named.

    Returns
    -------
    dict of str to (str or None, str or None)
        :func:`.transfer.transfer_models` names: ``P-kind``, ``P-isotropic-kind``, ``kind``.

    Examples
    --------
    >>> from anchordiv.app.studies.dominance import transfer_names
    >>> transfer_names(["domain"], ["gaussian"])
    {'domain-gaussian': ('domain-isotropic-gaussian', 'gaussian')}
    """

    def have(name: str) -> str | None:
        return name if models is None or name in models else None

    return {f"{p}-{k}": (have(f"{p}-isotropic-{k}"), have(k)) for k in kinds for p in priors}


def task_rows(
    task: str,
    curve,
    names: Mapping[str, tuple[str | None, str | None]] | None = None,
    *,
    at: int = 2,
    **extra,
) -> dict:
    """The dominance, anchors-needed and falls rows of one curve.

    Parameters
    ----------
    task : str
        The task's name (tags every row).
    curve : Curve
        Its adaptation curve.
    names : mapping of str to (str or None, str or None), optional
        ``{posterior: (control, target-only)}``; None finds them from the roles
        (:func:`anchordiv.evaluation.dominance.triples`; a partner the curve lacks is None).
    at : int, default 2
        Budget of the anchors-needed ratio.
    **extra
        More tags for every row (e.g. ``finding=``).

    Returns
    -------
    dict
        ``{"dominance", "anchors_needed", "falls"}`` lists of rows.
    """
    names = dom.triples(curve, names)
    tag = {"task": task, **extra}
    needs = (
        [dom.anchors_needed(curve, p, t, at=at) for p, (_, t) in names.items() if t is not None]
        if at in curve.budgets
        else []
    )
    falls = [f for p, (_, t) in names.items() for f in dom.falls(curve, p, t)]
    return {
        "dominance": [{**tag, **r} for r in dom.dominance_rows(curve, names)],
        "anchors_needed": [{**tag, **r} for r in needs],
        "falls": [{**tag, **r} for r in falls],
    }


def merge(parts: Sequence[dict]) -> dict:
    """One ``{"dominance", "anchors_needed", "falls"}`` of several :func:`task_rows`.

    Parameters
    ----------
    parts : sequence of dict
        :func:`task_rows` outputs.

    Returns
    -------
    dict
        The concatenated rows.
    """
    return {k: [r for p in parts for r in p[k]] for k in ("dominance", "anchors_needed", "falls")}


def _interval(r: dict, key: str) -> str:
    """'–' where the curve lacks the model compared with."""
    return interval_cell(r[key], r[key + "_low"], r[key + "_high"], signed=True)


def _where(r: dict) -> str:
    return " / ".join(str(r[k]) for k in ("task", "finding") if r.get(k))


def beats_both(rows: Sequence[dict]) -> bool | None:
    """ "Beats both at ≤ SMALL": every row's paired interval to max(target-only, control)
    above zero (:func:`~anchordiv.evaluation.dominance.interval_above`); None without rows."""
    return all(dom.interval_above(r["diff_best_low"]) for r in rows) if rows else None


def stays_within(rows: Sequence[dict]) -> bool:
    """ "Within TOLERANCE at ≥ LARGE/all": every row's difference to max(target-only,
    control) at least −:data:`TOLERANCE` (:func:`~anchordiv.evaluation.dominance.within`)."""
    return all(dom.within(r["diff_best"], TOLERANCE) for r in rows)


def claims(table: dict) -> list[dict]:
    """Per (task, posterior): the parts of the claim (module docstring) and whether each holds.

    Parameters
    ----------
    table : dict
        ``{"dominance", "anchors_needed", "falls"}`` rows (:func:`merge`).

    Returns
    -------
    list of dict
        One row per task and posterior; each part True / False, None where the curve has no
        such budget or lacks the model it compares with; ``lacks``: the partners it lacks.
    """
    needs = {(_where(r), r["posterior"]): r for r in table["anchors_needed"]}
    fell = {(_where(r), r["model"]) for r in table["falls"]}
    own = {(_where(r), r["model"]) for r in table["falls"] if not r.get("toward_target_only")}
    groups: dict[tuple, list[dict]] = {}
    for r in table["dominance"]:
        groups.setdefault((_where(r), r["posterior"]), []).append(r)
    out = []
    for (where, post), rows in groups.items():
        full = max(r["budget"] for r in rows)
        small = [r for r in rows if r["budget"] <= SMALL and r["budget"] < full]
        large = [r for r in rows if r["budget"] >= LARGE or r["budget"] == full]
        at5 = [r for r in rows if r["budget"] == 5]
        need = needs.get((where, post))
        compared = [r for r in rows if r["best_other"] is not None]
        small = [r for r in small if r["best_other"] is not None]
        out.append(
            {
                "task": where,
                "posterior": post,
                "small": beats_both(small),
                "large": stays_within(large) if compared else None,
                "cosine_5": at5[0]["diff_baseline"] if at5 else float("nan"),
                "never_falls": (where, post) not in fell,
                "no_own_falls": (where, post) not in own,
                "anchors_ratio": need["ratio"] if need else float("nan"),
                "anchors_ratio_low": need["low"] if need else float("nan"),
                "anchors_ratio_high": need["high"] if need else float("nan"),
                "anchors_at_least": need["at_least"] if need else float("nan"),
                "lacks": rows[0].get("lacks", []),
            }
        )
    return out


def _yes(value) -> str:
    return "–" if value is None else ("yes" if value else "**no**")


def section(rep, table: dict, *, note: str = "") -> None:
    """The dominance section of the report.

    The claims per task and posterior, the paired differences per budget, the anchors-needed
    ratios and the falls.

    Parameters
    ----------
    rep : Report
        The report being written.
    table : dict
        :func:`merge` of the tasks' rows.
    note : str, default ""
        A paragraph to add.

    Returns
    -------
    None
        Writes into ``rep``.
    """
    rep.section(TITLE)
    rep.text(
        "Every default posterior (the held-out recipe, `anchordiv.adaptation.statistics`) on every "
        "task, against the better of its target-only model and its isotropic-prior control "
        "(same chosen strengths, no directions) and against cosine; paired 95 % two-level "
        f"bootstrap intervals (same subsets and queries).  Claim: above max(target-only, "
        f"control) with the interval above zero at ≤ {SMALL} anchors; within {TOLERANCE:g} of "
        f"it or above at ≥ {LARGE} and at all anchors; never falls from one budget to the next "
        f"by more than the interval; 'anchors ratio': the budget at which target-only reaches "
        f"the posterior's AUPRC at 2 anchors, ÷ 2 (query bootstrap).  {note}".strip()
    )
    rows = claims(table)
    shown = [
        {
            "task": r["task"],
            "posterior": r["posterior"],
            f"beats both at ≤ {SMALL}": _yes(r["small"]),
            f"within {TOLERANCE:g} at ≥ {LARGE}/all": _yes(r["large"]),
            "− cosine at 5": r["cosine_5"],
            "never falls": _yes(r["never_falls"]),
            "no fall but toward target-only": _yes(r["no_own_falls"]),
            "anchors ratio [95 %]": _ratio(r),
            "lacks": ", ".join(r["lacks"]) or "–",
        }
        for r in rows
    ]
    rep.table(shown, list(shown[0]) if shown else [])  # no rows: the table says so
    lacking = [r for r in rows if r["lacks"]]
    if lacking:
        rep.text(
            "Compared with what their curve has: "
            + "; ".join(
                f"{r['task']} `{r['posterior']}` has no {' or '.join(r['lacks'])} model"
                for r in lacking
            )
            + " (e.g. a family without a target-only fit); the parts that need it are '–'."
        )
    rep.text("Per budget (`vs`: the better of target-only and the control there):")
    per_budget = [
        {
            "task": _where(r),
            "posterior": r["posterior"],
            "n": r["budget"],
            "AUPRC": interval_cell(r["auprc"], r["low"], r["high"]),
            "vs": r["best_other"] or "–",
            "− max(target-only, control)": _interval(r, "diff_best"),
            "− cosine": _interval(r, "diff_baseline"),
        }
        for r in table["dominance"]
    ]
    rep.table(per_budget, list(per_budget[0]))
    falls = table["falls"]
    rep.text(
        "Falls beyond the interval (*toward target-only*: the target-only model at all "
        "anchors is below where the curve fell to — the targets' own geometry is worse "
        "than the prior's and the posterior converges to it): "
        + ("none." if not falls else "; ".join(map(_fall, falls)) + ".")
    )


def _fall(f: dict) -> str:
    toward = (
        f", *toward target-only* ({f['target_only_full']:.3f} at all anchors)"
        if f.get("toward_target_only")
        else ""
    )
    return f"{_where(f)} `{f['model']}` {f['from']} → {f['to']} (−{f['drop']:.3f}{toward})"


def _ratio(r: dict) -> str:
    if not np.isfinite(r["anchors_ratio"]):
        bound = r["anchors_at_least"]
        return f"> {bound:.1f} (not reached)" if np.isfinite(bound) else "–"
    return f"{r['anchors_ratio']:.2f} [{r['anchors_ratio_low']:.2f}, {r['anchors_ratio_high']:.2f}]"
