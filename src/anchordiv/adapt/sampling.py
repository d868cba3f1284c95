"""NUTS on the kind's explicit NumPyro model or on a user's model.

Steerable as in NumPyro: ``init_strategy`` (name or NumPyro strategy; default the prior median),
``target_accept_prob`` (0.8), ``dense_mass`` (False), ``max_tree_depth`` (10), ``chain_method``
("sequential" | "vectorized" | "parallel"), ``x64``.  Before sampling, the model is initialised
once; a model that cannot be initialised fails fast with an error that names the non-finite
sites and suggests ``subspace=`` or SVI.  Every latent and deterministic site is kept (a user's
own parameters reach ``az.summary``); ``post.raw`` is the ``MCMC`` object.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from ..errors import AnchorDivError, in_unit_interval, integer
from . import points as summaries
from .model import Problem, failure, guard, init_strategy
from .posterior import Posterior

CHAIN_METHODS = ("sequential", "vectorized", "parallel")
EXTRA_FIELDS = ("potential_energy", "diverging", "num_steps", "accept_prob", "energy")


def check_init(prob: Problem, init_fn, seed: int) -> None:
    """Initialise the model once; fail fast with a clear error where NUTS cannot start."""
    from numpyro.infer.util import initialize_model

    try:
        initialize_model(jax.random.PRNGKey(seed), prob.model, init_strategy=init_fn,
                         model_args=prob.args, model_kwargs=prob.kwargs)
    except RuntimeError as err:
        if "valid initial parameters" not in str(err):
            raise AnchorDivError(f"nuts: initialisation failed ({err})") from None
        from numpyro import handlers

        trace = handlers.trace(handlers.seed(prob.model, seed)).get_trace(*prob.args,
                                                                         **prob.kwargs)
        values = {k: s["value"] for k, s in trace.items()
                  if s["type"] == "sample" and not s["is_observed"]}
        raise failure("nuts: the model cannot be initialised: its log density or gradient is "
                      "not finite", prob, values) from None


def run_nuts(post: Posterior, prob: Problem, o: dict, sites: list[str]) -> Posterior:
    """Replace the exact posterior by NUTS draws of ``prob`` (module docstring)."""
    from numpyro.infer import MCMC, NUTS

    if o["chain_method"] not in CHAIN_METHODS:
        raise AnchorDivError(f"chain_method: one of {', '.join(CHAIN_METHODS)}, got "
                             f"{o['chain_method']!r}")
    seed = int(o["seed"])
    init_fn = init_strategy(o["init_strategy"])
    check_init(prob, init_fn, seed)
    kernel = NUTS(prob.model, init_strategy=init_fn, dense_mass=bool(o["dense_mass"]),
                  target_accept_prob=in_unit_interval("target_accept_prob",
                                                      o["target_accept_prob"]),
                  max_tree_depth=integer("max_tree_depth", o["max_tree_depth"], low=1))
    counts = {k: integer(k, o[k], low=1) for k in ("num_warmup", "num_samples", "num_chains")}
    mcmc = MCMC(kernel, chain_method=o["chain_method"], progress_bar=bool(o["progress"]),
                **counts)
    with guard("nuts"):
        mcmc.run(jax.random.PRNGKey(seed), *prob.args, extra_fields=EXTRA_FIELDS, **prob.kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    stats = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    info = {**post.info, "method": "nuts", "custom_model": prob.custom, "seed": seed,
            "chain_method": o["chain_method"], "dense_mass": bool(o["dense_mass"]),
            "target_accept_prob": float(o["target_accept_prob"]),
            "divergences": int(stats["diverging"].sum()), **counts}
    kept = {s: np.asarray(samples[s], np.float64) for s in sites if s in samples}
    pts, how = nuts_points(post, prob, kept)
    return dataclasses.replace(post, method="nuts", info={**info, **how}, family=None,
                               stats=stats, raw=mcmc, samples=kept, points=pts)


def nuts_points(post: Posterior, prob: Problem, samples: dict) -> tuple[dict | None, dict]:
    """``(points, {"point_mean", "point_map"})``.  Under ``subspace=`` with the default
    Gaussian or mixture model the ``"map"`` is the draw of highest *full-d* joint density
    (subspace density plus :func:`.points.joint_correction`), fixed here; otherwise it is
    left to ``post.point`` (the draw of highest density of the model's parameters)."""
    from ..priors import SITES
    from .density import log_joint_closed_form

    total = int(np.prod(next(iter(samples.values())).shape[:2]))
    if post.subspace is None or prob.custom or post.kind not in ("gaussian", "mixture"):
        best = f"the draw (of {total}) of highest density of the model's parameters"
        if post.subspace is not None:
            best += (", lifted with the default prior's conditional mode outside the subspace "
                     "(not the joint mode of one full-d model)")
        return None, summaries.sampled_descriptions(post, best=best)
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in samples.items()
            if k in SITES[post.kind]}
    kwargs = {k: np.asarray(v, np.float64) if hasattr(v, "shape") else v
              for k, v in prob.kwargs.items()}
    lp = log_joint_closed_form(post.kind, np.asarray(prob.targets, np.float64), kwargs, flat) \
        + summaries.joint_correction(post.kind, flat, int(post.info["d"]))
    i = int(np.argmax(lp))
    best = (f"the draw (of {total}) of highest full-d joint density, lifted with the "
            f"conditional mode (the best draw, not the optimum: for the exact joint mode use "
            f"method='exact' or method='svi' with guide='delta')")
    return ({"map": {k: v[i] for k, v in flat.items()}},
            summaries.sampled_descriptions(post, best=best))


__all__ = ["CHAIN_METHODS", "check_init", "run_nuts"]
