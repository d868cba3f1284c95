"""The CLI's shared inputs (issue 27): labels as .npy/.txt/.csv through one loader, a saved
prior (``prior.save``) wherever broad anchors go, ``adapt --model`` and its errors."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.app.commands._io import load_broad, load_labels, load_relevance
from anchordiv.evaluation.evaluate import shared_label_relevance
from helpers import clustered_anchors, unit


def test_labels_from_npy_txt_and_csv_agree(tmp_path):
    names = ["dog", "cat", "dog", "bird", "cat"]
    (tmp_path / "l.txt").write_text("\n".join(names) + "\n\n")  # trailing blank ok
    (tmp_path / "l.csv").write_text("label\n" + "\n".join(names) + "\n")
    (tmp_path / "i.txt").write_text("3\n1\n3\n0\n1\n")
    np.save(tmp_path / "l.npy", np.array([2, 1, 2, 0, 1]))
    want = np.array([2, 1, 2, 0, 1])  # texts numbered in sorted order
    for name in ("l.txt", "l.csv", "l.npy"):
        np.testing.assert_array_equal(load_labels(str(tmp_path / name)), want)
    np.testing.assert_array_equal(load_labels(str(tmp_path / "i.txt")), [3, 1, 3, 0, 1])
    (tmp_path / "m.csv").write_text("a,b,c\n1,0,0\n0,1,1\nyes,no,\n")
    np.testing.assert_array_equal(
        load_labels(str(tmp_path / "m.csv")), [[1, 0, 0], [0, 1, 1], [1, 0, 0]]
    )
    (tmp_path / "m.tsv").write_text("a\tb\n1\t0\n0\t1\n")
    assert load_labels(str(tmp_path / "m.tsv")).shape == (2, 2)


@pytest.mark.parametrize(
    ("text", "suffix", "match"),
    [
        ("dog\n\ncat\n", ".txt", "line 2 is blank"),
        ("", ".txt", "holds no labels"),
        ("label\n", ".csv", "needs a header row and one row per item"),
        ("a,b\n1,0\n0\n", ".csv", "row 3 has a different number of columns"),
        ("a,b\n1,dog\n", ".csv", "row 2 column 'b' holds 'dog'"),
        (b"\xff\xfe", ".txt", "not a UTF-8 text file"),
    ],
)
def test_label_file_errors_are_clear(tmp_path, text, suffix, match):
    p = tmp_path / f"bad{suffix}"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ad.AnchorDivError, match=match):
        load_labels(str(p))
    with pytest.raises(ad.AnchorDivError, match="no such file"):
        load_labels(str(tmp_path / "none.txt"))


def test_relevance_from_labels_or_a_matrix(tmp_path):
    labels = np.array([0, 1, 0, 2])
    np.save(tmp_path / "l.npy", labels)
    full = shared_label_relevance(labels, labels)
    np.testing.assert_array_equal(load_relevance(str(tmp_path / "l.npy"), 4, np.arange(4)), full)
    np.testing.assert_array_equal(
        load_relevance(str(tmp_path / "l.npy"), 4, np.array([2, 3])), full[[2, 3]]
    )
    np.save(tmp_path / "r.npy", full[:2])
    np.testing.assert_array_equal(load_relevance(str(tmp_path / "r.npy"), 4, n_queries=2), full[:2])
    with pytest.raises(ad.AnchorDivError, match="omit --queries, or pass --query-index"):
        load_relevance(str(tmp_path / "l.npy"), 4, n_queries=2)
    with pytest.raises(ad.AnchorDivError, match="1 query index entries are -1"):
        load_relevance(str(tmp_path / "l.npy"), 4, np.array([0, -1]))
    with pytest.raises(
        ad.AnchorDivError, match=r"expected a \[2, 4\] relevance matrix .*\[4\] labels"
    ):
        load_relevance(str(tmp_path / "r.npy"), 4, n_queries=2, as_labels=True)


@pytest.mark.parametrize(
    ("array", "match"),
    [
        # a [n, G'] relevance of another task: once read as 30 label indicators (AUPRC 0.998)
        (np.random.default_rng(0).uniform(size=(6, 5)) < 0.5, r"got \[6, 5\] \(pass --labels if"),
        (np.zeros((5, 6), bool), r"\[6\] labels or, with --labels, \[6, L\] .* got \[5, 6\]"),
        (np.zeros(5, int), r"got \[5\]"),
        (np.zeros((6, 2, 2), int), r"got \[6, 2, 2\]"),
        # scores or embeddings as labels: no two items share one, every AUPRC NaN
        (np.linspace(0.1, 0.9, 6), r"labels must be whole numbers .* entry 0 is 0.1;"),
        (np.array([0, 1, np.nan, 1, 0, 2]), "entry 2 is nan;"),
    ],
)
def test_a_relevance_of_the_wrong_shape_or_float_labels_is_an_error(tmp_path, array, match):
    np.save(tmp_path / "r.npy", array)
    with pytest.raises(ad.AnchorDivError, match=match):
        load_relevance(str(tmp_path / "r.npy"), 6, np.arange(6))


def test_label_indicators_and_whole_float_labels(tmp_path):
    """[n, L] 0/1 indicators are read with --labels (as_labels); class ids saved as floats
    are whole numbers and read as the integer classes."""
    ind = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]])
    np.save(tmp_path / "ind.npy", ind)
    want = shared_label_relevance(ind, ind)
    got = load_relevance(str(tmp_path / "ind.npy"), 6, np.arange(6), as_labels=True)
    np.testing.assert_array_equal(got, want)
    np.save(tmp_path / "bad.npy", 2 * ind)
    with pytest.raises(ad.AnchorDivError, match=r"indicators must be 0/1, got values \[0, 2\]"):
        load_relevance(str(tmp_path / "bad.npy"), 6, np.arange(6), as_labels=True)
    labels = np.array([0, 2, 1, 2, 0, 1])
    np.save(tmp_path / "names.npy", np.array(["cat", "dog", "cow", "dog", "cat", "cow"]))
    np.testing.assert_array_equal(
        load_relevance(str(tmp_path / "names.npy"), 6, np.arange(6)),
        shared_label_relevance(labels, labels),
    )
    np.save(tmp_path / "f.npy", labels.astype(np.float32))
    np.testing.assert_array_equal(
        load_relevance(str(tmp_path / "f.npy"), 6, np.arange(6)),
        shared_label_relevance(labels, labels),
    )


@pytest.fixture
def task(tmp_path):
    rng = np.random.default_rng(0)
    ad.save_embeddings(tmp_path / "b.npy", unit(rng, 40, 4), encoder="enc", logit_scale=5.0)
    ad.save_embeddings(
        tmp_path / "t.npy", clustered_anchors(rng, 8, 4), encoder="enc", logit_scale=5.0
    )
    ad.save_embeddings(
        tmp_path / "g.npy", clustered_anchors(rng, 12, 4), encoder="enc", logit_scale=5.0
    )
    (tmp_path / "labels.txt").write_text("\n".join("abc"[i % 3] for i in range(12)) + "\n")
    return tmp_path


def test_evaluate_takes_the_labels_curve_takes(task, capsys):
    t = task
    assert main(["fit", "gaussian", str(t / "t.npy"), "-o", str(t / "m")]) == 0
    base = [
        "evaluate",
        str(t / "m"),
        "--gallery",
        str(t / "g.npy"),
        "--baselines",
        "cosine",
        "--n-boot",
        "10",
        "--json",
    ]
    labels = np.arange(12) % 3
    np.save(t / "rel.npy", shared_label_relevance(labels, labels))
    assert main([*base, "--relevance", str(t / "labels.txt"), "-o", str(t / "a")]) == 0
    assert main([*base, "--relevance", str(t / "rel.npy"), "-o", str(t / "b")]) == 0
    capsys.readouterr()
    assert (t / "a" / "evaluation.json").read_text() == (t / "b" / "evaluation.json").read_text()
    assert (
        main(
            [
                *base,
                "--relevance",
                str(t / "labels.txt"),
                "--queries",
                str(t / "t.npy"),
                "-o",
                str(t / "c"),
            ]
        )
        == 2
    )
    assert "per-item labels give the queries' relevance only when" in capsys.readouterr().err


def test_a_saved_prior_object_is_a_broad_side(task, capsys):
    """``prior.save`` directories: adapt uses the prior as saved (its strengths), curve and the
    stand-in anchors use its broad mean and covariance."""
    t = task
    broad, target = np.load(t / "b.npy"), np.load(t / "t.npy")
    prior = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=9.0)
    prior.save(t / "prior", encoder="enc", tau=5.0)
    points = load_broad(str(t / "prior"))
    np.testing.assert_allclose(points.mean(0), np.asarray(prior.mu0), atol=1e-12)
    np.testing.assert_allclose(np.cov(points.T, bias=True), np.asarray(prior.cov), atol=1e-12)
    from anchordiv.provenance import provenance_of

    assert provenance_of(points)["encoder"] == "enc"
    assert (
        main(
            ["adapt", "gaussian", str(t / "prior"), str(t / "t.npy"), "-o", str(t / "m"), "--json"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["kappa0"] == 3.0
    want = prior.update(target, tau=5.0).point("mean")
    np.testing.assert_allclose(
        np.asarray(ad.load_model(t / "m").mean), np.asarray(want.mean), rtol=1e-12
    )
    assert (
        main(
            [
                "adapt",
                "gaussian",
                str(t / "prior"),
                str(t / "t.npy"),
                "-o",
                str(t / "m2"),
                "--kappa0",
                "5",
            ]
        )
        == 2
    )
    assert "kappa0: " in (err := capsys.readouterr().err) and "strengths" in err
    assert (
        main(["adapt", "latent-gaussian", str(t / "prior"), str(t / "t.npy"), "-o", str(t / "m2")])
        == 2
    )
    assert "holds a saved gaussian prior; adapt it as gaussian" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--model", "nosuchmodule_xyz:f", "--method", "svi"], "--model: cannot import"),
        (["--model", "json:nope", "--method", "svi"], "--model: 'json' has no 'nope'"),
        (["--model", "json:__doc__", "--method", "svi"], "not a NumPyro model function"),
        (["--model", "nofile.py:f", "--method", "svi"], "--model: no such file: nofile.py"),
        (["--model", "f", "--method", "svi"], "expected module:function"),
        (["--model-kwargs", "{}"], "--model-kwargs: only with --model"),
        (["--model", "json:loads", "--model-kwargs", "{bad", "--method", "svi"], "not valid JSON"),
        (["--model", "json:loads"], "--model: applies to --method nuts or --method svi, not to"),
    ],
)
def test_adapt_model_errors_are_one_line(task, capsys, extra, match):
    t = task
    assert (
        main(["adapt", "gaussian", str(t / "b.npy"), str(t / "t.npy"), "-o", str(t / "m"), *extra])
        == 2
    )
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1, err


def test_mixture_sampler_seed_never_changes_the_prior():
    """``seed`` seeds NUTS/SVI only; the broad EM fit has ``em_seed`` (issue 27: the prior's
    components swapped with the sampler seed)."""
    from anchordiv.adaptation import split_options

    prior_opts, method = split_options("mixture", {"method": "svi", "seed": 7})
    assert "em_seed" not in prior_opts and method.seed == 7
    prior_opts, _ = split_options("mixture", {"method": "svi", "seed": 7, "em_seed": 2})
    assert prior_opts["em_seed"] == 2
    with pytest.raises(ad.AnchorDivError, match="seed: runs with method='nuts' or 'svi'"):
        split_options("mixture", {"seed": 3})
    rng = np.random.default_rng(5)
    broad, target = unit(rng, 60, 3), clustered_anchors(rng, 6, 3)
    priors = [
        ad.adapt(
            "mixture",
            broad,
            target,
            tau=5.0,
            components=2,
            method="svi",
            guide="delta",
            num_steps=5,
            seed=s,
        ).prior
        for s in (0, 1)
    ]
    for field in ("alpha", "mu", "psi"):
        np.testing.assert_array_equal(
            np.asarray(getattr(priors[0], field)), np.asarray(getattr(priors[1], field))
        )
    assert priors[0].em_seed == priors[1].em_seed == 0
