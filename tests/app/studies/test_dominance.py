"""The main job's dominance section: rows per task, the claims, the markdown."""

from anchordiv.app.report import Report
from anchordiv.app.studies import dominance
from helpers import MEANS, synthetic_curve as curve


def test_claims_say_where_the_promise_holds(tmp_path):
    good = dominance.task_rows("synthetic", curve())
    bad = dominance.task_rows("falling", curve({**MEANS, "posterior": [0.5, 0.6, 0.5, 0.55,
                                                                         0.7]}), finding="x")
    table = dominance.merge([good, bad])
    claims = {c["task"]: c for c in dominance.claims(table)}
    assert claims["synthetic"]["small"] and claims["synthetic"]["large"]
    assert claims["synthetic"]["never_falls"]
    assert 3.8 < claims["synthetic"]["anchors_ratio"] < 4.2
    falling = claims["falling / x"]
    assert falling["small"] and not falling["large"] and not falling["never_falls"]
    rep = Report("t", tmp_path)
    dominance.section(rep, table, note="A note.")
    text = (rep.write()).read_text()
    assert "## Does adaptation keep its promise?" in text and "A note." in text
    assert "| synthetic | posterior | yes | yes |" in text
    assert "falling / x `posterior` 2 → 4" in text


def test_transfer_names_pair_each_prior_with_its_control():
    assert dominance.transfer_names(["domain", "generic"], ["gaussian"]) == {
        "domain-gaussian": ("domain-isotropic-gaussian", "gaussian"),
        "generic-gaussian": ("generic-isotropic-gaussian", "gaussian")}
