"""Does an adapted posterior keep the framework's promise on a curve?  Paired differences to
``max(target-only, isotropic control)`` and cosine (:func:`dominance_rows`), the anchors it
saves (:func:`anchors_needed`), budgets where its mean falls (:func:`falls`); :func:`triples`
names each posterior's partners (``None`` where missing, named by the rows' ``lacks``)."""

from __future__ import annotations

import warnings
from typing import Mapping

import numpy as np

from ..errors import AnchorDivError, integer

#: the baseline every posterior is also compared with
BASELINE = "cosine"


# ---- the claims a report states, one function each (a NaN end or mean: never yes) ----------


def interval_above(low: float) -> bool:
    """ "Above": a paired difference whose 95 % interval lies above zero (its low end > 0).

    Examples
    --------
    >>> from anchordiv.evaluation.dominance import interval_above
    >>> interval_above(0.01), interval_above(-0.01), interval_above(float("nan"))
    (True, False, False)
    """
    return bool(np.isfinite(low) and low > 0)


def interval_below(high: float) -> bool:
    """ "Below": a paired difference whose 95 % interval lies below zero (its high end < 0)."""
    return bool(np.isfinite(high) and high < 0)


def keeps_promise(high: float) -> bool:
    """Whether a posterior keeps the promise at one budget: its paired difference to the
    better of target-only and the control is not below zero with the interval (high end ≥ 0);
    an undefined interval does not keep it."""
    return bool(np.isfinite(high) and high >= 0)


def within(difference: float, tolerance: float) -> bool:
    """ "Within ``tolerance`` or above": ``difference ≥ −tolerance`` (NaN: no)."""
    return bool(np.isfinite(difference) and difference >= -tolerance)


def exceeds(mean: float, reference: float) -> bool:
    """ "Exceeds" (a mean, no interval): ``mean > reference``, both finite."""
    return bool(np.isfinite(mean) and np.isfinite(reference) and mean > reference)


def triples(
    curve, names: Mapping[str, tuple[str | None, str | None]] | None = None
) -> dict[str, tuple[str | None, str | None]]:
    """``{posterior: (isotropic control, target-only)}`` of a curve's models.

    Parameters
    ----------
    curve : Curve
        An adaptation curve.
    names : mapping of str to (str or None, str or None), optional
        Checked against the curve's models; None: from the roles — each ``posterior`` model with
        the ``isotropic`` and ``target`` models of its kind, ``None`` for one the curve lacks.

    Returns
    -------
    dict of str to (str or None, str or None)
        The triples (``None``: no such partner; :func:`dominance_rows` compares with the rest).

    Raises
    ------
    AnchorDivError
        A name that is not a model of the curve.
    """
    if names is None:
        by_role = {(m.role, m.kind): n for n, m in curve.models.items()}
        names = {
            n: (by_role.get(("isotropic", m.kind)), by_role.get(("target", m.kind)))
            for n, m in curve.models.items()
            if m.role == "posterior"
        }
    out = {}
    for post, (control, target) in names.items():
        missing = [x for x in (post, control, target) if x is not None and x not in curve.models]
        if missing:
            raise AnchorDivError(
                f"dominance: the curve lacks model(s) {missing} for {post!r} (name the "
                f"posterior, its isotropic control and the target-only model of the same kind "
                f"among {sorted(curve.models)}; None for a partner the curve does not have)"
            )
        out[post] = (control, target)
    return out


def lacks(control: str | None, target: str | None) -> list[str]:
    """The partners a posterior has no model for: ``"control"``, ``"target-only"``.

    Examples
    --------
    >>> from anchordiv.evaluation.dominance import lacks
    >>> lacks("isotropic-spectral", None)
    ['target-only']
    """
    return [k for k, v in (("control", control), ("target-only", target)) if v is None]


