"""NUTS on the kind's explicit NumPyro model or a user's, with a compiled chain runner reused
across fits.

NumPyro's ``MCMC.run`` recompiles its loop on every call; :class:`Chains` jits initialisation
and a chunk of :data:`CHUNK` transitions once (the model's arguments are traced inputs) and steps
through them in Python, reporting progress from inside the chunk.  Runners are kept per model,
static keywords, settings and shapes in a least-recently-used :class:`~.model.Runners` table
(:data:`~.model.NUTS_RUNNERS`, or ``ad.NUTS(runners=...)``); a custom ``init_strategy`` object
builds a fresh one and ``chain_method="parallel"`` uses NumPyro's ``MCMC``.  A model that cannot
be initialised fails fast naming its non-finite sites.  ``post.raw`` is the runner or the
``MCMC`` object.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
from numpyro import handlers
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import initialize_model

from .._tolerance import first_max
from ..errors import AnchorDivError
from ..progress import tqdm
from .model import CHAIN_METHODS, NUTS_RUNNERS, Problem, failure, guard, init_strategy, split_kwargs  # noqa: F401
from .posterior import Fit, RunSpec, joint_correction, sampled_descriptions

#: NUTS transitions per compiled step
CHUNK = 100
#: per-draw statistics collected beside the samples
FIELDS = ("potential_energy", "diverging", "num_steps", "accept_prob", "energy")


class Chains:
    """Reusable NUTS runner for one ``kernel`` (a ``numpyro.infer.NUTS``), draw counts and chain
    method; ``.sampler`` is the kernel (as on NumPyro's ``MCMC``)."""

    def __init__(
        self, kernel, num_warmup: int, num_samples: int, num_chains: int, chain_method: str
    ):
        self.sampler, self.num_chains, self.chain_method = kernel, num_chains, chain_method
        self.num_warmup, self.num_samples = num_warmup, num_samples
        batch = jax.vmap if chain_method == "vectorized" else (lambda f, **_: f)
        self._init = jax.jit(batch(self._init_one, in_axes=(0, None, None)))
        self._collect = jax.jit(
            batch(self._chunk_collect, in_axes=(0, None, None, None, None)),
            static_argnums=(3, 4),
        )
        self._bar, self._limit = None, 0
        self._per_tick = num_chains if chain_method == "vectorized" else 1  # bar steps per tick

    def _init_one(self, key, args, kwargs):
        return self.sampler.init(key, self.num_warmup, model_args=args, model_kwargs=kwargs)

    def _tick(self):
        """One transition of every chain in the chunk done (called from inside a compiled
        chunk: once per transition, also when ``vmap`` batches the chains)."""
        bar = self._bar
        if bar is not None and bar.n < self._limit:
            bar.update(min(self._per_tick, self._limit - bar.n))

    def _chunk_collect(self, state, args, kwargs, n, tick):
        post = self.sampler.postprocess_fn(args, kwargs)

        def step(s, _):
            s = self.sampler.sample(s, args, kwargs)
            if tick:
                jax.debug.callback(self._tick)
            return s, (post(s.z), {f: getattr(s, f) for f in FIELDS})

        return jax.lax.scan(step, state, None, length=n)

    def _phase(self, collect: bool, state, args, kwargs, total, bar):
        """Run ``total`` transitions in chunks; warm-up runs the collecting chunk too and drops
        its draws, so a new model or shape traces and compiles one NumPyro transition loop,
        not two (the same transitions: ``sampler.sample`` either way; ~20 % of a fresh fit's
        time at d = 384)."""
        outs, done = [], 0
        while done < total:
            n = min(CHUNK, total - done)
            self._limit = bar.n + n * self._per_tick
            state, out = self._collect(state, args, kwargs, n, not bar.disable)
            if collect:
                outs.append(out)
            done += n
            if not bar.disable:
                jax.effects_barrier()  # every tick of the chunk has reached the bar
            bar.update(self._limit - bar.n)
        return state, outs

    def _one_batch(self, keys, args, kwargs, bar):
        state = self._init(keys, args, kwargs)
        state, _ = self._phase(False, state, args, kwargs, self.num_warmup, bar)
        _, outs = self._phase(True, state, args, kwargs, self.num_samples, bar)
        axis = 1 if self.chain_method == "vectorized" else 0  # the draw axis
        return jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs], axis), *outs)

    def run(self, key, args: tuple, kwargs: dict, progress: bool = False):
        """``(samples {site: [chains, draws, ...]}, stats {field: [chains, draws]})``."""
        keys = jax.random.split(key, self.num_chains)
        total = self.num_chains * (self.num_warmup + self.num_samples)
        with tqdm(total=total, desc="NUTS", unit="step", disable=not progress) as bar:
            self._bar = bar
            try:
                if self.chain_method == "vectorized":
                    samples, stats = self._one_batch(keys, args, kwargs, bar)
                else:
                    per = [self._one_batch(k, args, kwargs, bar) for k in keys]
                    samples, stats = jax.tree.map(lambda *xs: np.stack(xs), *per)
            finally:
                self._bar = None
        return samples, {k: np.asarray(v) for k, v in stats.items()}


