"""The main job's dominance section: rows per task, the claims, the markdown."""

import numpy as np

from anchordiv.app.report import Report
from anchordiv.app.studies import dominance
from helpers import MEANS, synthetic_curve as curve


def test_claims_say_where_the_promise_holds(tmp_path):
    good = dominance.task_rows("synthetic", curve())
    bad = dominance.task_rows(
        "falling", curve({**MEANS, "posterior": [0.5, 0.6, 0.5, 0.55, 0.7]}), finding="x"
    )
    table = dominance.merge([good, bad])
    claims = {c["task"]: c for c in dominance.claims(table)}
    assert claims["synthetic"]["small"] and claims["synthetic"]["large"]
    assert claims["synthetic"]["never_falls"]
    assert 3.8 < claims["synthetic"]["anchors_ratio"] < 4.2
    falling = claims["falling / x"]
    assert falling["small"] and not falling["large"] and not falling["never_falls"]
    assert not falling["no_own_falls"]  # 0.6 -> 0.5 is below target-only's 0.8 end
    rep = Report("t", tmp_path)
    dominance.section(rep, table, note="A note.")
    text = (rep.write()).read_text()
    assert "## Does adaptation keep its promise?" in text and "A note." in text
    assert "| synthetic | posterior | yes | yes |" in text
    assert (
        "falling / x `posterior` 2 → 4" in text
        and "*toward" not in text.split("falling / x `posterior` 2 → 4")[1][:12]
    )


def test_a_curve_converging_down_to_target_only_has_no_fall_of_its_own(tmp_path):
    """A posterior above everything at one anchor that falls toward a worse target-only end
    (the clinical curves): it falls, but only toward target-only."""
    means = {
        **MEANS,
        "posterior": [0.9, 0.9, 0.8, 0.7, 0.46],
        "target": [np.nan, 0.2, 0.3, 0.4, 0.45],
        "control": [0.3, 0.3, 0.35, 0.4, 0.45],
    }
    table = dominance.task_rows("clinical", curve(means))
    claim = dominance.claims(table)[0]
    assert not claim["never_falls"] and claim["no_own_falls"]
    rep = Report("t", tmp_path)
    dominance.section(rep, table)
    text = rep.write().read_text()
    assert "clinical `posterior` 8 → 16 (−0.2" in text
    assert text.count("*toward target-only* (0.4") == len(table["falls"]) == 3


def test_transfer_names_pair_each_prior_with_its_control():
    assert dominance.transfer_names(["domain", "generic"], ["gaussian"]) == {
        "domain-gaussian": ("domain-isotropic-gaussian", "gaussian"),
        "generic-gaussian": ("generic-isotropic-gaussian", "gaussian"),
    }


def test_a_posterior_lacking_its_target_only_model_gets_the_rows_it_can_have(tmp_path):
    """The full demo's posterior-spectral (no target-only spectral): no error; dominance rows
    against its control and cosine, no anchors ratio, and the table says what it lacks."""
    table = dominance.task_rows(
        "spectral", curve({k: v for k, v in MEANS.items() if k != "target"})
    )
    assert table["anchors_needed"] == [] and len(table["dominance"]) == 5
    claim = dominance.claims(table)[0]
    assert claim["small"] and claim["large"] and claim["lacks"] == ["target-only"]
    rep = Report("t", tmp_path)
    dominance.section(rep, table)
    text = rep.write().read_text()
    assert "| spectral | posterior | yes | yes |" in text and "| target-only |" in text
    assert "spectral `posterior` has no target-only model" in text


def test_beats_both_and_stays_within_on_known_rows():
    """The claim's parts, yes and no: every small-budget interval above zero (one at zero is
    no; no rows is unknown), every large-budget difference within the tolerance (a NaN is no)."""
    row = lambda low, diff: {"diff_best_low": low, "diff_best": diff}  # noqa: E731
    assert dominance.beats_both([row(0.01, 0.05), row(0.2, 0.3)]) is True
    assert dominance.beats_both([row(0.01, 0.05), row(0.0, 0.3)]) is False
    assert dominance.beats_both([]) is None
    tol = dominance.TOLERANCE
    assert dominance.stays_within([row(-1, -tol / 2), row(-1, 0.2)]) is True
    assert dominance.stays_within([row(-1, -2 * tol)]) is False
    assert dominance.stays_within([row(-1, float("nan"))]) is False
