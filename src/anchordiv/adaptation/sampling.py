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
    return dataclasses.replace(
        post, method="nuts", info=info, family=None, stats=stats, raw=mcmc,
        samples={s: np.asarray(samples[s], np.float64) for s in sites if s in samples})


__all__ = ["CHAIN_METHODS", "check_init", "run_nuts"]
