"""The image studies end to end from the command line on miniature dataset trees with a tiny
randomly initialised open_clip model (config + checkpoint): structure, splits, labels,
provenance and the report's files.  The numbers of a random model mean nothing; the statistics
are tested on the text studies."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import image_trees as trees
from anchordiv.app.cli import main
from anchordiv.app.studies.images import run_image_study
from anchordiv.data import cache


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``(config.json, checkpoint)`` of the tiny model, and a shared embedding cache folder."""
    d = tmp_path_factory.mktemp("tiny_images")
    config, ckpt = trees.save_tiny_clip(d)
    return config, ckpt, d / "cache"


@pytest.fixture
def study(tiny, monkeypatch):
    """``study(name, spec, out, *extra) -> exit code``, small, with the tiny model."""
    config, ckpt, cache_dir = tiny
    monkeypatch.setenv("ANCHORDIV_CACHE", str(cache_dir))

    def run(name, spec, out, *extra):
        args = ["study", name, "--dataset", spec, "--encoder", f"open_clip:{config}"]
        return main([*args, "--pretrained", str(ckpt), "--small", "-o", str(out), *extra])

    return run


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def _grid_ok(out, study_title):
    """The report ends with "What each geometry retrieves": a PNG grid and neighbours.csv."""
    report = (out / "report.md").read_text()
    assert "## What each geometry retrieves" in report and f"### {study_title}" in report
    grids = list((out / "neighbours").glob("*.png"))
    assert len(grids) == 1 and grids[0].stat().st_size > 0
    assert f"](neighbours/{grids[0].name})" in report
    rows = _csv(out / "neighbours.csv")
    assert {"cosine", "inversion"} <= {r["geometry"] for r in rows}
    # every neighbour and query named by its file; the marks the report names are the PNG's
    assert all(Path(r["path"]).is_file() and Path(r["query_path"]).is_file() for r in rows)
    assert "framed green in a picture" in report and "✓ =" not in report
    return rows


def _sidecar_ok(out, n_images, root):
    side = json.loads((out / "embeddings" / "images.json").read_text())
    assert side["kind"] == "image" and side["encoder"].startswith("open_clip:anchordiv-tiny")
    assert side["logit_scale"] == pytest.approx(50.0, rel=1e-5)
    assert len(side["sources"]) == n_images == np.load(out / "embeddings" / "images.npy").shape[0]
    assert all(s.startswith(str(root)) for s in side["sources"])
    assert len(side["query"]) == n_images and side["dataset"]["images"] == n_images
    return side


@pytest.mark.slow
def test_object_style_on_imagenet_r(tmp_path, study, tiny, monkeypatch):
    root = trees.imagenet_r(tmp_path / "imr")
    out = tmp_path / "out"
    assert study("object-style", f"imagenet-r:{root}", out) == 0
    _grid_ok(out, "Object vs style: object anchors vs style anchors on `imagenet-r` images")
    report = (out / "report.md").read_text()
    assert "## Object vs style (Fig. 3) on `imagenet-r` images" in report
    assert "| p | object | style |" in report and "4 classes × 4 renditions" in report
    assert (out / "object_style.png").stat().st_size > 0
    rows = _csv(out / "object_style.csv")
    assert {r["target"] for r in rows} == {"object", "style"}
    assert {r["scorer"] for r in rows} == {"gaussian", "cosine", "inversion"}
    side = _sidecar_ok(out, 24, root)  # small: 4 classes, 2 queries + 4 of 6 gallery each
    assert side["dataset"]["renditions"] == ["art", "cartoon", "sketch", "video game"]
    assert "Images encoded in this run: 24" in report

    # a rerun encodes nothing (cache by file content), and keeps what a neighbour grid needs
    config, ckpt, cache_dir = tiny
    hits = cache.STATS["hits"]
    result = run_image_study(
        "object-style",
        f"imagenet-r:{root}",
        out,
        encoder=f"open_clip:{config}",
        pretrained=ckpt,
        size="small",
        overwrite=True,
    )
    assert cache.STATS["hits"] > hits
    assert "Images encoded in this run: 0" in result.report.read_text()
    view = result.views["object-style"]
    assert set(view.scorers) == {
        "cosine",
        "inversion",
        "object anchors (p = 1)",
        "style anchors (p = 0)",
    }
    assert len(view.query_paths) == len(view.queries) and len(view.gallery_paths) == len(
        view.gallery
    )
    assert set(view.query_paths).isdisjoint(view.gallery_paths)  # the split's queries
    assert view.anchors.shape == (40, 16)  # 20 object + 20 style prompts, d = 16


