"""Subspace inference: run a model (the kind's or a user's) on the broad anchors' top-r principal
directions and lift the result back to a full-d anchor model (MATH.md, "Inference at the
encoder's dimension").

Construction.  Let ``V = [U_r, U_⊥]`` ``[d, d]`` be the eigenvectors of the broad anchors'
covariance, leading first.  The model runs on the projected targets ``T U_r`` ``[n, r]`` with its
hyperparameters expressed in that basis (:func:`project`): for the NIW, ``μ₀ → U_rᵀμ₀``,
``Ψ₀ → U_rᵀΨ₀U_r`` and ``ν₀ → ν₀ − (d − r)``, because the r×r block of ``Σ ~ IW_d(ν₀, Ψ₀)`` is
``IW_r(ν₀ − (d − r), U_rᵀΨ₀U_r)`` and the conjugate update holds blockwise; so for the default
prior the subspace posterior has a closed form.  A user's prior builder
(``model_kwargs=callable``) is called with the projected broad anchors ``B U_r``.

Lifting (Gaussian kind; the mixture lifts each component the same way).  In the basis V write
Σ in blocks 1 (the r subspace coordinates) and 2 (the d − r others).  Under the exact conjugate
posterior ``NIW(μₙ, κₙ, νₙ, Ψₙ)`` of the *default* prior (Ψ, μ below are rotated into V):

* ``Σ₂₂·₁ = Σ₂₂ − Σ₂₁Σ₁₁⁻¹Σ₁₂ ~ IW_{d−r}(νₙ, Ψ₂₂·₁)``, independent of Σ₁₁;
* ``B = Σ₁₁⁻¹Σ₁₂ | Σ₂₂·₁ ~ MN(B̂ = Ψ₁₁⁻¹Ψ₁₂, Ψ₁₁⁻¹ ⊗ Σ₂₂·₁)``;
* ``μ₂ | μ₁, Σ ~ N(μₙ₂ + Bᵀ(μ₁ − μₙ₁), Σ₂₂·₁/κₙ)``.

The subspace inference supplies (μ₁, Σ₁₁); everything outside the subspace comes from these exact
conditionals: ``Σ₁₂ = Σ₁₁B``, ``Σ₂₂ = Σ₂₂·₁ + BᵀΣ₁₁B``.  Draws sample the conditionals, so with
exact subspace draws of the default model the lifted draws are exact full-d posterior draws.
The point summaries plug in conditional expectations or modes: ``"mean"`` uses
``E[Σ₂₂ | Σ₁₁] = B̂ᵀΣ₁₁B̂ + (1 + tr(Σ₁₁Ψ₁₁⁻¹)) Ψ₂₂·₁/(νₙ − (d − r) − 1)`` — linear in Σ₁₁, so the
lift of the subspace mean is the full posterior mean; ``"map"`` uses ``B̂`` and the conditional
mode ``Ψ₂₂·₁/(νₙ + d + 2)`` (the joint mode's Schur block).  Note the subspace model's own mode
is the mode of the *marginal* of Σ₁₁, ``Ψ₁₁/(νₙ − d + 2r + 2)``, not the r-block of the joint
mode ``Ψ₁₁/(νₙ + d + 2)``: the lifted MAP is therefore close to, not equal to, the full joint mode.

Latent kinds: the subspace frame ``U_sub`` ``[r, k]`` (k < r) lifts to ``U = U_r U_sub``; the
latent mean stays the exact full-d one.
"""

from __future__ import annotations

import numpy as np

from ..anchors.gaussian import moments
from ..errors import AnchorDivError, integer
from .priors import NIW
from .priors.cache import cached
from ..anchors.linalg import canonical_signs


def principal_basis(broad: np.ndarray) -> np.ndarray:
    """Eigenvectors of the broad covariance, leading first (float64).

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.

    Returns
    -------
    numpy.ndarray, shape [d, d]
        The basis V.

    Examples
    --------
    >>> from anchordiv.adaptation.subspace import principal_basis
    >>> broad = np.random.default_rng(0).normal(size=(50, 3)) * [3.0, 1.0, 0.1]
    >>> int(np.abs(principal_basis(broad)[:, 0]).argmax())
    0
    """
    _, cov = cached(moments, broad, 0.0)
    _, v = np.linalg.eigh(cov)
    return canonical_signs(np.ascontiguousarray(v[:, ::-1]))


def check_rank(r, d: int, n_broad: int, kind: str, latent_rank: int | None) -> int:
    """The subspace rank, validated.

    Parameters
    ----------
    r : int
        The requested rank.
    d : int
        Dimension.
    n_broad : int
        Broad anchors (the basis has at most their rank).
    kind : str
        The family.
    latent_rank : int, optional
        A latent kind's rank (the subspace must hold it).

    Returns
    -------
    int
        ``r``.

    Raises
    ------
    AnchorDivError
        ``r`` < 1, ``r`` ≥ d (use the full model), ``r`` > n_broad − 1, or ``r`` not above a
        latent kind's rank.
    """
    r = integer("subspace", r, low=1)
    if r >= d:
        raise AnchorDivError(
            f"subspace: r = {r} must be < d = {d} (r = d is the full model: leave subspace unset)"
        )
    if r > n_broad - 1:
        raise AnchorDivError(
            f"subspace: r = {r} is larger than the broad anchors allow: at most "
            f"n_broad − 1 = {n_broad - 1}"
        )
    if latent_rank is not None and latent_rank >= r:
        raise AnchorDivError(f"subspace: r = {r} must exceed the {kind} rank k = {latent_rank}")
    return r


