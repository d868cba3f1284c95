"""The optional capabilities of a family beyond the :class:`~anchordiv.adaptation.family.Family`
protocol, checked with ``isinstance``/``issubclass`` (structurally: defining the methods is
enough): :class:`Conjugate` (a closed-form update) and :class:`Projectable` (inference in a
principal subspace).  Their optional members (:data:`OPTIONAL`) are declared on
:class:`~anchordiv.adaptation.family.Family` with defaults that say "none" (a method returning
None, ``covariance_site = None``), so every family has them: call ``prior.completion(targets)``,
``fam.exact_chains(post, ...)``, ``fam.project_mean(mean, u)``, ``fam.subspace_mode(...)`` and
test the result (or ``fam.covariance_site``) for None."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Conjugate(Protocol):
    """Capability of a prior with a closed-form update (checked with ``isinstance``):
    ``exact(targets [n, d]) -> (posterior parameters, info, fixed)``, where the posterior
    parameters have ``mean()``, ``mode()`` and ``sample(rng, n)`` (a frozen dataclass of arrays and
    numbers, so a posterior saves and loads it), ``info`` is JSON-able and may carry the
    model's keyword arguments for these targets under ``"model_kwargs"`` (default: the prior's
    :meth:`~Family.prior_kwargs`) and, for a fit that leaves the prior < 1 pseudo-anchor of
    weight, why it is target-only under ``"target_only"``; ``fixed`` holds arrays every draw
    shares.

    Optional (declared on ``Family``, None by default): ``exact_chains(post, rng, chains,
    per_chain) -> {site: [chains, per_chain, ...]}``, exact draws of the whole posterior where
    the parameters' own ``sample`` conditions on something (the mixture's Gibbs chains sample
    the assignments too); ``power_scaled_posterior(alpha, targets)``, the exact posterior under
    the prior raised to the power α (prior sensitivity: the gaussian and diagonal-gaussian
    kinds).

    Parameters
    ----------
    targets : numpy.ndarray, shape [n, d]
        The target anchors (of :meth:`exact`).

    Returns
    -------
    tuple
        ``(posterior parameters, info, fixed)`` (of :meth:`exact`).

    Examples
    --------
    >>> issubclass(ad.NIWPrior, ad.Conjugate), issubclass(ad.SpectralPrior, ad.Conjugate)
    (True, False)
    """

    def exact(self, targets: np.ndarray) -> tuple[object, dict, dict]: ...


@runtime_checkable
class Projectable(Protocol):
    """Capability of a family that runs NUTS/SVI in a principal subspace (``subspace=r``):
    ``project(kwargs, u [d, r])`` gives its model's hyperparameters in the basis ``u``, and
    ``lift(ps, completion, basis, r, which=, rng=)`` the full-d parameters of its sites from
    subspace ones (``completion``: the exact full-d posterior of a conjugate prior, whose
    conditionals fill in the other directions).

    Optional (declared on ``Family``, None by default): ``completion(targets)`` (that exact
    posterior, for a family that is not
    :class:`Conjugate` itself), ``project_mean(mean, u)`` (posterior-mean parameters in the
    basis: a delta guide's "mean"), ``subspace_mode(point, completion, r)`` (a delta guide's
    subspace mode rescaled to the joint mode's block) and ``covariance_site`` (the site whose
    log-determinant is the subspace Jacobian of the full-d joint mode).

    Parameters
    ----------
    kwargs : dict
        The model's hyperparameters (of :meth:`project`).
    u : numpy.ndarray, shape [d, r]
        The subspace basis (of :meth:`project`).

    Returns
    -------
    dict
        The hyperparameters in the basis (:meth:`project`); :meth:`lift` returns the list of
        full-d parameter sets.

    Examples
    --------
    >>> issubclass(ad.NIWPrior, ad.Projectable), issubclass(ad.DiagonalPrior, ad.Projectable)
    (True, False)
    """

    def project(self, kwargs: dict, u: np.ndarray) -> dict: ...

    def lift(self, ps, completion, basis, r, *, which="mean", rng=None) -> list[dict]: ...


#: the optional members of the capabilities -> the capability; each is declared on
#: :class:`~anchordiv.adaptation.family.Family` with a default meaning "none"
OPTIONAL = {
    "exact_chains": Conjugate,
    "power_scaled_posterior": Conjugate,
    "completion": Projectable,
    "project_mean": Projectable,
    "subspace_mode": Projectable,
    "covariance_site": Projectable,
}


def optional(fam, name: str, default=None):
    """A family's (class or prior object) optional capability member ``name`` (one of
    :data:`OPTIONAL`), or ``default`` where its declared value is None (``covariance_site``;
    the methods are always there and return None where the family has none)."""
    if name not in OPTIONAL:
        raise KeyError(f"{name!r} is not an optional capability member")
    value = getattr(fam, name)
    return default if value is None else value


def is_conjugate(fam) -> bool:
    """Whether a prior object or family class has the :class:`Conjugate` capability."""
    return isinstance(fam, Conjugate) or (isinstance(fam, type) and issubclass(fam, Conjugate))


def no_subspace(fam) -> str:
    """Why ``fam`` (a family class) does not run under ``subspace=``, in words."""
    return (
        f"the {fam.kind} family has no principal-subspace projection (it does not implement "
        f"project/lift, anchordiv.adaptation.capabilities.Projectable); run it at full d"
    )


__all__ = ["OPTIONAL", "Conjugate", "Projectable", "is_conjugate", "no_subspace", "optional"]
