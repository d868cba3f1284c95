"""Typed inference: a method is a small frozen configuration object (:mod:`.methods`), and
:func:`infer` validates the inputs once (:mod:`.validation`) and lets the method run itself on a
prior object (:mod:`.family`) and target anchors.

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

import numpy as np

from ..threads import limited_blas
from .methods import (  # noqa: F401  (re-exported)
    COMMON_INFO,
    METHODS,
    NUTS,
    SVI,
    Exact,
    Method,
    ModelMethod,
    config,
    options,
    user_model_info,
)
from .posterior import Posterior
from .validation import check_targets, prior_provenance, validated  # noqa: F401  (re-exported)


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
        The posterior (exact parameters, or NUTS/SVI draws): ``method.run(prior, targets,
        tau=tau, broad=broad)`` on the validated inputs.

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
    t, tau, b = validated(prior, targets, method, tau=tau, normalize=normalize, broad=broad)
    return method.run(prior, t, tau=tau, broad=b)


@limited_blas
def fit_posterior(prior, t: np.ndarray, method, tau: float, broad: np.ndarray | None) -> Posterior:
    """``method.run`` on validated targets ``t [n, d]``, τ and broad anchors (:func:`infer`
    without the validation)."""
    return method.run(prior, t, tau=tau, broad=broad)


def run_sampler(
    post: Posterior, broad: np.ndarray | None, targets: np.ndarray, o: ModelMethod
) -> Posterior:
    """NUTS or SVI (``o``) on the prior of ``post`` given validated ``targets [n, d]``:
    ``o.run(post.prior, targets, tau=post.tau, broad=broad)`` (the method runs itself).

    Parameters
    ----------
    post : Posterior
        A posterior of the prior (supplies the prior object and τ).
    broad : numpy.ndarray, shape [N, d], or None
        The broad anchors (subspace runs and callable ``model_kwargs``).
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    o : NUTS or SVI
        The method.

    Returns
    -------
    Posterior
        The sampled posterior.
    """
    return o.run(post.prior, targets, tau=post.tau, broad=broad)


def model_inputs(prior, t: np.ndarray, method) -> tuple[object, dict, dict, dict]:
    """``method.inputs(prior, t)``: ``(exact posterior parameters or None, model kwargs, info,
    fixed)`` a run of ``method`` starts from."""
    return method.inputs(prior, t)


__all__ = ["Exact", "METHODS", "NUTS", "SVI", "infer", "options"]