def test_errors_name_the_problem(tmp_path, capsys, monkeypatch):
    """Checked before any model loads: the encoder spec is never reached."""
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    cub = trees.cub200(tmp_path / "cub", per_class=2)

    def study(name, spec, out):
        return main(
            [
                "study",
                name,
                "--dataset",
                spec,
                "--encoder",
                "open_clip:unused.json",
                "--small",
                "-o",
                str(out),
            ]
        )

    assert study("object-style", f"cub200:{cub}", tmp_path / "a") == 2
    assert "needs renditions" in capsys.readouterr().err
    assert study("style-transfer", f"cub200:{cub}", tmp_path / "b") == 2
    assert "does not run on images" in capsys.readouterr().err
    assert study("clinical", f"cub200:{cub}", tmp_path / "c") == 2
    assert "needs pathology labels" in capsys.readouterr().err
    assert study("budget", f"kinetics:{cub}", tmp_path / "d") == 2
    assert "unknown layout 'kinetics'" in capsys.readouterr().err
    args = ["study", "budget", "--dataset", f"cub200:{cub}", "--small", "-o", str(tmp_path / "e")]
    assert main(args) == 2  # the default encoder, MiniLM, has no image tower
    assert "encodes text only" in capsys.readouterr().err


@pytest.mark.slow
def test_budget_on_cub200(tmp_path, study):
    root = trees.cub200(tmp_path / "cub")
    out = tmp_path / "out"
    assert study("budget", f"cub200:{root}", out) == 0
    _grid_ok(out, "Anchor budget on `cub200` images")
    report = (out / "report.md").read_text()
    assert "## Anchor budget (Figs. 4/6): softmax vs parametric on `cub200` images" in report
    assert "| budget | coverage | best |" in report and (out / "budget.png").is_file()
    rows = _csv(out / "budget.csv")
    models = {"softmax", "gaussian", "latent-gaussian", "cosine", "inversion"}
    assert {r["model"] for r in rows} == models
    # the table's cells are the CSV's estimates with their intervals
    r = next(r for r in rows if r["model"] == "gaussian" and r["budget"] == "2")
    assert f"{float(r['auprc']):.3f} [{float(r['low']):.3f}, {float(r['high']):.3f}]" in report
    assert {int(r["budget"]) for r in rows} == {2, 6}  # 3 classes x 2 templates
    side = _sidecar_ok(out, 18, root)
    assert side["dataset"]["queries"] == 6 and "train_test_split" in side["dataset"]["split"]


@pytest.mark.slow
def test_budget_on_imagefolder(tmp_path, study):
    root = trees.imagefolder(tmp_path / "if")
    out = tmp_path / "out"
    assert study("budget", f"imagefolder:{root}", out) == 0
    assert "## Anchor budget" in (out / "report.md").read_text()
    assert {int(r["budget"]) for r in _csv(out / "budget.csv")} == {2, 6}
    _sidecar_ok(out, 15, root)  # 3 classes: 1 query + 4 of 5 gallery each


@pytest.mark.slow
def test_wordnet_imagenet_on_imagenet(tmp_path, study):
    root = trees.imagenet(tmp_path / "val")
    out = tmp_path / "out"
    assert study("wordnet-imagenet", f"imagenet:{root}", out) == 0
    _grid_ok(out, "WordNet → ImageNet on `imagenet` images")
    report = (out / "report.md").read_text()
    assert "## WordNet → ImageNet adaptation (Fig. 5) on `imagenet` images" in report
    assert "broad prior: wordnet-glosses-gaussian: 200 anchors embedded now" in report
    assert "## Anchor budget" in report and (out / "budget.csv").is_file()
    models = {r["model"] for r in _csv(out / "wordnet_imagenet" / "curve_summary.csv")}
    assert {"posterior-gaussian", "isotropic-gaussian", "softmax"} <= models
    geometries = {r["geometry"] for r in _csv(out / "neighbours.csv")}
    assert {"posterior-gaussian", "gaussian", "cosine", "inversion"} <= geometries
    _sidecar_ok(out, 20, root)  # 4 classes: 1 query + 4 gallery each (6 images, 20 % queries)


