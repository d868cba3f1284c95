"""A compiled NUTS chain runner that is reused across fits: the model's arguments (targets,
float and array hyperparameters) are traced inputs, so a new fit of the same model, settings and
shapes compiles nothing.

NumPyro's ``MCMC.run`` rebuilds (and so recompiles) its collection loop on every call even with
``jit_model_args=True`` (a fresh ``jax.jit`` wrapper is a static argument of the loop), ≈ 2.5 s
per fit and, over a few hundred fits in one process, enough JIT code to exhaust LLVM's section
memory.  :class:`Chains` instead jits two functions once — initialisation and a chunk of
:data:`CHUNK` NUTS transitions that collects the draws (``kernel.sample``, which adapts step size
and mass matrix while ``i < num_warmup``; warm-up chunks drop what they collect) — and steps
through them in Python.  With progress shown, each transition also reports to the bar from
inside the compiled chunk (a host callback, ~20–60 µs a transition), so a model whose
transitions take seconds (full-d NUTS at d = 384) still moves the bar, and writes its lines into
a log, between chunk ends; without progress the chunk is compiled without the callback.  Chains run one after another (``"sequential"``) or batched with ``vmap``
(``"vectorized"``).
"""

from __future__ import annotations

import jax
import numpy as np

from ..progress import tqdm

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
        self._bar, self._limit, self._per_tick = None, 0, 1

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
            self._per_tick = self.num_chains if self.chain_method == "vectorized" else 1
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


__all__ = ["CHUNK", "Chains", "FIELDS", "cache_size"]
