"""A representative subset of the numerics-sensitive tests, shaken (``tests/shake.py``) in the
default tier: the adaptation package's doctests and golden cases whose outputs go through
eigenvectors, an empirical-Bayes optimum and the recipe's grid, each with its inputs a last bit
off and with 1 and 2 BLAS threads.  ``make test-shake`` runs every sensitive file under every
shake (slow)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import shake
import test_doctests

TESTS = Path(__file__).parent


def _golden():
    spec = importlib.util.spec_from_file_location(
        "shaken_golden", TESTS / "adaptation" / "test_golden.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


golden = _golden()

DOCTEST_MODULES = [
    "anchordiv._tolerance",
    "anchordiv.adaptation",
    "anchordiv.adaptation.statistics",
]
GOLDEN_CASES = [
    "gaussian-exact",  # empirical-Bayes strengths: the optimum of a flat objective
    "gaussian-exact-default",  # the held-out recipe's grid choice
    "latent-gaussian-exact",  # frames from eigenvectors
    "latent-spherical-exact-default-isotropic",
]


def test_perturb_moves_the_last_bit_and_keeps_exact_data():
    x = np.array([[1.0, 0.0, -2.5], [1.0, 0.0, -2.5]], np.float32)
    y = shake.perturb(x)
    assert y.dtype == np.float32 and (y[:, 1] == 0).all() and (y[0] == y[1]).all()
    assert (y[:, [0, 2]] > x[:, [0, 2]]).all()
    assert (np.abs(y - x) <= np.spacing(np.abs(x))).all()
    labels = np.array([0, 1])
    assert shake.perturb(labels) is labels


@pytest.mark.parametrize("mode", shake.MODES)
@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_doctests_shaken(mode, name):
    with shake.shaken(mode):
        test_doctests.test_examples_run(name)


@pytest.mark.parametrize("mode", shake.MODES)
@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_golden_shaken(mode, name):
    with shake.shaken(mode):
        golden.test_convenience_reproduces_golden(name)