@pytest.mark.slow
def test_clinical_on_chexpert(tmp_path, study):
    root = trees.chexpert(tmp_path)
    out = tmp_path / "out"
    assert study("clinical", f"chexpert:{root}", out) == 0
    _grid_ok(out, "Clinical retrieval on `chexpert` images")
    report = (out / "report.md").read_text()
    assert "## Clinical retrieval (Tables 2–3): pathology anchors on `chexpert` images" in report
    rows = _csv(out / "clinical.csv")
    assert {r["finding"] for r in rows} <= {
        "pleural effusion",
        "edema",
        "cardiomegaly",
        "opacity",
        "atelectasis",
        "pneumothorax",
        "support devices",
    }
    assert {"gaussian", "gaussian+negated", "cosine", "inversion"} <= {r["scorer"] for r in rows}
    side = _sidecar_ok(out, 24, root)
    assert "valid.csv queries" in side["dataset"]["split"]


@pytest.mark.slow
def test_object_style_on_sketchy_uses_every_image(tmp_path, study):
    root = trees.sketchy(tmp_path / "sk")
    out = tmp_path / "out"
    assert study("object-style", f"sketchy:{root}", out) == 0
    _grid_ok(out, "Object vs style: object anchors vs style anchors on `sketchy` images")
    report = (out / "report.md").read_text()
    assert "every image is a query against all the others" in report
    assert "renditions (photo, sketch)" in report
    side = _sidecar_ok(out, 24, root)
    assert all(p.startswith("/") for p in side["sources_absolute"])
    shown = [r for r in _csv(out / "neighbours.csv") if r["geometry"] == "cosine"]
    assert len({r["query"] for r in shown}) == 3


@pytest.mark.slow
def test_small_then_full_encodes_only_the_difference(tmp_path, tiny, monkeypatch):
    config, ckpt, _ = tiny
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "own-cache"))
    root = trees.imagefolder(tmp_path / "if")
    args = ["study", "budget", "--dataset", f"imagefolder:{root}", "--encoder"]
    args += [f"open_clip:{config}", "--pretrained", str(ckpt), "--workers", "0"]
    assert main([*args, "--small", "-o", str(tmp_path / "small")]) == 0
    small = json.loads((tmp_path / "small" / "results.json").read_text())["dataset"]
    assert small["encoded_now"] == small["images"] == 15
    assert main([*args, "-o", str(tmp_path / "full")]) == 0
    full = json.loads((tmp_path / "full" / "results.json").read_text())["dataset"]
    assert full["images"] == 18 and full["encoded_now"] == 3, "only the 3 images --small left out"


