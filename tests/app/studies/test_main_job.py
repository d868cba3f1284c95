"""Report titles say what was run (issue 11: a single-study report was titled "anchordiv demo")."""

from anchordiv.app.studies.main_job import DEMO_PARTS, report_title


def test_report_title_names_the_run():
    assert report_title(DEMO_PARTS, "full").startswith("anchordiv demo:")
    assert report_title(("clinical",), "full").startswith("anchordiv study clinical:")
    assert report_title(("budget",), "small").startswith("anchordiv study budget (small):")


def test_small_is_the_full_run_smaller():
    """One definition of what a run has (issue 42): the sizes differ in data sizes, budgets and
    repeats only — the same models, kinds and report sections at both."""
    import dataclasses

    from anchordiv.app.studies.main_job import SIZES, WN_MODELS, sections

    full, small = SIZES["full"], SIZES["small"]
    for what in ("clinical_kinds", "wn_models", "tr_kinds"):
        assert getattr(small, what) == getattr(full, what), what
    assert "posterior-spectral" in WN_MODELS and small.wn_models == WN_MODELS
    assert small.tr_findings == full.tr_findings[: len(small.tr_findings)]
    # no size field names a model, kind or prior: only counts, budgets, grids
    for f in dataclasses.fields(full):
        values = [getattr(full, f.name), getattr(small, f.name)]
        assert all(
            v is None or isinstance(v, (int, float)) or all(isinstance(x, (int, float)) for x in v)
            for v in values
        ), f.name
    assert sections(DEMO_PARTS)[-2:] == ["What each geometry retrieves", "Run"]


def test_check_report_lists_what_a_report_lacks(tmp_path):
    import json

    from anchordiv.app.studies.main_job import WN_MODELS, check_report, sections

    assert check_report(tmp_path) == [f"{tmp_path / 'report.md'}: no report"]
    heads = sections()
    (tmp_path / "report.md").write_text(
        "# t\n\n" + "\n\n".join(f"## {h} and more" for h in heads[1:]) + "\n"
    )
    claims = [{"task": "WordNet → ImageNet (= budget study)", "posterior": "posterior-gaussian"}]
    (tmp_path / "dominance.json").write_text(json.dumps({"claims": claims}))
    problems = check_report(tmp_path)
    assert problems[0] == f"section missing: ## {heads[0]}"
    missing = [p.rsplit(" ", 1)[1] for p in problems[1:]]
    assert "posterior-spectral" in missing and "posterior-gaussian" not in missing
    assert set(missing) == {m for m in WN_MODELS if m.startswith("posterior-")} - {
        "posterior-gaussian"
    }
