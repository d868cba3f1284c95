"""Paired dominance, anchors needed and falls on curves whose answer is known."""

import numpy as np
import pytest

from anchordiv.errors import AnchorDivError
from anchordiv.evaluation.dominance import (
    anchors_needed,
    budget_to_reach,
    dominance_rows,
    falls,
    lacks,
    triples,
)
from helpers import BUDGETS, MEANS, synthetic_curve as curve


def test_triples_from_roles_and_checked_names():
    c = curve()
    assert triples(c) == {"posterior": ("control", "target")}
    with pytest.raises(AnchorDivError, match="lacks model"):
        triples(c, {"posterior": ("nope", "target")})


def test_a_posterior_without_a_target_only_model_is_compared_with_what_the_curve_has():
    """A kind without a target-only fit (spectral): no error, rows against the control and
    cosine, each saying what it lacks; the same without the control or cosine."""
    c = curve({k: v for k, v in MEANS.items() if k != "target"})
    names = triples(c)
    assert names == {"posterior": ("control", None)}
    rows = dominance_rows(c, names)
    assert [r["best_other"] for r in rows] == ["control"] * len(BUDGETS)
    assert all(r["lacks"] == ["target-only"] for r in rows)
    assert rows[2]["diff_best"] == pytest.approx(0.62 - 0.45, abs=0.005)
    bare = curve({"posterior": MEANS["posterior"]})
    rows = dominance_rows(bare, triples(bare))
    assert rows[0]["best_other"] is None and rows[0]["holds"] is None
    assert np.isnan(rows[0]["diff_best"]) and np.isnan(rows[0]["diff_baseline"])
    assert rows[0]["lacks"] == ["control", "target-only", "cosine"]
    assert lacks("c", "t") == []


def test_dominance_compares_with_the_better_of_target_only_and_control():
    rows = {r["budget"]: r for r in dominance_rows(curve(), triples(curve()))}
    assert rows[1]["best_other"] == "control"  # target-only undefined at 1
    assert rows[2]["best_other"] == "control" and rows[8]["best_other"] == "target"
    for b, r in rows.items():
        best = max(
            MEANS["target"][BUDGETS.index(b)] if b > 1 else -1, MEANS["control"][BUDGETS.index(b)]
        )
        assert r["diff_best"] == pytest.approx(
            MEANS["posterior"][BUDGETS.index(b)] - best, abs=0.005
        )
        assert r["diff_best_low"] < r["diff_best"] < r["diff_best_high"]
        assert r["diff_baseline"] == pytest.approx(
            MEANS["posterior"][BUDGETS.index(b)] - 0.3, abs=0.005
        )
    assert rows[1]["holds"] and rows[2]["diff_best_low"] > 0  # paired: tight intervals
    assert rows[16]["diff_best_high"] - rows[16]["diff_best_low"] < 0.01


def test_budget_to_reach_interpolates_log_linearly():
    assert budget_to_reach(BUDGETS, MEANS["target"], 0.5) == pytest.approx(np.sqrt(4 * 8))
    assert budget_to_reach(BUDGETS, MEANS["target"], 0.1) == 2.0  # first defined budget
    assert np.isnan(budget_to_reach(BUDGETS, MEANS["target"], 0.9))


def test_anchors_needed_is_the_target_only_budget_at_the_posteriors_2_anchor_level():
    c = curve()
    need = anchors_needed(c, "posterior", "target")
    # target-only reaches 0.6 at 8 anchors: 4 times the posterior's 2
    assert need["ratio"] == pytest.approx(4.0, rel=0.03)
    assert need["low"] < need["ratio"] < need["high"] and need["never_reached"] == 0
    never = anchors_needed(curve({**MEANS, "posterior": [0.9] * 5}), "posterior", "target")
    assert np.isnan(never["ratio"]) and never["at_least"] == 8.0
    with pytest.raises(AnchorDivError, match="no budget 3"):
        anchors_needed(c, "posterior", "target", at=3)


def test_falls_flags_only_drops_beyond_the_interval():
    c = curve({**MEANS, "posterior": [0.5, 0.6, 0.55, 0.598, 0.81]})
    got = falls(c, "posterior")
    assert [(f["from"], f["to"]) for f in got] == [(2, 4)]
    assert got[0]["drop"] == pytest.approx(0.05, abs=0.005)
    assert falls(curve(), "posterior") == []


def test_a_fall_toward_a_lower_target_only_limit_is_told_apart():
    """Falling from 0.9 toward a target-only end at 0.45 is convergence (the targets' own
    geometry is worse than the prior's); falling below the target-only end is not."""
    toward = curve(
        {**MEANS, "posterior": [0.9, 0.9, 0.8, 0.7, 0.81], "target": [np.nan, 0.2, 0.3, 0.4, 0.45]}
    )
    got = falls(toward, "posterior", "target")
    assert [(f["from"], f["to"], f["toward_target_only"]) for f in got] == [
        (2, 4, True),
        (4, 8, True),
    ]
    assert got[0]["target_only_full"] == pytest.approx(0.45, abs=0.01)
    below = falls(
        curve({**MEANS, "posterior": [0.5, 0.6, 0.55, 0.598, 0.81]}), "posterior", "target"
    )
    assert [(f["from"], f["to"], f["toward_target_only"]) for f in below] == [(2, 4, False)]
    assert "toward_target_only" not in falls(toward, "posterior")[0]


def test_each_claim_is_yes_and_no_on_known_cases():
    """The verdict words of the reports, one function each: yes on a case where it must be,
    no where it must not, never yes on an undefined (NaN) number."""
    from anchordiv.evaluation.dominance import (
        exceeds,
        interval_above,
        interval_below,
        keeps_promise,
        within,
    )

    nan = float("nan")
    assert interval_above(0.02) and not interval_above(0.0) and not interval_above(nan)
    assert interval_below(-0.02) and not interval_below(0.0) and not interval_below(nan)
    assert keeps_promise(0.0) and keeps_promise(0.3) and not keeps_promise(-0.01)
    assert not keeps_promise(nan)
    assert within(-0.01, 0.01) and within(0.5, 0.01) and not within(-0.02, 0.01)
    assert not within(nan, 0.01)
    assert exceeds(0.5, 0.4) and not exceeds(0.4, 0.4) and not exceeds(nan, 0.4)
    assert not exceeds(0.5, nan)


def test_the_promise_holds_where_the_interval_is_not_below_and_not_where_it_is():
    """On a curve where the posterior is clearly above max(target-only, control) the promise
    holds at every budget; on one where it is clearly below, at none."""
    up = {k: list(v) for k, v in MEANS.items()}
    best = np.fmax(MEANS["target"], MEANS["control"])
    up["posterior"] = list(np.minimum(best + 0.1, 0.99))
    down = {k: list(v) for k, v in MEANS.items()}
    down["posterior"] = list(best - 0.1)
    for means, holds in ((up, True), (down, False)):
        c = curve(means)
        assert all(r["holds"] is holds for r in dominance_rows(c, triples(c)))
