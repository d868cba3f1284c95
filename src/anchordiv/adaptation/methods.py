"""The inference methods :class:`Exact`, :class:`NUTS` and :class:`SVI`: frozen configurations
validated when built (a bad or foreign option is an :class:`~anchordiv.errors.AnchorDivError`
naming it), each running itself on validated inputs
(``method.run(prior, targets, tau=tau, broad=broad)``, called by :func:`.api.infer`).  NUTS and
SVI share one skeleton (:class:`ModelMethod`) and differ by its hooks.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import inspect
import warnings
from collections.abc import Mapping
from typing import Callable, ClassVar

import numpy as np

from ..errors import AnchorDivError, in_unit_interval
from ..errors import integer, positive, user_stacklevel
from ..provenance import AnchorDivWarning
from .model import CHAIN_METHODS, GUIDES, INIT_STRATEGIES, NUTS_RUNNERS, SVI_RUNNERS, Runners  # noqa: F401
from .model import check_sites, init_strategy, kept_sites, log_density, problem, run_dtype
from .nuts import run_nuts
from .posterior import Fit, Posterior, RunSpec, SampledPosterior, SubspacePosterior
from .registry import Projectable, is_conjugate, no_subspace
from .statistics import check_rank, principal_basis
from .svi import run_svi
from .update import checked_inputs, conjugate_inputs, exact_inputs, exact_update, is_prior, start


def config(cls):
    """Frozen, keyword-only dataclass whose constructor rejects unknown options (and positional
    ones) with an :class:`AnchorDivError` naming them, the method that has them and this
    method's options (instead of a TypeError)."""
    cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    init = cls.__init__
    names = [f.name for f in dataclasses.fields(cls)]

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        unknown = sorted(set(kwargs) - set(names))
        if unknown or args:
            has = [
                m.__name__
                for m in METHODS.values()
                if m is not cls and set(unknown) <= {f.name for f in dataclasses.fields(m)}
            ]
            hint = f"; {' and '.join(has)} take(s) it" if unknown and has else ""
            what = (
                f"unknown option(s) {', '.join(unknown)}"
                if unknown
                else f"takes keyword options only, got {len(args)} positional"
            )
            raise AnchorDivError(
                f"{cls.__name__}: {what}{hint}; {cls.__name__} options: "
                f"{', '.join(names) or '(none)'}"
            )
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


def _check_run(o) -> None:
    """The checks of the options :class:`NUTS` and :class:`SVI` share (a model run's init
    strategy, subspace, model and runners)."""
    integer("seed", o.seed, low=0)
    init_strategy(o.init_strategy)
    if o.subspace is not None:
        integer("subspace", o.subspace, low=1)
    if o.model is not None and not callable(o.model):
        raise AnchorDivError(f"model: a NumPyro model function, got {type(o.model).__name__}")
    kw = o.model_kwargs
    if kw is not None and not (callable(kw) or isinstance(kw, dict)):
        raise AnchorDivError(
            f"model_kwargs: a dict or a callable(broad) -> dict, got {type(kw).__name__}"
        )
    if o.runners is not None and not isinstance(o.runners, Runners):
        raise AnchorDivError(
            f"runners: an anchordiv.adaptation.Runners (or None for the library's table), "
            f"got {type(o.runners).__name__}"
        )


class Method(abc.ABC):
    """An inference method: a frozen configuration that runs itself (:meth:`run`).

    Subclasses are :func:`config` dataclasses; :data:`METHODS` lists the library's by name."""

    #: the method's name (``post.method``, ``adapt(method=...)``)
    name: ClassVar[str] = "abstract"
    #: whether its draws are independent (exact, guide draws) rather than Markov chains
    independent_draws: ClassVar[bool] = True
    #: why an option does not apply to it, where it takes none (appended to that error)
    takes_none: ClassVar[str] = ""

    @abc.abstractmethod
    def run(self, prior, targets: np.ndarray, *, tau: float, broad: np.ndarray | None = None):
        """The posterior of ``prior`` given ``targets [n, d]`` (validated: a float array of unit
        rows, possibly read-only), at the resolved logit scale ``tau``; ``broad [N, d]``
        (validated) or None: the broad anchors the prior was built from."""

    @abc.abstractmethod
    def inputs(self, prior, targets: np.ndarray) -> tuple[object, dict, dict, dict]:
        """``(exact posterior parameters or None, model kwargs, info, fixed)`` this method
        starts from given ``targets [n, d]``: the conjugate update runs only where its result
        is used."""

    def start(self, prior, targets: np.ndarray, broad) -> tuple[np.ndarray, object, dict, dict]:
        """``(frozen targets, exact parameters or None, info, posterior fields)`` of a run."""
        return start(prior, targets, broad, self.name, self.inputs)


