"""Variational and MAP inference (NumPyro SVI) for the kind's model or a user's.

The guide is ``"delta"`` (MAP), ``"normal"`` (mean field), ``"lowrank"`` or a user's; the default
optimiser is Adam decaying from ``learning_rate`` to ``lr_decay`` × itself.  The loop runs in
jitted chunks and checks the loss for NaN.  Convergence: the mean loss's relative change between
the last two windows below ``convergence_tol`` and the guide's parameters settled
(:data:`PARAM_TOL`); otherwise a warning.  A delta guide on the kind's model finds the joint
mode of its parameters (:meth:`~.protocol.Family.model_extras`).  Result: ``num_samples`` guide
draws ``[1, S, ...]``, the guide's median as the ``"map"`` point, and the loss trace
(``post.elbo``).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.optim as optim
from numpyro import handlers
from numpyro.infer import SVI, Predictive, Trace_ELBO, autoguide
from numpyro.infer.util import log_density

from ..errors import AnchorDivError, integer, positive, user_stacklevel
from ..progress import tqdm
from .model import GUIDES, SVI_RUNNERS, Problem, failure, guard, init_strategy, split_kwargs
from .posterior import MAP_JOINT, Fit, Posterior, RunSpec, delta_mean, describe

CHUNK = 50


def make_guide(spec, model, init_loc_fn, rank):
    """An AutoGuide from a name in :data:`GUIDES`, or the user's guide as is.

    Parameters
    ----------
    spec : str or guide
        ``"delta"``, ``"normal"``, ``"lowrank"``, or a guide.
    model : callable
        The NumPyro model.
    init_loc_fn : callable
        NumPyro init strategy.
    rank : int or None
        The low-rank guide's rank.

    Returns
    -------
    guide
        The guide.
    """
    if not isinstance(spec, str):
        if callable(spec):
            return spec
        raise AnchorDivError(
            f"guide: one of {', '.join(GUIDES)}, an AutoGuide or a guide "
            f"function, got {type(spec).__name__}"
        )
    if spec == "delta":
        return autoguide.AutoDelta(model, init_loc_fn=init_loc_fn)
    if spec == "normal":
        return autoguide.AutoNormal(model, init_loc_fn=init_loc_fn, init_scale=0.01)
    if spec == "lowrank":
        return autoguide.AutoLowRankMultivariateNormal(
            model,
            init_loc_fn=init_loc_fn,
            init_scale=0.01,
            rank=None if rank is None else integer("guide_rank", rank, low=1),
        )
    raise AnchorDivError(
        f"guide: unknown {spec!r}; one of {', '.join(GUIDES)}, an AutoGuide or a guide function"
    )


def make_optimizer(spec, learning_rate, num_steps: int = 1, decay: float = 1.0):
    """A numpyro optimiser.

    Parameters
    ----------
    spec : None, numpyro.optim optimizer or optax transformation
        None: Adam whose step decays exponentially from ``learning_rate`` to
        ``decay · learning_rate`` over ``num_steps``.
    learning_rate : float
        The initial step.
    num_steps : int, default 1
        Steps of the decay.
    decay : float, default 1.0
        Final step as a fraction of the first.

    Returns
    -------
    numpyro optimizer
        The optimiser.
    """
    lr = positive("learning_rate", learning_rate)
    if spec is None:
        rate = jnp.log(positive("lr_decay", decay)) / max(num_steps, 1)
        return optim.Adam(lambda i: lr * jnp.exp(rate * i))
    if isinstance(spec, optim._NumPyroOptim):
        return spec
    if hasattr(spec, "init") and hasattr(spec, "update"):
        return optim.optax_to_numpyro(spec)
    raise AnchorDivError(
        f"optimizer: a numpyro.optim optimiser or an optax "
        f"GradientTransformation, got {type(spec).__name__}"
    )


#: the guide's parameters may move by at most this many ``convergence_tol`` (relative) over
#: the last window: a tenth for a delta guide; a stochastic guide jitters, so only gross drift
PARAM_TOL = {"deterministic": 0.1, "stochastic": 1000.0}


def convergence(
    loss: np.ndarray,
    window: int | None,
    tol: float,
    *,
    stochastic: bool = True,
    moved: float = float("nan"),
) -> dict:
    """``{"converged", "relative_change", "param_change", "window"}``.  The loss: the change of
    the mean loss between the last two windows, relative to ``max(|mean|, 1)``, below ``tol``
    or, for a stochastic ELBO, within two standard errors of zero (no detectable trend).  The
    parameters: their relative change over the last window (``moved``, from :func:`optimise`)
    at most :data:`PARAM_TOL` × ``tol`` — a flat loss is not enough where a slowly decaying
    step still moves the parameters (a ridge of the loss)."""
    w = window or max(20, len(loss) // 10)
    out = {"converged": False, "relative_change": float("nan"), "param_change": float(moved)}
    if len(loss) < 2 * w:
        return {**out, "window": int(w)}
    last, prev = loss[-w:], loss[-2 * w : -w]
    change = abs(last.mean() - prev.mean())
    noise = 2 * np.sqrt((last.var() + prev.var()) / w) if stochastic else 0.0
    rel = float(change / max(abs(last.mean()), 1.0))
    still = bool(moved > PARAM_TOL["stochastic" if stochastic else "deterministic"] * tol)
    converged = bool((rel < tol or change <= noise) and not still)
    return {**out, "converged": converged, "relative_change": rel, "window": int(w)}


#: compiled SVI runners kept by default (least recently used dropped first)
MAX_RUNNERS = SVI_RUNNERS.max_size


def runner(prob: Problem, o: Any, static: tuple):
    """``(svi, run)``: the SVI object and its jitted ``run(state, n, targets, dyn)`` chunk of n
    steps — cached when guide, optimiser and init strategy are given by name/number, in a
    least-recently-used :class:`~.methods.Runners` table (``o.runners``, default the library's
    :data:`~.methods.SVI_RUNNERS` of :data:`MAX_RUNNERS`: a long loop of fits does not grow)."""
    key = None
    if isinstance(o.guide, str) and o.optimizer is None and isinstance(o.init_strategy, str):
        steps = (float(o.learning_rate), float(o.lr_decay), int(o.num_steps), int(o.num_particles))
        dtype = str(prob.targets.dtype)
        key = (prob.model, o.guide, o.guide_rank, o.init_strategy, *steps, static, dtype)

    def build():
        guide = make_guide(o.guide, prob.model, init_strategy(o.init_strategy), o.guide_rank)
        optimizer = make_optimizer(o.optimizer, o.learning_rate, int(o.num_steps), o.lr_decay)
        svi = SVI(prob.model, guide, optimizer, Trace_ELBO(num_particles=o.num_particles))
        kw = dict(static)

        def chunk(n, state, targets, dyn):
            return jax.lax.scan(
                lambda st, _: svi.update(st, targets, **dyn, **kw), state, None, length=n
            )

        return svi, jax.jit(chunk, static_argnums=0)

    return (o.runners if o.runners is not None else SVI_RUNNERS).get(key, build)


def param_snapshot(svi, state) -> dict[str, np.ndarray]:
    """The guide's (constrained) parameters as flat float64 arrays."""
    return {k: np.asarray(v, np.float64).ravel() for k, v in svi.get_params(state).items()}


