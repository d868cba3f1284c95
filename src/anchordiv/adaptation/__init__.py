"""Broad → target adaptation: fit a prior to broad anchors, update it with target anchors,
summarise, and score with the adapted anchor model (MATH.md, "Adaptation", App. D).

Objects (the API to build on)::

    prior = ad.NIWPrior.from_anchors(broad [N, d], targets=targets)  # or ad.load_prior(dir)
    post = prior.update(targets [n, d], tau=20.0)                       # exact conjugate update
    post = ad.infer(prior, targets, ad.NUTS(num_samples=500), tau=20.0) # or ad.SVI(...)
    model = post.point("mean")          # or "map": an anchor model for ad.divergence / ad.top_k
    draws = post.sample(seed=0, n=20)   # posterior draws of anchor models
    idata = ad.inference_data(post, num_draws=200, seed=0)   # arviz.InferenceData (checks)

One prior class per family (:mod:`.families`; the protocol is :class:`.family.Family`):
``NIWPrior`` (gaussian), ``BinghamPrior`` (latent-gaussian), ``PosteriorBinghamPrior``
(latent-spherical), ``DirichletNIWPrior`` (mixture).  Methods are typed configuration objects
(:mod:`.inference`): ``Exact()``, ``NUTS(...)``, ``SVI(...)``.

The convenience ``ad.adapt(kind, broad, targets, tau=…, **options)`` builds both from one
flat set of options (below) and raises on any option that does not apply to the chosen kind
and method:

    post = ad.adapt("gaussian", broad [N, d], targets [n, d], tau=20.0)

Options per kind (units in pseudo-anchors: how many anchors the broad prior is worth):

* ``gaussian`` (NIW): ``kappa0`` (strength of the prior mean), ``nu0`` (> d + 1; ``nu0 − d − 1``
  is the strength of the prior covariance) — both numbers, or ``"auto"`` (default) chosen by
  ``strengths``: ``"held-out"`` (default, the recipe of :mod:`.recipe`: one strength by exact
  leave-one-out predictive density, capped by the targets' held-out novelty, so that the
  posterior approaches the target-only fit as the targets come to span their own subspace) or
  ``"evidence"`` (empirical Bayes, the maximiser of the closed-form marginal likelihood; the
  default before issue 17); reported in ``post.info["chosen_by"]``; ``reg`` relative ridge of
  the broad covariance (1e-3).
* ``latent-gaussian`` (matrix Bingham): ``rank`` k, ``beta`` target weight in [0, 1] and
  ``prior_anchors`` — default ``"auto"``: the recipe's rank (between the prior's stable rank
  and the target-only rank, by the targets' novelty) and strength s, β = n/(n + s);
  ``rank="variance"`` is 95 % of the broad variance and a number ``prior_anchors`` gives
  β = n/(n + prior_anchors) (the defaults before issue 17: ``rank="variance",
  prior_anchors=10``).
* ``latent-spherical`` (posterior-like Bingham): ``rank`` (≥ 2), ``beta``, ``prior_anchors`` as
  for latent-gaussian, ``concentration`` κ of the draws (default from the PPCA likelihood at
  the chosen strength), ``radius`` (1).
* ``mixture`` (Dirichlet–NIW): ``components`` (4), ``alpha0`` (10), ``kappa0`` (10), ``nu0``
  (default d + 11), ``em_seed`` (0; the broad EM fit — the sampler's ``seed`` of NUTS/SVI
  never changes the prior), ``reg`` (1e-3), ``max_iter`` (200).  Fixed strengths: the recipe's
  density bound is the single NIW's closed-form LOO, which a mixture lacks (the targets'
  component assignments are latent, so each fold would be an EM refit per grid strength),
  and it has not been measured on a mixture task; the diagonal family keeps its fixed
  strengths too.

Every kind: ``prior="broad"`` (default) or ``"isotropic"`` — the same strength with an isotropic
prior covariance of the same trace (the control separating an informative broad prior from mere
shrinkage).

Inference (``method``):

* ``"exact"`` (default): the conjugate update of the kind's prior (:mod:`.exact`).
* ``"nuts"`` (:mod:`.sampling`): NUTS on the explicit NumPyro model of :mod:`anchordiv.adaptation.priors`
  or a user's; ``num_samples`` (500), ``num_warmup`` (500), ``num_chains`` (2), ``seed``,
  ``progress``, ``init_strategy`` ("median"), ``target_accept_prob`` (0.8), ``dense_mass``,
  ``max_tree_depth`` (10), ``chain_method`` ("sequential"), ``x64`` (False: float64 needs
  JAX's float64 mode, ``jax.config.update("jax_enable_x64", True)``; never switched on here).
* ``"svi"`` (:mod:`.variational`): NumPyro SVI with ``guide`` ("delta" = MAP, "normal",
  "lowrank" with ``guide_rank``, or a user's guide), ``optimizer`` (numpyro.optim or optax;
  default Adam), ``learning_rate`` (0.05) decaying to ``lr_decay`` × itself (0.01), ``num_steps`` (2000), ``num_particles`` (1),
  ``convergence_window``/``convergence_tol`` (1e-4), ``num_samples`` guide draws kept (100).
* ``subspace=r`` with ``"nuts"`` or ``"svi"`` (:mod:`.subspace`): the model runs on the broad
  anchors' top-r principal directions and is lifted back to full d with the exact conditional
  posterior of the default prior outside the subspace — the way to run NUTS at d = 384.

Custom priors: ``model=fn`` (a NumPyro model ``fn(targets, **model_kwargs)`` that defines the
kind's sites, ``Family.sites`` — e.g. ``NIWPrior.sites == ("mu", "Sigma")``; their shapes and a
prior draw's positive definiteness are checked with an error naming the site;
:mod:`anchordiv.adaptation.priors.structured` has factor-analysis and LKJ priors to copy, and
``StructuredPrior.factor``/``.lkj`` make prior objects of them) with ``model_kwargs`` — a dict (overrides/extra
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

import dataclasses
import inspect
import json
from pathlib import Path

import numpy as np

from ..errors import AnchorDivError, as_matrix, check_spread
from ..provenance import resolve_tau, unit_norm, with_provenance
from . import families  # noqa: F401  (registers the families)
from .density import with_log_density
from .family import FAMILIES, Family, get_family
from .inference import METHODS, NUTS, SVI, Exact, fit_posterior, infer, options, run_sampler
from .inference import check_targets as _check_targets
from .posterior import Posterior, load_posterior, save_posterior, to_model
from .families import (BinghamPrior, DiagonalPrior, DirichletNIWPrior, NIWPrior,
                       PosteriorBinghamPrior, SpectralPrior, StructuredPrior)
from .families.gaussian import cov_factor

KINDS = tuple(FAMILIES)
#: options of every kind and method in ``adapt`` (``prior``: "broad" | "isotropic")
COMMON = {"method": "exact", "prior": "broad"}


def prior_options(fam) -> dict:
    """The prior's options in ``adapt`` and their defaults: the keyword-only parameters of
    ``fam.from_anchors`` (so a new family brings its own)."""
    params = inspect.signature(fam.from_anchors).parameters.values()
    return {p.name: p.default for p in params
            if p.kind is p.KEYWORD_ONLY and p.name != "prior"}


#: kind -> the prior's options in ``adapt`` (``Family.from_anchors`` keywords) and defaults
OPTIONS = {kind: prior_options(fam) for kind, fam in FAMILIES.items()}
#: method name -> the options of its configuration class
METHOD_OPTIONS = {name: list(options(cls())) for name, cls in METHODS.items()}


def adapt(kind: str, broad_anchors, target_anchors, *, tau: float | None = None,
          normalize: bool = False, **opts) -> Posterior:
    """Adapt an anchor model of ``kind`` from ``broad_anchors [N, d]`` to
    ``target_anchors [n, d]``; see the module docstring for the options.

    ``tau``: the encoder's logit scale; when omitted, the one recorded with the embeddings
    (``ad.resolve_tau``: an error if neither exists or the two sets come from different
    encoders).  Target rows that are not unit-norm give a warning; ``normalize=True``
    normalises the target anchors (broad anchors may be moment points, never normalised).
    Equivalent to ``infer(Prior.from_anchors(broad, targets, ...), targets, Method(...))``."""
    fam = get_family(kind)
    prior_opts, method = split_options(kind, opts)
    broad, targets = check_anchors(broad_anchors, target_anchors)
    tau = resolve_tau(tau, broad_anchors=broad_anchors, target_anchors=target_anchors)
    targets = unit_norm("target_anchors", targets, normalize)
    prior = fam.from_anchors(broad, targets, **prior_opts)
    return fit_posterior(prior, targets, method, tau, broad)


def split_options(kind: str, opts: dict) -> tuple[dict, object]:
    """``(prior options, method object)`` from ``adapt``'s flat options; an option that does
    not apply to the kind or to the method is an :class:`AnchorDivError` naming it."""
    o = {**COMMON, **opts}
    kind_opts = OPTIONS[kind]
    known = set(COMMON) | set(kind_opts) | {k for v in METHOD_OPTIONS.values() for k in v}
    unknown = sorted(set(o) - known)
    if unknown:
        raise AnchorDivError(f"{kind}: unknown option(s) {', '.join(unknown)}; allowed: "
                             f"{', '.join(sorted(known))}")
    name = o.pop("method")
    if name not in METHODS:
        raise AnchorDivError(f"method: one of {', '.join(METHODS)}, got {name!r}")
    # the sampler's ``seed`` never reaches the prior (a mixture's EM fit has ``em_seed``), so
    # changing it redraws the sampler, never the prior's components
    prior_opts = {k: o.pop(k) for k in list(o) if k in kind_opts or k == "prior"}
    wrong = sorted(set(o) - set(METHOD_OPTIONS[name]))
    if wrong:
        k = wrong[0]
        takes = [m for m, names in METHOD_OPTIONS.items() if k in names]
        raise AnchorDivError(f"{k}: runs with method={' or '.join(repr(m) for m in takes)}, "
                             f"not with method={name!r}"
                             + (" (the exact update is the default prior's closed form)"
                                if name == "exact" else "")
                             + (f"; also not applicable: {', '.join(wrong[1:])}"
                                if len(wrong) > 1 else ""))
    return prior_opts, METHODS[name](**o)


def check_anchors(broad, targets) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``broad [N, d]`` (N ≥ 2, not all identical, see ``errors.check_spread``) and
    ``targets [n, d]`` (n ≥ 1, same d; a single target is fine: the prior supplies the spread)."""
    b = check_spread("broad_anchors", as_matrix("broad_anchors", broad, min_rows=2))
    return b, _check_targets(targets, b.shape[1])