#: info entries every posterior has (the rest describe the family's default prior)
COMMON_INFO = ("kind", "method", "prior", "d", "n_broad", "n_targets", "model_kwargs", "rank")


def user_model_info(info: dict) -> dict:
    """``info`` for a run on a user's model: the default prior's strengths and choices (which
    describe the family's own model, not the user's) move under ``"default_prior"``; that prior
    still supplies the base hyperparameters and, under ``subspace=``, the geometry outside."""
    kept = {k: v for k, v in info.items() if k in COMMON_INFO}
    return {**kept, "default_prior": {k: v for k, v in info.items() if k not in COMMON_INFO}}


class ModelMethod(Method):
    """The skeleton NUTS and SVI share: run the family's NumPyro model (or a user's) on the
    targets, in full d or on the broad anchors' top-r principal directions (``subspace=r``).
    A method defines the hooks :meth:`fit`, :attr:`guide_name`, :attr:`map_density`,
    :meth:`needs_exact` and :meth:`needs_density`.  The runner returns plain state (a
    :class:`~.posterior.Fit`: draws, statistics, points, info), and :meth:`run` builds the one
    posterior from it."""

    # the options both have (declared by each dataclass)
    seed: int
    progress: bool
    init_strategy: object
    subspace: int | None
    model: Callable | None
    model_kwargs: object
    x64: bool
    runners: Runners | None

    @property
    def guide_name(self) -> str | None:
        """The guide's name recorded on the posterior (None: not a variational method)."""
        return None

    @property
    def map_density(self) -> bool:
        """Whether the family's model is asked for the density of its parameters
        (:meth:`~.protocol.Family.model_extras`), so that an optimum of the run is their mode."""
        return False

    def needs_exact(self, prior) -> bool:
        """Whether the run uses the conjugate update's result: the geometry outside a
        ``subspace=`` run (a :class:`~.protocol.Conjugate` prior)."""
        return self.subspace is not None and is_conjugate(prior)

    def inputs(self, prior, targets: np.ndarray) -> tuple[object, dict, dict, dict]:
        if self.needs_exact(prior):
            return exact_inputs(prior, targets)
        kwargs, info, fixed = prior.model_inputs(targets)
        if not isinstance(kwargs, Mapping):
            raise AnchorDivError(
                f"prior_kwargs: the {prior.kind} family's model keywords must be a dict "
                f"(name -> value, what its model takes), got {type(kwargs).__name__}"
            )
        return None, kwargs, dict(info), fixed

    @abc.abstractmethod
    def fit(self, run: RunSpec, prob, sites: list[str], exact) -> Fit:
        """The draws of the method run on ``prob`` (:class:`~.model.Problem`), keeping
        ``sites``, for the posterior ``run`` describes; ``exact``: the conjugate update's
        parameters where :meth:`needs_exact` ran it."""

    def needs_density(self, fit: Fit) -> bool:
        """Whether the posterior needs the log joint density of each draw
        (``stats["log_density"]``, what ``point("map")`` maximises)."""
        return True

    def run(self, prior, targets: np.ndarray, *, tau: float, broad: np.ndarray | None = None):
        t, exact, info, fields = self.start(prior, targets, broad)
        run_dtype(self.x64)  # float64 asked for but not enabled: a clear error
        if self.model is not None:  # a user's model: the default prior's choices are not its
            info = user_model_info(info)
        if broad is None and (self.subspace is not None or callable(self.model_kwargs)):
            what = "subspace" if self.subspace is not None else "model_kwargs"
            raise AnchorDivError(
                f"{what}: needs the broad anchors the prior was built from: "
                f"infer(prior, targets, method, broad=broad)"
            )
        fields.update(custom_model=self.model is not None, guide=self.guide_name)
        cls: type[Posterior] = SampledPosterior
        base, b, run_targets = fields["model_kwargs"] or {}, broad, t
        if self.subspace is not None:
            cls = SubspacePosterior
            fields, info, base, b, run_targets = self.project(
                prior, fields, info, exact, base, broad, t
            )
        fam = type(prior)
        prob = problem(fam, self.run_kwargs(fam, base, b), run_targets, self)
        trace = check_sites(fam, prob, fixed=fields["fixed"], lifted=self.subspace is not None)
        warn_unobserved(trace)
        spec = RunSpec(
            prior.kind,
            fam,
            prior.dim,
            fields["fixed"],
            fields.get("subspace"),
            fields.get("completion"),
        )
        fit = self.fit(spec, prob, kept_sites(trace), exact)
        stats = fit.stats
        if self.needs_density(fit):
            model = prob.model if prob.custom else None
            lp = log_density(
                fam, prob.kwargs, spec.fixed, spec.dim, prob.targets, fit.samples, model
            )
            stats = {**(stats or {}), "log_density": lp}
        if prob.custom and self.subspace is None:  # the model the draws come from
            fields["user_model"] = (prob.model, prob.kwargs)
        return cls(
            prior.kind,
            self.name,
            tau,
            t.dtype.str,
            {**info, **fit.info},
            samples=fit.samples,
            stats=stats,
            points=fit.points,
            elbo=fit.elbo,
            raw=fit.raw,
            **fields,
        )

    def run_kwargs(self, fam, kwargs: dict, broad: np.ndarray | None) -> dict:
        """The model's keywords: the prior's ``kwargs`` updated by the ``model_kwargs`` option (a
        callable(broad) replaces them), those the model takes or the user gave, and the
        family's :meth:`~.protocol.Family.model_extras` the model names."""
        model, user = self.model or fam.model, self.model_kwargs
        if callable(user):
            try:
                user = user(broad)
            except Exception as err:  # the user's prior builder: report it as theirs
                raise AnchorDivError(
                    f"model_kwargs: the prior builder failed on the broad anchors "
                    f"{list(np.shape(broad))}: {type(err).__name__}: {err}"
                ) from None
            kwargs = {}
        if user is not None and not isinstance(user, dict):
            raise AnchorDivError(
                f"model_kwargs: a dict or a callable(broad) -> dict, got {type(user).__name__}"
            )
        takes = inspect.signature(model).parameters
        given = {**kwargs, **(user or {})}
        if not any(p.kind is p.VAR_KEYWORD for p in takes.values()):
            given = {k: v for k, v in given.items() if k in takes or k in (user or {})}
        extras = fam.model_extras(given, map_density=self.map_density)
        return {**given, **{k: v for k, v in extras.items() if k in takes}}

    def project(self, prior, fields: dict, info: dict, exact, kwargs: dict, broad, targets):
        """``(posterior fields, info, model kwargs, broad [N, r], targets [n, r])``: the run
        moved onto the broad anchors' top-r principal directions (the family's ``project``),
        its posterior (a :class:`~.posterior.SubspacePosterior`) lifted with ``exact`` (or the
        family's ``completion``) outside them."""
        fam = type(prior)
        if not issubclass(fam, Projectable):
            raise AnchorDivError(f"subspace: {no_subspace(fam)}")
        r = check_rank(self.subspace, prior.dim, len(broad), prior.kind, info.get("rank"))
        basis = principal_basis(broad)
        u = basis[:, :r]
        completion = exact if exact is not None else prior.completion(targets)
        fields = {
            **fields,
            "completion": completion,
            "fixed": {**fields["fixed"], "basis": basis},
            "subspace": r,
        }
        info = {**info, "subspace": r}
        return fields, info, prior.project(kwargs, u), broad @ u, targets @ u


