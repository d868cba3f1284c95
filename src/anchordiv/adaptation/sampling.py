"""NUTS on the kind's explicit NumPyro model or on a user's model.

Steerable as in NumPyro: ``init_strategy`` (name or NumPyro strategy; default the prior median),
``target_accept_prob`` (0.8), ``dense_mass`` (False), ``max_tree_depth`` (10), ``chain_method``
("sequential" | "vectorized" | "parallel"), ``x64``.  Before sampling, the model is initialised
once; a model that cannot be initialised fails fast with an error that names the non-finite
sites and suggests ``subspace=`` or SVI.  Every latent and deterministic site is kept (a user's
own parameters reach ``az.summary``).

Compiled samplers are reused: one :class:`~.chains.Chains` runner (targets and float/array
hyperparameters are traced arguments) per model, static keywords, sampler settings and argument
shapes, kept in a least-recently-used :class:`~.methods.Runners` table (the library's
:data:`~.methods.NUTS_RUNNERS` of :data:`MAX_SAMPLERS` entries, or the user's own:
``ad.NUTS(runners=...)``) — repeated
``adapt(method="nuts")`` calls on new targets of the same shape compile nothing, and a long loop
does not grow memory.  A custom ``init_strategy`` object is not hashable by value: such runs
build a fresh runner; ``chain_method="parallel"`` uses NumPyro's ``MCMC`` (one device per
chain; it compiles on every call).  ``post.raw`` is the runner (``.sampler``: the NUTS kernel)
or the ``MCMC`` object.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from .._tolerance import first_max
from ..errors import AnchorDivError
from . import points as summaries
from .runners import CHAIN_METHODS, NUTS_RUNNERS
from .model import Problem, failure, guard, init_strategy
from .posterior import Posterior

if TYPE_CHECKING:  # at run time imported lazily, where it is used
    from .chains import Chains

EXTRA_FIELDS = ("potential_energy", "diverging", "num_steps", "accept_prob", "energy")
#: compiled samplers kept by default (least recently used dropped first)
MAX_SAMPLERS = NUTS_RUNNERS.max_size


def _shapes(tree: dict) -> tuple:
    return tuple(
        (k, tuple(np.shape(v)), str(getattr(v, "dtype", type(v).__name__)))
        for k, v in sorted(tree.items())
    )


def sampler(prob: Problem, o: Any, counts: dict) -> tuple[Chains, dict, bool]:
    """The cached compiled chain runner for a model, settings and shapes, or a new one.

    Parameters
    ----------
    prob : Problem
        The model.
    o : NUTS
        The NUTS configuration (:class:`~.methods.NUTS`) (validated when it was made).
    counts : dict
        Warm-up and sample counts.

    Returns
    -------
    runner : Chains
        The compiled :class:`~.chains.Chains`.
    dynamic : dict
        Keywords passed as traced arguments.
    fresh : bool
        Whether it was built now.
    """
    from numpyro.infer import NUTS

    from .chains import Chains
    from .variational import split_kwargs

    dyn, static = split_kwargs(prob.kwargs, prob.targets.dtype)
    settings = (
        bool(o.dense_mass),
        o.target_accept_prob,
        o.max_tree_depth,
        o.chain_method,
        tuple(sorted(counts.items())),
    )
    key = None
    if isinstance(o.init_strategy, str):
        key = (
            prob.model,
            static,
            o.init_strategy,
            settings,
            jax.tree.map(lambda a: (tuple(a.shape), str(a.dtype)), prob.args),
            _shapes(dyn),
        )
    table = o.runners if o.runners is not None else NUTS_RUNNERS
    fresh = key is None or key not in table

    def build():
        model = functools.partial(prob.model, **dict(static)) if static else prob.model
        kernel = NUTS(
            model,
            init_strategy=init_strategy(o.init_strategy),
            dense_mass=settings[0],
            target_accept_prob=settings[1],
            max_tree_depth=settings[2],
        )
        return Chains(
            kernel,
            counts["num_warmup"],
            counts["num_samples"],
            counts["num_chains"],
            o.chain_method,
        )

    return table.get(key, build), dyn, fresh


def run_mcmc(prob: Problem, o: Any, counts: dict, seed: int):
    """Run NumPyro's ``MCMC`` (``chain_method="parallel"``: one device per chain; compiles per call).

    Parameters
    ----------
    prob : Problem
        The model.
    o : NUTS
        The NUTS configuration (:class:`~.methods.NUTS`) (validated when it was made).
    counts : dict
        Warm-up and sample counts.
    seed : int
        The sampler's seed.

    Returns
    -------
    samples : dict
        Draws per site.
    stats : dict
        Sample statistics.
    mcmc : numpyro.infer.MCMC
        The run.
    """
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(
        prob.model,
        init_strategy=init_strategy(o.init_strategy),
        dense_mass=bool(o.dense_mass),
        target_accept_prob=o.target_accept_prob,
        max_tree_depth=o.max_tree_depth,
    )
    mcmc = MCMC(kernel, chain_method="parallel", progress_bar=bool(o.progress), **counts)
    with guard("nuts"):
        mcmc.run(jax.random.PRNGKey(seed), *prob.args, extra_fields=EXTRA_FIELDS, **prob.kwargs)
    stats = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    return mcmc.get_samples(group_by_chain=True), stats, mcmc


def run_cached(prob: Problem, o: Any, counts: dict, seed: int):
    """Run the cached compiled chain runner (:func:`sampler`).

    Parameters
    ----------
    prob : Problem
        The model.
    o : NUTS
        The NUTS configuration (:class:`~.methods.NUTS`) (validated when it was made).
    counts : dict
        Warm-up and sample counts.
    seed : int
        The sampler's seed.

    Returns
    -------
    samples : dict
        Draws per site.
    stats : dict
        Sample statistics.
    runner : Chains
        The runner.
    """
    runner, dyn, fresh = sampler(prob, o, counts)
    if fresh:
        check_init(prob, init_strategy(o.init_strategy), seed)
    try:
        with guard("nuts"):
            samples, stats = runner.run(jax.random.PRNGKey(seed), prob.args, dyn, bool(o.progress))
    except AnchorDivError:
        check_init(prob, init_strategy(o.init_strategy), seed)  # the precise error, if so
        raise
    return samples, stats, runner


def check_init(prob: Problem, init_fn, seed: int) -> None:
    """Initialise the model once; fail fast with a clear error where NUTS cannot start."""
    from numpyro.infer.util import initialize_model

    try:
        initialize_model(
            jax.random.PRNGKey(seed),
            prob.model,
            init_strategy=init_fn,
            model_args=prob.args,
            model_kwargs=prob.kwargs,
        )
    except RuntimeError as err:
        if "valid initial parameters" not in str(err):
            raise AnchorDivError(f"nuts: initialisation failed ({err})") from None
        from numpyro import handlers

        trace = handlers.trace(handlers.seed(prob.model, seed)).get_trace(*prob.args, **prob.kwargs)
        values = {
            k: s["value"]
            for k, s in trace.items()
            if s["type"] == "sample" and not s["is_observed"]
        }
        raise failure(
            "nuts: the model cannot be initialised: its log density or gradient is not finite",
            prob,
            values,
        ) from None


def run_nuts(post: Posterior, prob: Problem, o: Any, sites: list[str]) -> Posterior:
    """``post`` filled with NUTS draws of ``prob`` (module docstring): the fit of
    :class:`~.methods.NUTS`.

    Parameters
    ----------
    post : Posterior
        The run's posterior, its draws not yet set.
    prob : Problem
        The model to sample.
    o : NUTS
        The NUTS configuration (:class:`~.methods.NUTS`) (validated when it was made).
    sites : list of str
        Sites to keep.

    Returns
    -------
    Posterior
        The sampled posterior.
    """
    seed = int(o.seed)
    counts = {k: getattr(o, k) for k in ("num_warmup", "num_samples", "num_chains")}
    run = run_mcmc if o.chain_method == "parallel" else run_cached
    samples, stats, mcmc = run(prob, o, counts, seed)
    info = {
        **post.info,
        "method": o.name,
        "custom_model": prob.custom,
        "seed": seed,
        "chain_method": o.chain_method,
        "dense_mass": bool(o.dense_mass),
        "target_accept_prob": float(o.target_accept_prob),
        "divergences": int(stats["diverging"].sum()),
        **counts,
    }
    kept = {s: np.asarray(samples[s], np.float64) for s in sites if s in samples}
    pts, how = nuts_points(post, prob, kept)
    return dataclasses.replace(
        post,
        method=o.name,
        info={**info, **how},
        stats=stats,
        raw=mcmc,
        samples=kept,
        points=pts,
    )


def nuts_points(post: Posterior, prob: Problem, samples: dict) -> tuple[dict | None, dict]:
    """Point summaries of a NUTS run that need the full-d density.

    Under ``subspace=`` with the default Gaussian or mixture model the ``"map"`` is the draw of
    highest *full-d* joint density (subspace density plus :func:`.points.joint_correction`),
    fixed here; otherwise it is left to ``post.point`` (the draw of highest density of the
    model's parameters).

    Parameters
    ----------
    post : Posterior
        The posterior being filled (its :attr:`~.posterior.Posterior.subspace` rank says
        whether the draws are lifted).
    prob : Problem
        The model run.
    samples : dict
        The NUTS draws.

    Returns
    -------
    points : dict or None
        Fixed point summaries.
    descriptions : dict
        ``{"point_mean", "point_map"}`` in words.
    """

    total = int(np.prod(next(iter(samples.values())).shape[:2]))
    if post.subspace is None or prob.custom or post.family_class.covariance_site is None:
        best = f"the draw (of {total}) of highest density of the model's parameters"
        if post.subspace is not None:
            best += (
                ", lifted with the default prior's conditional mode outside the subspace "
                "(not the joint mode of one full-d model)"
            )
        return None, summaries.sampled_descriptions(post, best=best)
    flat = {
        k: v.reshape((-1,) + v.shape[2:])
        for k, v in samples.items()
        if k in post.family_class.sites
    }
    kwargs = {
        k: np.asarray(v, np.float64) if hasattr(v, "shape") else v for k, v in prob.kwargs.items()
    }
    fam = post.family_class
    lik = fam.likelihood_type(fam, kwargs, post.fixed, post.dim)
    lp = lik.log_joint(np.asarray(prob.targets, np.float64), flat) + (
        summaries.joint_correction(fam, flat, post.dim)
    )
    i = first_max(lp)
    best = (
        f"the draw (of {total}) of highest full-d joint density, lifted with the "
        f"conditional mode (the best draw, not the optimum: for the exact joint mode use "
        f"method='exact' or method='svi' with guide='delta')"
    )
    return (
        {"map": {k: v[i] for k, v in flat.items()}},
        summaries.sampled_descriptions(post, best=best),
    )


__all__ = [
    "CHAIN_METHODS",
    "MAX_SAMPLERS",
    "check_init",
    "nuts_points",
    "run_cached",
    "run_mcmc",
    "run_nuts",
    "sampler",
]
