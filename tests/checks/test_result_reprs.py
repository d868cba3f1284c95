"""Results print as a few readable lines: SBC and prior comparison."""

import numpy as np

import anchordiv as ad


def test_sbc_result_repr():
    def infer(rng, y):
        return {"theta": y.sum() / 6 + rng.normal(size=19) / np.sqrt(6)}

    result = ad.sbc(
        lambda rng: {"theta": rng.normal()},
        lambda rng, p: p["theta"] + rng.normal(size=5),
        infer,
        {"theta": lambda p: p["theta"]},
        num_simulations=40,
        seed=0,
        progress=False,
    )
    lines = repr(result).splitlines()
    assert lines[0] == "SBCResult(40 simulations x 19 draws)"
    assert lines[1].startswith("  theta: chi2 p ") and "90% coverage" in lines[1]


def test_prior_comparison_repr():
    rng = np.random.default_rng(0)
    broad, targets = rng.normal(size=(300, 3)), rng.normal(size=(8, 3)) + 0.5
    result = ad.compare_priors(
        {"broad": broad, "isotropic": {"broad": broad, "prior": "isotropic"}},
        targets,
        kind="gaussian",
        tau=20.0,
        num_draws=50,
        normalize=True,
    )
    lines = repr(result).splitlines()
    assert lines[0] == "PriorComparison(2 priors)"
    assert {line.split(":")[0].strip() for line in lines[1:]} == {"broad", "isotropic"}
    assert all(line.rstrip().endswith("exact") for line in lines[1:])  # the estimator used
