"""Point summaries of sampled and variational posteriors that are what they say, and the words
that say how each was computed (``post.info["point_mean"]``, ``post.info["point_map"]``).

Subspace runs (:mod:`.subspace`).  The model in the top-r subspace has as its mode the mode of
the *marginal* posterior of (μ₁, Σ₁₁), not the r-block of the full joint mode: changing
variables ``Σ → (Σ₁₁, B = Σ₁₁⁻¹Σ₁₂, Σ₂₂·₁)`` has Jacobian ``|Σ₁₁|^{d−r}``, and the
blocks are independent under the default NIW posterior, so the full joint density restricted
to (μ₁, Σ₁₁) is the subspace density times ``|Σ₁₁|^{−(d−r)}`` (:func:`joint_correction`).

* a delta guide (SVI MAP) on the default model finds the subspace mode
  ``Σ₁₁ = Ψ₁₁/(νₙ − d + 2r + 2)``; the joint mode's block is ``Ψ₁₁/(νₙ + d + 2)`` — the
  same matrix rescaled (:func:`subspace_joint_mode`), which the lift completes to the exact
  joint mode ``Ψₙ/(νₙ + d + 2)``;
* NUTS: the ``"map"`` is the draw of highest *full* joint density (the correction added), lifted
  with the conditional mode — the best draw, not an optimum.

A delta guide's ``"mean"`` (:func:`delta_mean`): the conjugate posterior mean of the kind's own
model (a MAP is not a mean); for a user's model there is none (``point("mean")`` raises).
"""

from __future__ import annotations

import numpy as np

from .capabilities import is_conjugate

MAP_JOINT = "joint mode of (μ, Σ) of the full-d model"
#: how point summaries are computed, in words, where a family's ``descriptions`` do not say:
#: the exact posterior's ``"mean"`` and ``"map"``, the ``"mean"`` of draws, and what a delta
#: guide on the family's own model finds
DESCRIPTIONS = {
    "exact_mean": "closed-form conjugate posterior mean",
    "exact_map": "closed-form joint mode of the model's parameters",
    "mean_of_draws": "average of the draws",
    "joint_mode": "joint mode of the model's parameters (full d)",
}


def describe(fam, key: str) -> str:
    """The words for ``key`` (of :data:`DESCRIPTIONS`) of a family class: its own
    ``descriptions`` or the default."""
    return fam.descriptions.get(key, DESCRIPTIONS[key])


def exact_descriptions(fam) -> dict[str, str]:
    """``{"point_mean", "point_map"}`` of an exact posterior of the family class ``fam``."""
    return {"point_mean": describe(fam, "exact_mean"), "point_map": describe(fam, "exact_map")}


def joint_correction(fam, draws: dict, d: int) -> np.ndarray:
    """``−(d − r) log|Σ₁₁|`` per draw ``[S]`` (summed over mixture components): the log
    Jacobian that turns the subspace density of (μ₁, Σ₁₁) into the full joint density
    restricted to them (module docstring); ``draws`` hold subspace sites ``[S, ...]``, the
    covariance blocks under the family's (``fam``, a family class) ``covariance_site``."""
    sig = np.asarray(draws[fam.covariance_site], np.float64)
    r = sig.shape[-1]
    logdet = np.linalg.slogdet(sig)[1]
    return -(d - r) * logdet.reshape(len(logdet), -1).sum(-1)


def subspace_joint_mode(point: dict, completion, r: int) -> dict:
    """The Gaussian subspace MAP ``{"mu": [r], "Sigma": [r, r]}`` rescaled from the subspace
    model's mode to the r-block of the full joint mode (module docstring)."""
    d, nu = completion.dim, completion.nu
    scale = (nu - d + 2 * r + 2) / (nu + d + 2)
    return {**point, "Sigma": np.asarray(point["Sigma"], np.float64) * scale}


def delta_mean(post, exact, custom: bool) -> tuple[dict | None, str]:
    """``(mean parameters or None, how)`` for a delta-guide fit: the conjugate posterior mean
    of the kind's own model (``exact``: the conjugate update's parameters; in the subspace
    coordinates for subspace runs: its lift is the full mean, the lift being linear in Σ₁₁);
    None for a user's model or where the conjugate mean does not project (no ``project_mean``,
    :class:`.capabilities.Projectable`: latent kinds under ``subspace=``)."""
    if custom:
        return None, (
            "none: a delta guide (MAP) of a custom model has no posterior mean; use "
            "guide='normal'/'lowrank' or method='nuts'"
        )
    fam = post.family_class
    if exact is None or not is_conjugate(fam):
        return None, (
            f"none: the {post.kind} family has no closed-form posterior mean and a "
            f"delta guide is a MAP; use guide='normal'/'lowrank' or method='nuts'"
        )
    how = describe(fam, "exact_mean") + " of the kind's model (a delta guide is a MAP)"
    if post.subspace is None:
        return exact.mean(), how
    mean = fam.project_mean(exact.mean(), post.fixed["basis"][:, : post.subspace])
    if mean is None:
        return None, (
            "none under subspace= with a delta guide: use method='exact' for the conjugate mean"
        )
    return mean, how


def sampled_descriptions(post, *, best: str) -> dict:
    """``{"point_mean", "point_map"}`` for a posterior given by draws; ``best`` says which
    density the ``"map"`` draw maximises."""
    mean = describe(post.family_class, "mean_of_draws")
    if post.subspace is not None:
        mean += ", lifted with the conditional expectation outside the subspace"
    return {"point_mean": mean, "point_map": best}


__all__ = [
    "DESCRIPTIONS",
    "MAP_JOINT",
    "describe",
    "exact_descriptions",
    "delta_mean",
    "joint_correction",
    "sampled_descriptions",
    "subspace_joint_mode",
]
