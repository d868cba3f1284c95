"""Prior sensitivity across the adaptation budget (the demo's section): the closed-form
power-scaled posterior's retrieval against the number of target anchors."""

import types

import numpy as np

from anchordiv.app.report import Report
from anchordiv.app.studies.main_job import SIZES
from anchordiv.app.studies.sensitivity import (
    plot_sensitivity_budget,
    sensitivity_by_budget,
    sensitivity_section,
    settled_at,
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
        "gaussian", broad, targets, items[q], items[g], rel, tau=20.0, budgets=(2, 24), k=5
    )
    assert [r["budget"] for r in rows] == [2, 24]
    small, large = rows
    assert small["shift"] > large["shift"] > 0  # more targets, less pull from the prior
    for r in rows:
        assert r["topk_overlap_low"] <= r["topk_overlap"] <= r["topk_overlap_high"] <= 1
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
