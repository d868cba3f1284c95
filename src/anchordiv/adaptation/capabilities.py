"""The optional capabilities of a family beyond the :class:`~anchordiv.adaptation.family.Family`
protocol, checked with ``isinstance``/``issubclass``: :class:`Conjugate` (a closed-form update)
and :class:`Projectable` (inference in a principal subspace)."""

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
    :meth:`~Family.prior_kwargs`), and ``fixed`` holds arrays every draw shares.

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
    subspace ones (``completion``: the exact full-d posterior of the default prior).

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


def is_conjugate(fam) -> bool:
    """Whether a prior object or family class has the :class:`Conjugate` capability."""
    return isinstance(fam, Conjugate) or (isinstance(fam, type) and issubclass(fam, Conjugate))


def no_subspace(fam) -> str:
    """Why ``fam`` (a family class) does not run under ``subspace=``, in words."""
    return getattr(
        fam,
        "no_subspace",
        f"the {fam.kind} family has no principal-subspace projection (it does not implement "
        f"project/lift, anchordiv.adaptation.family.Projectable); run it at full d",
    )


__all__ = ["Conjugate", "Projectable", "is_conjugate", "no_subspace"]
