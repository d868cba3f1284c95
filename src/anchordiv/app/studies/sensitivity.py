"""Prior sensitivity across the adaptation budget (MATH.md, "Power-scaling prior sensitivity"):
per budget of target anchors, the exact posterior is power-scaled in closed form
(:func:`anchordiv.checks.prior_sensitivity`) and its posterior-mean retrieval compared with the
unscaled one's (top-k overlap, AUPRC change, covariance shift, bootstrap intervals).
"""

from __future__ import annotations

import numpy as np

from ...errors import AnchorDivError, integer, positive

#: the budgets tried (those up to the number of target anchors)
BUDGETS = (2, 5, 10, 20, 50)
#: the power the prior is raised to: α > 1 keeps every NIW prior proper; α < 1 can leave it
#: improper at large d (ν₀' ≤ d − 1), which the section reports
ALPHA = 1.25
#: the lower power whose properness the section reports
LOWER_ALPHA = 0.8
#: mean top-k overlap at or above which the prior is said to have stopped mattering
SETTLED = 0.9


def sensitivity_by_budget(
    kind: str,
    broad,
    targets,
    queries,
    gallery,
    relevance,
    *,
    tau: float,
    budgets=BUDGETS,
    repeats: int = 3,
    alpha: float = ALPHA,
    k: int = 10,
    seed: int = 0,
) -> list[dict]:
    """Power-scaling sensitivity of the exact ``kind`` posterior's retrieval against the number
    of target anchors (module docstring).

    Examples
    --------
    >>> from anchordiv.app.studies.sensitivity import sensitivity_by_budget
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(80, 4))
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> rows = sensitivity_by_budget("gaussian", x, x[:10], x[10:14], x[20:60],
    ...                              rng.random((4, 40)) < 0.3, tau=20.0, budgets=(2, 8),
    ...                              repeats=2, k=5)
    >>> [r["budget"] for r in rows], 0 <= rows[-1]["topk_overlap"] <= 1
    ([2, 8], True)
    """
    from ...adaptation import adapt
    from ...checks.sensitivity import prior_sensitivity
    from ...evaluation.curves import subset
    from ...evaluation.evaluate import bootstrap_interval

    t = np.asarray(targets)
    alpha = positive("alpha", alpha)
    repeats = integer("repeats", repeats, low=1)
    chosen = [integer("budgets", b, low=2) for b in budgets if b <= len(t)]
    if not chosen:
        raise AnchorDivError(
            f"budgets: none of {list(budgets)} fits the {len(t)} target anchors (each ≥ 2)"
        )
    rows, task = [], dict(queries=queries, gallery=gallery, relevance=relevance, k=k)
    for b in chosen:
        overlap, change, shift, improper = [], [], [], 0
        for r in range(repeats):
            post = adapt(kind, broad, t[subset(len(t), b, r, seed)], tau=tau)
            res = prior_sensitivity(post, (alpha,), diagnostic=False, **task)
            i = int(np.flatnonzero(res.alphas == alpha)[0])
            overlap.append(res.topk_overlap[i])
            change.append(res.auprc[i] - res.auprc[res.reference])
            site = post.family_class.covariance_site or post.family_class.sites[-1]
            shift.append(float(res.curve()[f"shift_{site}"][i]))
            try:
                post.prior.power_scaled_posterior(LOWER_ALPHA, post.fixed["targets"])
            except AnchorDivError:
                improper += 1
        row = {"budget": b, "alpha": alpha, "repeats": repeats, "queries": len(overlap[0])}
        for name, v in (("topk_overlap", overlap), ("auprc_change", change)):
            m, lo, hi = bootstrap_interval(np.asarray(v), seed=seed)
            row.update({name: m, f"{name}_low": lo, f"{name}_high": hi})
        row.update(shift=float(np.mean(shift)), improper_below=improper)
        rows.append(row)
    return rows


def settled_at(rows: list[dict], level: float = SETTLED) -> int | None:
    """The first budget from which on the top-k overlap stays ≥ ``level`` (else None)."""
    for i, r in enumerate(rows):
        if all(s["topk_overlap"] >= level for s in rows[i:]):
            return int(r["budget"])
    return None


