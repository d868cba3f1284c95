"""Broad → target adaptation: fit a prior to broad anchors, update it with target anchors,
summarise, and score with the adapted anchor model (MATH.md, "Adaptation", App. D).

    post = ad.adapt("gaussian", broad [N, d], targets [n, d], tau=20.0)
    model = post.point("mean")          # or "map": an anchor model for ad.divergence / ad.top_k
    draws = post.sample(seed=0, n=20)   # posterior draws of anchor models
    idata = post.inference_data(num_draws=200, seed=0)   # arviz.InferenceData

Options per kind (units in pseudo-anchors: how many anchors the broad prior is worth):

* ``gaussian`` (NIW): ``kappa0`` (strength of the prior mean), ``nu0`` (> d + 1; ``nu0 − d − 1``
  is the strength of the prior covariance) — each a number or ``"auto"`` (default: empirical
  Bayes, the maximiser of the closed-form marginal likelihood of the targets, reported in
  ``post.info``); ``reg`` relative ridge of the broad covariance (1e-3).
* ``latent-gaussian`` (matrix Bingham): ``rank`` k (default: 95 % of the broad variance),
  ``beta`` target weight in [0, 1] (default ``n/(n + prior_anchors)``), ``prior_anchors`` (10).
* ``latent-spherical`` (posterior-like Bingham): ``rank`` (≥ 2), ``beta``, ``prior_anchors``,
  ``concentration`` κ of the draws (default ``prior_anchors + n``), ``radius`` (1).
* ``mixture`` (Dirichlet–NIW): ``components`` (4), ``alpha0`` (10), ``kappa0`` (10), ``nu0``
  (default d + 11), ``seed`` (0), ``reg`` (1e-3), ``max_iter`` (200).

Every kind: ``prior="broad"`` (default) or ``"isotropic"`` — the same strength with an isotropic
prior covariance of the same trace (the control separating an informative broad prior from mere
shrinkage).

Inference (``method``):

* ``"exact"`` (default): the conjugate update of the kind's prior (:mod:`.exact`).
* ``"nuts"`` (:mod:`.sampling`): NUTS on the explicit NumPyro model of :mod:`anchordiv.priors`
  or a user's; ``num_samples`` (500), ``num_warmup`` (500), ``num_chains`` (2), ``seed``,
  ``progress``, ``init_strategy`` ("median"), ``target_accept_prob`` (0.8), ``dense_mass``,
  ``max_tree_depth`` (10), ``chain_method`` ("sequential"), ``x64`` (False).
* ``"svi"`` (:mod:`.variational`): NumPyro SVI with ``guide`` ("delta" = MAP, "normal",
  "lowrank" with ``guide_rank``, or a user's guide), ``optimizer`` (numpyro.optim or optax;
  default Adam), ``learning_rate`` (0.05) decaying to ``lr_decay`` × itself (0.01), ``num_steps`` (2000), ``num_particles`` (1),
  ``convergence_window``/``convergence_tol`` (1e-4), ``num_samples`` guide draws kept (100).
* ``subspace=r`` with ``"nuts"`` or ``"svi"`` (:mod:`.subspace`): the model runs on the broad
  anchors' top-r principal directions and is lifted back to full d with the exact conditional
  posterior of the default prior outside the subspace — the way to run NUTS at d = 384.

Custom priors: ``model=fn`` (a NumPyro model ``fn(targets, **model_kwargs)`` that defines the
kind's sites, see :data:`anchordiv.priors.SITES`; :mod:`anchordiv.priors.structured` has
factor-analysis and LKJ priors to copy) with ``model_kwargs`` — a dict (overrides/extra
hyperparameters on top of the kind's prior's, passed where ``fn`` names them) or a callable
``f(broad [N, d']) -> dict`` that builds them from the (possibly projected) broad anchors.

Costs and caveats: exact Gaussian draws are O(d³) each; exact latent draws use a Gibbs sampler
costing O(k·d³) per sweep (20 burn-in sweeps, then one per draw — seconds per draw at d = 384,
k = 50), so keep ``n``/``num_draws`` modest there.  Exact mixture draws come from a Gibbs sampler
over the assignments (:mod:`.mixture_gibbs`: the assignment uncertainty is propagated; the
point summaries are given the MAP-EM responsibilities); NUTS on the mixture
model is not protected against label switching (the informative broad prior usually prevents
it; check ``az.rhat``).
"""

