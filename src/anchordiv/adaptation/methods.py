"""The inference methods as frozen configuration objects (:class:`Exact`, :class:`NUTS`,
:class:`SVI`), validated when they are built: a bad value, or an option the method does not
have, is an :class:`~anchordiv.errors.AnchorDivError` that names it.  The runners
(:mod:`.sampling`, :mod:`.variational`) read them field by field; :func:`.inference.infer` runs
them.  This module imports nothing else of the package's adaptation layer, so every runner can
name the configuration it takes."""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Callable, ClassVar

from ..errors import AnchorDivError, in_unit_interval, integer, positive

#: init strategies by name (``init_strategy=``); default ``"median"``
INIT_STRATEGIES = ("median", "mean", "feasible", "sample", "uniform")
#: how NUTS runs several chains
CHAIN_METHODS = ("sequential", "vectorized", "parallel")
#: SVI guides by name
GUIDES = ("delta", "normal", "lowrank")


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


class Runners:
    """Compiled NUTS chain runners and SVI step functions, kept by what they were compiled for
    (model, static keywords, settings, argument shapes); the least recently used is dropped
    first beyond ``max_size``.

    The library keeps one bounded table per method (:data:`NUTS_RUNNERS`, :data:`SVI_RUNNERS`);
    hold your own to keep a study's compiled programs apart, size or clear them::

        mine = ad.adaptation.Runners(max_size=2)
        post = ad.infer(prior, targets, ad.NUTS(runners=mine))
        len(mine), mine.clear()

    Parameters
    ----------
    max_size : int, default 8
        How many compiled runners to keep (≥ 1).

    Examples
    --------
    >>> from anchordiv.adaptation import Runners
    >>> r = Runners(max_size=2)
    >>> r.get("a", lambda: 1), r.get("a", lambda: 2), len(r)
    (1, 1, 1)
    >>> r
    Runners(1 of 2)
    """

    def __init__(self, max_size: int = 8):
        self.max_size = integer("max_size", max_size, low=1)
        self._table: collections.OrderedDict = collections.OrderedDict()

    def get(self, key, build: Callable):
        """The runner kept under ``key`` (marked most recently used), else ``build()`` kept
        under it; ``key`` None: ``build()``, not kept (an unhashable setting, e.g. a custom
        init strategy object)."""
        if key is None:
            return build()
        if key in self._table:
            self._table.move_to_end(key)
            return self._table[key]
        out = self._table[key] = build()
        while len(self._table) > self.max_size:
            self._table.popitem(last=False)
        return out

    def __contains__(self, key) -> bool:
        return key in self._table

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        """Drop every kept runner (their compiled programs are freed with them)."""
        self._table.clear()

    def __repr__(self) -> str:
        return f"Runners({len(self)} of {self.max_size})"


#: the default tables of compiled NUTS runners and SVI steps (``runners=None``)
NUTS_RUNNERS = Runners(8)
SVI_RUNNERS = Runners(8)


def _runners(r):
    if r is not None and not isinstance(r, Runners):
        raise AnchorDivError(
            f"runners: an anchordiv.adaptation.Runners (or None for the library's table), "
            f"got {type(r).__name__}"
        )


def _check_run(o) -> None:
    """The checks of the options :class:`NUTS` and :class:`SVI` share (a model run's init
    strategy, subspace, model and runners)."""
    _init(o.init_strategy)
    _subspace(o.subspace)
    _model(o.model, o.model_kwargs)
    _runners(o.runners)


def _subspace(r):
    return None if r is None else integer("subspace", r, low=1)


def _init(spec):
    if not callable(spec) and spec not in INIT_STRATEGIES:
        raise AnchorDivError(
            f"init_strategy: one of {', '.join(INIT_STRATEGIES)} or a NumPyro "
            f"init strategy, got {spec!r}"
        )


def _model(model, model_kwargs):
    if model is not None and not callable(model):
        raise AnchorDivError(f"model: a NumPyro model function, got {type(model).__name__}")
    if model_kwargs is not None and not (callable(model_kwargs) or isinstance(model_kwargs, dict)):
        raise AnchorDivError(
            f"model_kwargs: a dict or a callable(broad) -> dict, got {type(model_kwargs).__name__}"
        )


@config
class Exact:
    """The exact (conjugate) update of the prior's family; takes no options.

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


@config
class NUTS:
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
        Run on the broad anchors' top-r principal directions (:mod:`.subspace`; needs
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

    def __post_init__(self):
        for k in ("num_samples", "num_warmup", "num_chains", "max_tree_depth"):
            integer(k, getattr(self, k), low=1)
        integer("seed", self.seed, low=0)
        in_unit_interval("target_accept_prob", self.target_accept_prob)
        if self.chain_method not in CHAIN_METHODS:
            raise AnchorDivError(
                f"chain_method: one of {', '.join(CHAIN_METHODS)}, got {self.chain_method!r}"
            )
        _check_run(self)


@config
class SVI:
    """NumPyro SVI (:mod:`.variational`) on the family's explicit model or a user's.

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
        Guide draws kept.
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
    init_strategy: object = "median"
    subspace: int | None = None
    model: Callable | None = None
    model_kwargs: object = None
    x64: bool = False
    runners: Runners | None = None

    name: ClassVar[str] = "svi"

    def __post_init__(self):
        if isinstance(self.guide, str) and self.guide not in GUIDES:
            raise AnchorDivError(
                f"guide: unknown {self.guide!r}; one of {', '.join(GUIDES)}, "
                f"an AutoGuide or a guide function"
            )
        if self.guide_rank is not None:
            integer("guide_rank", self.guide_rank, low=1)
        positive("learning_rate", self.learning_rate)
        positive("lr_decay", self.lr_decay)
        positive("convergence_tol", self.convergence_tol)
        for k in ("num_steps", "num_particles", "num_samples"):
            integer(k, getattr(self, k), low=1)
        if self.convergence_window is not None:
            integer("convergence_window", self.convergence_window, low=1)
        integer("seed", self.seed, low=0)
        _check_run(self)


METHODS = {"exact": Exact, "nuts": NUTS, "svi": SVI}


def options(method) -> dict:
    """The method's fields as the option dict the runners read."""
    return {f.name: getattr(method, f.name) for f in dataclasses.fields(method)}


__all__ = [
    "NUTS_RUNNERS",
    "Runners",
    "SVI_RUNNERS",
    "CHAIN_METHODS",
    "Exact",
    "GUIDES",
    "INIT_STRATEGIES",
    "METHODS",
    "NUTS",
    "SVI",
    "options",
]
