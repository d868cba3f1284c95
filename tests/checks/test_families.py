"""What the checks layer knows of a family: the generic defaults of ``checks_of``, a family's own
hooks (declared in its class), ``register_checks`` setting hooks on a class from outside; no
family class imported here."""

import ast
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.protocol import Hooks
from anchordiv.checks import families
from anchordiv.checks.families import CHECKS, CURVE_NUTS, checks_of, register_checks


def test_the_module_imports_no_family_class():
    tree = ast.parse(Path(families.__file__).read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in modules if m and "families" in m}


def test_every_hook_is_filled_in():
    hooks = checks_of(ad.SpectralPrior)
    assert all(
        getattr(hooks, f.name) is not None
        or f.name.startswith(("exact_cal", "svi_", "conditional_"))
        for f in dataclasses.fields(Hooks)
    )


def test_the_defaults_of_a_family_that_declares_nothing():
    class Bare(ad.Family):
        sites = ("mu",)

    hooks = checks_of(Bare)
    assert hooks.dims == {} and hooks.psis_caveat(None) is None and hooks.draw_size(None) is None
    assert hooks.prior_scale({}, {}) is None and hooks.student_t_predictive is False
    assert hooks.curve_method is CURVE_NUTS  # not conjugate
    draws = {"mu": np.ones((2, 3, 4)), "scale": np.ones((2, 3))}
    q = hooks.quantities(draws, {"mu": np.ones(4)})
    assert {"mu_norm", "mu_cosine", "mu", "scale"} <= set(q)
    assert set(hooks.sbc_quantities(4, np.random.default_rng(0))) == {"w·mu"}
    assert hooks.sbc_broad(4, np.random.default_rng(0)).shape == (400, 4)
    fixed = {"x": np.ones(2)}
    assert hooks.sbc_fixed(fixed) is fixed and hooks.data_chosen({"rank": "auto"}) == []
    assert hooks.ppc_directions(None, 3) is None


def test_a_library_familys_own_hooks():
    hooks = checks_of(ad.NIWPrior)
    assert hooks.student_t_predictive and isinstance(hooks.curve_method, ad.Exact)
    assert hooks.dims["Sigma"] == ["dim", "dim_"]
    spherical = checks_of(ad.PosteriorBinghamPrior)
    assert "posterior-like" in spherical.psis_caveat(None) and spherical.exact_calibration
    assert spherical.quantities is ad.BinghamPrior.__mro__[1].hooks.quantities  # LatentFamily
    assert checks_of(ad.SpectralPrior).curve_method.num_chains == 1
    assert not re.search(r"\d\.\d", spherical.exact_calibration)  # no measured number
    assert CHECKS[ad.NIWPrior] is ad.NIWPrior.hooks and ad.LKJPrior not in CHECKS


def test_the_families_own_choices_on_the_targets_and_ppc_directions():
    """What checks/ once decided by site or option name: the recipe's ``"auto"`` options, the
    latent kinds' PPCA centred at 0 in SBC, the spectral eigenbasis of the predictive checks."""
    auto = {"kappa0": "auto", "nu0": 3.0, "rank": "auto", "beta": "auto", "prior_anchors": "auto"}
    assert checks_of(ad.NIWPrior).data_chosen(auto) == ["kappa0"]
    latent = checks_of(ad.PosteriorBinghamPrior)
    assert latent.data_chosen(auto) == ["rank", "prior_anchors"]
    assert latent.data_chosen({**auto, "beta": 0.5}) == ["rank"]
    fixed = latent.sbc_fixed({"ppca_mean": np.ones(3), "ppca_count": 4})
    assert fixed["ppca_count"] == 4 and np.array_equal(fixed["ppca_mean"], np.zeros(3))
    post = type("Post", (), {"fixed": {"directions": np.eye(4)[:, ::-1]}})()
    got = checks_of(ad.SpectralPrior).ppc_directions(post, 2)
    assert np.array_equal(got, np.eye(4)[:, [3, 2]])


def test_register_checks_sets_hooks_on_the_class():
    class Mine(ad.DiagonalPrior):
        pass

    hooks = register_checks(Mine, psis_caveat=lambda post: "mine")
    assert Mine.__dict__["hooks"] is hooks and ad.DiagonalPrior.hooks.psis_caveat is None
    register_checks(Mine, exact_calibration="measured")  # the earlier hook stays
    got = checks_of(Mine(np.zeros(2), np.ones(2)))
    assert got.psis_caveat(None) == "mine" and got.exact_calibration == "measured"
    assert got.dims == {"mu": ["dim"], "sigma2": ["dim"]}  # DiagonalPrior's
    with pytest.raises(ad.AnchorDivError, match="unknown hook.*nope"):
        register_checks(Mine, nope=1)
    with pytest.raises(ad.AnchorDivError, match="expected a family class"):
        register_checks(Mine(np.zeros(2), np.ones(2)), dims={})
