"""The gaussian kind in a principal subspace: its hyperparameters in a basis
(:func:`project_niw`) and the lift of subspace parameters back to full d (:class:`Conditional`,
:func:`lift_gaussian`; the mixture lifts each component the same way).

The model runs on the projected targets with its hyperparameters in the basis (:func:`project_niw`).  In the basis V write
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
"""

from __future__ import annotations

import numpy as np

from ..subspace import sandwich


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

    def __init__(self, niw, basis: np.ndarray, r: int):
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
        self.law = type(niw)  # NIW: the conditional of the other block has the same law

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
        rest = self.law(self.mu[self.r :], self.kappa, self.nu, self.schur).sample(rng, 1)
        s22_1 = rest["Sigma"][0]
        e = rng.normal(size=self.b_hat.shape)
        b = self.b_hat + np.linalg.cholesky(self.p11_inv) @ e @ np.linalg.cholesky(s22_1).T
        mu2 = rest["mu"][0] + b.T @ (mu1 - self.mu[: self.r])
        return self.assemble(s11, b, s22_1, mu1, mu2)

    def lift(self, mu1, s11, which: str, rng: np.random.Generator | None) -> dict:
        """``{"mu", "Sigma"}`` in full d: a draw with ``rng``, else the point ``which``."""
        return self.draw(mu1, s11, rng) if rng is not None else self.point(mu1, s11, which)


def lift_gaussian(ps: list[dict], completion, basis, r: int, which: str, rng) -> list[dict]:
    """Full-d ``{"mu", "Sigma"}`` of subspace parameter sets ``ps`` (points, or draws with
    ``rng``) from the exact conditionals of the full-d NIW posterior ``completion``
    (:class:`Conditional`)."""
    cond = Conditional(completion, basis, r)
    return [
        cond.lift(np.asarray(p["mu"], np.float64), np.asarray(p["Sigma"], np.float64), which, rng)
        for p in ps
    ]


__all__ = ["Conditional", "lift_gaussian", "project_niw"]