def dominance_rows(
    curve, names: Mapping[str, tuple[str | None, str | None]], *, baseline: str = BASELINE
) -> list[dict]:
    """Per posterior and budget: the posterior against the better of target-only and control, and cosine.

    Parameters
    ----------
    curve : Curve
        An adaptation curve.
    names : mapping of str to (str or None, str or None)
        ``{posterior: (isotropic control, target-only)}`` (:func:`triples`); ``None``: the
        curve has no such partner, the posterior is compared with the other.
    baseline : str, default "cosine"
        The baseline model (a curve without it gets NaN ``diff_baseline``).

    Returns
    -------
    list of dict
        ``auprc``/``low``/``high``, ``best_other`` (target-only or control, whichever has the
        higher mean there; None when it has neither) and ``diff_best``, ``diff_baseline`` with
        ``_low``/``_high`` 95 % paired intervals (NaN against a model the curve lacks),
        ``holds`` (the posterior's interval against ``best_other`` does not lie below zero;
        None without one) and ``lacks`` (:func:`lacks`, plus ``baseline`` when missing).
    """
    contrasts: dict[tuple[str, str], dict] = {}

    none = {"difference": np.nan, "low": np.nan, "high": np.nan}

    def contrast(a, b, budget):
        if b is None:
            return none
        if (a, b) not in contrasts:
            contrasts[(a, b)] = {r["budget"]: r for r in curve.contrast(a, b)}
        return contrasts[(a, b)][budget]

    base = baseline if baseline in curve.models else None
    rows = []
    for post, (control, target) in names.items():
        others = [o for o in (target, control) if o is not None]
        missing = lacks(control, target) + ([] if base else [baseline])
        for b in curve.budgets:
            mean = lambda o: float(np.nan_to_num(curve.cell(o, b)[0], nan=-np.inf))  # noqa: E731
            best = max(others, key=mean) if others else None
            d, c = contrast(post, best, b), contrast(post, base, b)
            parts = (("", "difference"), ("_low", "low"), ("_high", "high"))
            rows.append(
                {
                    "posterior": post,
                    "budget": b,
                    **dict(zip(("auprc", "low", "high"), curve.cell(post, b))),
                    "best_other": best,
                    **{f"diff_best{s}": d[key] for s, key in parts},
                    **{f"diff_baseline{s}": c[key] for s, key in parts},
                    "holds": keeps_promise(d["high"]) if best else None,
                    "lacks": missing,
                }
            )

    return rows


def budget_to_reach(budgets, means, level: float) -> float:
    """The smallest budget at which a curve first reaches a level, log-linearly interpolated.

    Parameters
    ----------
    budgets : sequence of int
        Budgets, ascending.
    means : array_like, shape [len(budgets)]
        Mean AUPRC per budget.
    level : float
        The level to reach.

    Returns
    -------
    float
        The interpolated budget (from the budget before); NaN if it never does.

    Examples
    --------
    >>> from anchordiv.evaluation.dominance import budget_to_reach
    >>> round(budget_to_reach([1, 10, 100], np.array([0.2, 0.5, 0.8]), 0.5), 6)
    10.0
    """
    b, m = np.log(np.asarray(budgets, float)), np.asarray(means, float)
    for j in range(len(m)):
        if np.isfinite(m[j]) and m[j] >= level:
            if j == 0 or not np.isfinite(m[j - 1]):
                return float(np.exp(b[j]))
            t = (level - m[j - 1]) / (m[j] - m[j - 1])
            return float(np.exp(b[j - 1] + t * (b[j] - b[j - 1])))
    return float("nan")


