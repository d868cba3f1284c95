"""NUTS on the kind's explicit NumPyro model or on a user's model."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .. import priors
from ..errors import AnchorDivError, integer
from .posterior import Posterior


def check_sites(model, kind: str, targets: np.ndarray, kwargs: dict) -> None:
    """Trace the model once (cheap) and require the sites the kind's anchor model needs."""
    from numpyro import handlers

    try:
        trace = handlers.trace(handlers.seed(model, 0)).get_trace(jnp.asarray(targets), **kwargs)
    except TypeError as err:
        raise AnchorDivError(f"model: calling model(targets, **model_kwargs) failed: {err}; "
                             f"model_kwargs: {', '.join(sorted(kwargs))}") from None
    missing = [s for s in priors.SITES[kind] if s not in trace]
    if missing:
        raise AnchorDivError(f"model: the NumPyro model must define the site(s) "
                             f"{', '.join(missing)} for kind {kind!r}")


def run_nuts(post: Posterior, targets: np.ndarray, o: dict) -> Posterior:
    """Replace the exact posterior by NUTS samples of the explicit model."""
    from numpyro.infer import MCMC, NUTS

    model = o["model"] or priors.MODELS[post.kind]
    kwargs = {**post.info.pop("model_kwargs"), **(o["model_kwargs"] or {})}
    check_sites(model, post.kind, targets, kwargs)
    mcmc = MCMC(NUTS(model), num_warmup=integer("num_warmup", o["num_warmup"], low=1),
                num_samples=integer("num_samples", o["num_samples"], low=1),
                num_chains=integer("num_chains", o["num_chains"], low=1),
                chain_method="sequential", progress_bar=bool(o["progress"]))
    mcmc.run(jax.random.PRNGKey(int(o["seed"])), jnp.asarray(targets, jnp.result_type(float)),
             extra_fields=("potential_energy", "diverging", "num_steps", "accept_prob",
                           "energy"), **kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    stats = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    info = {**post.info, "method": "nuts", "custom_model": o["model"] is not None,
            "num_samples": o["num_samples"], "num_warmup": o["num_warmup"],
            "num_chains": o["num_chains"], "seed": int(o["seed"])}
    return dataclasses.replace(
        post, method="nuts", info=info, family=None, stats=stats,
        samples={s: np.asarray(samples[s], np.float64) for s in priors.SITES[post.kind]})


