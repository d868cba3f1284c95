"""Decisions on computed values take a relative tolerance (``anchordiv._tolerance``), so that a
last-bit difference between hosts (BLAS build, thread count, FMA) changes no discrete result."""

import jax.numpy as jnp
import numpy as np

import anchordiv as ad
from anchordiv._tolerance import SPECTRUM_RTOL, first_max, kept_spectrum, numerical_rank
from anchordiv.adaptation import broad_from_model
from anchordiv.anchors import Gaussian
from anchordiv.anchors.base import psd_factor
from anchordiv.anchors.linalg import canonical_signs


def test_first_max_breaks_near_ties_toward_the_first():
    assert first_max([1.0, 3.0, 3.0 * (1 + 1e-15), 2.0]) == 1
    assert first_max([1.0, 3.0 * (1 + 1e-15), 3.0, 2.0]) == 1
    assert first_max([1.0, 2.0, 3.0]) == 2  # a real difference still decides
    assert first_max([np.nan, -np.inf, 0.5]) == 2  # NaN never wins
    rows = np.array([[0.0, 1.0, 1.0 + 1e-14], [5.0, 4.0, 9.0]])
    assert first_max(rows, axis=1).tolist() == [1, 2]
    assert np.asarray(first_max(jnp.asarray(rows), axis=1)).tolist() == [1, 2]


def test_spectrum_rank_ignores_rounding_level_eigenvalues():
    lam = np.array([2.0, 1.0, 1e-17, -1e-17, 0.0])
    assert kept_spectrum(lam).tolist() == [True, True, False, False, False]
    assert not kept_spectrum(np.zeros(3)).any()
    x = np.random.default_rng(0).normal(size=(3, 6))
    assert numerical_rank(x.T @ x) == 3


def test_a_factor_column_at_rounding_level_is_dropped_like_an_exact_zero():
    """A rank-3 fit's absent direction comes out as 0 on one host and ~1e-17 on another: both
    give the same stand-in points."""
    model = ad.fit("gaussian", np.eye(4), tau=20.0)
    factor = np.asarray(model.factor)
    exact = factor.copy()
    exact[:, ~kept_spectrum((factor**2).sum(0))] = 0.0
    rounded = exact.copy()
    rounded[:, ~kept_spectrum((factor**2).sum(0))] = 1e-17
    mean = np.asarray(model.mean)
    a = broad_from_model(Gaussian(mean=mean, factor=exact, tau=1.0))
    b = broad_from_model(Gaussian(mean=mean, factor=rounded, tau=1.0))
    assert a.shape == b.shape == (6, 4)
    np.testing.assert_array_equal(a, b)


def test_psd_factor_zeroes_absent_directions():
    x = np.random.default_rng(1).normal(size=(3, 5))
    f = psd_factor(x.T @ x)
    norms = (f**2).sum(0)
    assert (norms == 0).sum() == 2 and (norms > SPECTRUM_RTOL * norms.max()).sum() == 3
    np.testing.assert_allclose(f @ f.T, x.T @ x, atol=1e-12)


def test_canonical_sign_pivot_does_not_hang_on_a_last_bit():
    """Two entries equal in exact arithmetic: whichever is a bit larger, the first one is the
    pivot (positive)."""
    h = np.sqrt(0.5)
    for a, b in [(h, np.nextafter(h, 1.0)), (np.nextafter(h, 1.0), h)]:
        v = np.array([[a], [-b]])
        assert canonical_signs(v)[0, 0] > 0
        assert canonical_signs(-v)[0, 0] > 0
        assert float(canonical_signs(jnp.asarray(-v))[0, 0]) > 0


def test_first_max_window_is_the_maximums_own():
    """A far-off value does not widen the window near the maximum (issue 43)."""
    assert first_max([-5.0, 0.0, -1e10]) == 1
    assert first_max([-1000.0 * (1 + 1e-13), -1000.0, -3.0e9]) == 0  # a last bit still ties


def test_one_rank_rule_for_the_recipe_the_diagnostics_and_the_evidence():
    """Targets spanning 5 directions plus one at 1e-8 of the largest (rounding-level for a
    scatter, 1e-16 of its eigenvalues): the recipe's spectrum, the diagnostics' target
    subspace and the evidence's marginal curve all count 5 (they said 5, 6 and 6)."""
    from anchordiv.adaptation.families.gaussian import MarginalCurve
    from anchordiv.adaptation.statistics import spectrum
    from anchordiv.checks.diagnostics import target_subspace

    rng = np.random.default_rng(0)
    d = 12
    basis = np.linalg.qr(rng.normal(size=(d, 6)))[0]
    coef = rng.normal(size=(9, 6)) * np.array([3.0, 2.0, 1.5, 1.0, 0.5, 3e-8])
    t = coef @ basis.T + 0.2
    x = t - t.mean(0)
    assert len(spectrum(x)[0]) == 5
    assert target_subspace(t, 10).shape[1] == 5
    curve = MarginalCurve(np.zeros(d), np.eye(d), t)
    assert int(np.sum(curve.lam > 0)) == 5