def param_change(before: dict, after: dict) -> float:
    """Largest relative change ``‖after − before‖ / ‖after‖`` over the guide's parameters."""
    return max(
        (
            float(np.linalg.norm(after[k] - before[k]) / max(np.linalg.norm(after[k]), 1e-30))
            for k in after
        ),
        default=0.0,
    )


def optimise(svi, run, prob: Problem, dyn: dict, o: Any):
    """Run ``num_steps`` SVI steps in jitted chunks.  Returns ``(state, losses [num_steps],
    movement)``: ``movement`` the :func:`param_change` over the last ``window`` steps (to the
    chunk boundary at or before it; NaN when the run is shorter than a window)."""
    num_steps = o.num_steps
    if hasattr(svi.guide, "prototype_trace"):
        svi.guide.prototype_trace = None  # a fresh init from this fit's prior
    with guard("svi", prob):
        state = svi.init(jax.random.PRNGKey(int(o.seed)), *prob.args, **prob.kwargs)
    losses, done, before = [], 0, None
    w = o.convergence_window or max(20, num_steps // 10)
    with tqdm(total=num_steps, desc="SVI", unit="step", disable=not o.progress) as bar:
        while done < num_steps:
            n = min(CHUNK, num_steps - done)
            with guard("svi", prob):
                new, loss = run(n, state, prob.args[0], dyn)
            loss = np.asarray(loss)
            if not np.all(np.isfinite(loss)):
                bad = int(np.argmin(np.isfinite(loss)))
                guide = svi.guide
                values = guide.median(svi.get_params(state)) if hasattr(guide, "median") else None
                what = f"svi: the loss became {loss[bad]} at step {done + bad + 1}; not finite"
                raise failure(what, prob, values)
            if before is None and done + n > num_steps - w:
                before = param_snapshot(svi, state) if done + w <= num_steps else {}
            state, done = new, done + n
            losses.append(loss)
            bar.update(n)
            bar.set_postfix(loss=f"{loss[-1]:.4g}")
    moved = param_change(before, param_snapshot(svi, state)) if before else float("nan")
    return state, np.concatenate(losses), moved


def svi_points(
    post: RunSpec, prob: Problem, point: dict | None, delta: bool, exact=None
) -> tuple[dict, dict]:
    """``(points, {"point_mean", "point_map"})`` of an SVI fit."""
    if not delta:
        return ({"map": point} if point is not None else {}), {
            "point_mean": "average of the guide draws",
            "point_map": "the guide's median pushed through the model (not a posterior mode)",
        }
    subspace_mode = post.family_class.subspace_mode
    if post.subspace is None:
        how = (
            "mode of the model's density in its own sample-site coordinates"
            if prob.custom
            else describe(post.family_class, "joint_mode")
        )
    elif prob.custom or (joint := subspace_mode(point, post.completion, post.subspace)) is None:
        how = (
            "mode of the subspace model, lifted with the default prior's conditional mode "
            "outside the subspace (not the joint mode of one full-d model)"
        )
    else:
        point = joint
        how = (
            MAP_JOINT + ": the subspace mode rescaled to the joint mode's block, "
            "lifted with the conditional mode"
        )
    mean, mean_how = delta_mean(post, exact, prob.custom)
    out = {"map": point} | ({"mean": mean} if mean is not None else {})
    return out, {"point_mean": mean_how, "point_map": how}


def run_svi(run_spec: RunSpec, prob: Problem, o: Any, sites: list[str], exact=None) -> Fit:
    """An SVI fit of ``prob`` for the posterior ``run_spec`` describes: the fit of
    :class:`~.methods.SVI`."""
    num_steps = o.num_steps
    seed = int(o.seed)
    dyn, static = split_kwargs(prob.kwargs, prob.targets.dtype)
    svi, run = runner(prob, o, static)
    state, loss, moved = optimise(svi, run, prob, dyn, o)
    guide = svi.guide
    params = svi.get_params(state)
    delta = o.guide == "delta"
    conv = convergence(
        loss, o.convergence_window, o.convergence_tol, stochastic=not delta, moved=moved
    )
    if not conv["converged"]:
        warnings.warn(
            f"SVI has not converged after {num_steps} steps: over the last "
            f"{conv['window']} steps the mean loss changed by "
            f"{conv['relative_change']:.2e} and the guide's parameters by "
            f"{conv['param_change']:.2e} (relative; tolerance "
            f"{o.convergence_tol:g} for the loss, {PARAM_TOL['deterministic']:g}× "
            f"that for the parameters, {PARAM_TOL['stochastic']:g}× for a stochastic "
            f"guide); raise num_steps or the learning_rate",
            stacklevel=user_stacklevel(),
        )
    num = 1 if delta else integer("num_samples", o.num_samples, low=2)
    with guard("svi draws"):  # guide draws pushed through the model (one vmap)
        opts = dict(params=params, num_samples=num, return_sites=sites, parallel=True)
        draw = Predictive(prob.model, guide=guide, **opts)
        out = draw(jax.random.PRNGKey(seed + 1), *prob.args, **prob.kwargs)
    samples = {k: np.asarray(v)[None] for k, v in out.items()}  # [1, num, ...]
    point = None
    if hasattr(guide, "median"):  # its median (a delta guide's MAP) with the deterministic sites
        with guard("svi point"):
            med = {k: jnp.asarray(v)[None] for k, v in guide.median(params).items()}
            out = Predictive(prob.model, posterior_samples=med, return_sites=sites, parallel=True)(
                jax.random.PRNGKey(0), *prob.args, **prob.kwargs
            )
        point = {k: np.asarray(v)[0] for k, v in out.items()}
    points, how = svi_points(run_spec, prob, point, delta, exact)
    info = {
        "method": o.name,
        "guide": o.guide_name,
        "num_steps": num_steps,
        "learning_rate": float(o.learning_rate),
        "seed": seed,
        "custom_model": prob.custom,
        "final_loss": float(loss[-1]),
        "elbo_converged": bool(conv["converged"]),
        "elbo_relative_change": conv["relative_change"],
        "elbo_window": conv["window"],
        "param_relative_change": conv["param_change"],
        **how,
    }
    if o.guide_rank is not None:
        info["guide_rank"] = int(o.guide_rank)
    raw = dict(svi=svi, guide=guide, params=params, state=state, problem=prob, sites=sites)
    return Fit(samples, None, points, info, raw=raw, elbo=-loss)


def guide_log_weights(post: Posterior, num: int, seed: int) -> tuple[dict, np.ndarray]:
    """Fresh guide draws of an SVI posterior and their log importance weights.

    ``log p(T, θ) − log q(θ)`` — both in the model's constrained sample-site coordinates, as in
    NumPyro's ELBO — for importance sampling (PSIS) against the exact posterior of the model
    that ran (an eager ``vmap``: nothing compiled per call).

    Parameters
    ----------
    post : Posterior
        An SVI posterior (not a delta guide).
    num : int
        Draws.
    seed : int
        Seed.

    Returns
    -------
    draws : dict
        ``{site: [num, ...]}``.
    log_weights : numpy.ndarray, shape [num]
        The log importance weights.

    Raises
    ------
    AnchorDivError
        A delta guide (it has no density).
    """
    if not post.variational or not isinstance(post.raw, dict) or "problem" not in post.raw:
        raise AnchorDivError(
            "guide_log_weights: needs a posterior fitted by method='svi' in "
            "this session (post.raw keeps the guide; saved ones do not)"
        )
    if post.point_guide:
        raise AnchorDivError(
            "guide_log_weights: a delta guide is a point, it has no density to importance-weight"
        )
    prob, guide, params = post.raw["problem"], post.raw["guide"], post.raw["params"]

    def one(key):
        log_q, tr = log_density(handlers.seed(guide, key), prob.args, prob.kwargs, params)
        latent = {
            k: s["value"]
            for k, s in tr.items()
            if s["type"] == "sample" and not s["is_observed"] and not s["infer"].get("is_auxiliary")
        }
        log_p, mtr = log_density(handlers.seed(prob.model, 0), prob.args, prob.kwargs, latent)
        return log_p - log_q, {k: mtr[k]["value"] for k in post.raw["sites"]}

    keys = jax.random.split(jax.random.PRNGKey(seed + 7), integer("num", num, low=2))
    with guard("svi importance weights"):
        lw, draws = jax.vmap(one)(keys)  # eager: a jit of this closure compiles per call
    return ({k: np.asarray(v, np.float64) for k, v in draws.items()}, np.asarray(lw, np.float64))
