"""The NumPyro model an inference method runs — the kind's explicit model or a user's — with its
hyperparameters, init strategy, site checks and the translation of numerical failures into
:class:`~anchordiv.errors.AnchorDivError` (never a raw NumPyro traceback).

Hyperparameters: the kind's prior (``post.model_kwargs``: :meth:`Family.model_inputs`, or the exact update where it runs) plus
``model_kwargs``; a *callable* ``model_kwargs(broad [N, d']) -> dict`` builds them from the broad
anchors instead (so the same prior builder serves full-d and ``subspace=`` runs).  A custom model
receives only the keywords its signature names (all of them if it takes ``**kwargs``).  A model
that takes ``psi0_tril`` gets the Cholesky factor of its (final) ``psi0`` once per run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import AnchorDivError

from .likelihood import OBSERVED, Likelihood, observed_name_error
from .runners import INIT_STRATEGIES

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


def problem(
    fam,
    base_kwargs: dict,
    broad: np.ndarray,
    targets: np.ndarray,
    o: Any,
    *,
    map_density: bool = False,
) -> Problem:
    """The model and its keyword arguments (``fam``: the family class, whose ``model`` runs
    unless the method names a user's).  ``map_density``: ask the kind's own model for the
    density of its parameters (``map_jacobian=True``) so that a delta guide finds their mode."""
    custom = o.model is not None
    model = o.model or fam.model
    user = o.model_kwargs
    if callable(user):
        try:
            user = user(broad)
        except Exception as err:  # the user's prior builder: report it as theirs
            raise AnchorDivError(
                f"model_kwargs: the prior builder failed on the broad anchors "
                f"{list(broad.shape)}: {type(err).__name__}: {err}"
            ) from None
        base_kwargs = {}
    if user is not None and not isinstance(user, dict):
        raise AnchorDivError(
            f"model_kwargs: a dict or a callable(broad) -> dict, got {type(user).__name__}"
        )
    kwargs = accepted(model, {**base_kwargs, **(user or {})}, explicit=set(user or {}))
    takes = inspect.signature(model).parameters
    if "psi0_tril" in takes and "psi0" in kwargs and kwargs.get("psi0_tril") is None:
        kwargs["psi0_tril"] = np.linalg.cholesky(np.asarray(kwargs["psi0"], np.float64))
    if map_density and "map_jacobian" in takes:
        kwargs["map_jacobian"] = True
    dt = run_dtype(o.x64)
    cast = {
        k: jnp.asarray(v, dt) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
        for k, v in kwargs.items()
    }
    t = jnp.asarray(targets, dt)
    summarise = None if custom else getattr(model, "model_data", None)
    return Problem(model, cast, t, custom, summarise(t, cast) if summarise else None)


def accepted(model, kwargs: dict, explicit: set) -> dict:
    """The keywords ``model`` takes; a keyword the user gave explicitly always goes through (so a
    misspelt one fails loudly in :func:`check_sites`)."""
    params = inspect.signature(model).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(kwargs)
    return {k: v for k, v in kwargs.items() if k in params or k in explicit}


def check_sites(fam, prob: Problem) -> dict:
    """Trace the model abstractly (shapes only: no compilation) and require the sites the kind's
    anchor model needs; returns ``{site: {"type", "is_observed", "shape"}}``."""
    from numpyro import handlers

    sites = {}

    def trace():
        tr = handlers.trace(handlers.seed(prob.model, 0)).get_trace(*prob.args, **prob.kwargs)
        sites.update(
            {
                k: {
                    "type": s["type"],
                    "is_observed": s.get("is_observed", False),
                    "discrete": s["type"] == "sample"
                    and bool(getattr(s.get("fn"), "is_discrete", False)),
                }
                for k, s in tr.items()
            }
        )
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
    if traced and not prob.custom and observed and OBSERVED not in observed:
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
    return sites


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
    import numpyro
    from numpyro import handlers

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
    from numpyro import infer

    if callable(spec):
        return spec
    table = {
        "median": lambda: infer.init_to_median(num_samples=15),
        "mean": infer.init_to_mean,
        "feasible": infer.init_to_feasible,
        "sample": infer.init_to_sample,
        "uniform": infer.init_to_uniform,
    }
    if spec not in table:
        raise AnchorDivError(
            f"init_strategy: one of {', '.join(INIT_STRATEGIES)} or a NumPyro "
            f"init strategy, got {spec!r}"
        )
    return table[spec]()


def nonfinite_sites(prob: Problem, values: dict | None = None) -> list[str]:
    """Sites whose value or log density is not finite at the constrained ``values`` (default:
    one prior draw), evaluated with NumPyro's argument validation off."""
    import numpyro
    from numpyro import handlers

    model = handlers.seed(prob.model, 0)
    if values is not None:
        model = handlers.substitute(model, values)
    try:
        with numpyro.validation_enabled(False):
            trace = handlers.trace(model).get_trace(*prob.args, **prob.kwargs)
            bad = []
            for name, s in trace.items():
                if s["type"] not in ("sample", "deterministic"):
                    continue
                ok = bool(jnp.all(jnp.isfinite(s["value"])))
                if ok and s["type"] == "sample":
                    ok = bool(jnp.all(jnp.isfinite(s["fn"].log_prob(s["value"]))))
                if not ok:
                    bad.append(name)
            return bad
    except Exception:  # the model itself fails there: nothing finer to say
        return []


def failure(what: str, prob: Problem | None = None, values: dict | None = None) -> AnchorDivError:
    """A clear error for a non-finite loss/density (``what`` says what happened), naming the
    sites whose value or log density is not finite at ``values``."""
    sites = nonfinite_sites(prob, values) if prob is not None and values is not None else []
    where = f" at site(s) {', '.join(sites)}" if sites else ""
    d = int(prob.targets.shape[-1]) if prob is not None else None
    dtype = str(prob.targets.dtype) if prob is not None else ""
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


__all__ = [
    "INIT_STRATEGIES",
    "Problem",
    "check_sites",
    "observed_name_error",
    "failure",
    "guard",
    "init_strategy",
    "kept_sites",
    "nonfinite_sites",
    "problem",
    "run_dtype",
]