@config
class Exact(Method):
    """The exact (conjugate) update of the prior's family; takes no options.

    ``run`` is the prior's :meth:`~anchordiv.Conjugate.exact`, for a prior that has one.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.NIWPrior.from_anchors(broad, kappa0=5.0, nu0=10.0)
    >>> ad.infer(prior, broad[:3], ad.Exact(), tau=20.0).method
    'exact'
    """

    name: ClassVar[str] = "exact"
    takes_none: ClassVar[str] = " (the exact update is the default prior's closed form)"

    def inputs(self, prior, targets: np.ndarray) -> tuple[object, dict, dict, dict]:
        return conjugate_inputs(prior, targets)

    def run(self, prior, targets: np.ndarray, *, tau: float, broad: np.ndarray | None = None):
        return exact_update(prior, targets, tau=tau, broad=broad)


@config
class NUTS(ModelMethod):
    """NUTS (``numpyro.infer.NUTS``) on the family's explicit NumPyro model or a user's.

    A frozen configuration: a bad value, or an option NUTS does not have, is an
    :class:`AnchorDivError` naming it.

    Parameters
    ----------
    num_samples : int, default 500
        Draws per chain.
    num_warmup : int, default 500
        Warm-up steps per chain.
    num_chains : int, default 2
        Chains.
    seed : int, default 0
        The sampler's PRNG.
    progress : bool, default True
        Show a progress bar.
    init_strategy : str or callable, default "median"
        A name in :data:`~.model.INIT_STRATEGIES` or a NumPyro init strategy.
    target_accept_prob : float, default 0.8
        The step-size adaptation's target acceptance probability.
    dense_mass : bool, default False
        Adapt a dense mass matrix.
    max_tree_depth : int, default 10
        The largest tree depth.
    chain_method : {"sequential", "vectorized", "parallel"}, default "sequential"
        How the chains run.
    subspace : int, optional
        Run on the broad anchors' top-r principal directions (:mod:`.statistics`; needs
        ``infer(..., broad=broad)``).
    model : callable, optional
        A user's NumPyro model ``fn(targets, **model_kwargs)`` defining the kind's sites
        (:mod:`.model`).
    model_kwargs : dict or callable, optional
        Its hyperparameters, or ``f(broad [N, d']) -> dict``.
    x64 : bool, default False
        Run in float64 (needs JAX's float64 mode on).
    runners : Runners, optional
        Where the compiled chain runner is kept and looked up (default the library's bounded
        table :data:`NUTS_RUNNERS`); ``post.raw`` is the runner.

    Raises
    ------
    AnchorDivError
        An unknown option or an invalid value.

    Examples
    --------
    >>> ad.NUTS(num_samples=200, seed=1).num_samples
    200
    >>> try:
    ...     ad.NUTS(guide="normal")
    ... except ad.AnchorDivError as err:
    ...     print(str(err).split(";")[0])
    NUTS: unknown option(s) guide
    """

    num_samples: int = 500
    num_warmup: int = 500
    num_chains: int = 2
    seed: int = 0
    progress: bool = True
    init_strategy: object = "median"
    target_accept_prob: float = 0.8
    dense_mass: bool = False
    max_tree_depth: int = 10
    chain_method: str = "sequential"
    subspace: int | None = None
    model: Callable | None = None
    model_kwargs: object = None
    x64: bool = False
    runners: Runners | None = None

    name: ClassVar[str] = "nuts"
    independent_draws: ClassVar[bool] = False

    def fit(self, run, prob, sites: list[str], exact):
        return run_nuts(run, prob, self, sites)

    def __post_init__(self):
        for k in ("num_samples", "num_warmup", "num_chains", "max_tree_depth"):
            integer(k, getattr(self, k), low=1)
        in_unit_interval("target_accept_prob", self.target_accept_prob)
        if self.chain_method not in CHAIN_METHODS:
            raise AnchorDivError(
                f"chain_method: one of {', '.join(CHAIN_METHODS)}, got {self.chain_method!r}"
            )
        _check_run(self)


