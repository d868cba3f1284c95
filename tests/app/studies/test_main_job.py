"""Report titles say what was run (issue 11: a single-study report was titled "anchordiv demo")."""

from anchordiv.app.studies.main_job import DEMO_PARTS, report_title


def test_report_title_names_the_run():
    assert report_title(DEMO_PARTS, "full").startswith("anchordiv demo:")
    assert report_title(("clinical",), "full").startswith("anchordiv study clinical:")
    assert report_title(("budget",), "small").startswith("anchordiv study budget (small):")