from __future__ import annotations

import contextlib
import dataclasses

import jax
import numpy as np

from .. import priors
from ..errors import AnchorDivError, as_matrix, check_spread, integer
from ..provenance import resolve_tau, unit_norm
from .density import with_log_density
from .exact import EXACT
from .model import check_sites, kept_sites, problem
from .persistence import load_posterior, save_posterior
from .posterior import Posterior, cov_factor, to_model
from .sampling import run_nuts
from .points import exact_descriptions
from .sanity import warn_target_only, warn_unobserved
from .subspace import check_rank, principal_basis, project
from .variational import run_svi

METHODS = ("exact", "nuts", "svi")
COMMON = {"method": "exact", "prior": "broad", "model": None, "model_kwargs": None,
          "subspace": None, "seed": 0, "progress": True, "init_strategy": "median", "x64": False,
          "num_samples": None}
#: options of the sampling-based and variational methods (module docstring)
NUTS_OPTIONS = {"num_warmup": 500, "num_chains": 2, "target_accept_prob": 0.8,
                "dense_mass": False, "max_tree_depth": 10, "chain_method": "sequential"}
SVI_OPTIONS = {"guide": "delta", "guide_rank": None, "optimizer": None, "learning_rate": 0.05,
               "lr_decay": 0.01, "num_steps": 2000, "num_particles": 1, "convergence_window": None,
               "convergence_tol": 1e-4}
NUM_SAMPLES = {"nuts": 500, "svi": 100}
OPTIONS = {
    "gaussian": {"kappa0": "auto", "nu0": "auto", "reg": 1e-3},
    "latent-gaussian": {"rank": None, "beta": None, "prior_anchors": priors.bingham.PRIOR_ANCHORS},
    "latent-spherical": {"rank": None, "beta": None, "prior_anchors": priors.bingham.PRIOR_ANCHORS,
                         "concentration": None, "radius": 1.0},
    "mixture": {"components": 4, "alpha0": 10.0, "kappa0": 10.0, "nu0": None, "seed": 0,
                "reg": 1e-3, "max_iter": 200},
}
KINDS = tuple(OPTIONS)


def adapt(kind: str, broad_anchors, target_anchors, *, tau: float | None = None,
          normalize: bool = False, **options) -> Posterior:
    """Adapt an anchor model of ``kind`` from ``broad_anchors [N, d]`` to
    ``target_anchors [n, d]``; see the module docstring for the options.

    ``tau``: the encoder's logit scale; when omitted, the one recorded with the embeddings
    (``ad.resolve_tau``: an error if neither exists or the two sets come from different
    encoders).  Target rows that are not unit-norm give a warning; ``normalize=True``
    normalises the target anchors (broad anchors may be moment points, never normalised)."""
    if kind not in OPTIONS:
        raise AnchorDivError(f"kind: unknown {kind!r}; adaptation supports {', '.join(KINDS)}")
    opts = resolve_options(kind, options)
    broad, targets = check_anchors(broad_anchors, target_anchors)
    tau = resolve_tau(tau, broad_anchors=broad_anchors, target_anchors=target_anchors)
    targets = unit_norm("target_anchors", targets, normalize)
    check_method(opts)
    family, info, fixed = EXACT[kind](broad, targets, opts)
    info.update(kind=kind, method=opts["method"], prior=opts["prior"], d=broad.shape[1],
                n_broad=len(broad), n_targets=len(targets), **exact_descriptions(kind))
    warn_target_only(kind, info, len(targets), broad.shape[1])
    post = Posterior(kind, "exact", tau, targets.dtype.str, info, family=family,
                     fixed={**fixed, "targets": targets})
    if opts["method"] == "exact":
        return post
    with x64_mode(bool(opts["x64"])):
        return infer(post, broad, targets, opts)


