"""Prior sensitivity across the adaptation budget (the demo's section): who decides the
ranking per budget (the posterior against the prior-only and target-only models, the exact
prior shares), where the likelihood takes over, and the closed-form power-scaled posterior's
retrieval as robustness to the prior's strength."""

import types

import numpy as np

from anchordiv.app.report import Report
from anchordiv.app.studies.main_job import SIZES
from anchordiv.app.studies.sensitivity import (
    outcome,
    plot_sensitivity_budget,
    sensitivity_by_budget,
    sensitivity_section,
    settled_at,
    takes_over_at,
    who_decides,
)
from helpers import unit


def _data(seed=0, d=6):
    rng = np.random.default_rng(seed)
    centres = unit(rng, 3, d)
    items = unit(rng, 60, d) * 0.3 + np.repeat(centres, 20, axis=0)
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    targets = np.repeat(centres, 8, axis=0) + 0.2 * rng.normal(size=(24, d))
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    return unit(rng, 200, d), targets, items, np.repeat(np.arange(3), 20)


def test_the_prior_matters_less_as_the_budget_grows(tmp_path):
    broad, targets, items, cls = _data()
    q, g = np.arange(0, 60, 6), np.setdiff1d(np.arange(60), np.arange(0, 60, 6))
    rel = cls[q][:, None] == cls[g][None, :]
    rows = sensitivity_by_budget(
        "gaussian",
        broad,
        targets,
        items[q],
        items[g],
        rel,
        tau=20.0,
        budgets=(2, 24),
        k=5,
        repeats=2,
    )
    assert [r["budget"] for r in rows] == [2, 24]
    small, large = rows
    assert small["shift"] > large["shift"] > 0  # more targets, less pull from the prior
    assert small["share_mean"] > large["share_mean"]
    assert small["share_covariance"] > large["share_covariance"]
    for r in rows:
        assert r["topk_overlap_low"] <= r["topk_overlap"] <= r["topk_overlap_high"] <= 1
        for name in ("overlap_prior_only", "overlap_target_only", "lean"):
            assert r[f"{name}_low"] <= r[name] <= r[f"{name}_high"]
        assert r["auprc_change_low"] <= r["auprc_change"] <= r["auprc_change_high"]
    assert (
        settled_at([{"budget": 2, "topk_overlap": 0.5}, {"budget": 5, "topk_overlap": 0.95}]) == 5
    )
    assert settled_at([{"budget": 2, "topk_overlap": 0.5}]) is None
    plot_sensitivity_budget(rows, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 10_000


def test_the_demo_section_is_written(tmp_path):
    broad, targets, items, cls = _data(1)
    rep = Report("t", tmp_path)
    ctx = types.SimpleNamespace(rep=rep, size=SIZES["small"], seed=0, tau=20.0)
    task = types.SimpleNamespace(item_class=cls)
    emb = types.SimpleNamespace(items=items, targets=targets)
    rows = sensitivity_section(ctx, task, emb, broad)
    text = "\n".join(rep.parts)
    assert "## Prior sensitivity across the budget" in text and "**Outcome.**" in text
    assert [r["budget"] for r in rows] == [2, 5, 10, 20]
    assert (tmp_path / "sensitivity.csv").stat().st_size > 0
    assert "](sensitivity.png)" in text


def _off_task(d=32, seed=0):
    """Issue 50's geometry: broad anchors varying along e4..e7, the task's classes along e0..e3
    (a stand-in for WordNet → ImageNet at budget 2, where the prior is nearly all of the model)."""
    rng = np.random.default_rng(seed)
    base = np.zeros(d)
    base[8] = 1.0

    def rows(m, task, off):
        x = base + np.concatenate(
            [task, off * rng.normal(size=(m, 4)), 0.02 * rng.normal(size=(m, d - 8))], 1
        )
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    broad = rows(400, np.zeros((400, 4)), 0.5)
    centres = 0.5 * rng.normal(size=(5, 4))
    cls = np.repeat(np.arange(5), 40)
    items = rows(200, centres[cls] + 0.1 * rng.normal(size=(200, 4)), 0.4)
    tcls = np.repeat(np.arange(5), 12)
    targets = rows(60, centres[tcls] + 0.1 * rng.normal(size=(60, 4)), 0.05)
    q = np.arange(0, 200, 10)
    g = np.setdiff1d(np.arange(200), q)
    order = rng.permutation(60)
    return broad, targets[order], items[q], items[g], cls[q][:, None] == cls[g][None, :]


def test_at_budget_2_the_section_says_the_prior_decides_where_it_does():
    """The α curve keeps ≥ 90 % of the top-k at both budgets (the old outcome: "the prior has
    stopped mattering"); the endpoints say the prior decides at 2 anchors and the targets at 60."""
    broad, targets, q, g, rel = _off_task()
    rows = sensitivity_by_budget(
        "gaussian", broad, targets, q, g, rel, tau=20.0, budgets=(2, 60), repeats=1, k=10
    )
    assert [who_decides(r) for r in rows] == ["prior", "targets"]
    assert all(r["topk_overlap"] >= 0.9 for r in rows)  # robust to strength at both
    words = outcome(rows)
    assert words.startswith("At 2 target anchors the prior decides the ranking")
    assert "At 60 target anchors the target anchors decide the ranking" in words
    assert "The likelihood takes over from 60 target anchors on." in words
    assert "not whether the prior matters" in words and "stopped mattering" not in words


def _row(budget, low, high, overlap=0.95):
    return dict(
        budget=budget,
        lean_low=low,
        lean_high=high,
        overlap_prior_only=0.5,
        overlap_target_only=0.5,
        share_covariance=0.5,
        topk_overlap=overlap,
    )


def test_each_conclusion_holds_to_yes_and_no():
    assert who_decides(_row(2, 0.1, 0.5)) == "prior"
    assert who_decides(_row(2, -0.5, -0.1)) == "targets"
    assert who_decides(_row(2, -0.1, 0.1)) == "both"
    prior, both, targets = _row(2, 0.1, 0.5), _row(5, -0.1, 0.1), _row(10, -0.5, -0.1)
    assert takes_over_at([prior, both, targets]) == 10
    assert takes_over_at([prior, targets, both]) is None
    assert "The likelihood takes over from 10 target anchors on." in outcome([prior, both, targets])
    assert "does not take over at any budget up to 5" in outcome([prior, targets, both])
    # the α curve: robustness to strength, said so whether or not it holds
    robust = outcome([_row(2, 0.1, 0.5, 0.95)])
    assert "keeps at least 90 % of the top-k from 2 target anchors on" in robust
    moved = outcome([_row(2, 0.1, 0.5, 0.5)])
    assert "moves more than 10 % of the top-k at some budget up to 2" in moved
    for words in (robust, moved):
        assert "not whether the prior matters" in words
    no_share = outcome([{**_row(2, 0.1, 0.5), "share_covariance": float("nan")}])
    assert "scale matrix" not in no_share
