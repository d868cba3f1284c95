"""``repr(posterior)`` is a few lines (kind, method, size, scalar info), never the arrays."""

import numpy as np

import anchordiv as ad


def test_exact_posterior_repr_is_short():
    rng = np.random.default_rng(0)
    post = ad.adapt(
        "gaussian",
        rng.normal(size=(300, 64)),
        rng.normal(size=(10, 64)) + 0.5,
        tau=20.0,
        normalize=True,
    )
    text = repr(post)
    lines = text.splitlines()
    assert lines[0] == "Posterior(kind='gaussian', method='exact', d=64, tau=20)"
    assert lines[1] == "  exact: NIW" and lines[2].startswith("  info: kappa0=")
    assert len(lines) <= 4 and max(map(len, lines)) <= 120 and "array" not in text


def test_sampled_posterior_repr_names_draws_and_sites():
    """Draws of a NUTS run are summarised by their shapes (a stored posterior, no sampling)."""
    post = ad.Posterior(
        kind="gaussian",
        method="nuts",
        tau=20.0,
        dtype="float32",
        info={"d": 4, "divergences": 0, "subspace": 2},
        samples={"mu": np.zeros((2, 20, 4)), "Sigma": np.zeros((2, 20, 4, 4))},
    )
    lines = repr(post).splitlines()
    assert lines[0] == "Posterior(kind='gaussian', method='nuts', d=4, tau=20, subspace=2)"
    assert lines[1] == "  draws: 2 chains x 20; sites: mu [4], Sigma [4, 4]"
    assert lines[2] == "  info: divergences=0, subspace=2"
