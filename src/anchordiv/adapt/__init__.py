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
shrinkage); ``method="exact"`` (default) or ``"nuts"`` (``num_samples``, ``num_warmup``,
``num_chains``, ``seed``, ``progress``) on the explicit NumPyro model of
:mod:`anchordiv.priors`; custom priors: ``model=fn`` (a NumPyro model
``fn(targets, **model_kwargs)`` with the kind's sites, see :data:`anchordiv.priors.SITES`) and
``model_kwargs={...}`` (overrides/extra hyperparameters; the defaults are the kind's prior's).

Costs and caveats: exact Gaussian draws are O(d³) each; exact latent draws use a Gibbs sampler
costing O(k·d³) per sweep (20 burn-in sweeps, then one per draw — seconds per draw at d = 384,
k = 50), so keep ``n``/``num_draws`` modest there.  Mixture draws come from the posterior given
the MAP-EM responsibilities (the assignment uncertainty is not propagated); NUTS on the mixture
model is not protected against label switching (the informative broad prior usually prevents
it; check ``az.rhat``).
"""

from __future__ import annotations

import numpy as np

from .. import priors
from ..errors import AnchorDivError, as_matrix, check_spread
from ..provenance import resolve_tau, unit_norm
from .exact import EXACT
from .persistence import load_posterior, save_posterior
from .posterior import Posterior, cov_factor, to_model
from .sampling import run_nuts

COMMON = {"method": "exact", "prior": "broad", "model": None, "model_kwargs": None,
          "num_samples": 500, "num_warmup": 500, "num_chains": 2, "seed": 0, "progress": True}
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
    if opts["method"] not in ("exact", "nuts"):
        raise AnchorDivError(f"method: 'exact' or 'nuts', got {opts['method']!r}")
    if opts["prior"] not in ("broad", "isotropic"):
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {opts['prior']!r}")
    if opts["model"] is not None and opts["method"] != "nuts":
        raise AnchorDivError("model: a custom NumPyro model runs with method='nuts'")
    family, info, fixed = EXACT[kind](broad, targets, opts)
    info.update(kind=kind, method=opts["method"], prior=opts["prior"], d=broad.shape[1],
                n_broad=len(broad), n_targets=len(targets))
    post = Posterior(kind, "exact", tau, targets.dtype.str, info, family=family, fixed=fixed)
    if opts["method"] == "nuts":
        post = run_nuts(post, targets, opts)
    return post


def resolve_options(kind: str, options: dict) -> dict:
    allowed = {**COMMON, **OPTIONS[kind]}
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


__all__ = ["KINDS", "OPTIONS", "Posterior", "adapt", "cov_factor", "load_posterior",
           "save_posterior", "to_model"]