@config
class SVI(ModelMethod):
    """NumPyro SVI (:mod:`.svi`) on the family's explicit model or a user's.

    A frozen configuration: a bad value, or an option SVI does not have, is an
    :class:`AnchorDivError` naming it.

    Parameters
    ----------
    guide : str or guide, default "delta"
        ``"delta"`` (MAP), ``"normal"`` (mean field), ``"lowrank"``, a NumPyro AutoGuide or a
        guide function.
    guide_rank : int, optional
        Rank of the ``"lowrank"`` guide.
    optimizer : numpyro.optim optimizer or optax transformation, optional
        Default Adam with ``learning_rate`` decaying to ``lr_decay`` × itself.
    learning_rate : float, default 0.05
        Adam's initial step.
    lr_decay : float, default 0.01
        Final step as a fraction of ``learning_rate``.
    num_steps : int, default 2000
        Optimisation steps.
    num_particles : int, default 1
        ELBO particles per step.
    convergence_window : int, optional
        Steps per window of the convergence check (default ``max(20, num_steps // 10)``).
    convergence_tol : float, default 1e-4
        Relative change of the mean loss between the last two windows counted as converged.
    num_samples : int, default 100
        Guide draws kept (at least 2 for a guide that is a distribution; a delta guide keeps
        its one point).
    seed : int, default 0
        Seeds the optimisation and the guide draws.
    progress : bool, default True
        Show a progress bar.
    init_strategy : str or callable, default "median"
        As for :class:`NUTS`.
    subspace : int, optional
        As for :class:`NUTS`.
    model, model_kwargs : optional
        As for :class:`NUTS`.
    x64 : bool, default False
        As for :class:`NUTS`.
    runners : Runners, optional
        Where the compiled step function is kept (default :data:`SVI_RUNNERS`).

    Raises
    ------
    AnchorDivError
        An unknown option or an invalid value.

    Examples
    --------
    >>> ad.SVI(guide="lowrank", guide_rank=2, num_steps=500).guide
    'lowrank'
    """

    name: ClassVar[str] = "svi"

    guide: object = "delta"
    guide_rank: int | None = None
    optimizer: object = None
    learning_rate: float = 0.05
    lr_decay: float = 0.01
    num_steps: int = 2000
    num_particles: int = 1
    convergence_window: int | None = None
    convergence_tol: float = 1e-4
    num_samples: int = 100
    seed: int = 0
    progress: bool = True
    init_strategy: object = INIT_STRATEGIES[0]
    subspace: int | None = None
    model: Callable | None = None
    model_kwargs: object = None
    x64: bool = False
    runners: Runners | None = None

    @property
    def guide_name(self) -> str:
        """The guide's name: a named guide's, or a user guide's class name."""
        return self.guide if isinstance(self.guide, str) else type(self.guide).__name__

    @property
    def map_density(self) -> bool:
        """A delta guide finds the mode of the parameters' density."""
        return self.guide == "delta"

    def needs_exact(self, prior) -> bool:
        """Also for a delta guide on the family's own model: the conjugate mean it reports as
        ``"mean"``."""
        delta = self.guide == "delta" and self.model is None
        return is_conjugate(prior) and (self.subspace is not None or delta)

    def fit(self, run, prob, sites: list[str], exact):
        return run_svi(run, prob, self, sites, exact)

    def needs_density(self, fit) -> bool:
        """A delta guide's ``"map"`` is fixed at fit time: no density needed for it."""
        return "map" not in (fit.points or {})

    def __post_init__(self):
        if isinstance(self.guide, str) and self.guide not in GUIDES:
            raise AnchorDivError(
                f"guide: unknown {self.guide!r}; one of {', '.join(GUIDES)}, "
                f"an AutoGuide or a guide function"
            )
        if self.guide_rank is not None:
            integer("guide_rank", self.guide_rank, low=1)
        for k in ("learning_rate", "lr_decay", "convergence_tol"):
            positive(k, getattr(self, k))
        for k in ("num_steps", "num_particles"):
            integer(k, getattr(self, k), low=1)
        # a guide that is a distribution keeps >= 2 draws (refused here, not after the fit)
        integer("num_samples", self.num_samples, low=1 if self.guide == "delta" else 2)
        if self.convergence_window is not None:
            integer("convergence_window", self.convergence_window, low=1)
        _check_run(self)


