"""bench_scale runs end to end at a tiny size (no timing is asserted)."""

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def bench(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCH))
    import common

    monkeypatch.setattr(common, "RESULTS", tmp_path)  # results of this run go to tmp_path
    import bench_scale

    return bench_scale


def test_bench_scale_main_at_tiny_size(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_scale.py"])
    out = bench.main(
        [
            "--anchors",
            "20,40",
            "--queries",
            "12",
            "--gallery",
            "64",
            "--dim",
            "8",
            "--warmups",
            "0",
            "--runs",
            "1",
            "--tag",
            "tiny",
        ]
    )
    timed = [r for r in out if "total_s" in r]
    agree = [r for r in out if "recall_at_k" in r]
    assert {(r["kind"], r["N"], r["precision"]) for r in timed} == {
        (k, n, p) for k in ("softmax", "gaussian") for n in (20, 40) for p in ("highest", "fast")
    }
    assert all(r["total_s"] > 0 for r in timed)
    # on CPU both precisions are float32 products: the top-10 agree
    assert len(agree) == 4 and all(r["recall_at_k"] == 1.0 for r in agree)
    report = (tmp_path / "bench_scale-tiny.md").read_text()
    assert report.count("| softmax |") == 4 + 2  # timings + agreement rows


def test_every_result_records_the_stack_versions(bench, tmp_path):
    """``common.write_results`` (every benchmark's writer) puts the versions in JSON and .md."""
    import json

    import common

    import anchordiv

    common.write_results("probe", {"rows": []}, "body", tag="v")
    versions = json.loads((tmp_path / "probe-v.json").read_text())["environment"]["versions"]
    assert list(versions) == [
        "python",
        "numpy",
        "scipy",
        "jax",
        "jaxlib",
        "numpyro",
        "arviz",
        "anchordiv",
    ]
    assert versions["anchordiv"] == anchordiv.__version__ and versions["jax"]
    assert f"jaxlib {versions['jaxlib']}" in (tmp_path / "probe-v.md").read_text()
