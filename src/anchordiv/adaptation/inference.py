"""Typed inference: a method is a small frozen configuration object, and :func:`infer` runs it on
a prior object (:mod:`.family`) and target anchors.

    post = ad.infer(prior, targets [n, d], ad.Exact())                 # = prior.update(targets)
    post = ad.infer(prior, targets, ad.NUTS(num_samples=500, seed=1))
    post = ad.infer(prior, targets, ad.SVI(guide="lowrank", subspace=16), broad=broad)

* :class:`Exact` — the conjugate update of the prior's family (no options).
* :class:`NUTS` — NUTS on the family's explicit NumPyro model or a user's (``model=``,
  ``model_kwargs=``), in full d or on the broad anchors' top-r principal directions
  (``subspace=r``; :mod:`.subspace`).  ``seed`` seeds the sampler.
* :class:`SVI` — NumPyro SVI with a named guide (``"delta"`` = MAP, ``"normal"``, ``"lowrank"``)
  or a user's; ``seed`` seeds the optimisation and the guide draws.

Each is validated when it is built: a bad value, or an option the method does not have
(``ad.Exact(num_warmup=5)``, ``ad.NUTS(guide="normal")``), is an :class:`AnchorDivError` that
names it.  Precision is the caller's: ``x64=True`` requires JAX's float64 mode to be on
(``jax.config.update("jax_enable_x64", True)`` at start-up) and says so otherwise; nothing here
changes global JAX settings.  Subspace runs and a callable ``model_kwargs(broad)`` need the broad
anchors: ``infer(..., broad=broad)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import (
    AnchorDivError,
    as_matrix,
    check_duplicates,
    check_spread,
)
from ..provenance import resolve_tau, unit_norm, with_provenance
from .likelihood import with_log_density
from .sanity import warn_target_only, warn_unobserved
from .methods import METHODS, NUTS, SVI, Exact, config, options  # noqa: F401  (re-exported)
from .model import check_sites, kept_sites, problem, run_dtype
from .points import exact_descriptions
from .posterior import ExactPosterior, Posterior, SampledPosterior, SubspacePosterior, retyped
from .cache import frozen
from .registry import is_prior
from .capabilities import Projectable, is_conjugate, no_subspace, optional
from .sampling import run_nuts
from .subspace import check_rank, principal_basis
from .variational import run_svi
from ..threads import limited_blas


@limited_blas
def infer(
    prior, targets, method=None, *, tau: float | None = None, normalize: bool = False, broad=None
) -> Posterior:
    """Posterior of a prior object given target anchors, by an inference method.

    Parameters
    ----------
    prior : Family
        A prior object (:class:`NIWPrior`, ..., or :func:`load_prior`'s result).
    targets : array_like, shape [n, d]
        Target anchors.
    method : Exact, NUTS or SVI, optional
        Default :class:`Exact`.
    tau : float, optional
        The encoder's logit scale (default: the one recorded with the targets or with the
        prior's saved model, see :func:`anchordiv.resolve_tau`).
    normalize : bool, default False
        Scale target rows to unit norm (non-unit rows warn otherwise).
    broad : array_like, shape [N, d], optional
        The broad anchors the prior was built from — needed for ``subspace=`` and a callable
        ``model_kwargs``.

    Returns
    -------
    Posterior
        The posterior (exact parameters, or NUTS/SVI draws).

    Raises
    ------
    AnchorDivError
        Not a prior object or method, targets of the wrong dimension, ``exact`` for a family
        without a conjugate update, or a missing ``broad``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.NIWPrior.from_anchors(broad, kappa0=5.0, nu0=10.0)
    >>> post = ad.infer(prior, broad[:3], tau=20.0)
    >>> post.point("mean")
    Gaussian(mean[4], factor[4, 4], tau=20)
    """
    method = Exact() if method is None else method
    if not is_prior(prior):
        raise AnchorDivError(
            f"prior: a prior object (ad.NIWPrior, ad.load_prior, ...), got {type(prior).__name__}"
        )
    if not isinstance(method, tuple(METHODS.values())):
        raise AnchorDivError(f"method: ad.Exact(), ad.NUTS(...) or ad.SVI(...), got {method!r}")
    t = check_targets(targets, prior.dim)
    b = (
        None
        if broad is None
        else check_spread(
            "broad_anchors", as_matrix("broad_anchors", broad, min_rows=2, dim=prior.dim)
        )
    )
    named = {
        "target_anchors": targets,
        "broad_anchors": broad if broad is not None else prior_provenance(prior),
    }
    tau = resolve_tau(tau, **named)
    return fit_posterior(prior, unit_norm("target_anchors", t, normalize), method, tau, b)


def prior_provenance(prior):
    """A stand-in carrying the encoder and τ of the saved model a prior was loaded from
    (``ad.load_prior``), so that τ defaults to it and a mismatched encoder is an error."""
    card = prior.card.get("card", {})
    return (
        with_provenance(
            np.zeros((1, prior.dim)), encoder=card.get("encoder"), logit_scale=card.get("tau")
        )
        if card
        else None
    )


@limited_blas
def fit_posterior(prior, t: np.ndarray, method, tau: float, broad: np.ndarray | None) -> Posterior:
    """:func:`infer` on validated targets ``t [n, d]``, τ and broad anchors."""
    t = frozen(t)  # the update and the evidence share one scatter (statistics.scatter)
    params, kwargs, info, fixed = model_inputs(prior, t, method)
    info.update(
        kind=prior.kind,
        method=method.name,
        prior=getattr(prior, "prior", "broad"),
        d=prior.dim,
        n_broad=len(broad) if broad is not None else getattr(prior, "n_broad", None),
        n_targets=len(t),
        **exact_descriptions(type(prior)),
    )
    warn_target_only(info, prior.kind, len(t), prior.dim)
    if info["n_broad"] is None:
        del info["n_broad"]
    cls = ExactPosterior if isinstance(method, Exact) else SampledPosterior
    post = cls(
        prior.kind,
        "exact",
        tau,
        t.dtype.str,
        info,
        family=params,
        fixed={**fixed, "targets": t},
        prior=prior,
        model_kwargs=kwargs,
    )
    if isinstance(method, Exact):
        return post
    return run_sampler(post, broad, t, method)


def model_inputs(prior, t: np.ndarray, method) -> tuple[object, dict, dict, dict]:
    """``(exact posterior parameters or None, model kwargs, info, fixed)`` of ``prior`` given
    ``t [n, d]``.  The conjugate update runs only where its result is used: ``Exact``, the
    geometry outside a ``subspace=`` run, and the posterior mean a delta guide reports; NUTS and
    SVI otherwise take the model's inputs alone (:meth:`Family.model_inputs`)."""
    exact = isinstance(method, Exact)
    if exact and not is_conjugate(prior):
        raise AnchorDivError(
            f"method: the {prior.kind} prior has no closed-form update; use ad.SVI(...) or "
            f"ad.NUTS(...) (a family with one is ad.Conjugate: it defines exact)"
        )
    if not exact:
        delta = method.name == "svi" and method.guide == "delta" and method.model is None
        exact = is_conjugate(prior) and (method.subspace is not None or delta)
    if not exact:
        kwargs, info, fixed = prior.model_inputs(t)
        return None, kwargs, dict(info), fixed
    params, info, fixed = prior.exact(t)
    kwargs = info.pop("model_kwargs", None)
    return params, prior.prior_kwargs() if kwargs is None else kwargs, info, fixed


def check_targets(targets, d: int) -> np.ndarray:
    """Validated ``targets [n, d]`` (n ≥ 1; a single target is fine: the prior supplies the
    spread)."""
    t = np.asarray(targets)
    if t.size == 0 or (t.ndim == 2 and t.shape[0] == 0):
        raise AnchorDivError(
            "target_anchors: the target set is empty; adaptation needs at least one target anchor"
        )
    if t.shape[-1] != d:
        raise AnchorDivError(
            f"target_anchors: dimension mismatch: d={t.shape[-1]}, but the broad anchors have d={d}"
        )
    return check_duplicates("target_anchors", as_matrix("target_anchors", t, dim=d))


#: info entries every posterior has (the rest describe the family's default prior)
COMMON_INFO = ("kind", "method", "prior", "d", "n_broad", "n_targets", "model_kwargs", "rank")


def user_model_info(info: dict) -> dict:
    """``info`` for a run on a user's model: the default prior's strengths and choices (which
    describe the family's own model, not the user's) move under ``"default_prior"``; that prior
    still supplies the base hyperparameters and, under ``subspace=``, the geometry outside."""
    kept = {k: v for k, v in info.items() if k in COMMON_INFO}
    return {**kept, "default_prior": {k: v for k, v in info.items() if k not in COMMON_INFO}}


def run_sampler(
    post: Posterior, broad: np.ndarray | None, targets: np.ndarray, o: NUTS | SVI
) -> Posterior:
    """NUTS or SVI on the kind's or the user's model, in full d or in a principal subspace.

    The sampling step of :func:`infer`.

    Parameters
    ----------
    post : Posterior
        The default prior's exact posterior (supplies the kind, τ, dtype and model kwargs).
    broad : numpy.ndarray, shape [N, d], or None
        The broad anchors (subspace runs and callable ``model_kwargs``).
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    o : NUTS or SVI
        The method, read field by field (validated when it was made).

    Returns
    -------
    Posterior
        The sampled posterior.

    Raises
    ------
    AnchorDivError
        ``x64`` without JAX's float64 mode, or a missing ``broad``.
    """
    run_dtype(o.x64)  # float64 asked for but not enabled: a clear error
    base = post.model_kwargs or {}
    if o.model is not None:  # a user's model: the default prior's choices are not its
        post = dataclasses.replace(post, info=user_model_info(post.info))
    fam = post.family_class
    if broad is None and (o.subspace is not None or callable(o.model_kwargs)):
        what = "subspace" if o.subspace is not None else "model_kwargs"
        raise AnchorDivError(
            f"{what}: needs the broad anchors the prior was built from: "
            f"infer(prior, targets, method, broad=broad)"
        )
    if o.subspace is not None:
        if not issubclass(fam, Projectable):
            raise AnchorDivError(f"subspace: {no_subspace(fam)}")
        r = check_rank(o.subspace, post.info["d"], len(broad), post.kind, post.info.get("rank"))
        basis = principal_basis(broad)
        u = basis[:, :r]
        prior: Any = post.prior
        completion = post.family
        if completion is None:  # a family whose lift needs an exact posterior it is not
            completion = optional(prior, "completion", lambda t: None)(targets)
        base, broad, targets = prior.project(base, u), broad @ u, targets @ u
        post = retyped(
            post,
            SubspacePosterior,
            completion=completion,
            fixed={**post.fixed, "basis": basis},
            info={**post.info, "subspace": r},
        )
    svi = o.name == "svi"
    prob = problem(fam, base, broad, targets, o, map_density=svi and o.guide == "delta")
    trace = check_sites(fam, prob)
    warn_unobserved(trace)
    sites = kept_sites(trace)
    post = (run_svi if svi else run_nuts)(post, prob, o, sites)
    if not svi or "map" not in post.points:  # "map" by the density of the parameters
        post = with_log_density(
            post, prob.targets, prob.model if prob.custom else None, prob.kwargs
        )
    return post


__all__ = ["Exact", "METHODS", "NUTS", "SVI", "infer", "options"]
