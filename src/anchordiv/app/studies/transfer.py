"""Prior transfer with headroom: which broad prior helps a few target anchors, and can the
prior–target diagnostics tell before retrieval (docs/guides/studies-and-curves.md)?
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import numpy as np

from ...evaluation.curves import (
    MODELS,
    Curve,
    CurveModel,
    adaptation_curve,
    adapted,
    frozen_broad,
    isotropic_control,
    subset,
)
from ..._tolerance import first_max
from ...checks.diagnostics import diagnose
from ...evaluation import dominance as dom

#: fixed prior strength of the diagnostics (pseudo-anchors)
PRIOR_ANCHORS = 10.0
#: subspace rank of :func:`adapt_options` (95 % of the broad variance would be
#: ~100+ directions for these priors: nearly the whole space, a cosine-like model; the
#: recipe's default chooses it from the targets)
LATENT_RANK = 10
KINDS = ("gaussian", "latent-gaussian")
#: budgets at which the paired differences are reported
SMALL_BUDGETS = (1, 2, 5)
#: columns of diagnose() compared with retrieval (higher = better fit)
DIAGNOSTICS = ("captured", "mean_cos2", "log_evidence_gain", "loo_gain")


def adapt_options(kind: str, d: int) -> dict:
    """The fixed ``ad.adapt`` options of ``kind`` used by the diagnostics.

    :data:`PRIOR_ANCHORS` pseudo-anchors, and for the latent kind the subspace rank
    :data:`LATENT_RANK`.

    Parameters
    ----------
    kind : str
        ``"gaussian"`` or ``"latent-gaussian"``.
    d : int
        Dimension.

    Returns
    -------
    dict
        Keyword arguments of :func:`anchordiv.adapt`.
    """
    if kind == "gaussian":
        return {"kappa0": PRIOR_ANCHORS, "nu0": d + 1 + PRIOR_ANCHORS}
    return {"prior_anchors": PRIOR_ANCHORS, "rank": LATENT_RANK}


def _adapted(kind: str, broad: np.ndarray, prior: str, _unused, target, tau):
    """The default posterior from ``broad`` (``prior="broad"``) or its isotropic control."""
    return (adapted if prior == "broad" else isotropic_control)(kind, broad, target, tau)


def transfer_models(
    priors: Mapping[str, np.ndarray], kinds: Sequence[str] = KINDS
) -> dict[str, CurveModel]:
    """Curve models of a prior-transfer study.

    Per kind, target-only ``kind`` (where the kind has one: not ``spectral``), and per prior
    ``P`` the posterior ``P-kind`` and its control ``P-isotropic-kind``; plus ``cosine``.

    Parameters
    ----------
    priors : mapping of str to numpy.ndarray
        Prior name → broad anchors or moment points ``[m, d]``.
    kinds : sequence of str, default ("gaussian", "latent-gaussian")
        Kinds.

    Returns
    -------
    dict of str to CurveModel
        The models.
    """
    models = {}
    frozen = {name: frozen_broad(broad) for name, broad in priors.items()}  # digests once
    for kind in kinds:
        if kind in MODELS and MODELS[kind].role == "target":
            models[kind] = MODELS[kind]
        for name, broad in frozen.items():
            models[f"{name}-{kind}"] = CurveModel(
                functools.partial(_adapted, kind, broad, "broad"), "posterior", kind
            )
            models[f"{name}-isotropic-{kind}"] = CurveModel(
                functools.partial(_adapted, kind, broad, "isotropic"), "isotropic", kind
            )
    models["cosine"] = MODELS["cosine"]
    return models


def transfer_curve(
    priors: Mapping[str, np.ndarray],
    targets,
    setup: dict,
    *,
    tau: float,
    kinds: Sequence[str] = KINDS,
    budgets=None,
    n_subsets: int = 5,
    seed: int = 0,
    n_boot: int = 2000,
    progress: bool | None = None,
) -> Curve:
    """The adaptation curve of :func:`transfer_models` on a retrieval setup.

    Parameters
    ----------
    priors : mapping of str to numpy.ndarray
        Prior name → broad anchors or moment points ``[m, d]``.
    targets : array_like, shape [n, d]
        Target anchors.
    setup : dict
        queries, gallery, relevance, query_index (:func:`._common.labelled_retrieval`).
    tau : float
        The encoder's logit scale.
    kinds : sequence of str, default ("gaussian", "latent-gaussian")
        Kinds.
    budgets : list of int, optional
        Budgets.
    n_subsets : int, default 5
        Subsets per budget.
    seed : int, default 0
        Seed.
    n_boot : int, default 2000
        Bootstrap resamples per interval.
    progress : bool, optional
        Show a progress bar.

    Returns
    -------
    Curve
        The curve.
    """
    first, models = next(iter(priors.values())), transfer_models(priors, kinds)
    opts = dict(budgets=budgets, n_subsets=n_subsets, seed=seed, n_boot=n_boot, progress=progress)
    return adaptation_curve(first, targets, tau=tau, models=models, **opts, **setup)


def contrast_rows(
    curve: Curve,
    priors: Sequence[str],
    kinds: Sequence[str] = KINDS,
    budgets: Sequence[int] = SMALL_BUDGETS,
) -> list[dict]:
    """Paired differences at a few budgets between a transfer curve's models.

    Each prior's posterior − its isotropic control (``versus="control"``) and − the target-only
    model (where the curve has one of the kind), and the first prior − each other.

    Parameters
    ----------
    curve : Curve
        A :func:`transfer_curve`.
    priors : sequence of str
        Prior names (the first is compared with the others).
    kinds : sequence of str, default ("gaussian", "latent-gaussian")
        Kinds.
    budgets : sequence of int, default (1, 2, 5)
        Budgets.

    Returns
    -------
    list of dict
        Tidy rows with the paired difference and its interval.
    """
    rows = []
    for kind in kinds:
        pairs = [(p, "control", f"{p}-isotropic-{kind}") for p in priors]
        pairs += [(p, "target-only", kind) for p in priors if kind in curve.models]
        pairs += [(priors[0], q, f"{q}-{kind}") for q in priors[1:]]
        for prior, versus, other in pairs:
            a = f"{prior}-{kind}"
            rows += [
                {"kind": kind, "prior": prior, "versus": versus, "contrast": f"{a} − {other}", **c}
                for c in curve.contrast(a, other)
                if c["budget"] in budgets
            ]
    return rows


def retrieval_gain(contrasts: list[dict], prior: str, kind: str = "gaussian") -> float:
    """Mean over the budgets of :func:`contrast_rows` of posterior − isotropic control.

    Parameters
    ----------
    contrasts : list of dict
        :func:`contrast_rows`.
    prior : str
        Prior name.
    kind : str, default "gaussian"
        Kind.

    Returns
    -------
    float
        The mean paired difference.
    """
    diffs = [
        c["difference"]
        for c in contrasts
        if c["prior"] == prior and c["versus"] == "control" and c["kind"] == kind
    ]
    return float(np.nanmean(diffs)) if diffs else float("nan")


def diagnostic_rows(
    priors: Mapping[str, np.ndarray],
    targets: np.ndarray,
    *,
    budget: int,
    n_subsets: int,
    seed: int,
    k: int = 10,
) -> list[dict]:
    """Per prior: the diagnostics averaged over the curve's target subsets of size ``budget``.

    The same subsets the models were adapted on, with the Gaussian's fixed strengths.

    Parameters
    ----------
    priors : mapping of str to numpy.ndarray
        Prior name → broad anchors or moment points ``[m, d]``.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    budget : int
        Subset size.
    n_subsets : int
        Subsets (as in the curve).
    seed : int
        The curve's seed.
    k : int, default 10
        Leading prior directions.

    Returns
    -------
    list of dict
        One row per prior (:func:`anchordiv.checks.diagnose`'s fields, averaged).
    """
    n, opts = len(targets), adapt_options("gaussian", targets.shape[1])
    subsets = [targets[subset(n, budget, s, seed)] for s in range(n_subsets if budget < n else 1)]
    rows = []
    for name, broad in priors.items():
        runs = [diagnose(broad, t, k=k, **opts) for t in subsets]
        means = {key: float(np.nanmean([r[key] for r in runs])) for key in runs[0]}
        rows.append({"prior": name, "budget": budget, **means})
    return rows


def _order(values: Mapping[str, float]) -> list[str]:
    return sorted(values, key=lambda p: -values[p])


def ranks_first(values: Mapping[str, float], gains: Mapping[str, float]) -> bool:
    """ "Same best prior": the prior a diagnostic's ``values`` rank first is the one the
    retrieval ``gains`` rank first (near-ties go to the first listed, ``first_max``)."""
    names = list(gains)

    def best(m: Mapping[str, float]) -> str:
        return names[int(first_max(np.array([m[p] for p in names], np.float64)))]

    return best(values) == best(gains)


def sign_matches(values: Mapping[str, float], gains: Mapping[str, float], null: float) -> bool:
    """ "Sign right for every prior": each prior's diagnostic is above ``null`` exactly where
    its retrieval gain over the control is above 0."""
    return all((values[p] > null) == (gains[p] > 0) for p in gains)


def ranking_rows(diagnostics: list[dict], gains: Mapping[str, float]) -> list[dict]:
    """Per diagnostic: does it order the priors as retrieval does?

    The priors in the diagnostic's order (best first), the order by retrieval gain over the
    control, whether they agree (entirely, and in the best prior), and whether the diagnostic's
    sign (prior better than the control: evidence / LOO gain > 0, captured and mean cos² > k/d)
    matches the sign of the retrieval gain for every prior.

    Parameters
    ----------
    diagnostics : list of dict
        :func:`diagnostic_rows`.
    gains : mapping of str to float
        Retrieval gain per prior (:func:`retrieval_gain`).

    Returns
    -------
    list of dict
        One row per diagnostic.
    """
    by_prior = {r["prior"]: r for r in diagnostics}
    truth = _order(gains)
    rows = []
    for name in DIAGNOSTICS:
        values = {p: by_prior[p][name] for p in gains}
        null = 0.0 if name.endswith("_gain") else by_prior[truth[0]]["captured_isotropic"]
        order = _order(values)
        rows.append(
            {
                "diagnostic": name,
                "order": " > ".join(order),
                "retrieval_order": " > ".join(truth),
                "same_order": order == truth,
                "picks_best": ranks_first(values, gains),
                "sign_matches": sign_matches(values, gains, null),
            }
        )
    return rows


def of_kind(summary: list[dict], kind: str) -> list[dict]:
    """The summary rows of models of ``kind`` and of the baselines (kind ``""``).

    Parameters
    ----------
    summary : list of dict
        ``Curve.summary()`` rows.
    kind : str
        The kind.

    Returns
    -------
    list of dict
        The selected rows.
    """
    return [r for r in summary if r["kind"] in (kind, "")]


def pivot(summary: list[dict], kind: str) -> list[dict]:
    """Mean AUPRC per budget (rows) and model of ``kind`` (+ cosine) (columns).

    Parameters
    ----------
    summary : list of dict
        ``Curve.summary()`` rows.
    kind : str
        The kind.

    Returns
    -------
    list of dict
        One row per budget.
    """
    from .wordnet_imagenet import pivot as by_budget

    return by_budget(of_kind(summary, kind))


def write_curve(
    curve: Curve, summary: list[dict], out_dir, kinds: Sequence[str], title: str
) -> dict:
    """Write a transfer curve's tables and figures into ``out_dir``.

    ``curve.csv`` (per subset), ``curve_summary.csv`` and one ``curve_<kind>.png`` per kind (its
    models and cosine, 95 % bands).

    Parameters
    ----------
    curve : Curve
        The curve.
    summary : list of dict
        ``curve.summary()``.
    out_dir : str or Path
        Destination.
    kinds : sequence of str
        Kinds.
    title : str
        Figure title.

    Returns
    -------
    dict
        Paths written, by name.
    """
    from pathlib import Path

    from ...evaluation.evaluate import write_rows
    from ...plots import plot_curve

    out = Path(out_dir)
    files = {
        "table": write_rows(out / "curve.csv", curve.rows),
        "summary": write_rows(out / "curve_summary.csv", summary),
    }
    for kind in kinds:
        files[kind] = plot_curve(
            of_kind(summary, kind),
            out / f"curve_{kind}.png",
            prevalence=curve.prevalence,
            title=f"{title} ({kind})",
        )
    return {k: str(v) for k, v in files.items()}


def _cells(contrasts: list[dict], prior: str, versus: str) -> str:
    """``"above in i, below in j of m"`` cells (kind × budget) of one contrast."""
    cells = [
        c
        for c in contrasts
        if c["prior"] == prior and c["versus"] == versus and c["difference"] == c["difference"]
    ]
    up = sum(dom.interval_above(c["low"]) for c in cells)
    down = sum(dom.interval_below(c["high"]) for c in cells)
    return f"above in {up}, below in {down} of {len(cells)}"


def outcome(contrasts: list[dict], priors: Sequence[str]) -> str:
    """The outcome in words.

    Each prior against its isotropic control and target-only, and the first prior against the
    others (95 % paired intervals excluding zero).

    Parameters
    ----------
    contrasts : list of dict
        :func:`contrast_rows`.
    priors : sequence of str
        Prior names.

    Returns
    -------
    str
        A paragraph.
    """
    budgets = ", ".join(map(str, sorted({c["budget"] for c in contrasts})))
    parts = [f"`{p}` vs its isotropic control: {_cells(contrasts, p, 'control')}" for p in priors]
    parts += [f"`{p}` vs target-only: {_cells(contrasts, p, 'target-only')}" for p in priors]
    parts += [f"`{priors[0]}` vs `{q}`: {_cells(contrasts, priors[0], q)}" for q in priors[1:]]
    cells = "finding × kind × budget" if "finding" in contrasts[0] else "kind × budget"
    return (
        f"**Outcome** (cells = {cells} {budgets}; above/below = paired 95 % "
        f"interval excluding zero): " + "; ".join(parts) + "."
    )


def _agree(ranking: list[dict], column: str) -> str:
    """Per diagnostic, in how many of the ranking rows (findings) ``column`` holds."""
    names = list(dict.fromkeys(r["diagnostic"] for r in ranking))
    counts = {n: [r[column] for r in ranking if r["diagnostic"] == n] for n in names}
    return ", ".join(f"{n} {sum(v)}/{len(v)}" for n, v in counts.items())


def ranking_text(ranking: list[dict]) -> str:
    """Which diagnostics order the priors as retrieval does (counts over findings/tasks)."""
    return (
        f"Agreement with the retrieval gain over the control (Gaussian, mean over budgets "
        f"{', '.join(map(str, SMALL_BUDGETS))}), per diagnostic as cases agreeing / cases: "
        f"same order of all priors — {_agree(ranking, 'same_order')}; same best prior — "
        f"{_agree(ranking, 'picks_best')}; sign (prior better than its control or not) "
        f"right for every prior — {_agree(ranking, 'sign_matches')}."
    )


def report_section(
    rep,
    title: str,
    intro: str,
    summary: list[dict],
    folder: str,
    contrasts: list[dict],
    diagnostics: list[dict],
    ranking: list[dict],
    kinds: Sequence[str],
    priors: Sequence[str],
) -> None:
    """Curve tables and figures per kind, paired differences, diagnostics and the outcome.

    Parameters
    ----------
    rep : Report
        The report being written.
    title, intro : str
        Section title and first paragraph.
    summary : list of dict
        ``Curve.summary()`` rows.
    folder : str
        Where the figures go (relative to the report).
    contrasts, diagnostics, ranking : list of dict
        :func:`contrast_rows`, :func:`diagnostic_rows`, :func:`ranking_rows`.
    kinds, priors : sequence of str
        Kinds and prior names.

    Returns
    -------
    None
        Writes into ``rep``.
    """
    rep.section(title)
    rep.text(intro)
    for kind in kinds:
        table = pivot(summary, kind)
        rep.table(table, list(table[0]))
        rep.figure(
            f"{folder}/curve_{kind}.png",
            f"{kind}: mean AUPRC against the number of target anchors (95 % intervals); "
            f"tables: {folder}/curve_summary.csv",
        )
    rep.text("Paired differences (same target subsets and queries; 95 % two-level bootstrap):")
    first = [c for c in ("finding",) if c in contrasts[0]]
    rep.table(contrasts, first + ["contrast", "budget", "difference", "low", "high"])
    rep.text(outcome(contrasts, priors))
    cols = ["prior", "budget", "captured", "captured_isotropic", "mean_cos2", "max_angle_deg"]
    cols += ["log_evidence_gain", "loo_gain", "retrieval_gain"]
    rep.text(
        "Prior–target diagnostics on the curve's target subsets "
        f"(`anchordiv.checks.diagnostics`; fixed Gaussian strengths, {PRIOR_ANCHORS:g} "
        "pseudo-anchors, k = 10 leading directions; `*_gain`: prior − its "
        "isotropic control, per target) beside the retrieval gain (posterior − control, "
        "mean over budgets 1, 2, 5):"
    )
    rep.table(diagnostics, first + [c for c in cols if c in diagnostics[0]])
    rep.table(ranking, list(ranking[0]))  # (finding,) diagnostic, orders, agreements
    rep.text(ranking_text(ranking))
