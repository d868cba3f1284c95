"""``anchordiv.checks.arviz``: the one module that imports ArviZ gives the same answers on 0.x
and 1.x (``make test-arviz1`` runs these under ArviZ 1.3)."""

import numpy as np
import pytest
import scipy.special

from anchordiv.checks import arviz as adz


@pytest.mark.parametrize("num_draws", [2, 10, 20])
def test_psis_with_too_few_draws_for_a_tail_gives_k_inf_and_plain_weights(num_draws):
    """Below five tail draws no Pareto fit exists: k is inf (ArviZ 0.x's answer; 1.x raises),
    the weights are the ratios normalised."""
    r = np.random.default_rng(0).normal(size=(3, num_draws))
    assert adz.tail_size(num_draws) < adz.MIN_TAIL
    lw, k = adz.psis_log_weights(r)
    assert np.all(np.isinf(k)) and k.shape == (3,)
    np.testing.assert_allclose(lw, r - scipy.special.logsumexp(r, axis=1, keepdims=True))


def test_psis_with_a_tail_smooths_and_normalises():
    r = 0.3 * np.random.default_rng(1).normal(size=(2, 400))
    assert adz.tail_size(400) == 60
    lw, k = adz.psis_log_weights(r)
    np.testing.assert_allclose(scipy.special.logsumexp(lw, axis=1), 0.0, atol=1e-10)
    assert np.all(np.isfinite(k)) and np.all(k < 0.7)  # Gaussian ratios: a light tail