def check_method(o: dict) -> None:
    if o["method"] not in METHODS:
        raise AnchorDivError(f"method: one of {', '.join(METHODS)}, got {o['method']!r}")
    if o["prior"] not in ("broad", "isotropic"):
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {o['prior']!r}")
    if o["method"] == "exact":
        for name in ("model", "subspace"):
            if o[name] is not None:
                raise AnchorDivError(f"{name}: runs with method='nuts' or 'svi' (the exact "
                                     f"update is the default prior's closed form)")


def infer(post: Posterior, broad: np.ndarray, targets: np.ndarray, o: dict) -> Posterior:
    """NUTS or SVI on the kind's or the user's model, in full d or in a principal subspace."""
    base = post.info["model_kwargs"]
    o = {**o, "num_samples": NUM_SAMPLES[o["method"]] if o["num_samples"] is None
         else integer("num_samples", o["num_samples"], low=1)}
    if o["subspace"] is not None:
        r = check_rank(o["subspace"], broad.shape[1], len(broad), post.kind,
                       post.info.get("rank"))
        basis = principal_basis(broad)
        u = basis[:, :r]
        base, broad, targets = project(post.kind, base, u), broad @ u, targets @ u
        post = dataclasses.replace(post, completion=post.family,
                                   fixed={**post.fixed, "basis": basis},
                                   info={**post.info, "subspace": r})
    svi = o["method"] == "svi"
    prob = problem(post.kind, base, broad, targets, o,
                   map_density=svi and o["guide"] == "delta")
    trace = check_sites(post.kind, prob)
    warn_unobserved(trace)
    sites = kept_sites(trace)
    post = (run_svi if svi else run_nuts)(post, prob, o, sites)
    if not svi or "map" not in post.points:     # "map" by the density of the parameters
        post = with_log_density(post, prob.targets, prob.model if prob.custom else None,
                                prob.kwargs)
    return post


@contextlib.contextmanager
def x64_mode(on: bool):
    """Run JAX in float64 inside the block when ``on`` (restored afterwards)."""
    before = bool(jax.config.jax_enable_x64)
    if on and not before:
        jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        if on and not before:
            jax.config.update("jax_enable_x64", False)


def resolve_options(kind: str, options: dict) -> dict:
    allowed = {**COMMON, **NUTS_OPTIONS, **SVI_OPTIONS, **OPTIONS[kind]}
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise AnchorDivError(f"{kind}: unknown option(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(sorted(allowed))}")
    return {**allowed, **options}


def check_anchors(broad, targets) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``broad [N, d]`` (N ≥ 2, not all identical, see ``errors.check_spread``) and
    ``targets [n, d]`` (n ≥ 1, same d; a single target is fine: the prior supplies the spread)."""
    b = check_spread("broad_anchors", as_matrix("broad_anchors", broad, min_rows=2))
    t = np.asarray(targets)
    if t.size == 0 or (t.ndim == 2 and t.shape[0] == 0):
        raise AnchorDivError("target_anchors: the target set is empty; adaptation needs at "
                             "least one target anchor")
    if t.shape[-1] != b.shape[1]:
        raise AnchorDivError(f"target_anchors: dimension mismatch: d={t.shape[-1]}, but the "
                             f"broad anchors have d={b.shape[1]}")
    return b, as_matrix("target_anchors", t, dim=b.shape[1])


__all__ = ["KINDS", "METHODS", "OPTIONS", "Posterior", "adapt", "cov_factor", "load_posterior",
           "save_posterior", "to_model"]
