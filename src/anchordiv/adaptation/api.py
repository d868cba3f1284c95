"""``adapt``: the adaptation layer in one call, from a kind, anchors and flat options to a
posterior (the path's hops are numbered in ``docs/guides/internals.md``)::

    adapt(kind, broad [N, d], targets [n, d], tau=..., **opts)
      resolve_family(kind)              the family class, read from the registry once
      split_family_options(fam, opts)   (prior options, method object); an inapplicable option
                                        is an error naming it
      check_anchors(broad, targets)     validated once: checked, read-only arrays
      resolve_tau(...)                  τ given, or recorded with the embeddings
      build_prior(fam, broad, targets)  fam.from_anchors (the held-out recipe picks strengths)
      method.run(prior, targets, …)     the method run on the prior: the posterior

All of it runs in one BLAS thread scope.  The options of each kind and method
(:data:`OPTIONS`, :data:`METHOD_OPTIONS`, :data:`COMMON`) are read from the families'
``from_anchors`` signatures and the method classes.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from ..errors import AnchorDivError, as_matrix, check_spread, user_stacklevel
from ..provenance import AnchorDivWarning, provenance_of, resolve_tau, unit_norm
from ..threads import limited_blas
from .methods import METHODS, NUTS, SVI, Exact, Method, options, validated  # noqa: F401
from .posterior import Posterior
from .protocol import Family
from .registry import FAMILIES, LiveKinds, LiveMapping, check_prior_mode, get_family, unknown_kind
from .registry import is_conjugate
from .statistics import checked
from .update import check_targets

#: the registered kinds, read live (a family registered after import appears here)
KINDS = LiveKinds()
#: the kind a call that names none means: ``load_prior``'s default, and the deprecated default
#: of ``compare_priors`` candidates that do not say their kind
DEFAULT_KIND = "gaussian"
#: options of every kind and method in ``adapt`` (``prior``: "broad" | "isotropic")
COMMON = {"method": "exact", "prior": "broad"}


def prior_options(fam) -> dict:
    """The prior's options in ``adapt`` and their defaults: the keyword-only parameters of
    ``fam.from_anchors`` (so a new family brings its own)."""
    params = inspect.signature(fam.from_anchors).parameters.values()
    return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY and p.name != "prior"}


#: kind -> the prior's options in ``adapt`` (``Family.from_anchors`` keywords) and defaults,
#: read live from the registry
OPTIONS = LiveMapping(
    lambda: {kind: prior_options(fam) for kind, fam in FAMILIES.items()}, unknown_kind
)
#: method name -> the options of its configuration class
METHOD_OPTIONS = {name: list(options(cls())) for name, cls in METHODS.items()}


@limited_blas
def adapt(
    kind,
    broad_anchors,
    target_anchors,
    *,
    tau: float | None = None,
    normalize: bool = False,
    **opts,
) -> Posterior:
    """Adapt an anchor model of ``kind`` from broad anchors to target anchors.

    Builds the kind's prior from the broad anchors (``Prior.from_anchors``) and updates it with
    the targets by ``method``: equivalent to
    ``infer(Prior.from_anchors(broad, targets, ...), targets, Method(...))``.  Strengths are in
    pseudo-anchors (how many anchors the broad prior is worth).  Every option below applies to
    some kinds or methods only; any other combination is an :class:`AnchorDivError` naming the
    option.

    Parameters
    ----------
    kind : str or type
        The family: a registered kind (:data:`KINDS`, read when called: a family registered
        from a user's module included) — the library's are ``"gaussian"``,
        ``"latent-gaussian"``, ``"latent-spherical"``, ``"mixture"``, ``"diagonal-gaussian"``,
        ``"spectral"``, ``"factor-gaussian"`` and ``"lkj-gaussian"`` — or a family class.
    broad_anchors : array_like, shape [N, d]
        Broad anchors (N ≥ 2, not all identical); may be moment points (never normalised).
    target_anchors : array_like, shape [n, d]
        Target anchors (n ≥ 1; a single target is fine: the prior supplies the spread).
    tau : float, optional
        The encoder's logit scale; when omitted, the one recorded with the embeddings
        (:func:`anchordiv.resolve_tau`: an error if neither exists or the two sets come from
        different encoders).
    normalize : bool, default False
        Scale the target rows to unit norm (rows that are not unit-norm warn otherwise).
    method : {"exact", "nuts", "svi"} or Exact, NUTS, SVI, default "exact"
        ``"exact"``: the conjugate update of the kind's prior (the family's
        ``exact``, :class:`~anchordiv.Conjugate`; not for ``spectral``); ``"nuts"``: NUTS on the explicit NumPyro model of
        :mod:`anchordiv.adaptation.families` or a user's (:mod:`.nuts`); ``"svi"``: NumPyro SVI
        (:mod:`.svi`).  A name takes the method's options as keywords of this call; a
        configuration (``method=ad.NUTS(num_warmup=300)``) holds them itself, and a method
        option beside it is an error naming where it goes.
    prior : {"broad", "isotropic"}, default "broad"
        Every kind: ``"isotropic"`` keeps the strength but gives the prior an isotropic
        covariance of the same trace (the control separating an informative broad prior from
        mere shrinkage).

    Other Parameters
    ----------------
    kappa0 : float or "auto"
        gaussian (default ``"auto"``): strength of the prior mean; mixture (10), diagonal-gaussian
        (10), spectral (1): pseudo-anchors of the prior mean.
    nu0 : float or "auto"
        gaussian (default ``"auto"``, a number must be > d + 1; ``nu0 − d − 1`` is the strength
        of the prior covariance); mixture (default d + 11); diagonal-gaussian (10).
    strengths : {"held-out", "evidence"}, default "held-out"
        gaussian, how ``"auto"`` strengths are chosen: ``"held-out"`` — the recipe of
        :mod:`.statistics`: one strength by exact leave-one-out predictive density, capped by the
        targets' held-out novelty, so that the posterior approaches the target-only fit as the
        targets come to span their own subspace; ``"evidence"`` — empirical Bayes, the
        maximiser of the closed-form marginal likelihood.  Reported in ``post.info["chosen_by"]``.
    reg : float, default 1e-3
        gaussian, mixture, diagonal-gaussian, spectral: relative ridge of the broad covariance.
    rank : int, "auto" or "variance"
        latent-gaussian, latent-spherical (≥ 2), default ``"auto"``: the recipe's rank (between
        the prior's stable rank and the target-only rank, by the targets' novelty);
        ``"variance"``: 95 % of the broad variance.  spectral: the number of leading broad
        directions (default min(64, d), capped at the broad covariance's rank).
    beta : float in [0, 1] or "auto"
        latent-gaussian, latent-spherical: the target weight; default ``"auto"``: β = n/(n + s)
        with s the recipe's (or ``prior_anchors``') strength.
    prior_anchors : float or "auto"
        latent-gaussian, latent-spherical: the strength s of β = n/(n + s) (default ``"auto"``,
        the recipe's).
    concentration : float, optional
        latent-spherical: κ of the draws (default from the PPCA likelihood at the chosen
        strength).
    radius : float, default 1.0
        latent-spherical: the radius of the anchor model.
    components : int, default 4
        mixture: the number of Dirichlet–NIW components.
    alpha0 : float, default 10.0
        mixture: strength of the Dirichlet prior on the weights.
    em_seed : int, default 0
        mixture: seed of the broad EM fit (``seed`` is accepted for it too and then also seeds
        NUTS/SVI).
    max_iter : int, default 200
        mixture: MAP-EM iterations.  The mixture and diagonal families keep fixed strengths (the
        recipe's density bound is the single NIW's closed-form LOO, which a mixture lacks).
    shrinkage : {"horseshoe", "gamma"}, default "horseshoe"
        spectral: the hierarchy of the per-direction scales.
    global_scale : float, default 1.0
        spectral: the horseshoe's g ~ HalfCauchy scale.
    gamma_shape : float, default 2.0
        spectral: a of the gamma hierarchy (g², ℓ² ~ Gamma(a, a)).
    noise : {"free", "fixed"}, default "free"
        spectral: σ² outside the leading directions learnt, or held at the broad residual
        variance.
    num_samples : int
        nuts: draws per chain (500); svi: guide draws kept (100).
    num_warmup : int, default 500
        nuts: warm-up steps per chain.
    num_chains : int, default 2
        nuts: chains.
    seed : int, default 0
        nuts: the sampler's PRNG; svi: the optimisation and the guide draws.
    progress : bool, default True
        nuts, svi: show a progress bar.
    init_strategy : str or callable, default "median"
        nuts, svi: a name in :data:`~.model.INIT_STRATEGIES` or a NumPyro init strategy.
    target_accept_prob : float, default 0.8
        nuts: the step-size adaptation's target.
    dense_mass : bool, default False
        nuts: a dense mass matrix.
    max_tree_depth : int, default 10
        nuts: the largest tree depth.
    chain_method : {"sequential", "vectorized", "parallel"}, default "sequential"
        nuts: how the chains run.
    x64 : bool, default False
        nuts, svi: run in float64 (needs JAX's float64 mode,
        ``jax.config.update("jax_enable_x64", True)``; never switched on here).
    guide : str or guide, default "delta"
        svi: ``"delta"`` (MAP), ``"normal"`` (mean field), ``"lowrank"`` (``guide_rank``), or a
        user's NumPyro AutoGuide or guide function.
    guide_rank : int, optional
        svi: the rank of the ``"lowrank"`` guide.
    optimizer : numpyro.optim optimizer or optax transformation, optional
        svi: default Adam with a decaying step.
    learning_rate : float, default 0.05
        svi: Adam's initial step.
    lr_decay : float, default 0.01
        svi: the step decays to ``lr_decay`` × ``learning_rate`` over the run.
    num_steps : int, default 2000
        svi: optimisation steps.
    num_particles : int, default 1
        svi: ELBO particles per step.
    convergence_window : int, optional
        svi: steps per window of the convergence check (default ``max(20, num_steps // 10)``).
    convergence_tol : float, default 1e-4
        svi: the relative change of the mean loss between the last two windows below which
        (with the parameters settled) the run counts as converged.
    subspace : int, optional
        nuts, svi: run the model on the broad anchors' top-r principal directions and lift it
        back to full d with the exact conditional posterior of the default prior outside the
        subspace (:mod:`.statistics`) — the way to run NUTS at d = 384.
    model : callable, optional
        nuts, svi: a custom NumPyro prior ``fn(targets, **model_kwargs)`` that defines the kind's
        sites (``Family.sites``, e.g. ``NIWPrior.sites == ("mu", "Sigma")``); their shapes and a
        prior draw's positive definiteness are checked with an error naming the site.
        :mod:`anchordiv.adaptation.families.structured` has factor-analysis and LKJ priors to copy
        (``StructuredPrior.factor``/``.lkj`` make prior objects of them).
    model_kwargs : dict or callable, optional
        nuts, svi: a dict (overrides/extra hyperparameters on top of the kind's prior's, passed
        where ``model`` names them) or ``f(broad [N, d']) -> dict`` built from the (possibly
        projected) broad anchors.
    runners : Runners, optional
        nuts, svi: the table of compiled runners to keep and reuse them in
        (:class:`~anchordiv.adaptation.methods.Runners`; default the library's bounded one).

    Returns
    -------
    Posterior
        The adapted posterior: ``post.point("mean" | "map")`` is an anchor model,
        ``post.sample(seed, n)`` draws anchor models, ``post.info`` holds the chosen strengths.

    Raises
    ------
    AnchorDivError
        An unknown kind or option, an option that does not apply to the kind or method, invalid
        anchors (non-finite, mismatched d, too few or duplicated broad anchors), or no τ.

    See Also
    --------
    infer : the same with a prior object and a method object.
    load_prior : a prior from a saved model or prior directory.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(40, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> targets = broad[:6] + 0.1
    >>> targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    >>> post = ad.adapt("gaussian", broad, targets, tau=20.0)
    >>> post.kind, post.method, post.info["chosen_by"].split(" (")[0]
    ('gaussian', 'exact', 'held-out recipe')
    >>> post.point("mean")
    Gaussian(mean[4], factor[4, 4], tau=20)
    >>> fixed = ad.adapt("gaussian", broad, targets, tau=20.0, kappa0=5.0, nu0=10.0)
    >>> fixed.info["kappa0"], fixed.info["nu0"]
    (5.0, 10.0)
    """
    fam = resolve_family(kind)
    prior_opts, method = split_family_options(fam, opts)
    broad, targets = check_anchors(broad_anchors, target_anchors, normalize=normalize)
    tau = resolve_tau(tau, broad_anchors=broad_anchors, target_anchors=target_anchors)
    prior = build_prior(fam, broad, targets, **prior_opts)
    return method.run(prior, targets, tau=tau, broad=broad)


def resolve_family(kind) -> type[Family]:
    """The family class of ``kind``: a family class as it is, a kind string from the registry
    (read live: an unknown kind is an :class:`AnchorDivError` listing the registered ones) —
    the one place the adaptation layer's string entry points read it."""
    if isinstance(kind, type) and issubclass(kind, Family):
        return kind
    return get_family(kind)


def split_options(kind, opts: dict) -> tuple[dict, Method]:
    """``(prior options, method object)`` from ``adapt``'s flat options (``kind``: a kind or a
    family class); an option that does not apply to the kind or to the method is an
    :class:`AnchorDivError` naming it."""
    return split_family_options(resolve_family(kind), opts)


def split_family_options(fam: type[Family], opts: dict) -> tuple[dict, Method]:
    """:func:`split_options` for a family class (resolved already)."""
    o = {**COMMON, **opts}
    kind, kind_opts = fam.kind, prior_options(fam)
    known = set(COMMON) | set(kind_opts) | {k for v in METHOD_OPTIONS.values() for k in v}
    unknown = sorted(set(o) - known)
    if unknown:
        raise AnchorDivError(
            f"{kind}: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(sorted(known))}"
        )
    name = o.pop("method")
    if isinstance(name, tuple(METHODS.values())):  # a configuration: its fields are the options
        loose = sorted(k for k in o if k not in kind_opts and k != "prior")
        if loose:
            cls = type(name).__name__
            raise AnchorDivError(
                f"{loose[0]}: an option of the inference method; with method=ad.{cls}(...) set "
                f"it there: method=ad.{cls}({loose[0]}=...)"
                + (f" (also {', '.join(loose[1:])})" if len(loose) > 1 else "")
            )
        return {k: v for k, v in o.items() if k in kind_opts or k == "prior"}, name
    if not isinstance(name, str) or name not in METHODS:
        raise AnchorDivError(
            f"method: one of {', '.join(METHODS)} or ad.Exact(), ad.NUTS(...), ad.SVI(...), "
            f"got {name!r}"
        )
    # the sampler's ``seed`` never reaches the prior (a mixture's EM fit has ``em_seed``), so
    # changing it redraws the sampler, never the prior's components
    prior_opts = {k: o.pop(k) for k in list(o) if k in kind_opts or k == "prior"}
    wrong = sorted(set(o) - set(METHOD_OPTIONS[name]))
    if wrong:
        k = wrong[0]
        takes = [m for m, names in METHOD_OPTIONS.items() if k in names]
        if METHODS[name] is Exact and not is_conjugate(fam):  # the default, or named: neither runs
            raise AnchorDivError(
                f"{k}: runs with method={' or '.join(repr(m) for m in takes)}; the {kind} "
                f"family has no exact (closed-form) update, so name the method: "
                f"method={takes[0]!r} (or method=ad.{takes[0].upper()}({k}=...))"
                + (f"; also: {', '.join(wrong[1:])}" if len(wrong) > 1 else "")
            )
        raise AnchorDivError(
            f"{k}: runs with method={' or '.join(repr(m) for m in takes)}, "
            f"not with method={name!r}"
            + METHODS[name].takes_none
            + (f"; also not applicable: {', '.join(wrong[1:])}" if len(wrong) > 1 else "")
        )
    return prior_opts, METHODS[name](**o)


def check_anchors(broad, targets, *, normalize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``broad [N, d]`` (N ≥ 2, not all identical, see ``errors.check_spread``) and
    ``targets [n, d]`` (n ≥ 1, same d; a single target is fine: the prior supplies the spread),
    the targets scaled to unit norm with ``normalize`` (:func:`anchordiv.provenance.unit_norm`).

    Both come back as read-only arrays marked as checked (:func:`.statistics.checked`): the functions
    ``adapt`` calls next (the recipe, the exact update) check only their shape, and the
    targets' scatter is computed once for the recipe, the update and the evidence.

    Fewer broad anchors than targets give an :class:`~anchordiv.AnchorDivWarning`: the broad
    anchors (the prior's source, a large generic vocabulary) and the few task anchors were
    probably passed in each other's place.  Moment points standing in for a saved model
    (:func:`~anchordiv.adaptation.loading.stand_in_anchors`, provenance ``stand_in``) are
    exempt: they number 2r."""
    b = check_spread("broad_anchors", as_matrix("broad_anchors", broad, min_rows=2))
    t = check_targets(targets, b.shape[1])
    if len(b) < len(t) and not provenance_of(broad).get("stand_in"):
        warnings.warn(
            f"broad_anchors: {len(b)} rows, fewer than the {len(t)} target_anchors; the broad "
            f"anchors (the prior's source) are normally the larger, generic set — were the "
            f"two swapped? (adapt(kind, broad_anchors, target_anchors); on the command line "
            f"BROAD comes before TARGET)",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )
    return checked(b), checked(unit_norm("target_anchors", t, normalize))


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


def build_prior(fam, broad, targets=None, *, prior: str = "broad", **strengths) -> "Family":
    """``fam.from_anchors(broad [N, d], targets [n, d], **strengths)`` with the prior mode
    ``prior``: passed on where ``from_anchors`` names a ``prior`` keyword, else the broad prior
    and, for ``"isotropic"``, its :meth:`Family.isotropic` (a family need not take ``prior``)."""
    params = inspect.signature(fam.from_anchors).parameters
    if "prior" in params:
        return built_prior(fam, fam.from_anchors(broad, targets, prior=prior, **strengths))
    built = built_prior(fam, fam.from_anchors(broad, targets, **strengths))
    if check_prior_mode(prior) == "isotropic":
        return built_prior(fam, built.isotropic(), "isotropic")
    return built


def built_prior(fam, built, member: str = "from_anchors"):
    """``built`` unless it is not an instance of ``fam``: a user's ``from_anchors`` (or
    ``isotropic``) that returns something else is named, not an AttributeError later."""
    if not isinstance(built, fam):
        raise AnchorDivError(
            f"{fam.__qualname__}.{member}: returned {type(built).__name__}, not a "
            f"{fam.__qualname__} (the {fam.kind} family's prior object: return cls(...))"
        )
    return built
