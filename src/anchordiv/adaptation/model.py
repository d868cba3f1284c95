"""The model a NUTS or SVI run works on: the targets' likelihood given a prior
(:class:`Likelihood`, :func:`with_log_density`), the NumPyro problem (:class:`Problem`,
:func:`problem`), the options' vocabularies, the bounded tables of compiled runners
(:class:`Runners`) and the run's sanity warnings::

    lik = post.likelihood()                 # or prior.likelihood()
    lik.log_density(draws {site: [S, ...]}, targets [n, d])   # [S, n]
    lik.sample(draws, n, rng)                                 # [S, n, d]
    lik.log_joint(targets [n, d], draws)                      # [S]
    lik.prior_draws(rng, n)                                   # {site: [n, ...]}

:class:`Likelihood` traces the family's model ``model(targets, **model_kwargs)`` in float64 (the
observed site named ``"targets"``, in a plate over the anchors); a family with closed forms
names a subclass as its ``likelihood_type`` and overrides what it has.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro import handlers, infer
from numpyro.distributions import constraints
from numpyro.distributions.transforms import biject_to
from numpyro.infer import Predictive
from numpyro.infer.util import log_likelihood
from numpyro.primitives import Messenger

from .._tolerance import SUPPORT_RTOL, first_max
from ..errors import AnchorDivError, integer
from .registry import is_builtin

#: NumPyro init strategies by name (``init_strategy=``); default ``"median"``
_INITS = {
    "median": lambda: infer.init_to_median(num_samples=15),
    "mean": infer.init_to_mean,
    "feasible": infer.init_to_feasible,
    "sample": infer.init_to_sample,
    "uniform": infer.init_to_uniform,
}
INIT_STRATEGIES = tuple(_INITS)
#: how NUTS runs several chains
CHAIN_METHODS = ("sequential", "vectorized", "parallel")
#: SVI guides by name
GUIDES = ("delta", "normal", "lowrank")


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


#: the observed site every family's model names
OBSERVED = "targets"
#: sites of the explicit models that only parametrise another site (excluded from densities)
AUXILIARY_SUFFIX = "_raw"


def observed_name_error(observed: list[str], model) -> str:
    """Why a model whose observed site(s) ``observed`` are not named :data:`OBSERVED` cannot be
    used (the message of an :class:`AnchorDivError`)."""
    name = getattr(model, "__qualname__", None) or type(model).__name__
    return (
        f"model: {name} observes the site(s) {', '.join(repr(k) for k in observed) or '(none)'}; "
        f"the target anchors' site must be named {OBSERVED!r}: "
        f"numpyro.sample({OBSERVED!r}, ..., obs=targets) in a plate over the anchors (the "
        f"likelihood, LOO and the predictive checks read it by that name)"
    )


class Likelihood:
    """The likelihood of target anchors under ``family``'s model with hyperparameters
    ``kwargs`` (module docstring): the generic one, traced from the model.

    Parameters
    ----------
    family : type
        The family class (its ``model``).
    kwargs : dict
        The model's keyword arguments (``Posterior.model_kwargs``).
    fixed : dict
        Arrays every draw shares (``Posterior.fixed``).
    d : int
        The embedding dimension.

    Examples
    --------
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> lik = post.likelihood()
    >>> lik
    NIWLikelihood(NIWPrior, d=4)
    >>> lik.log_density(post.draws(0, 3), np.eye(4)[:2]).shape
    (3, 2)
    """

    #: sites holding covariance matrices (checked symmetric positive definite in a user's model)
    positive_definite: ClassVar[tuple[str, ...]] = ()

    def __init__(self, family, kwargs: dict | None, fixed: dict | None, d: int):
        self.family, self.kwargs, self.fixed, self.d = family, dict(kwargs or {}), fixed or {}, d

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.family.__name__}, d={self.d})"

    @property
    def model(self) -> Callable:
        """The NumPyro model traced: the family's."""
        return self.family.model

    def log_density(self, draws: dict, targets: np.ndarray) -> np.ndarray:
        """Pointwise ``log p(t_i | θ_s)`` ``[S, n]`` (float64)."""
        with jax.enable_x64(True):
            try:
                args = (self.model, _jax(draws), jnp.asarray(targets))
                out = log_likelihood(*args, **self._jax_kwargs())
            except (AssertionError, KeyError, TypeError, ValueError) as err:
                raise AnchorDivError(self._unreadable(draws, err)) from None
            if OBSERVED not in out:
                raise AnchorDivError(observed_name_error(list(out), self.model))
            return np.asarray(out[OBSERVED], np.float64)

    def _unreadable(self, draws: dict, err: Exception) -> str:
        """Why the traced model could not score ``draws`` (an :class:`AnchorDivError`'s
        message): the sites it was given, and what a model needs of them."""
        given = ", ".join(f"{k} {tuple(np.shape(v))}" for k, v in draws.items()) or "none"
        return (
            f"likelihood: the {self.family.__name__} model, traced, cannot score these draws "
            f"(sites {given}; {type(err).__name__}: {str(err) or 'no message'}): the generic "
            f"likelihood substitutes the draws into the model and needs a value for every one "
            f"of its latent sample sites, with a leading draw axis — draws of derived sites "
            f"only (an auxiliary '*{AUXILIARY_SUFFIX}' site left out, a deterministic site in "
            f"its place) need the family's own likelihood_type"
        )

    def sample(self, draws: dict, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` anchors simulated per draw ``[S, n, d]`` from the likelihood."""
        model = self.model
        with jax.enable_x64(True):
            kwargs = self._jax_kwargs()
            placeholder = jnp.zeros((int(n), self.d))

            def one(key, values):
                run = handlers.substitute(handlers.seed(_Unobserved(model), key), values)
                trace = handlers.trace(run).get_trace(placeholder, **kwargs)
                if OBSERVED not in trace:
                    observed = [k for k, s in trace.items() if s.get("is_observed")]
                    raise AnchorDivError(observed_name_error(observed, model))
                return trace[OBSERVED]["value"]

            values = _jax(draws)
            size = len(next(iter(values.values())))
            keys = jax.random.split(jax.random.PRNGKey(int(rng.integers(2**31))), size)
            return np.asarray(jax.vmap(one)(keys, values), np.float64)

    def log_joint(self, targets: np.ndarray, draws: dict) -> np.ndarray:
        """``log p(θ_s, targets)`` ``[S]`` of the model (float64)."""
        with jax.enable_x64(True):
            return log_joint(self.model, jnp.asarray(targets), self._jax_kwargs(), draws)

    def nonfinite_sites(self, targets: np.ndarray, draws: dict, i: int) -> list[str]:
        """The sample sites of the model whose log density is not finite at draw ``i`` of
        ``draws {site: [S, ...]}`` given ``targets`` (what names the site of a non-finite
        log prior or log likelihood in an error)."""
        with jax.enable_x64(True):
            t = jnp.asarray(np.asarray(targets, np.float64))
            return nonfinite_density_sites(self.model, t, self._jax_kwargs(), _jax(draws), i)

    def exact_prior(self):
        """The model's prior as exact parameters (``mean()``, ``mode()``, ``sample(rng, n)``),
        or None where it has no closed form (then :meth:`prior_draws` traces the model)."""
        return None

    def prior_draw(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """One exact prior draw ``{site: ...}`` (SBC's truth): the first of :meth:`prior_draws`
        (the latent kinds' own: one Gibbs chain burnt in longer)."""
        return {k: v[0] for k, v in self.prior_draws(rng, 1).items()}

    def prior_draws(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` draws ``{site: [n, ...]}`` of the model's latent and deterministic sites under
        its prior (the :meth:`exact_prior`'s own draws where there is one)."""
        exact = self.exact_prior()
        if exact is not None:
            return exact.sample(rng, n)
        with jax.enable_x64(True):
            out = Predictive(self.model, num_samples=int(n), parallel=True)(
                jax.random.PRNGKey(int(rng.integers(2**31))),
                jnp.zeros((1, self.d)),
                **self._jax_kwargs(),
            )
            return {k: np.asarray(v, np.float64) for k, v in out.items() if k != OBSERVED}

    # ---- the sites ------------------------------------------------------------------------
    @classmethod
    def site_shapes(cls, d: int, shapes: dict) -> dict[str, tuple]:
        """Expected shapes of the family's sites at dimension ``d`` given a model's site
        shapes ``{site: shape of one draw}`` (a free size, e.g. components, is read from
        there); ``{}``: no requirement."""
        return {}

    @classmethod
    def check_values(cls, values: dict, kind: str) -> None:
        """Raise an :class:`AnchorDivError` naming the first :attr:`positive_definite` site of
        ``values`` (one draw or a batch) that is not a symmetric positive-definite matrix."""
        for site in cls.positive_definite:
            if site in values and not _positive_definite(np.asarray(values[site], np.float64)):
                m = np.shape(values[site])
                raise AnchorDivError(
                    f"model: site {site!r} is not a symmetric positive-definite "
                    f"covariance {list(m[-2:])} (kind {kind!r}); "
                    f"build it as e.g. L Lᵀ + diag(ψ) with ψ > 0"
                )

    @classmethod
    def summarise(cls, s: dict, which: str, lp: np.ndarray | None) -> dict:
        """Point parameters from samples ``{site: [S, ...]}``: the draw of highest posterior
        density ``lp [S]`` (``"map"``) or the mean."""
        if which == "map":
            i = first_max(lp)
            return {k: v[i] for k, v in s.items()}
        return {k: v.mean(0) for k, v in s.items()}

    def _jax_kwargs(self) -> dict:
        return {
            k: jnp.asarray(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
            for k, v in self.kwargs.items()
        }


class UserModelLikelihood(Likelihood):
    """The generic, traced likelihood of a user's own NumPyro ``model(targets, **kwargs)`` (a
    run with ``model=``): what its draws were sampled under, whatever the family's likelihood
    is (:func:`anchordiv.inference_data`'s ``log_likelihood`` group of such a run)."""

    def __init__(self, family, model: Callable, kwargs: dict | None, fixed: dict | None, d: int):
        kwargs = kwargs or {}
        arrays = {
            k: np.asarray(v)
            for k, v in kwargs.items()
            if hasattr(v, "dtype") and hasattr(v, "shape")
        }
        floats = {k: a.astype(np.float64) for k, a in arrays.items() if a.dtype.kind == "f"}
        super().__init__(family, {**kwargs, **floats}, fixed, d)  # JAX arrays as NumPy float64
        self._model = model

    def __repr__(self) -> str:
        name = getattr(self._model, "__qualname__", type(self._model).__name__)
        return f"{type(self).__name__}({name}, d={self.d})"

    @property
    def model(self) -> Callable:
        return self._model


def _positive_definite(m: np.ndarray) -> bool:
    sym = np.allclose(
        m, np.swapaxes(m, -1, -2), rtol=1e-5, atol=1e-8 * max(np.abs(m).max(initial=0.0), 1e-300)
    )
    if not (sym and bool(np.all(np.isfinite(m)))):
        return False
    try:
        np.linalg.cholesky(0.5 * (m + np.swapaxes(m, -1, -2)))
    except np.linalg.LinAlgError:
        return False
    return True


def on_support(fn, value):
    """``value`` moved onto the support of the distribution ``fn`` through its bijection
    (``t(t⁻¹(value))``) where that moves it by at most :data:`~anchordiv._tolerance.SUPPORT_RTOL`
    (relative): a draw made in float32 — a Cholesky factor of a correlation matrix whose rows
    are off unit norm by ~1e-7, a simplex off sum 1 — is re-scored in float64 at the valid
    point NumPyro's stricter float64 support check accepts, not at −∞; a value farther off
    (not a rounding: a draw of another model) is kept, and scores as it is.  An unconstrained
    or discrete site, or a support without a bijection, is returned as it is."""
    support = getattr(fn, "support", None)
    if support is None or getattr(fn, "is_discrete", False):
        return value
    base = getattr(support, "base_constraint", support)
    if base is constraints.real or isinstance(base, type(constraints.real)):
        return value
    try:
        transform = biject_to(support)
    except (NotImplementedError, TypeError, ValueError):
        return value
    # in the default float dtype (float64 under x64): a float32 draw would meet float64
    # constants inside the bijection (LKJ's stick-breaking: a raw dtype TypeError)
    value = jnp.asarray(value, jnp.result_type(float))
    moved = transform(transform.inv(value))
    near = jnp.all(jnp.abs(moved - value) <= SUPPORT_RTOL * (1.0 + jnp.abs(value)))
    return jnp.where(near, moved, value)


def site_log_densities(model, targets, kwargs: dict, draw: dict) -> dict[str, Any]:
    """``{site: log density}`` of every sample site of ``model(targets, **kwargs)`` at one
    constrained draw ``draw {site: value}`` (each value moved :func:`on_support`), auxiliary
    ``*_raw`` sites left out; the observed site's is summed over the anchors."""
    run = handlers.substitute(handlers.seed(model, 0), data=draw)
    tr = handlers.trace(run).get_trace(jnp.asarray(targets), **kwargs)
    out = {}
    for name, site in tr.items():
        if site["type"] != "sample" or name.endswith(AUXILIARY_SUFFIX):
            continue
        value = site["value"] if site.get("is_observed") else on_support(site["fn"], site["value"])
        lp = site["fn"].log_prob(value)
        out[name] = jnp.sum(lp * (1.0 if site["scale"] is None else site["scale"]))
    return out


def log_joint(model, targets, kwargs: dict, draws: dict) -> np.ndarray:
    """``log p(θ_s, targets)`` ``[S]`` of a NumPyro ``model(targets, **kwargs)`` at constrained
    parameter values ``draws {site: [S, ...]}``: no Jacobian of NUTS's unconstrained
    coordinates, no auxiliary ``*_raw`` sites (deterministic sites take their draws too).
    Each latent value is first moved onto its distribution's support (:func:`on_support`), so
    draws made in float32 are re-scored in float64 at their valid neighbour, never at −∞."""
    params = {k: jnp.asarray(v) for k, v in draws.items()}

    def one(p):
        return sum(site_log_densities(model, targets, kwargs, p).values(), jnp.zeros(()))

    # eager vmap, not a jit of this call's closure: a fresh jit compiled on every fit
    return np.asarray(jax.vmap(one)(params), np.float64)


def nonfinite_density_sites(model, targets, kwargs: dict, draws: dict, i: int) -> list[str]:
    """The sites of draw ``i`` of ``draws {site: [S, ...]}`` whose drawn value is not finite,
    else the sample sites whose log density is not finite there (:func:`site_log_densities`);
    ``[]`` where the model cannot be traced there."""
    one = {k: jnp.asarray(np.asarray(v)[i]) for k, v in draws.items()}
    values = [k for k, v in one.items() if not bool(jnp.all(jnp.isfinite(v)))]
    if values:
        return values
    try:  # as log_joint scores it: NumPyro's support check on, its argument checks as set
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dens = site_log_densities(model, targets, kwargs, one)
    except Exception:  # the model itself fails there: nothing finer to say
        return []
    return [k for k, v in dens.items() if not bool(jnp.all(jnp.isfinite(v)))]


def _jax(draws: dict) -> dict:
    return {k: jnp.asarray(np.asarray(v, np.float64)) for k, v in draws.items()}


class _Unobserved(Messenger):
    """A model with the observed ``targets`` site sampled instead (its value dropped)."""

    def process_message(self, msg):
        if msg["type"] == "sample" and msg["name"] == OBSERVED:
            msg["is_observed"], msg["value"] = False, None


def with_log_density(post, targets, model=None, model_kwargs: dict | None = None):
    """Copy of a sampled posterior with the log joint density of each draw.

    Adds ``stats["log_density"] [chains, draws]``: the log joint of each draw's constrained
    parameters, which ``post.point("map")`` maximises — the family's own model's
    (``model=None``: its likelihood type's :meth:`Likelihood.log_joint`, closed form where it has
    one) or a user's ``model``'s, every stored site substituted (:func:`log_joint`: the density
    of the model's own sample sites).

    Parameters
    ----------
    post : Posterior
        A NUTS or SVI posterior.
    targets : array_like, shape [n, d]
        The target anchors it was fitted to.
    model : callable, optional
        A user's NumPyro model (default: the kind's).
    model_kwargs : dict, optional
        Its hyperparameters (default ``post.model_kwargs``).

    Returns
    -------
    Posterior
        The copy with ``stats["log_density"]``.

    Raises
    ------
    AnchorDivError
        No ``model_kwargs`` given and the posterior carries none.
    """
    kwargs = model_kwargs if model_kwargs is not None else post.model_kwargs
    if kwargs is None:
        raise AnchorDivError("model_kwargs: needed to evaluate the posterior density")
    post.flat_samples()  # its clear error where there are no draws
    lp = log_density(post.family_class, kwargs, post.fixed, post.dim, targets, post.samples, model)
    return dataclasses.replace(post, stats={**(post.stats or {}), "log_density": lp})


def log_density(
    fam, kwargs: dict, fixed: dict, d: int, targets, samples: dict, model=None
) -> np.ndarray:
    """The log joint ``[chains, draws]`` of the draws ``samples {site: [chains, draws, ...]}``
    of the family class ``fam`` given ``targets``: under its model (``model=None``: its
    :attr:`likelihood_type` at ``kwargs``, ``fixed`` and dimension ``d``) or a user's
    ``model`` run with ``kwargs``."""
    shape = next(iter(samples.values())).shape[:2]
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in samples.items()}
    if model is None:
        lik = fam.likelihood_type(fam, kwargs, fixed, d)
        lp = lik.log_joint(np.asarray(targets, np.float64), flat)
    else:
        lp = log_joint(model, targets, kwargs, flat)
    return lp.reshape(shape)


REMEDY = (
    "try float64 (x64=True with jax_enable_x64 on), a smaller learning_rate, "
    "method='svi', or subspace=r (e.g. 16) so the model runs on the broad anchors' top-r "
    "principal directions"
)


@dataclasses.dataclass
class Problem:
    """A model ready to run: ``model(targets, **kwargs)`` with ``targets [n, d']`` in the run's
    dtype; ``custom`` says whether the model is the user's.  ``data``: what the samplers pass
    as the model's first argument instead of the targets — a kind's own model that has a
    ``model_data(targets, kwargs)`` attribute takes that (a summary of the targets whose shapes
    do not depend on n, so one compiled sampler serves every target count); None: the
    targets."""

    model: Callable
    kwargs: dict
    targets: jax.Array
    custom: bool
    data: Any = None

    @property
    def args(self) -> tuple:
        return (self.targets if self.data is None else self.data,)


def run_dtype(x64: bool):
    """The models' dtype: float64 when JAX's float64 mode is on, else float32.  ``x64=True``
    asks for float64 and is an error while the mode is off (this library never flips the
    global setting: precision is the caller's choice)."""
    if jax.config.jax_enable_x64:  # type: ignore[attr-defined]
        return jnp.float64
    if x64:
        raise AnchorDivError(
            "x64: float64 inference was requested but JAX runs in float32; "
            "enable float64 once at start-up, before any JAX work: "
            "jax.config.update('jax_enable_x64', True) (or set "
            "JAX_ENABLE_X64=1)"
        )
    return jnp.float32


def problem(fam, kwargs: dict, targets: np.ndarray, o: Any) -> Problem:
    """The model and its keyword arguments (``fam``: the family class, whose ``model`` runs
    unless the method names a user's).  ``map_density``: ask the kind's own model for the
    density of its parameters (``map_jacobian=True``) so that a delta guide finds their mode."""
    custom = o.model is not None
    model = o.model or fam.model
    dt = run_dtype(o.x64)
    cast = {
        k: jnp.asarray(v, dt) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
        for k, v in kwargs.items()
    }
    t = jnp.asarray(targets, dt)
    summarise = None if custom else getattr(model, "model_data", None)
    return Problem(model, cast, t, custom, summarise(t, cast) if summarise else None)


def check_sites(fam, prob: Problem, *, fixed: dict | None = None, lifted: bool = False) -> dict:
    """Trace the model abstractly (shapes only: no compilation) and require the sites the kind's
    anchor model needs; returns ``{site: {"type", "is_observed", "shape"}}``.  A user's model
    (``model=``) of a kind with covariance sites is checked at one prior draw
    (:func:`check_prior_draw`); a user's own family's model too (:func:`check_family_draw`:
    its anchor model built from the draw, ``fixed`` the arrays it shares, unless ``lifted``
    — a ``subspace=`` run, whose sites are r-dimensional — symmetric [d, d] sites positive
    definite, every log density finite), before any sampling."""
    sites = {}

    def trace():
        tr = handlers.trace(handlers.seed(prob.model, 0)).get_trace(*prob.args, **prob.kwargs)
        for k, s in tr.items():
            discrete = s["type"] == "sample" and bool(getattr(s.get("fn"), "is_discrete", False))
            observed = s.get("is_observed", False)
            sites[k] = {"type": s["type"], "is_observed": observed, "discrete": discrete}
        return {k: s["value"] for k, s in tr.items() if s["type"] in ("sample", "deterministic")}

    with guard("model"):
        try:
            shapes = jax.eval_shape(trace)
        except TypeError as err:
            raise AnchorDivError(
                f"model: calling model(targets, **model_kwargs) failed: {err}; "
                f"model_kwargs: {', '.join(sorted(prob.kwargs))}"
            ) from None
    for k, v in shapes.items():
        sites[k]["shape"] = tuple(v.shape)
    observed = [k for k, s in sites.items() if s["type"] == "sample" and s["is_observed"]]
    traced = fam.likelihood_type.log_density is Likelihood.log_density  # reads the site by name
    # a user's model= is read by that name too (its simulated anchors, inference_data's
    # predictive groups): refused here, not after the sampling
    if (traced or prob.custom) and observed and OBSERVED not in observed:
        raise AnchorDivError(observed_name_error(observed, prob.model))
    discrete = [k for k, s in sites.items() if s["discrete"] and not s["is_observed"]]
    if discrete:
        raise AnchorDivError(
            f"model: latent site(s) {', '.join(repr(k) for k in discrete)} are discrete; NUTS "
            f"and SVI here need continuous latent sites — sum the discrete variable out (e.g. "
            f"dist.MixtureSameFamily for a component indicator) or make it continuous"
        )
    require_sites(fam, {k: s.get("shape", ()) for k, s in sites.items()}, prob.targets.shape[-1])
    if prob.custom and fam.likelihood_type.positive_definite:
        check_prior_draw(fam, prob)
    elif not prob.custom and not is_builtin(fam):
        check_family_draw(fam, prob, fixed or {}, lifted)
    return sites


def check_family_draw(fam, prob: Problem, fixed: dict, lifted: bool) -> None:
    """The checks a built-in family's model is trusted to pass, made on a user's family at one
    prior draw of its model, before sampling (each failure an :class:`AnchorDivError` naming
    the site): its :meth:`~.protocol.Family.to_model` builds an anchor model of the targets'
    dimension from the draw (not under ``lifted``), every declared site that is a symmetric
    ``[d, d]`` matrix is positive definite, and every site's value and log density is finite."""
    d = int(prob.targets.shape[-1])
    try:
        with numpyro.validation_enabled(False), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = handlers.trace(handlers.seed(prob.model, 0)).get_trace(*prob.args, **prob.kwargs)
    except Exception:  # a model failing here fails in the sampler with its own message
        return
    draw = {k: np.asarray(tr[k]["value"], np.float64) for k in fam.sites if k in tr}
    given = ", ".join(f"{k} {list(v.shape)}" for k, v in draw.items())
    who = f"the {fam.kind} family's model ({getattr(prob.model, '__qualname__', 'model')})"
    for site, v in draw.items():
        square = v.ndim == 2 and v.shape == (d, d) and np.all(np.isfinite(v))
        if square and np.allclose(v, v.T, rtol=1e-5, atol=1e-8 * max(np.abs(v).max(), 1e-300)):
            if not _positive_definite(v):
                low = float(np.linalg.eigvalsh(0.5 * (v + v.T)).min())
                raise AnchorDivError(
                    f"model: site {site!r} of {who} is a symmetric [{d}, {d}] matrix that is not "
                    f"positive definite at a prior draw (smallest eigenvalue {low:.3g}); a "
                    f"covariance must be, e.g. L Lᵀ + diag(ψ) with ψ > 0 — refused before sampling"
                )
    bad = nonfinite_sites(prob)
    if bad:
        raise AnchorDivError(
            f"model: {who} has a non-finite value or log density at site(s) "
            f"{', '.join(repr(k) for k in bad)} at a prior draw (d = {d}); every site of a "
            f"family's model must be finite where its prior puts mass — refused before sampling"
        )
    if lifted:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fam.to_model(draw, 1.0, str(prob.targets.dtype), fixed)
        dim = int(model.dim)
    except Exception as err:
        raise AnchorDivError(
            f"model: {fam.__name__}.to_model cannot build an anchor model from a prior draw of "
            f"{who} (sites {given}; d = {d}): {type(err).__name__}: {err} — its sites must have "
            f"the shapes to_model reads, at the targets' dimension; refused before sampling"
        ) from None
    if dim != d:
        raise AnchorDivError(
            f"model: {fam.__name__}.to_model builds an anchor model of d = {dim} from a prior "
            f"draw of {who} (sites {given}), not the targets' d = {d}; refused before sampling"
        )


def require_sites(fam, shapes: dict[str, tuple], d: int) -> None:
    """Raise an :class:`AnchorDivError` naming the site for a model whose sites miss the
    family's ``sites`` or have the wrong shape (``shapes``: site -> shape of one draw; the
    expected ones are its likelihood's ``site_shapes``)."""
    missing = [s for s in fam.sites if s not in shapes]
    if missing:
        raise AnchorDivError(
            f"model: the NumPyro model must define the site(s) "
            f"{', '.join(missing)} for kind {fam.kind!r}"
        )
    for site, want in fam.likelihood_type.site_shapes(int(d), shapes).items():
        if tuple(shapes[site]) != tuple(want):
            raise AnchorDivError(
                f"model: site {site!r} has shape {list(shapes[site])}; "
                f"kind {fam.kind!r} needs {list(want)} at d = {d}"
            )


def check_prior_draw(fam, prob: Problem) -> None:
    """A user's covariance sites must be positive definite: checked at one prior draw (an
    :class:`AnchorDivError` names the site)."""
    try:
        with numpyro.validation_enabled(False):
            tr = handlers.trace(handlers.seed(prob.model, 0)).get_trace(*prob.args, **prob.kwargs)
    except Exception:  # a model failing here fails in the sampler with its own message
        return
    lik = fam.likelihood_type
    values = {k: np.asarray(tr[k]["value"]) for k in lik.positive_definite if k in tr}
    lik.check_values({k: v for k, v in values.items() if np.all(np.isfinite(v))}, fam.kind)


def kept_sites(trace: dict) -> list[str]:
    """Every latent sample site and deterministic site (not observed ones, not factors)."""
    return [
        name
        for name, s in trace.items()
        if (s["type"] == "sample" and not s["is_observed"]) or s["type"] == "deterministic"
    ]


def init_strategy(spec):
    """A NumPyro init strategy from a name in :data:`INIT_STRATEGIES` or a NumPyro strategy
    (``numpyro.infer.init_to_value(values=...)`` etc.) as is."""
    if callable(spec):
        return spec
    if spec not in _INITS:
        raise AnchorDivError(
            f"init_strategy: one of {', '.join(INIT_STRATEGIES)} or a NumPyro "
            f"init strategy, got {spec!r}"
        )
    return _INITS[spec]()


def nonfinite_sites(prob: Problem, values: dict | None = None) -> list[str]:
    """Sites whose value or log density is not finite at the constrained ``values`` (default:
    one prior draw), evaluated with NumPyro's argument validation off."""
    model = handlers.seed(prob.model, 0)
    if values is not None:
        model = handlers.substitute(model, values)
    try:
        with numpyro.validation_enabled(False):
            trace = handlers.trace(model).get_trace(*prob.args, **prob.kwargs)
            finite = lambda x: bool(jnp.all(jnp.isfinite(x)))  # noqa: E731
            return [
                name
                for name, s in trace.items()
                if s["type"] in ("sample", "deterministic")
                and not (
                    finite(s["value"])
                    and (s["type"] != "sample" or finite(s["fn"].log_prob(s["value"])))
                )
            ]
    except Exception:  # the model itself fails there: nothing finer to say
        return []


def failure(what: str, prob: Problem, values: dict | None = None) -> AnchorDivError:
    """A clear error for a non-finite loss/density (``what`` says what happened), naming the
    sites whose value or log density is not finite at ``values``."""
    sites = nonfinite_sites(prob, values) if values is not None else []
    where = f" at site(s) {', '.join(sites)}" if sites else ""
    d, dtype = int(prob.targets.shape[-1]), prob.targets.dtype
    return AnchorDivError(f"{what}{where} (d = {d}, {dtype}); {REMEDY}")


@contextlib.contextmanager
def guard(what: str, prob: Problem | None = None):
    """Turn NumPyro/JAX numerical errors (invalid covariance, non-PD matrices, failed
    initialisation) into :class:`AnchorDivError` naming ``what``, the non-finite sites where
    ``prob`` is given, and the remedies."""
    try:
        yield
    except AnchorDivError:
        raise
    except (ValueError, RuntimeError, FloatingPointError, np.linalg.LinAlgError) as err:
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        sites = nonfinite_sites(prob) if prob is not None else []
        where = f"; not finite at site(s) {', '.join(sites)}" if sites else ""
        raise AnchorDivError(f"{what}: numerical failure ({msg}){where}; {REMEDY}") from None


def split_kwargs(kwargs: dict, dtype) -> tuple[dict, tuple]:
    """Split model hyperparameters into traced and static ones.

    Arrays and floats become traced arguments (refits with new hyperparameters reuse the
    compiled step); ints, bools, strings stay static.

    Parameters
    ----------
    kwargs : dict
        The hyperparameters.
    dtype : numpy dtype
        dtype of the traced arrays.

    Returns
    -------
    dynamic : dict
        Traced arguments.
    static : tuple
        Static ``(name, value)`` pairs.
    """
    dyn = {k: jnp.asarray(v, dtype) if isinstance(v, float) else v for k, v in kwargs.items()}
    dyn = {k: v for k, v in dyn.items() if isinstance(v, (jax.Array, np.ndarray))}
    static = sorted(((k, v) for k, v in kwargs.items() if k not in dyn), key=lambda kv: kv[0])
    return dyn, tuple(static)