def test_unreadable_images_are_named_before_the_model_loads_or_skipped(
    tmp_path, study, capsys, monkeypatch
):
    import anchordiv.data

    root = trees.imagefolder(tmp_path / "if")
    bad = [root / "red_fox" / "zz_bad.jpg", root / "tabby_cat" / "zz_bad.png"]
    for p in bad:
        p.write_bytes(b"not an image")
    loads = []
    monkeypatch.setattr(anchordiv.data, "get_encoder", lambda *a, **k: loads.append(1))
    assert study("budget", f"imagefolder:{root}", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "2 of" in err and all(str(p) in err for p in bad) and not loads


@pytest.mark.slow
def test_on_error_skip_lists_the_skipped_files_in_the_report(tmp_path, study):
    root = trees.imagefolder(tmp_path / "if")
    bad = [root / "red_fox" / "zz_bad.jpg", root / "tabby_cat" / "zz_bad.png"]
    for p in bad:
        p.write_bytes(b"not an image")
    out = tmp_path / "out"
    with pytest.warns(UserWarning, match="skipped 2 unreadable"):
        assert study("budget", f"imagefolder:{root}", out, "--on-error", "skip") == 0
    report = (out / "report.md").read_text()
    assert "**2 unreadable image file(s) skipped**" in report
    assert all(f"`{p}`" in report for p in bad)
    results = json.loads((out / "results.json").read_text())["dataset"]
    assert set(results["skipped"]) == {str(p) for p in bad}
    assert not any(
        "zz_bad" in s
        for s in json.loads((out / "embeddings" / "images.json").read_text())["sources"]
    )


def test_one_image_per_class_is_refused_before_encoding(tmp_path, study, capsys):
    root = trees.imagefolder(tmp_path / "if", per_class=1)
    assert study("budget", f"imagefolder:{root}", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "0 query and 3 gallery images" in err and "each class needs 2 or more" in err


@pytest.mark.slow
def test_random_weights_only_when_asked_and_said_first(tmp_path, tiny, monkeypatch, capsys):
    config, _, _ = tiny
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    root = trees.imagefolder(tmp_path / "if")
    args = ["study", "budget", "--dataset", f"imagefolder:{root}", "--small"]
    args += ["--encoder", f"open_clip:{config}", "-o", str(tmp_path / "out")]
    assert main(args) == 2
    assert "has no weights: pass --pretrained" in capsys.readouterr().err
    assert main([*args, "--random-weights"]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    first = report.split("\n\n")[1]
    assert first.startswith("**Random weights**")


def test_shown_queries_spread_over_renditions_and_classes():
    from anchordiv.app.studies.images import spread

    labels = np.repeat(np.arange(3), 4)  # 3 classes x (2 photos, 2 sketches)
    domains = np.tile([0, 0, 1, 1], 3)
    pick = spread(labels, domains, 3, seed=0)
    assert len(set(pick)) == 3 and set(domains[pick]) == {0, 1}
    assert len(set(labels[pick])) == 3
    assert len(spread(labels, None, 5, seed=1)) == 5


def _no_model(monkeypatch):
    """Replace the encoder loading by a recorder: ``loads`` stays empty if a run stops before."""
    import anchordiv.data

    loads = []

    def record(*a, **k):
        loads.append(1)
        raise SystemExit(99)

    monkeypatch.setattr(anchordiv.data, "get_encoder", record)
    return loads


def test_a_report_inside_the_dataset_is_refused(tmp_path, study, capsys, monkeypatch):
    """-o ROOT/results would become a class of the next run: refused before anything is read."""
    loads = _no_model(monkeypatch)
    root = trees.imagefolder(tmp_path / "if")
    assert study("budget", f"imagefolder:{root}", root / "results") == 2
    err = capsys.readouterr().err
    assert "is inside the dataset folder" in err and "write it elsewhere" in err
    assert not (root / "results").exists() or not any((root / "results").iterdir())
    assert not loads


def test_clinical_without_positive_labels_stops_before_encoding(
    tmp_path, study, capsys, monkeypatch
):
    loads = _no_model(monkeypatch)
    base = trees.chexpert(tmp_path)
    for name in ("train.csv", "valid.csv"):
        with open(base / name, newline="") as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            r.update({c: "0.0" for c in r if c not in ("Path", "Sex", "Age")})
        with open(base / name, "w", newline="") as f:
            w = csv.DictWriter(f, list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    assert study("clinical", f"chexpert:{tmp_path}", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "no pathology with anchors has 2 or more positive query images" in err
    assert "Pleural Effusion 0/0" in err and not loads


def test_images_outside_the_root_need_the_flag(tmp_path, study, capsys, monkeypatch):
    loads = _no_model(monkeypatch)
    elsewhere = trees.Images(8).save(tmp_path / "elsewhere" / "x.png")
    root = trees.imagefolder(tmp_path / "if")
    (root / "red_fox" / "link.png").symlink_to(elsewhere)
    assert study("budget", f"imagefolder:{root}", tmp_path / "out") == 2
    assert "--allow-outside-root" in capsys.readouterr().err and not loads
    with pytest.raises(SystemExit):  # the dataset is read; the run goes on to the model
        study("budget", f"imagefolder:{root}", tmp_path / "out2", "--allow-outside-root")
    assert loads


def test_the_same_photo_in_two_classes_warns(tmp_path, study, monkeypatch):
    import shutil

    loads = _no_model(monkeypatch)
    root = trees.imagefolder(tmp_path / "if", per_class=3)  # --small keeps every image
    shutil.copy(root / "red_fox" / "img0.png", root / "tabby_cat" / "copy.png")
    shutil.copy(root / "red_fox" / "img1.png", root / "red_fox" / "again.png")  # same class
    with pytest.warns(
        UserWarning,
        match=r"1 image\(s\) are filed, byte for byte, under two or "
        r"more classes \(e.g. .*img0.png \(red fox\) = .*copy.png \(tabby cat\)",
    ):
        with pytest.raises(SystemExit):
            study("budget", f"imagefolder:{root}", tmp_path / "out")
    assert loads