def sandwich(u: np.ndarray, m):
    """``uᵀ m u`` for a batch of matrices.

    Parameters
    ----------
    u : numpy.ndarray, shape [d, r]
        The basis.
    m : array_like, shape [..., d, d]
        The matrices.

    Returns
    -------
    numpy.ndarray, shape [..., r, r]
        The projected matrices.

    Examples
    --------
    >>> from anchordiv.adaptation.subspace import sandwich
    >>> sandwich(np.eye(3)[:, :2], np.diag([1.0, 2.0, 3.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    return np.swapaxes(u, -1, -2) @ np.asarray(m, np.float64) @ u


def project_niw(kwargs: dict, u: np.ndarray, mean: str) -> dict:
    """NIW hyperparameters in a basis: ``μ₀ → μ₀u``, ``Ψ₀ → uᵀΨ₀u``, ``ν₀ → ν₀ − (d − r)``.

    Batched over components.

    Parameters
    ----------
    kwargs : dict
        Hyperparameters (the prior mean under ``mean``, ``psi0``, ``nu0``).
    u : numpy.ndarray, shape [d, r]
        The basis.
    mean : str
        The name of the prior mean.

    Returns
    -------
    dict
        The projected hyperparameters.
    """
    d, r = u.shape
    out = dict(kwargs)
    out[mean] = np.asarray(kwargs[mean], np.float64) @ u
    out["psi0"] = sandwich(u, kwargs["psi0"])
    out["nu0"] = float(kwargs["nu0"]) - (d - r)
    return out


class Conditional:
    """The exact conditionals of one NIW posterior outside the subspace, in the basis V.

    Parameters
    ----------
    niw : NIW
        The full-d NIW posterior.
    basis : numpy.ndarray, shape [d, d]
        V, the broad principal basis.
    r : int
        The subspace rank.
    """

    def __init__(self, niw: NIW, basis: np.ndarray, r: int):
        d = niw.dim
        psi = sandwich(basis, niw.psi)
        self.mu, self.r, self.q = basis.T @ niw.mu, r, d - r
        self.kappa, self.nu = niw.kappa, niw.nu
        p11, p12 = psi[:r, :r], psi[:r, r:]
        self.p11_inv = np.linalg.inv(p11)
        self.b_hat = self.p11_inv @ p12  # [r, d − r]
        s = psi[r:, r:] - p12.T @ self.b_hat
        self.schur = 0.5 * (s + s.T)  # Ψ₂₂·₁
        self.basis = basis

    def assemble(self, s11, b, s22_1, mu1, mu2) -> dict:
        """Full ``{"mu": [d], "Sigma": [d, d]}`` from blocks in the basis V."""
        s12 = s11 @ b
        s22 = s22_1 + b.T @ s12
        sig = np.block([[s11, s12], [s12.T, s22]])
        v = self.basis
        return {"mu": v @ np.concatenate([mu1, mu2]), "Sigma": v @ (0.5 * (sig + sig.T)) @ v.T}

    def point(self, mu1, s11, which: str) -> dict:
        if which == "mean":
            s22_1 = (1 + np.trace(s11 @ self.p11_inv)) * self.schur / (self.nu - self.q - 1)
        else:
            s22_1 = self.schur / (self.nu + self.r + self.q + 2)
        mu2 = self.mu[self.r :] + self.b_hat.T @ (mu1 - self.mu[: self.r])
        return self.assemble(s11, self.b_hat, s22_1, mu1, mu2)

    def draw(self, mu1, s11, rng: np.random.Generator) -> dict:
        rest = NIW(self.mu[self.r :], self.kappa, self.nu, self.schur).sample(rng, 1)
        s22_1 = rest["Sigma"][0]
        e = rng.normal(size=self.b_hat.shape)
        b = self.b_hat + np.linalg.cholesky(self.p11_inv) @ e @ np.linalg.cholesky(s22_1).T
        mu2 = rest["mu"][0] + b.T @ (mu1 - self.mu[: self.r])
        return self.assemble(s11, b, s22_1, mu1, mu2)

    def lift(self, mu1, s11, which: str, rng: np.random.Generator | None) -> dict:
        """``{"mu", "Sigma"}`` in full d: a draw with ``rng``, else the point ``which``."""
        return self.draw(mu1, s11, rng) if rng is not None else self.point(mu1, s11, which)


__all__ = [
    "Conditional",
    "check_rank",
    "principal_basis",
    "project_niw",
    "sandwich",
]
