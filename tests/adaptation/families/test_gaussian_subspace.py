"""The gaussian kind in a principal subspace: projected hyperparameters, and the lift whose
mean of the subspace marginal is the full posterior mean and whose draws are covariances."""

import numpy as np

from anchordiv.adaptation.families import gaussian
from anchordiv.adaptation.families.gaussian import NIW
from anchordiv.adaptation.families.gaussian_subspace import (
    Conditional,
    lift_gaussian,
    project_niw,
)


def posterior(d=5, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    prior = NIW.from_scale(rng.normal(size=d), a @ a.T / d + np.eye(d), 3.0, d + 6.0)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return prior.update(rng.normal(size=(8, d))), basis


def test_project_niw_moves_the_hyperparameters_into_the_basis():
    post, basis = posterior()
    u = basis[:, :2]
    out = project_niw(post.model_kwargs(), u, "mu0")
    np.testing.assert_allclose(out["mu0"], post.mu @ u)
    np.testing.assert_allclose(out["psi0"], u.T @ post.psi @ u, atol=1e-12)
    assert out["nu0"] == post.nu - 3 and out["kappa0"] == post.kappa


def test_the_lift_of_the_subspace_mean_is_the_full_mean():
    """E[Σ₂₂ | Σ₁₁] is linear in Σ₁₁, so lifting the marginal's mean gives the full mean."""
    post, basis = posterior()
    r = 2
    full = post.mean()
    rot = basis.T @ full["Sigma"] @ basis
    (lifted,) = lift_gaussian(
        [{"mu": (basis.T @ full["mu"])[:r], "Sigma": rot[:r, :r]}], post, basis, r, "mean", None
    )
    np.testing.assert_allclose(lifted["mu"], full["mu"], atol=1e-12)
    np.testing.assert_allclose(lifted["Sigma"], full["Sigma"], rtol=1e-10, atol=1e-12)


def test_lifted_draws_are_covariances_and_keep_the_subspace_block():
    post, basis = posterior(seed=1)
    r = 2
    cond = Conditional(post, basis, r)
    s11 = np.array([[2.0, 0.3], [0.3, 1.0]])
    out = cond.lift(np.zeros(r), s11, "mean", np.random.default_rng(0))
    sig = out["Sigma"]
    np.testing.assert_allclose(sig, sig.T)
    assert np.linalg.eigvalsh(sig).min() > 0
    np.testing.assert_allclose((basis.T @ sig @ basis)[:r, :r], s11, atol=1e-10)
    assert gaussian.Conditional is Conditional and gaussian.lift_gaussian is lift_gaussian