def broad_from_model(model) -> np.ndarray:
    """``[2r, d]`` anchors whose ML mean and covariance equal a saved Gaussian ``model``'s
    (Σ = F Fᵀ, F ``[d, r]``): μ ± √r·F[:, i].  The gaussian and latent families use only the
    broad mean and covariance, so these stand in exactly for the broad anchors a saved prior was
    fitted to (not for ``mixture``, which runs EM on the anchors)."""
    from ..anchors import Gaussian

    if not isinstance(model, Gaussian):
        raise AnchorDivError(f"broad prior: expected a saved gaussian model, got {model.kind}")
    mean, factor = np.asarray(model.mean), np.asarray(model.factor)
    step = np.sqrt(factor.shape[1]) * factor.T
    return np.concatenate([mean + step, mean - step]).astype(mean.dtype)


def load_prior(path, kind: str = "gaussian", *, targets=None, verify: bool = True,
               **strengths) -> Family:
    """A prior object from disk: a prior saved with ``prior.save(path)``, or a fitted Gaussian
    anchor model (``models/*``, the output of ``anchordiv build-prior`` / ``ad.save_model``),
    which becomes the broad distribution of a ``kind`` prior (gaussian or latent kinds; their
    strengths as keywords, ``targets`` for empirical Bayes).  The model's card (encoder, τ,
    sources) and path are kept in ``prior.card``; its τ is the default of ``infer``."""
    from ..io import load_card, load_model, read_bundle

    card = load_card(path)
    if card.get("type") == "prior":
        arrays, card = read_bundle(path, verify=verify)
        return FAMILIES[card["kind"]].from_arrays(arrays, card["prior"])
    if kind == "mixture":
        raise AnchorDivError("kind: a mixture prior runs EM on the broad anchors themselves; a "
                             "saved Gaussian model only gives their mean and covariance — use "
                             "DirichletNIWPrior.from_anchors(broad)")
    broad = stand_in_anchors(load_model(path, verify=verify), card)
    t = None if targets is None else as_matrix("targets", targets, dim=broad.shape[1])
    prior = get_family(kind).from_anchors(broad, t, **strengths)
    origin = json.dumps({"path": str(Path(path)), "card": card}, default=str)
    return dataclasses.replace(prior, origin=origin)


def stand_in_anchors(model, card: dict) -> np.ndarray:
    """:func:`broad_from_model` carrying the card's encoder and τ as provenance."""
    return with_provenance(broad_from_model(model), encoder=card.get("encoder"),
                           logit_scale=card.get("tau"))


__all__ = ["BinghamPrior", "DiagonalPrior", "DirichletNIWPrior", "Exact", "FAMILIES", "Family",
           "KINDS", "METHODS", "NIWPrior", "NUTS", "OPTIONS", "Posterior",
           "PosteriorBinghamPrior", "SVI", "SpectralPrior", "StructuredPrior", "adapt", "broad_from_model",
           "cov_factor", "infer", "load_posterior", "load_prior", "run_sampler",
           "save_posterior", "to_model", "with_log_density"]
