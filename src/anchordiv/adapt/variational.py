"""Variational and MAP inference (NumPyro SVI) for the kind's model or a user's.

``method="svi"`` maximises the ELBO ``E_q[log p(T, θ)] − E_q[log q(θ)]`` with a guide chosen by
name: ``"delta"`` (AutoDelta: MAP), ``"normal"`` (AutoNormal: mean field), ``"lowrank"``
(AutoLowRankMultivariateNormal, ``guide_rank``), or a user's guide (a NumPyro AutoGuide or guide
function).  Optimiser: ``optimizer=`` a ``numpyro.optim`` object or an optax
``GradientTransformation`` (through numpyro's optax bridge); default Adam at
``learning_rate``.  The loop runs ``num_steps`` in jitted chunks with a progress bar and checks
the loss for NaN after each chunk.

Convergence: the relative change of the mean loss between the last two windows of
``convergence_window`` steps (default ``max(20, num_steps // 10)``); converged when below
``convergence_tol`` (1e-4).  Both numbers go to ``post.info``; a warning quotes them otherwise.

MAP is of the parameters' density: a delta guide on the kind's model asks it for the density of
(μ, Σ) (``map_jacobian=True``, see :func:`anchordiv.priors.niw_model`), so the result is the
joint mode; on a user's model it is the mode in the model's own sample-site coordinates.

Result: ``num_samples`` guide draws of every latent and deterministic site (``[1, S, ...]``; one
draw for a delta guide), the guide's median pushed through the model as the ``"map"`` point, and
the loss trace (``post.elbo``, ``post.plot_elbo``).
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ..errors import AnchorDivError, integer, positive
from .model import Problem, failure, guard, init_strategy
from .posterior import Posterior

GUIDES = ("delta", "normal", "lowrank")
CHUNK = 50


def make_guide(spec, model, init_loc_fn, rank):
    """An AutoGuide from a name in :data:`GUIDES`, or the user's guide as is."""
    from numpyro.infer import autoguide

    if not isinstance(spec, str):
        if callable(spec):
            return spec
        raise AnchorDivError(f"guide: one of {', '.join(GUIDES)}, an AutoGuide or a guide "
                             f"function, got {type(spec).__name__}")
    if spec == "delta":
        return autoguide.AutoDelta(model, init_loc_fn=init_loc_fn)
    if spec == "normal":
        return autoguide.AutoNormal(model, init_loc_fn=init_loc_fn, init_scale=0.01)
    if spec == "lowrank":
        return autoguide.AutoLowRankMultivariateNormal(
            model, init_loc_fn=init_loc_fn, init_scale=0.01,
            rank=None if rank is None else integer("guide_rank", rank, low=1))
    raise AnchorDivError(f"guide: unknown {spec!r}; one of {', '.join(GUIDES)}, an AutoGuide "
                         f"or a guide function")


def make_optimizer(spec, learning_rate):
    """A numpyro optimiser: ``spec`` None (Adam), a ``numpyro.optim`` object, or optax."""
    import numpyro.optim as optim

    lr = positive("learning_rate", learning_rate)
    if spec is None:
        return optim.Adam(lr)
    if isinstance(spec, optim._NumPyroOptim):
        return spec
    if hasattr(spec, "init") and hasattr(spec, "update"):
        from numpyro.contrib.optim import optax_to_numpyro

        return optax_to_numpyro(spec)
    raise AnchorDivError(f"optimizer: a numpyro.optim optimiser or an optax "
                         f"GradientTransformation, got {type(spec).__name__}")


