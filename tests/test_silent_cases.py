"""The silent and raw cases of issue 27, each now a clear AnchorDivError or a named warning."""

import re
import warnings

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.provenance import AnchorDivWarning
from helpers import clustered_anchors, unit

D = 4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return unit(rng, 40, D), clustered_anchors(rng, 8, D), unit(rng, 12, D)


def test_non_unit_queries_or_gallery_warn_as_anchors_do(data):
    broad, _, items = data
    model = ad.fit("gaussian", broad, tau=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ad.divergence(model, items[:3], items)  # unit rows: silent
    for q, g, name in ((2 * items[:3], items, "queries"), (items[:3], 0.5 * items, "gallery")):
        with pytest.warns(AnchorDivWarning, match=rf"{name}: \d+ of \d+ rows are not unit-norm"):
            ad.divergence(model, q, g)
    with pytest.warns(AnchorDivWarning, match="queries: 3 of 3 rows are not unit-norm"):
        ad.top_k(model, 2 * items[:3], items, 2)


@pytest.mark.parametrize(
    ("cov", "match"),
    [
        (-np.eye(D), r"cov: is not positive definite \(smallest eigenvalue -1\)"),
        (np.full((D, D), np.nan), "cov: contains NaN or inf"),
        (np.triu(np.ones((D, D))), "cov: is not symmetric"),
        (np.eye(D + 1), r"cov: expected a covariance matrix \[4, 4\]"),
    ],
)
def test_niw_prior_refuses_an_invalid_covariance(cov, match):
    """``NIWPrior(cov=-I)`` gave Σ = 0 and all-zero divergences, then a raw LinAlgError."""
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.NIWPrior(np.zeros(D), cov, 1.0, D + 5.0)
    with pytest.raises(ad.AnchorDivError, match="nu0: must be > d"):
        ad.NIWPrior(np.zeros(D), np.eye(D), 1.0, 2.0)
    with pytest.raises(ad.AnchorDivError, match="mu0: expected a finite vector"):
        ad.NIWPrior(np.full(D, np.nan), np.eye(D), 1.0, D + 5.0)
    ok = ad.NIWPrior(np.zeros(D), np.eye(D), 1.0, D + 5.0)
    assert ok.dim == D


def test_gaussian_from_nan_or_negative_moments_is_an_error():
    """A Gaussian with NaN covariance scored all-NaN."""
    with pytest.raises(ad.AnchorDivError, match="cov: contains NaN or inf"):
        ad.Gaussian.from_moments(np.zeros(D), np.full((D, D), np.nan), tau=2.0)
    with pytest.raises(ad.AnchorDivError, match="not positive semi-definite"):
        ad.Gaussian.from_moments(np.zeros(D), -np.eye(D), tau=2.0)
    with pytest.raises(ad.AnchorDivError, match="mean: expected a finite vector"):
        ad.Gaussian.from_moments(np.full(D, np.inf), np.eye(D), tau=2.0)
    ad.Gaussian.from_moments(np.zeros(D), np.zeros((D, D)), tau=2.0)  # PSD is fine


def test_adapt_refuses_duplicated_targets_as_fit_does(data):
    broad, targets, _ = data
    dup = targets.copy()
    dup[2:] = dup[0]  # 75 % repeat another row
    for call in (
        lambda: ad.fit("gaussian", dup, tau=5.0),
        lambda: ad.adapt("gaussian", broad, dup, tau=5.0),
    ):
        with pytest.raises(ad.AnchorDivError, match="75% of the 8 anchors repeat another"):
            call()


def _discrete(targets, *, mu0, psi0, nu0, **_):
    import numpyro
    import numpyro.distributions as dist

    d = mu0.shape[-1]
    z = numpyro.sample("z", dist.Bernoulli(0.5))
    sigma = numpyro.deterministic("Sigma", psi0 / (nu0 - d - 1))
    mu = numpyro.sample("mu", dist.Normal(mu0 + z, 1.0).to_event(1))
    numpyro.sample("targets", dist.MultivariateNormal(mu, sigma), obs=targets)


def _bad_cov(targets, *, mu0, **_):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    d = mu0.shape[-1]
    s = numpyro.sample("s", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
    sigma = numpyro.deterministic("Sigma", jnp.diag(s))  # negative entries: not PD
    mu = numpyro.sample("mu", dist.Normal(mu0, 1.0).to_event(1))
    numpyro.sample("targets", dist.MultivariateNormal(mu, sigma), obs=targets)


@pytest.mark.parametrize("method", ["svi", "nuts"])
@pytest.mark.parametrize(
    ("model", "match"),
    [
        (_discrete, r"model: latent site\(s\) 'z' are discrete"),
        (_bad_cov, "model: site 'Sigma' is not a symmetric positive-definite covariance"),
    ],
)
def test_user_models_fail_with_a_clear_error(data, method, model, match):
    """A discrete site raised numpyro's "install funsor" ImportError; an invalid covariance
    numpyro's raw ValueError."""
    broad, targets, _ = data
    opts = (
        {"guide": "delta", "num_steps": 5}
        if method == "svi"
        else {"num_warmup": 5, "num_chains": 1}
    )
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.adapt(
            "gaussian",
            broad,
            targets,
            tau=5.0,
            method=method,
            model=model,
            num_samples=5,
            progress=False,
            **opts,
        )


def test_a_raising_curve_factory_is_a_nan_cell_and_one_line(tmp_path, capsys, monkeypatch):
    from anchordiv.app.cli import main

    rng = np.random.default_rng(1)
    for name, x in (("b", unit(rng, 30, D)), ("t", unit(rng, 6, D)), ("i", unit(rng, 12, D))):
        np.save(tmp_path / f"{name}.npy", x)
    np.save(tmp_path / "l.npy", np.arange(12) % 3)
    (tmp_path / "boom.py").write_text(
        "def boom(broad, target, tau):\n    raise RuntimeError('my factory is broken\\nmore')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(AnchorDivWarning) as caught:
        rc = main(
            [
                "curve",
                *(str(tmp_path / f"{n}.npy") for n in "btil"),
                "-o",
                str(tmp_path / "out"),
                "--tau",
                "5",
                "--models",
                "cosine",
                "--model",
                "boom:boom",
                "--budgets",
                "2",
                "--subsets",
                "2",
                "--n-boot",
                "10",
            ]
        )
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in err
    (line,) = [str(w.message) for w in caught]  # the CLI prints it as one line
    assert (
        line.startswith("model 'boom': 3 warning(s) in 3 of 3 cells")
        and "RuntimeError: my factory is broken; the cell is NaN" in line
        and "\n" not in line
    )
    rows = (tmp_path / "out" / "curve.csv").read_text().splitlines()
    boom = [r for r in rows if r.startswith("boom,")]
    assert len(boom) == 3 and all(",nan,RuntimeError: my factory is broken" in r for r in boom)


def test_library_factories_still_raise(monkeypatch):
    """Only a user's (custom-role) factory is turned into a NaN cell; a bug in a registered
    model still surfaces."""
    from anchordiv.evaluation import curves

    def broken(broad, target, tau):
        raise RuntimeError("library bug")

    model = curves.CurveModel(broken, role="posterior", kind="gaussian")
    rng = np.random.default_rng(2)
    x = unit(rng, 10, D)
    with pytest.raises(RuntimeError, match="library bug"):
        curves._evaluate_cell({"m": model}, x, x[:3], 5.0, x, x, np.eye(10, dtype=bool), None, None)


def test_prior_reprs_are_one_short_line(data):
    """``print(NIWPrior)`` at d = 384 was 8,143 characters."""
    rng = np.random.default_rng(3)
    broad = rng.normal(size=(500, 384))
    targets = unit(rng, 6, 384)
    prior = ad.NIWPrior.from_anchors(broad, targets=targets)
    text = repr(prior)
    assert len(text) < 200 and "\n" not in text
    assert text.startswith("NIWPrior(mu0[384], cov[384, 384], kappa0=")
    small_broad, small_targets, _ = data
    for kind, opts in (
        ("latent-gaussian", {}),
        ("latent-spherical", {}),
        ("mixture", {"components": 2}),
        ("diagonal-gaussian", {}),
    ):
        p = ad.adapt(kind, small_broad, small_targets, tau=5.0, **opts).prior
        assert "\n" not in repr(p) and "array(" not in repr(p), repr(p)


def test_huggingface_bars_are_off_in_a_pipe():
    """Their redraws wrote ESC[A codes into piped logs; restored afterwards."""
    tlog = pytest.importorskip("transformers.utils.logging")
    hub = pytest.importorskip("huggingface_hub.utils")
    from anchordiv.data.encoders import quiet_hf_bars

    assert tlog.is_progress_bar_enabled()
    with quiet_hf_bars():  # pytest's captured stderr is not a terminal
        assert not tlog.is_progress_bar_enabled() and hub.are_progress_bars_disabled()
    assert tlog.is_progress_bar_enabled() and not hub.are_progress_bars_disabled()


TRUNCATION_CHECK = """
import re
import warnings
import numpy as np
import anchordiv as ad

rng = np.random.default_rng(0)
broad = rng.normal(size=(300, 8)) * np.linspace(1.5, 0.3, 8)
targets = rng.normal(size=(12, 8)) + 0.3
targets /= np.linalg.norm(targets, axis=1, keepdims=True)
warnings.simplefilter("always")
prior = ad.NIWPrior.from_anchors(broad, targets=targets)
post = prior.update(targets, tau=20.0)
model = post.point("mean")
prior.isotropic().update(targets, tau=20.0).point("mean")
post.sample(0, 2)
ad.divergence(model, targets, targets)
for kind, opts in (("softmax", {}), ("gaussian", {}), ("latent-gaussian", {"rank": 2}),
                   ("latent-spherical", {"rank": 2}), ("mixture", {"components": 2})):
    ad.divergence(ad.fit(kind, targets, tau=5.0, **opts), targets, targets)
print("done")
"""


def test_float64_inputs_give_no_jax_truncation_warnings():
    """The adaptation guide's first example (float64 arrays, JAX in its default float32)
    printed three JAX "will be truncated to dtype float32" warnings.  Run in a fresh process:
    the tests themselves run JAX in float64."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "JAX_ENABLE_X64": "0"}
    run = subprocess.run(
        [sys.executable, "-c", TRUNCATION_CHECK],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr
    assert "truncated" not in run.stderr, run.stderr


def test_all_nan_queries_do_not_reach_numpy_warnings():
    """The demo printed numpy's raw "All-NaN slice encountered": a query without relevant
    items has AUPRC NaN in every posterior draw."""
    from anchordiv.checks.uncertainty import RetrievalUncertainty

    rng = np.random.default_rng(4)
    auprc = rng.uniform(size=(20, 5))
    with_nan = np.concatenate([auprc, np.full((20, 1), np.nan)], axis=1)
    unc = RetrievalUncertainty(
        rng.uniform(size=(20, 6)), with_nan, np.append(rng.uniform(size=5), np.nan), 0.9
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = unc.summary()
    q = np.quantile(auprc, [0.05, 0.95], axis=0)
    assert summary["per_query_auprc_width"] == pytest.approx(float(np.mean(q[1] - q[0])), rel=1e-12)


# ---- issue 35: inputs a user gets wrong ------------------------------------------------------


@pytest.fixture
def task(tmp_path):
    """Embeddings of one encoder (τ 5 recorded), labels, a fitted point model."""
    rng = np.random.default_rng(5)
    labels = np.arange(12) % 3
    centres = unit(rng, 3, D)
    items = centres[labels] + 0.3 * rng.normal(size=(12, D))
    arrays = {
        "b": unit(rng, 40, D),
        "t": clustered_anchors(rng, 8, D),
        "i": items / np.linalg.norm(items, axis=1, keepdims=True),
    }
    for name, x in arrays.items():
        ad.save_embeddings(tmp_path / f"{name}.npy", x, encoder="enc", logit_scale=5.0)
    np.save(tmp_path / "l.npy", labels)
    return tmp_path


def _cli(*argv):
    from anchordiv.app.cli import main

    try:
        return main([str(a) for a in argv])
    except SystemExit as stop:  # a usage error of the parser (one line, status 2)
        return stop.code


@pytest.mark.parametrize("how", ["python", "cli"])
def test_a_temperature_for_tau_warns(task, how):
    match = (
        r"tau=0.01: tau is the logit scale \(e.g. 100 for CLIP\); did you pass a "
        r"temperature 1/tau\?"
    )
    with pytest.warns(AnchorDivWarning, match=match):
        if how == "python":
            ad.fit("gaussian", clustered_anchors(np.random.default_rng(0), 8, D), tau=0.01)
        else:
            assert _cli("fit", "gaussian", task / "t.npy", "-o", task / "m", "--tau", "0.01") == 0


@pytest.mark.parametrize("how", ["fit", "adapt", "cli-fit", "cli-curve"])
def test_an_explicit_tau_that_contradicts_the_recorded_one_warns(task, how):
    t = ad.load_embeddings(task / "t.npy")
    match = r"tau=100 differs from the logit scale 5 recorded with \w+ \(encoder enc\)"
    with pytest.warns(AnchorDivWarning, match=match):
        if how == "fit":
            ad.fit("gaussian", t, tau=100.0)
        elif how == "adapt":
            ad.adapt("gaussian", ad.load_embeddings(task / "b.npy"), t, tau=100.0)
        elif how == "cli-fit":
            assert _cli("fit", "gaussian", task / "t.npy", "-o", task / "m", "--tau", "100") == 0
        else:
            args = ("curve", *(task / f"{n}.npy" for n in "btil"), "-o", task / "c")
            opts = ("--models", "cosine", "--budgets", "2", "--subsets", "1", "--n-boot", "10")
            assert _cli(*args, *opts, "--tau", "100") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ad.fit("gaussian", t, tau=5.0)  # agrees: silent
        ad.fit("gaussian", t)  # the recorded one


def test_swapped_broad_and_target_anchors_warn(task, capsys):
    rng = np.random.default_rng(6)
    broad, many = unit(rng, 10, D), unit(rng, 30, D)
    match = r"broad_anchors: 10 rows, fewer than the 30 target_anchors; .* were the two swapped\?"
    with pytest.warns(AnchorDivWarning, match=match):
        ad.adapt("gaussian", broad, many, tau=5.0)
    with pytest.warns(AnchorDivWarning, match="fewer than the 40 target_anchors"):
        assert _cli("adapt", "gaussian", task / "t.npy", task / "b.npy", "-o", task / "m") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ad.adapt("gaussian", many, broad, tau=5.0)


def _curve_cli(task, relevance, *extra):
    args = ("curve", task / "b.npy", task / "t.npy", task / "i.npy", relevance, "-o", task / "c")
    opts = ("--models", "cosine,gaussian", "--budgets", "2", "--subsets", "1", "--n-boot", "10")
    return _cli(*args, *opts, *extra)


@pytest.mark.parametrize(
    ("relevance", "match"),
    [
        # a [40, 30] relevance was read as 30 label indicators: AUPRC 0.998, rc 0
        (np.random.default_rng(0).uniform(size=(12, 9)) < 0.5, r"got \[12, 9\] \(pass --labels"),
        (np.zeros((9, 12), bool), r"expected a \[12, 12\] relevance matrix .* got \[9, 12\]"),
        # float labels: an all-NaN curve, rc 0, numpy's "Mean of empty slice"
        (np.random.default_rng(0).uniform(size=12), "labels must be whole numbers"),
        # labels no two items share: every AUPRC undefined
        (np.arange(12), "none of the 12 queries has a relevant gallery item"),
    ],
)
def test_curve_refuses_a_relevance_it_cannot_use(task, capsys, relevance, match):
    np.save(task / "r.npy", relevance)
    assert _curve_cli(task, task / "r.npy") == 2
    err = capsys.readouterr().err
    assert re.search(match, err) and "Traceback" not in err, err


def _refuse(broad, target, tau):
    raise ad.AnchorDivError("target: need at least 50 anchors for this model")


def test_a_curve_whose_cells_all_failed_is_an_error(task, capsys, monkeypatch):
    """They gave an all-NaN curve and exit code 0."""
    from anchordiv.evaluation.curves import MODELS

    rng = np.random.default_rng(7)
    x, rel = unit(rng, 10, D), np.eye(10, dtype=bool) | np.eye(10, k=1, dtype=bool)
    with pytest.raises(
        ad.AnchorDivError,
        match=r"no model could be built in any cell \('refuse': target: need at least 50",
    ):
        ad.adaptation_curve(
            x, x[:4], x, x, rel, tau=5.0, models={"refuse": _refuse}, budgets=[2], n_subsets=2
        )
    with pytest.warns(AnchorDivWarning, match=r"model 'refuse': failed in all 3 cells, its curve"):
        curve = ad.adaptation_curve(
            x,
            x[:4],
            x,
            x,
            rel,
            tau=5.0,
            models={"refuse": _refuse, "cosine": MODELS["cosine"]},
            budgets=[2],
            n_subsets=2,
            n_boot=10,
        )
    assert np.isnan(curve.means("refuse")).all() and np.isfinite(curve.means("cosine")).all()
    (task / "refusing.py").write_text(
        "import anchordiv as ad\n\ndef refuse(broad, target, tau):\n"
        "    raise ad.AnchorDivError('target: need at least 50 anchors')\n"
    )
    monkeypatch.syspath_prepend(str(task))
    rc = _cli(
        "curve",
        *(task / f"{n}.npy" for n in "btil"),
        "-o",
        task / "c",
        "--models",
        "",
        "--model",
        "refusing:refuse",
        "--budgets",
        "2",
        "--subsets",
        "2",
        "--n-boot",
        "10",
    )
    err = capsys.readouterr().err
    assert rc == 2 and "'refuse': target: need at least 50 anchors" in err, err


def test_options_that_do_not_apply_are_errors(task, capsys):
    assert _cli("fit", "gaussian", task / "t.npy", "-o", task / "m") == 0
    gallery = ("--gallery", task / "i.npy", "--relevance", task / "l.npy", "--baselines", "")
    cases = [
        (("evaluate", task / "m", *gallery, "--draws", "5"), "--draws: applies to posterior"),
        (("evaluate", task / "m", *gallery, "--summary", "map"), "--summary: applies to posterior"),
        (
            ("evaluate", task / "m", *gallery, "--draws", "0"),
            r"--draws: expected a whole number >= 1, got '0'",
        ),
        (
            ("search", task / "m", task / "i.npy", task / "i.npy", "--summary", "map"),
            "--summary: applies to a saved posterior",
        ),
        (("embed", task / "words.txt", "--recursive"), "--recursive: applies to an image folder"),
        (("embed", task / "words.txt", "--on-error", "skip"), "--on-error: applies to an image"),
        (("diagnose", task / "post", "-k", "5"), "-k: applies to the stability table"),
        (
            ("evaluate", task / "m", *gallery, "--interval", "t", "--n-boot", "50"),
            "--n-boot: applies to --interval bootstrap",
        ),
        (
            ("search", task / "m", task / "i.npy", task / "i.npy", "--column", "emb"),
            "--column: applies to parquet shards, read with --scheduler or --workers",
        ),
    ]
    (task / "words.txt").write_text("a dog\na cat\n")
    for i, (argv, match) in enumerate(cases):
        assert _cli(*argv, "-o", task / f"out{i}") == 2, argv
        err = capsys.readouterr().err
        assert match in err and "Traceback" not in err, (argv, err)
    with pytest.raises(ad.AnchorDivError, match="pretrained: applies to open_clip and chexzero"):
        ad.data.get_encoder("minilm", pretrained="laion2b_s34b_b79k")


def test_evaluate_without_any_relevant_item_is_an_error():
    rng = np.random.default_rng(8)
    x = unit(rng, 6, D)
    with pytest.raises(ad.AnchorDivError, match="none of the 6 queries has a relevant gallery"):
        ad.evaluate(
            {"c": "cosine"},
            x,
            x,
            np.eye(6, dtype=bool),
            query_index=np.arange(6),
            baselines=(),
        )


def _overflowing(rng, n=30, big=28):
    g = unit(rng, n, D)
    g[:big] *= 1e200  # ‖x‖² overflows float64: their divergences are inf
    return g


@pytest.mark.parametrize("where", ["top_k", "index"])
def test_top_k_warns_on_the_gallery_and_never_returns_padding(data, where):
    """``top_k`` on overflowing rows returned -1 indices (padding) and inf, with no warning."""
    broad, _, _ = data
    model = ad.fit("gaussian", broad, tau=5.0)
    rng = np.random.default_rng(9)
    g, q = _overflowing(rng), unit(rng, 3, D)
    search = (
        (lambda k: ad.top_k(model, q, g, k))
        if where == "top_k"
        else (lambda k: ad.GalleryIndex(model, g).top_k(q, k))
    )
    with pytest.warns(AnchorDivWarning, match=r"gallery: 28 of 30 rows are not unit-norm"):
        with pytest.raises(
            ad.AnchorDivError,
            match=r"gallery: 3 of 3 queries have fewer than k=5 gallery items of finite "
            r"divergence \(query 0: 2\)",
        ):
            search(5)
    with pytest.warns(AnchorDivWarning, match="gallery: 28 of 30 rows"):
        idx, d = search(2)
    assert (idx >= 28).all() and np.isfinite(d).all()


@pytest.mark.parametrize(
    ("k", "match"),
    [
        (float("nan"), "k: expected an integer, got nan"),
        (None, "k: expected an integer, got None"),
        (2.5, "k: expected an integer, got 2.5"),
        ("3", "k: expected an integer, got '3'"),
        (True, "k: expected an integer, got True"),
        (np.inf, "k: expected an integer, got inf"),
        (0, r"k: must be \[1, 12\], got 0"),
        (-1, r"k: must be \[1, 12\], got -1"),
        (13, r"k: must be \[1, 12\], got 13"),
    ],
)
def test_k_is_validated(data, k, match):
    broad, _, items = data
    model = ad.fit("gaussian", broad, tau=5.0)
    for search in (
        lambda: ad.top_k(model, items[:2], items, k),
        lambda: ad.GalleryIndex(model, items).top_k(items[:2], k),
    ):
        with pytest.raises(ad.AnchorDivError, match=match):
            search()
    assert ad.top_k(model, items[:2], items, 3.0)[0].shape == (2, 3)  # a whole float is fine


def _tryout_cases(x, rel, tmp):
    curve = dict(tau=5.0, models=("cosine",), budgets=[2], n_subsets=1, n_boot=10)
    return [
        # raw IndexError from an empty bootstrap, after every score was computed
        (
            lambda: ad.evaluate({"c": "cosine"}, x, x, rel, baselines=(), n_boot=0),
            "n_boot: must be >= 1, got 0",
        ),
        (
            lambda: ad.adaptation_curve(x, x[:4], x, x, rel, **{**curve, "n_boot": 0}),
            "n_boot: must be >= 1, got 0",
        ),
        # raw TypeError: '<' between str and int
        (
            lambda: ad.adaptation_curve(x, x[:4], x, x, rel, **{**curve, "budgets": "2,3"}),
            "budgets: expected a list of integers, got '2,3'",
        ),
        # a string was iterated by character: "model 'c': unknown"
        (
            lambda: ad.adaptation_curve(x, x[:4], x, x, rel, **{**curve, "models": "cosnie"}),
            "model 'cosnie': unknown",
        ),
        # found inside the first cell; now before any model is built
        (
            lambda: ad.adaptation_curve(x, x[:4], x, x, rel[:5], **curve),
            r"relevance: expected shape \[Q, G\] = \[8, 8\], got \[5, 8\]",
        ),
        # tau=True was τ = 1
        (lambda: ad.fit("gaussian", x, tau=True), "tau: expected a number, got True"),
        # texts and [n, d, k] arrays were saved as embeddings, to fail at the first fit
        (
            lambda: ad.save_embeddings(tmp / "s.npy", ["a dog", "a cat"]),
            "x: expected floating-point embeddings, got dtype=<U",
        ),
        (
            lambda: ad.save_embeddings(tmp / "s.npy", np.zeros((2, 3, 4))),
            r"x: expected shape \[n, d\], got \[2, 3, 4\]",
        ),
    ]


@pytest.mark.parametrize("case", range(8))
def test_tryout_mistakes_are_clear_errors(tmp_path, case):
    rng = np.random.default_rng(10)
    x = unit(rng, 8, D)
    rel = np.eye(8, dtype=bool) | np.eye(8, k=1, dtype=bool) | np.eye(8, k=-1, dtype=bool)
    call, match = _tryout_cases(x, rel, tmp_path)[case]
    with pytest.raises(ad.AnchorDivError, match=match):
        call()


def test_a_nested_list_relevance_works_in_a_curve():
    """It was a raw TypeError inside a cell."""
    rng = np.random.default_rng(11)
    x = unit(rng, 8, D)
    rel = (np.eye(8, dtype=bool) | np.eye(8, k=1, dtype=bool)).tolist()
    curve = ad.adaptation_curve(
        x, x[:4], x, x, rel, tau=5.0, models=("cosine",), budgets=[2], n_subsets=1, n_boot=10
    )
    assert np.isfinite(curve.means("cosine")).all()


def test_cli_checks_end_of_run_options_first(task, capsys):
    """``--fraction 2`` failed only after every cell had run; ``--n-boot 0`` was a traceback."""
    for extra, match in (
        (("--fraction", "2"), "--fraction: must lie in [0, 1], got 2.0"),
        (("--n-boot", "0"), "--n-boot: expected a whole number >= 1, got '0'"),
    ):
        args = ("curve", *(task / f"{n}.npy" for n in "btil"), "-o", task / "c", *extra)
        assert _cli(*args, "--models", "cosine", "--budgets", "2", "--subsets", "1") == 2
        err = capsys.readouterr().err
        assert match in err and "cell" not in err, err  # no cell ran (no progress bar)