def plot_sensitivity_budget(rows: list[dict], path):
    """Top-k overlap and AUPRC change against the budget, with intervals."""
    from ...plots import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    b = np.array([r["budget"] for r in rows], float)
    alpha = rows[0]["alpha"]
    for ax, name, label in (
        (axes[0], "topk_overlap", "top-k overlap with the α = 1 scorer"),
        (axes[1], "auprc_change", "AUPRC change (α − 1)"),
    ):
        m, lo, hi = (
            np.array([r[f"{name}{s}"] for r in rows], float) for s in ("", "_low", "_high")
        )
        ax.plot(b, m, "o-", color="C0", ms=3, label=f"prior^{alpha:g}")
        ax.fill_between(b, lo, hi, color="C0", alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_xticks(b, [f"{v:g}" for v in b])  # the budgets themselves, no 2×10⁰ labels
        ax.minorticks_off()
        ax.set_xlabel("target anchors")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].axhline(SETTLED, color="grey", lw=0.8, ls="--", label=f"{SETTLED:g}")
    axes[1].axhline(0.0, color="grey", lw=0.8)
    axes[0].legend(fontsize=8)
    fig.suptitle("Prior sensitivity across the adaptation budget")
    return save_figure(fig, path)


def sensitivity_section(ctx, task, emb, broad, *, kind: str = "gaussian") -> list[dict]:
    """The demo's prior-sensitivity section on the WordNet → ImageNet task; its rows."""
    from ...evaluation.evaluate import write_rows
    from ._common import subsample

    q = subsample(len(emb.items), min(ctx.size.wn_queries, len(emb.items) // 2), ctx.seed)
    rest = np.setdiff1d(np.arange(len(emb.items)), q)
    rel = task.item_class[q][:, None] == task.item_class[rest][None, :]
    repeats = max(2, ctx.size.wn_subsets)
    k = min(10, max(1, len(rest) // 4))  # a top-k well inside the gallery
    rows = sensitivity_by_budget(
        kind,
        broad,
        emb.targets,
        emb.items[q],
        emb.items[rest],
        rel,
        tau=ctx.tau,
        repeats=repeats,
        k=k,
        seed=ctx.seed,
    )
    write_rows(ctx.rep.path("sensitivity.csv"), rows)
    plot_sensitivity_budget(rows, ctx.rep.path("sensitivity.png"))
    rep = ctx.rep
    rep.section("Prior sensitivity across the budget")
    rep.text(
        f"How much does the broad prior drive the adapted model, and from which budget on does "
        f"it stop mattering?  The {kind} posterior from the WordNet prior (default held-out "
        f"strengths) and n random class-prompt anchors, {repeats} subsets per budget.  The "
        f"prior raised to the power α = {ALPHA:g} (power-scaling: Kallioinen, Paananen, "
        f"Bürkner & Vehtari 2023) is again NIW (κ₀ → ακ₀, Ψ₀ → αΨ₀, ν₀ + d + 2 → "
        f"α(ν₀ + d + 2)), so the power-scaled posterior is its ordinary update, in closed "
        f"form.  At d = {np.shape(broad)[1]} this is a strong perturbation: the covariance "
        f"gains (α − 1)(ν₀ + d + 2) ≈ d/2 pseudo-anchors.  Its posterior-mean scorer against "
        f"the unscaled one, {len(q)} query glosses against the {len(rest)} other items: "
        f"`topk_overlap` (top-{k}) and `auprc_change` with 95 % two-level bootstrap intervals "
        f"over subsets and queries; `shift`: the relative change of the posterior-mean "
        f"covariance."
    )
    skip = ("alpha", "repeats", "queries", "improper_below")
    rep.table(rows, [c for c in rows[0] if c not in skip])
    rep.figure(
        "sensitivity.png",
        "Top-k overlap and AUPRC change of the power-scaled posterior against the budget "
        "(95 % intervals).  Table: sensitivity.csv",
    )
    at = settled_at(rows)
    fits = len(rows) * repeats
    improper = sum(r["improper_below"] for r in rows)
    rep.text(
        "**Outcome.** "
        + (
            f"From {at} target anchors on, at least {100 * SETTLED:.0f} % of the top-k stays "
            f"under the power-scaled prior: the prior has stopped mattering for the ranking "
            f"there."
            if at is not None
            else f"The top-k overlap stays below {SETTLED:g} at some budget up to "
            f"{rows[-1]['budget']}: the prior still drives the ranking at every budget tried."
        )
        + (
            f"  α = {LOWER_ALPHA:g} would leave the prior improper in "
            f"{improper} of {fits} fits (ν₀' ≤ d − 1: at this d the inverse-Wishart's power "
            f"is dominated by its |Σ| exponent), so the stronger side is shown."
            if improper
            else f"  α = {LOWER_ALPHA:g} keeps the prior proper in all {fits} fits; the "
            f"stronger side is shown."
        )
    )
    return rows


__all__ = [
    "BUDGETS",
    "plot_sensitivity_budget",
    "sensitivity_by_budget",
    "sensitivity_section",
    "settled_at",
]