def anchors_needed(
    curve, posterior: str, target: str, *, at=2, n_boot=300, seed=0, level=0.95
) -> dict:
    """How many times ``at`` anchors the target-only model needs to reach the posterior's AUPRC at ``at``.

    See the module docstring.  NaN bootstrap resamples (never reached) are left out and counted.

    Parameters
    ----------
    curve : Curve
        An adaptation curve holding both models.
    posterior : str
        The posterior model's name.
    target : str
        The target-only model's name.
    at : int, default 2
        The posterior's budget.
    n_boot : int, default 300
        Query-bootstrap resamples.
    seed : int, default 0
        Bootstrap seed.
    level : float, default 0.95
        Interval level.

    Returns
    -------
    dict
        ``ratio``, its bootstrap ``low``/``high``, ``never_reached`` (a fraction of the
        resamples), ``level_auprc`` and, when the point estimate is never reached, ``at_least`` =
        largest budget ÷ ``at`` (a lower bound).
    """
    at = integer("at", at, low=1)
    if at not in curve.budgets:
        raise AnchorDivError(f"at: the curve has no budget {at} (budgets {curve.budgets})")

    def ratio(q):
        per = lambda name, b: np.nanmean(curve.per_query[(name, b)][:, q])  # noqa: E731
        means = [per(target, b) for b in curve.budgets]
        return budget_to_reach(curve.budgets, means, per(posterior, at)) / at

    n_q = curve.per_query[(posterior, at)].shape[1]
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():  # NaN means of undefined cells are expected
        warnings.simplefilter("ignore", RuntimeWarning)
        boot = np.array([ratio(rng.integers(n_q, size=n_q)) for _ in range(n_boot)])
        point = ratio(np.arange(n_q))
    ok = boot[np.isfinite(boot)]
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(ok, [tail, 100 - tail]) if len(ok) else (np.nan, np.nan)
    return {
        "posterior": posterior,
        "target_only": target,
        "at": at,
        "level_auprc": curve.cell(posterior, at)[0],
        "ratio": point,
        "low": float(lo),
        "high": float(hi),
        "never_reached": float(1 - len(ok) / n_boot),
        "at_least": float(curve.budgets[-1] / at) if not np.isfinite(point) else np.nan,
    }


def falls(curve, name: str, target: str | None = None) -> list[dict]:
    """The budgets where a model's mean AUPRC is below the previous budget's interval.

    A fall is a step from one budget to the next where the mean at the later budget is below
    the lower end of the earlier budget's interval (cells whose mean is NaN are skipped): more
    target anchors made the model worse by more than its own uncertainty.

    With ``target`` (the target-only model of the same kind) each fall also says whether it
    goes ``toward_target_only``: the target-only model at the curve's largest budget is at or
    below where the posterior fell to, so the curve is converging to a limit *below its own
    start* (the targets' own geometry is worse than the prior's, and the posterior approaches
    it as the recipe requires) rather than falling below where it is heading.

    Parameters
    ----------
    curve : Curve
        An adaptation curve (:func:`~anchordiv.adaptation_curve`).
    name : str
        The model whose falls are wanted.
    target : str, optional
        The target-only model of the same kind, on the same curve.

    Returns
    -------
    list of dict
        One dict per fall, in budget order; empty when the curve never falls beyond its
        interval.  The keys:

        - ``model`` (str): ``name``;
        - ``from``, ``to`` (int): the two consecutive budgets (numbers of target anchors);
        - ``drop`` (float): mean AUPRC at ``from`` minus mean AUPRC at ``to`` (> 0);
        - with ``target`` only, ``toward_target_only`` (bool): the target-only model's mean at
          the largest budget is ≤ the mean at ``to``; and ``target_only_full`` (float): that
          mean, the limit the posterior approaches.
    """
    out = []
    cells = [curve.cell(name, b) for b in curve.budgets]
    limit = float(curve.cell(target, curve.budgets[-1])[0]) if target else float("nan")
    for b0, b1, (m0, lo0, _), (m1, _, _) in zip(curve.budgets, curve.budgets[1:], cells, cells[1:]):
        if np.isfinite(m0) and np.isfinite(m1) and m1 < lo0:
            fall = {"model": name, "from": b0, "to": b1, "drop": float(m0 - m1)}
            if target:
                fall.update(toward_target_only=bool(limit <= m1), target_only_full=limit)
            out.append(fall)
    return out
