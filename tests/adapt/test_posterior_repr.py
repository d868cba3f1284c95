"""``repr(posterior)`` is a few lines (kind, method, size, scalar info), never the arrays."""

import numpy as np

import anchordiv as ad


def test_exact_posterior_repr_is_short():
    rng = np.random.default_rng(0)
    post = ad.adapt("gaussian", rng.normal(size=(300, 64)), rng.normal(size=(10, 64)) + 0.5,
                    tau=20.0, normalize=True)
    text = repr(post)
    lines = text.splitlines()
    assert lines[0] == "Posterior(kind='gaussian', method='exact', d=64, tau=20)"
    assert lines[1] == "  exact: NIW" and lines[2].startswith("  info: kappa0=")
    assert len(lines) <= 4 and max(map(len, lines)) <= 120 and "array" not in text


def test_sampled_posterior_repr_names_draws_and_sites():
    rng = np.random.default_rng(1)
    post = ad.adapt("gaussian", rng.normal(size=(200, 4)), rng.normal(size=(8, 4)), tau=20.0,
                    normalize=True, method="nuts", num_warmup=20, num_samples=20, progress=False)
    lines = repr(post).splitlines()
    assert lines[0].startswith("Posterior(kind='gaussian', method='nuts', d=4")
    assert lines[1].startswith("  draws: 2 chains x 20; sites: ") and "Sigma [4, 4]" in lines[1]
    assert len(repr(post)) < 600