def convergence(loss: np.ndarray, window: int | None, tol: float) -> dict:
    """``{"converged", "relative_change", "window"}`` from the loss trace."""
    w = window or max(20, len(loss) // 10)
    if len(loss) < 2 * w:
        return {"converged": False, "relative_change": float("nan"), "window": int(w)}
    last, prev = loss[-w:].mean(), loss[-2 * w: -w].mean()
    rel = float(abs(last - prev) / max(abs(last), 1e-12))
    return {"converged": rel < tol, "relative_change": rel, "window": int(w)}


def optimise(svi, prob: Problem, num_steps: int, seed: int, progress: bool):
    """Run ``num_steps`` SVI steps in jitted chunks.  Returns ``(state, losses [num_steps])``."""
    with guard("svi"):
        state = svi.init(jax.random.PRNGKey(seed), *prob.args, **prob.kwargs)

    def chunk(st, _):
        return svi.update(st, *prob.args, **prob.kwargs)

    run = jax.jit(lambda st, n: jax.lax.scan(chunk, st, None, length=n), static_argnums=1)
    losses = []
    with tqdm(total=num_steps, desc="SVI", unit="step", disable=not progress) as bar:
        while sum(map(len, losses)) < num_steps:
            n = min(CHUNK, num_steps - sum(map(len, losses)))
            new, loss = run(state, n)
            loss = np.asarray(loss)
            if not np.all(np.isfinite(loss)):
                bad = int(np.argmin(np.isfinite(loss)))
                values = svi.guide.median(svi.get_params(state)) if hasattr(
                    svi.guide, "median") else None
                raise failure(f"svi: the loss became {loss[bad]} at step "
                              f"{sum(map(len, losses)) + bad + 1}; not finite", prob, values)
            state = new
            losses.append(loss)
            bar.update(n)
            bar.set_postfix(loss=f"{loss[-1]:.4g}")
    return state, np.concatenate(losses)


def guide_draws(prob: Problem, guide, params, sites: list[str], num: int, seed: int) -> dict:
    """``{site: [1, num, ...]}`` guide draws pushed through the model (deterministic sites)."""
    from numpyro.infer import Predictive

    with guard("svi draws"):
        out = Predictive(prob.model, guide=guide, params=params, num_samples=num,
                         return_sites=sites)(jax.random.PRNGKey(seed + 1), *prob.args,
                                             **prob.kwargs)
    return {k: np.asarray(v)[None] for k, v in out.items()}


def guide_point(prob: Problem, guide, params, sites: list[str]) -> dict | None:
    """The guide's median (the MAP of a delta guide) with the model's deterministic sites."""
    from numpyro.infer import Predictive

    if not hasattr(guide, "median"):
        return None
    with guard("svi point"):
        med = {k: jnp.asarray(v)[None] for k, v in guide.median(params).items()}
        out = Predictive(prob.model, posterior_samples=med, return_sites=sites)(
            jax.random.PRNGKey(0), *prob.args, **prob.kwargs)
    return {k: np.asarray(v)[0] for k, v in out.items()}


def run_svi(post: Posterior, prob: Problem, o: dict, sites: list[str]) -> Posterior:
    """Replace the exact posterior by an SVI fit of ``prob`` (module docstring)."""
    from numpyro.infer import SVI, Trace_ELBO

    num_steps = integer("num_steps", o["num_steps"], low=1)
    seed = int(o["seed"])
    guide = make_guide(o["guide"], prob.model, init_strategy(o["init_strategy"]), o["guide_rank"])
    svi = SVI(prob.model, guide, make_optimizer(o["optimizer"], o["learning_rate"]),
              Trace_ELBO(num_particles=integer("num_particles", o["num_particles"], low=1)))
    state, loss = optimise(svi, prob, num_steps, seed, bool(o["progress"]))
    params = svi.get_params(state)
    conv = convergence(loss, o["convergence_window"], positive("convergence_tol",
                                                                o["convergence_tol"]))
    if not conv["converged"]:
        warnings.warn(f"SVI has not converged after {num_steps} steps: the mean loss changed by "
                      f"{conv['relative_change']:.2e} (relative) over the last "
                      f"{conv['window']} steps (tolerance {o['convergence_tol']:g}); raise "
                      f"num_steps or the learning_rate", stacklevel=3)
    delta = o["guide"] == "delta"
    num = 1 if delta else integer("num_samples", o["num_samples"], low=2)
    samples = guide_draws(prob, guide, params, sites, num, seed)
    point = guide_point(prob, guide, params, sites)
    points = {"map": point} if point is not None else {}
    if delta and point is not None:
        points["mean"] = point
    name = o["guide"] if isinstance(o["guide"], str) else type(o["guide"]).__name__
    info = {**post.info, "method": "svi", "guide": name, "num_steps": num_steps,
            "learning_rate": float(o["learning_rate"]), "seed": seed,
            "custom_model": prob.custom, "final_loss": float(loss[-1]),
            "elbo_converged": bool(conv["converged"]),
            "elbo_relative_change": conv["relative_change"], "elbo_window": conv["window"]}
    if o["guide_rank"] is not None:
        info["guide_rank"] = int(o["guide_rank"])
    return dataclasses.replace(post, method="svi", info=info, family=None, samples=samples,
                               stats=None, points=points, elbo=-loss,
                               raw={"svi": svi, "guide": guide, "params": params,
                                    "state": state})


__all__ = ["GUIDES", "convergence", "make_guide", "make_optimizer", "run_svi"]