#: the inference methods by name (``adapt(method=...)``, ``post.method``): name -> class
METHODS: dict[str, type[Method]] = {m.name: m for m in (Exact, NUTS, SVI)}


def options(method) -> dict:
    """The method's fields as the option dict the runners read."""
    return {f.name: getattr(method, f.name) for f in dataclasses.fields(method)}


def warn_unobserved(trace: dict) -> None:
    """Warn when a traced model observes nothing.

    Parameters
    ----------
    trace : dict
        ``{site: {"type", "is_observed", ...}}`` (a NumPyro trace).

    Returns
    -------
    None
        Warns with :class:`~anchordiv.AnchorDivWarning` when no site is observed.
    """
    observed = [k for k, s in trace.items() if s["type"] == "sample" and s["is_observed"]]
    if not observed:
        warnings.warn(
            "model: no sample site observes the targets (no obs=targets), so the "
            "posterior is the prior: the targets change nothing",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )


def validated(
    prior, targets, method, *, tau: float | None, normalize: bool, broad
) -> tuple[np.ndarray, float, np.ndarray | None]:
    """``(targets [n, d], τ, broad [N, d] or None)`` checked for a run of ``method`` on
    ``prior``: what ``method.run`` takes (:func:`.update.checked_inputs`, the method checked
    first).
    """
    if not is_prior(prior):
        raise AnchorDivError(
            f"prior: a prior object (ad.NIWPrior, ad.load_prior, ...), got {type(prior).__name__}"
        )
    if not isinstance(method, Method):
        raise AnchorDivError(f"method: ad.Exact(), ad.NUTS(...) or ad.SVI(...), got {method!r}")
    return checked_inputs(prior, targets, tau=tau, normalize=normalize, broad=broad)
