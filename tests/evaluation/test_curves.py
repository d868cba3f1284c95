"""Adaptation curves: the grid, paired subsets, failures kept visible, needs and files."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.evaluation import curves
from anchordiv.evaluation.curves import CurveModel, _need, adaptation_curve, budgets_for, subset
from anchordiv.evaluation.evaluate import shared_label_relevance
from helpers import normed, unit

D = 5


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(7)
    centres = unit(rng, 3, D)
    labels = rng.integers(3, size=30)
    items = centres[labels] + 0.8 * rng.normal(size=(30, D)) / np.sqrt(D)
    items = normed(items)
    target = centres[np.arange(12) % 3] + 0.3 * rng.normal(size=(12, D)) / np.sqrt(D)
    broad = unit(rng, 40, D)
    return broad, target, items, shared_label_relevance(labels, labels)


def pooled(broad, target, tau):
    """A stand-in posterior: the Gaussian of broad and target anchors pooled."""
    return ad.fit("gaussian", np.vstack([broad, target]), tau=tau)


MODELS = {
    "softmax": curves.MODELS["softmax"],
    "gaussian": curves.MODELS["gaussian"],
    "pooled": CurveModel(pooled, role="posterior", kind="gaussian"),
    "cosine": curves.MODELS["cosine"],
    "inversion": curves.MODELS["inversion"],
}


@pytest.fixture(scope="module")
def curve(study):
    broad, target, items, rel = study
    return adaptation_curve(
        broad,
        target,
        items,
        items,
        rel,
        tau=5.0,
        query_index=np.arange(len(items)),
        models=MODELS,
        budgets=(1, 3),
        n_subsets=2,
        n_boot=300,
        progress=False,
    )


def test_budgets_and_subsets():
    assert budgets_for(12, (1, 2, 5, 20)) == [1, 2, 5, 12]
    assert budgets_for(3) == [1, 2, 3]
    a, b = subset(12, 5, 0, seed=1), subset(12, 5, 1, seed=1)
    assert len(a) == 5 and len(set(a)) == 5 and not np.array_equal(a, b)
    np.testing.assert_array_equal(a, subset(12, 5, 0, seed=1))
    np.testing.assert_array_equal(subset(12, 12, 3, seed=1), np.arange(12))


def test_grid_cells_match_direct_evaluation(curve, study):
    broad, target, items, rel = study
    assert curve.budgets == [1, 3, 12]
    # 2 subsets at budgets 1 and 3, one at the full budget; one row per model per cell
    assert len(curve.rows) == 5 * len(MODELS)
    for s in range(2):
        idx = subset(12, 3, s, seed=0)
        ev = ad.evaluate(
            {"softmax": ad.fit("softmax", target[idx], tau=5.0)},
            items,
            items,
            rel,
            anchors=target[idx],
            query_index=np.arange(len(items)),
        )
        np.testing.assert_allclose(curve.per_query[("softmax", 3)][s], ev.per_query["softmax"])
        np.testing.assert_allclose(curve.per_query[("inversion", 3)][s], ev.per_query["inversion"])
    # cosine ignores the targets: evaluated once, the same at every budget
    cos = [curve.per_query[("cosine", b)] for b in curve.budgets]
    assert all(np.array_equal(c[0], cos[0][0]) for c in cos)


def test_undefined_cells_are_kept_with_their_error(curve):
    failed = [r for r in curve.rows if r["error"]]
    # one anchor is zero variance for every kind (a one-anchor softmax ranks everything tied)
    assert {(r["model"], r["budget"]) for r in failed} == {("gaussian", 1), ("softmax", 1)}
    assert all("a single anchor" in r["error"] and np.isnan(r["auprc"]) for r in failed)
    row = next(r for r in curve.summary() if r["model"] == "gaussian" and r["budget"] == 1)
    assert np.isnan(row["auprc"]) and row["n_subsets"] == 0


def test_summary_intervals_and_contrast(curve):
    for r in curve.summary():
        if np.isfinite(r["auprc"]):
            assert r["low"] <= r["auprc"] <= r["high"]
            assert 0 < r["prevalence"] < r["high"] <= 1
    diff = curve.contrast("pooled", "gaussian")
    full = diff[-1]
    expected = np.mean(curve.per_query[("pooled", 12)] - curve.per_query[("gaussian", 12)])
    assert full["difference"] == pytest.approx(expected)
    assert np.isnan(diff[0]["difference"])  # gaussian undefined at budget 1


def test_needs_and_comparisons(curve):
    needs = curve.needs(0.9)
    assert set(needs["models"]) == set(MODELS)
    soft = needs["models"]["softmax"]
    assert soft["budget_needed"] in curve.budgets
    assert soft["level"] == pytest.approx(
        curve.prevalence + 0.9 * (soft["full_auprc"] - curve.prevalence)
    )
    (comp,) = needs["comparisons"]
    assert comp["model"] == "pooled" and comp["reference"] == "gaussian"
    json.dumps(needs)


def test_need_rule():
    b = [1, 2, 5, 10]
    r = _need(b, np.array([0.1, 0.5, 0.8, 0.9]), 0.9, 0.0)
    assert r["budget_needed"] == 10 and r["level"] == pytest.approx(0.81)
    assert r["budget_needed_interpolated"] == pytest.approx(np.exp(np.log(5) + 0.1 * np.log(2)))
    # a dip below the level restarts the run; undefined budgets do not
    assert _need(b, np.array([0.85, 0.5, 0.85, 0.9]), 0.9, 0.0)["budget_needed"] == 5
    assert _need(b, np.array([np.nan, 0.5, 0.9, 0.9]), 0.9, 0.0)["budget_needed"] == 5
    assert _need(b, np.array([0.9, np.nan, 0.9, 0.9]), 0.9, 0.0)["budget_needed"] == 1
    # above chance: level = chance + f (full - chance)
    assert _need(b, np.array([0.3, 0.5, 0.6, 0.7]), 0.5, 0.3)["budget_needed"] == 2
    assert _need(b, np.array([0.3, 0.5, 0.6, np.nan]), 0.5, 0.3)["budget_needed"] is None


def test_write_files(curve, tmp_path):
    paths = curve.write(tmp_path / "out", title="test")
    table = (tmp_path / "out" / "curve.csv").read_text().splitlines()
    assert table[0] == "model,role,kind,budget,subset,auprc,error" and len(table) == 26
    assert len((tmp_path / "out" / "curve_summary.csv").read_text().splitlines()) == 16
    assert open(paths["plot"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert json.loads(open(paths["needs"]).read())["fraction"] == 0.9


def test_registry_and_bad_input(study):
    broad, target, items, rel = study
    with pytest.raises(ad.AnchorDivError, match="already registered"):
        ad.register_model("softmax", lambda b, t, tau: None)
    with pytest.raises(ad.AnchorDivError, match="role: unknown"):
        ad.register_model("x", lambda b, t, tau: None, role="oracle")
    with pytest.raises(ad.AnchorDivError, match="model 'nope': unknown; registered: softmax"):
        adaptation_curve(broad, target, items, items, rel, tau=5.0, models=["nope"])
    with pytest.raises(ad.AnchorDivError, match="broad: dimension mismatch"):
        adaptation_curve(broad[:, :3], target, items, items, rel, tau=5.0, models=["cosine"])
    with pytest.raises(ad.AnchorDivError, match="fraction"):
        adaptation_curve(
            broad, target, items, items, rel, tau=5.0, models=["cosine"], budgets=(), progress=False
        ).needs(1.5)


def test_factory_with_the_wrong_signature_is_refused():
    with pytest.raises(
        ad.AnchorDivError,
        match=r"model 'two': the factory must accept \(broad "
        r"\[m, d\], target \[n, d\], tau\)",
    ):
        ad.register_model("two", lambda broad, target: None)
    with pytest.raises(ad.AnchorDivError, match="must be callable"):
        ad.register_model("three", "gaussian")
    assert "two" not in curves.MODELS


def test_warnings_are_summarised_once_per_model(study):
    """A model that warns in every cell gives one warning for the whole curve."""
    import warnings

    broad, target, items, rel = study

    def noisy(broad, target, tau):
        warnings.warn(f"noisy: {len(target)} anchors", stacklevel=2)
        return ad.fit("gaussian", target, tau=tau)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adaptation_curve(
            broad,
            target,
            items,
            items,
            rel,
            tau=5.0,
            models={"noisy": noisy},
            budgets=[2, 3],
            n_subsets=3,
            n_boot=20,
            progress=False,
        )
    mine = [w for w in caught if "noisy" in str(w.message)]
    assert len(mine) == 1
    assert "in 7 of 7 cells; most often (7x, numbers differing): noisy: " in str(mine[0].message)


def test_default_registry_has_posterior_and_isotropic_control():
    """Every registered family has its ``posterior-<kind>`` and ``isotropic-<kind>`` models
    (read live from the family registry), every anchor kind its target-only model."""
    from anchordiv.adaptation.registry import FAMILIES

    for kind in FAMILIES:
        for role in ("posterior", "isotropic"):
            m = curves.MODELS[f"{role}-{kind}"]
            assert m.role == role and m.kind == kind and m.uses_target
            assert f"{role}-{kind}" in set(curves.MODELS)
    for kind in ad.anchors.KINDS:
        assert curves.MODELS[kind].role == "target"
    assert set(curves.DEFAULT_MODELS) <= set(curves.MODELS)
    assert "posterior-nope" not in curves.MODELS and "spectral" not in curves.MODELS


def test_a_family_runs_in_curves_with_its_declared_method():
    """The curve models run the exact update of a conjugate family and the NUTS settings a
    family declares (spectral: NUTS in full d); a registered name wins over a family model."""
    assert isinstance(curves.curve_method("gaussian"), ad.Exact)
    assert curves.curve_method("spectral") is ad.SpectralPrior.hooks.curve_method
    assert curves.curve_method("spectral").num_chains == 1
    assert isinstance(curves.curve_method("factor-gaussian"), ad.NUTS)  # the generic default
    curves.register_model("posterior-gaussian", pooled, overwrite=True)
    try:
        assert curves.MODELS["posterior-gaussian"].factory is pooled
        assert list(curves.MODELS).count("posterior-gaussian") == 1
    finally:
        del curves.MODELS["posterior-gaussian"]
    assert curves.MODELS["posterior-gaussian"].factory.func is curves.adapted


def test_moment_points_stand_in_on_a_curve_without_a_swapped_anchors_warning():
    """The main job's full-coverage cell: a prior's 2r moment points, more targets than that.
    The points say they stand in for a model (provenance ``stand_in``), and the curve's
    private copy keeps the mark (issue 42: 'were the two swapped?' on the demo's own run)."""
    import warnings

    from anchordiv.adaptation.loading import stand_in_anchors

    rng = np.random.default_rng(3)
    points = stand_in_anchors(ad.fit("gaussian", unit(rng, 3, 4), tau=20.0))  # 4 rows
    targets, gallery = unit(rng, 8, 4), unit(rng, 12, 4)
    relevance = rng.uniform(size=(4, 12)) < 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ad.AnchorDivWarning)
        adaptation_curve(
            points, targets, gallery[:4], gallery, relevance, tau=20.0,
            query_index=np.arange(4), models=("posterior-gaussian",), budgets=[2],
            n_subsets=1, n_boot=50, progress=False,
        )  # fmt: skip