def cache_size(chains: Chains) -> int:
    """Compiled variants held by a runner's jitted functions (one per shape and chunk length;
    a steady loop of same-shaped fits keeps it constant)."""
    return sum(f._cache_size() for f in (chains._init, chains._collect))  # type: ignore[attr-defined]


#: compiled samplers kept by default (least recently used dropped first)
MAX_SAMPLERS = NUTS_RUNNERS.max_size


def _kernel(model, o: Any) -> NUTS:
    """The NUTS kernel of ``model`` with the method's settings."""
    return NUTS(
        model,
        init_strategy=init_strategy(o.init_strategy),
        dense_mass=bool(o.dense_mass),
        target_accept_prob=o.target_accept_prob,
        max_tree_depth=o.max_tree_depth,
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
        The compiled :class:`~.nuts.Chains`.
    dynamic : dict
        Keywords passed as traced arguments.
    fresh : bool
        Whether it was built now.
    """
    dyn, static = split_kwargs(prob.kwargs, prob.targets.dtype)
    settings = (bool(o.dense_mass), o.target_accept_prob, o.max_tree_depth, o.chain_method)
    settings += (tuple(sorted(counts.items())),)
    key = None
    if isinstance(o.init_strategy, str):
        args = jax.tree.map(lambda a: (tuple(a.shape), str(a.dtype)), prob.args)
        shapes = tuple(
            (k, tuple(np.shape(v)), str(getattr(v, "dtype", type(v).__name__)))
            for k, v in sorted(dyn.items())
        )
        key = (prob.model, static, o.init_strategy, settings, args, shapes)
    table = o.runners if o.runners is not None else NUTS_RUNNERS
    fresh = key is None or key not in table

    def build():
        model = functools.partial(prob.model, **dict(static)) if static else prob.model
        c = [counts[k] for k in ("num_warmup", "num_samples", "num_chains")]
        return Chains(_kernel(model, o), *c, o.chain_method)

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
    mcmc = MCMC(
        _kernel(prob.model, o), chain_method="parallel", progress_bar=bool(o.progress), **counts
    )
    with guard("nuts"):
        mcmc.run(jax.random.PRNGKey(seed), *prob.args, extra_fields=FIELDS, **prob.kwargs)
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
        trace = handlers.trace(handlers.seed(prob.model, seed)).get_trace(*prob.args, **prob.kwargs)
        latent = [k for k, s in trace.items() if s["type"] == "sample" and not s["is_observed"]]
        values = {k: trace[k]["value"] for k in latent}
        what = "nuts: the model cannot be initialised: its log density or gradient is not finite"
        raise failure(what, prob, values) from None


def run_nuts(run: RunSpec, prob: Problem, o: Any, sites: list[str]) -> Fit:
    """NUTS draws of ``prob`` for the posterior ``run`` describes: the fit of
    :class:`~.methods.NUTS`."""
    seed = int(o.seed)
    counts = {k: getattr(o, k) for k in ("num_warmup", "num_samples", "num_chains")}
    runner = run_mcmc if o.chain_method == "parallel" else run_cached
    samples, stats, mcmc = runner(prob, o, counts, seed)
    info = {
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
    pts, how = nuts_points(run, prob, kept)
    return Fit(kept, stats, pts, {**info, **how}, raw=mcmc)


def nuts_points(post: RunSpec, prob: Problem, samples: dict) -> tuple[dict | None, dict]:
    """Point summaries of a NUTS run: under ``subspace=`` on the family's own model with a
    :attr:`~.protocol.Family.covariance_site`, the ``"map"`` draw of highest *full-d* joint
    density (:func:`.posterior.joint_correction`); otherwise left to ``post.point``."""
    total = int(np.prod(next(iter(samples.values())).shape[:2]))
    if post.subspace is None or prob.custom or post.family_class.covariance_site is None:
        best = f"the draw (of {total}) of highest density of the model's parameters"
        if post.subspace is not None:
            best += (
                ", lifted with the default prior's conditional mode outside the subspace "
                "(not the joint mode of one full-d model)"
            )
        return None, sampled_descriptions(post, best=best)
    fam = post.family_class
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in samples.items() if k in fam.sites}
    kwargs = {
        k: np.asarray(v, np.float64) if hasattr(v, "shape") else v for k, v in prob.kwargs.items()
    }
    lik = fam.likelihood_type(fam, kwargs, post.fixed, post.dim)
    lp = lik.log_joint(np.asarray(prob.targets, np.float64), flat)
    i = first_max(lp + joint_correction(fam, flat, post.dim))
    best = (
        f"the draw (of {total}) of highest full-d joint density, lifted with the "
        f"conditional mode (the best draw, not the optimum: for the exact joint mode use "
        f"method='exact' or method='svi' with guide='delta')"
    )
    return {"map": {k: v[i] for k, v in flat.items()}}, sampled_descriptions(post, best=best)
