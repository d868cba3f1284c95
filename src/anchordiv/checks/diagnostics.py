"""Prior–target diagnostics: does a broad prior fit a handful of target anchors — before any
retrieval is run?

:func:`diagnose` reports the fraction of the targets' scatter in the prior's ``k`` leading
directions (``captured``), principal angles between the two subspaces (``mean_cos2``,
``max_angle_deg``), the NIW log evidence and the exact leave-one-out log predictive per target
(``log_evidence``, ``loo``), each against the isotropic control (``*_gain``).
"""

from __future__ import annotations

import numpy as np

from .._tolerance import kept_singular_values
from ..errors import AnchorDivError, as_matrix, integer, positive
from ..adaptation.families.gaussian import NIW, NIWPrior, check_nu0
from ..adaptation.protocol import principal_angles as subspace_angles
from ..adaptation.statistics import broad_moments, scatter
from ..anchors.linalg import canonical_signs
from ..threads import limited_blas

PRIORS = ("broad", "isotropic")


def leading_directions(cov: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal top-k eigenvectors of a symmetric matrix.

    Parameters
    ----------
    cov : numpy.ndarray, shape [d, d]
        Symmetric matrix.
    k : int
        Number of directions.

    Returns
    -------
    numpy.ndarray, shape [d, k]
        The eigenvectors of the k largest eigenvalues, largest first.

    Examples
    --------
    >>> from anchordiv.checks.diagnostics import leading_directions
    >>> np.abs(leading_directions(np.diag([1.0, 3.0, 2.0]), 1)).ravel()
    array([0., 1., 0.])
    """
    _, v = np.linalg.eigh(cov)
    return canonical_signs(v[:, ::-1][:, :k])


def captured_scatter(cov: np.ndarray, targets: np.ndarray, k: int) -> float:
    """Fraction of the targets' scatter about their mean in the top-k directions of ``cov``.

    ``‖X V_k‖² / ‖X‖²`` for the centred targets X; a random k-subspace captures ``k/d`` in
    expectation.

    Parameters
    ----------
    cov : numpy.ndarray, shape [d, d]
        The prior's covariance.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    k : int
        Leading directions.

    Returns
    -------
    float
        The captured fraction in [0, 1]; NaN for fewer than two distinct targets.

    Examples
    --------
    >>> from anchordiv.checks.diagnostics import captured_scatter
    >>> t = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    >>> captured_scatter(np.diag([3.0, 2.0, 1.0]), t, 1)
    1.0
    """
    x = np.asarray(targets, np.float64)
    x = x - x.mean(0)
    total = float((x**2).sum())
    if total <= 1e-300:
        return float("nan")
    return float(((x @ leading_directions(cov, k)) ** 2).sum() / total)


def target_subspace(targets: np.ndarray, k: int) -> np.ndarray:
    """Principal directions of the centred targets.

    Parameters
    ----------
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    k : int
        Largest number of directions.

    Returns
    -------
    numpy.ndarray, shape [d, r]
        Orthonormal directions, ``r = min(k, rank)``.
    """
    x = np.asarray(targets, np.float64)
    _, sv, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)
    r = min(k, int(kept_singular_values(sv).sum()))  # the library's one rank rule
    return canonical_signs(vt[:r].T)


def principal_angles(cov: np.ndarray, targets: np.ndarray, k: int) -> np.ndarray:
    """Principal angles between the prior's top-k subspace and the targets' principal subspace.

    Parameters
    ----------
    cov : numpy.ndarray, shape [d, d]
        The prior's covariance.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    k : int
        Leading prior directions.

    Returns
    -------
    numpy.ndarray, shape [r]
        Angles in radians, descending; empty when the targets span nothing (n < 2).
    """
    t = target_subspace(targets, k)
    if t.shape[1] == 0:
        return np.zeros(0)
    return np.radians(subspace_angles(leading_directions(cov, k), t))[::-1]


def loo_pointwise(prior: NIW, targets: np.ndarray) -> np.ndarray:
    """Exact leave-one-out log predictive densities of the targets under a NIW prior.

    Each ``log p(t_i | T₋ᵢ)`` is the closed-form Student-t posterior predictive given the other
    targets (fixed strengths); with one target, its prior predictive density.

    Parameters
    ----------
    prior : NIW
        The NIW prior parameters.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.

    Returns
    -------
    numpy.ndarray, shape [n]
        The pointwise LOO log densities.
    """
    if not isinstance(prior, NIW):
        raise AnchorDivError(
            f"prior: NIW parameters (anchordiv.checks.diagnostics.niw_prior(broad, kappa0, "
            f"nu0)), got {type(prior).__name__}"
        )
    t = as_matrix("targets", targets, dim=len(prior.mu)).astype(np.float64)
    whole = prior.log_marginal(t)
    if len(t) == 1:
        return np.array([whole])
    n, tbar, s = scatter(t)
    logdet = np.linalg.slogdet(prior.psi)[1]
    out = np.empty(n)
    for i, dev in enumerate(t - tbar):  # the others' mean and scatter S − n/(n−1)·devdevᵀ
        rest = prior.update_stats(n - 1, tbar - dev / (n - 1), s - n / (n - 1) * np.outer(dev, dev))
        out[i] = whole - prior.log_marginal(t[1:], post=rest, logdet_psi=logdet)
    return out


def loo_predictive(prior: NIW, targets: np.ndarray) -> float:
    """Mean exact leave-one-out log predictive density of the targets (per target).

    The closed-form NIW posterior predictive (a multivariate Student-t) of each target given the
    others; with one target it is the prior predictive.

    Parameters
    ----------
    prior : NIW
        The NIW prior parameters (:func:`niw_prior`).
    targets : numpy.ndarray, shape [n, d]
        Target anchors.

    Returns
    -------
    float
        Mean over i of log p(t_i | T₋ᵢ).

    Examples
    --------
    >>> from anchordiv.checks import loo_predictive
    >>> from anchordiv.checks.diagnostics import niw_prior
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> isinstance(loo_predictive(niw_prior(broad, 5.0, 10.0), broad[:5]), float)
    True
    """
    return float(np.mean(loo_pointwise(prior, targets)))


def niw_prior(
    broad: np.ndarray, kappa0: float, nu0: float, *, prior: str = "broad", reg: float = 1e-3
) -> NIW:
    """The NIW prior ``ad.adapt("gaussian", broad, ..., kappa0=, nu0=, prior=)`` starts from.

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    kappa0 : float
        κ₀ > 0.
    nu0 : float
        ν₀ > d + 1.
    prior : {"broad", "isotropic"}, default "broad"
        The broad covariance or the isotropic control.
    reg : float, default 1e-3
        Relative ridge of the broad covariance.

    Returns
    -------
    NIW
        The prior parameters.
    """
    return NIWPrior.from_anchors(broad, kappa0=kappa0, nu0=nu0, reg=reg, prior=prior).niw()


@limited_blas
def diagnose(broad, targets, *, kappa0: float, nu0: float, k: int = 10, reg: float = 1e-3) -> dict:
    """All prior–target diagnostics of broad anchors for a set of targets (module docstring).

    Strengths ``kappa0`` and ``nu0`` are fixed, as in ``ad.adapt(..., kappa0=, nu0=)``.

    Parameters
    ----------
    broad : array_like, shape [N, d]
        Broad anchors (or the moment points of a saved prior).
    targets : array_like, shape [n, d]
        Target anchors.
    kappa0 : float
        κ₀ > 0.
    nu0 : float
        ν₀ > d + 1.
    k : int, default 10
        Leading prior directions (≤ d).
    reg : float, default 1e-3
        Relative ridge of the broad covariance.

    Returns
    -------
    dict
        ``captured``, ``captured_isotropic`` (k/d), ``mean_cos2``, ``max_angle_deg``,
        ``log_evidence``, ``log_evidence_isotropic``, ``log_evidence_gain``, ``loo``,
        ``loo_isotropic``, ``loo_gain``, plus ``n``, ``d``, ``k``.

    Raises
    ------
    AnchorDivError
        Invalid anchors or strengths, or ``k`` outside [1, d].

    Examples
    --------
    >>> from anchordiv.checks import diagnose
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> out = diagnose(broad, broad[:5], kappa0=5.0, nu0=10.0, k=2)
    >>> out["captured_isotropic"], out["n"], out["d"]
    (0.5, 5, 4)
    """
    b = as_matrix("broad", broad, min_rows=2)
    t = as_matrix("targets", targets, dim=b.shape[1])
    d = b.shape[1]
    k = integer("k", k, low=1)
    if k >= d:
        raise AnchorDivError(f"k: the leading directions must be fewer than d = {d}, got {k}")
    positive("kappa0", kappa0)
    check_nu0(nu0, d)
    _, cov = broad_moments(b, reg=reg)
    angles = principal_angles(cov, t, k)
    out = {
        "n": len(t),
        "d": d,
        "k": k,
        "captured": captured_scatter(cov, t, k),
        "captured_isotropic": k / d,
        "mean_cos2": float(np.mean(np.cos(angles) ** 2)) if len(angles) else float("nan"),
        "max_angle_deg": float(np.degrees(angles.max())) if len(angles) else float("nan"),
    }
    for p in PRIORS:
        niw = niw_prior(b, kappa0, nu0, prior=p, reg=reg)
        suffix = "" if p == "broad" else "_isotropic"
        out["log_evidence" + suffix] = niw.log_marginal(t) / len(t)
        out["loo" + suffix] = loo_predictive(niw, t)
    out["log_evidence_gain"] = out["log_evidence"] - out["log_evidence_isotropic"]
    out["loo_gain"] = out["loo"] - out["loo_isotropic"]
    return out
