"""Sentences of the main job's report: counts from the curve's design, no "at budgets none",
and every section's text under its own heading."""

import types

import numpy as np

import anchordiv as ad
from anchordiv.app.report import Report
from anchordiv.app.studies import budget
from anchordiv.app.studies import wordnet_imagenet as wi


def test_subsets_per_budget_come_from_the_design_not_the_first_summary_row():
    rows = [
        {"model": m, "budget": b, "subset": s}
        for m in ("softmax", "gaussian")
        for b in (1, 2)
        for s in range(5)
    ] + [{"model": "softmax", "budget": 9, "subset": 0}]
    curve = types.SimpleNamespace(budgets=[1, 2, 9], rows=rows)
    assert wi._subsets(curve) == 5


def test_budget_outcome_reads_naturally_without_winners():
    assert (
        budget._best_at("Softmax", [])
        == "Softmax is the best target-only model (margin ≥ 0.001) at no budget"
    )
    assert budget._best_at("a parametric model", [5, 10]).endswith("at budgets 5, 10")


def test_retrieval_uncertainty_text_is_under_its_heading(tmp_path):
    rng = np.random.default_rng(0)
    post = ad.adapt(
        "gaussian", rng.normal(size=(100, 3)), rng.normal(size=(6, 3)), tau=5.0, normalize=True
    )
    x = rng.normal(size=(12, 3))
    unc = ad.retrieval_uncertainty(post, x[:3], x[3:], k=3, num_draws=4)
    rep = Report("T", tmp_path)
    unc.to_report(rep, intro="What was run.")
    text = rep.write().read_text()
    heading = text.index("## Retrieval uncertainty across posterior draws")
    assert heading < text.index("What was run.") < text.index("Across 4 posterior draws")
