"""The targets' likelihood under a family's model, at fixed hyperparameters: one object for the
pointwise log likelihood (LOO, PSIS, K-fold), simulated anchors (posterior and prior predictive
checks, SBC), the log joint ("map" of draws) and prior draws.

    lik = post.likelihood()                 # or Likelihood(family, model_kwargs, fixed, d)
    lik.log_density(draws {site: [S, ...]}, targets [n, d])   # [S, n]
    lik.sample(draws, n, rng)                                 # [S, n, d]
    lik.log_joint(targets [n, d], draws)                      # [S]
    lik.prior_draws(rng, n)                                   # {site: [n, ...]}

A family that has closed forms supplies them as classmethods ``log_likelihood(draws, targets,
fixed)``, ``predictive(draws, n, fixed, rng)``, ``log_joint(targets, kwargs, draws)`` and
``prior_posterior(kwargs)`` (the library's families do: float64 numpy, no tracing).  A family
that does not — a user's, written in a few lines — gets every one of them from its NumPyro model
``model(targets, **model_kwargs)`` by tracing it (NumPyro's ``log_likelihood``,
:func:`log_joint` and ``Predictive``), in float64 whatever JAX's global precision: the observed
site must be named ``"targets"`` and sit in a plate over the anchors.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from ..errors import AnchorDivError

#: the observed site every family's model names
OBSERVED = "targets"
#: sites of the explicit models that only parametrise another site (excluded from densities)
AUXILIARY_SUFFIX = "_raw"


class Likelihood:
    """The likelihood of target anchors under ``family``'s model with hyperparameters
    ``kwargs`` (module docstring).

    Parameters
    ----------
    family : type
        The family class (its closed forms where it has them, else its ``model``).
    kwargs : dict
        The model's keyword arguments (``Posterior.model_kwargs``).
    fixed : dict
        Arrays every draw shares (``Posterior.fixed``).
    d : int
        The embedding dimension.

    Examples
    --------
    >>> from anchordiv.adaptation.likelihood import Likelihood
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> lik = post.likelihood()
    >>> lik.log_density(post.draws(0, 3), np.eye(4)[:2]).shape
    (3, 2)
    """

    def __init__(self, family, kwargs: dict | None, fixed: dict | None, d: int):
        self.family, self.kwargs, self.fixed, self.d = family, dict(kwargs or {}), fixed or {}, d

    def __repr__(self) -> str:
        return f"Likelihood({self.family.__name__}, d={self.d})"

    def log_density(self, draws: dict, targets: np.ndarray) -> np.ndarray:
        """Pointwise ``log p(t_i | θ_s)`` ``[S, n]`` (float64)."""
        closed = getattr(self.family, "log_likelihood", None)
        if closed is not None:
            return np.asarray(closed(draws, targets, self.fixed), np.float64)
        from numpyro.infer.util import log_likelihood

        with _float64() as jnp:
            out = log_likelihood(
                self.family.model, _jax(draws, jnp), jnp.asarray(targets), **self._jax_kwargs(jnp)
            )
            return np.asarray(out[OBSERVED], np.float64)

    def sample(self, draws: dict, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` anchors simulated per draw ``[S, n, d]`` from the likelihood."""
        closed = getattr(self.family, "predictive", None)
        if closed is not None:
            return np.asarray(closed(draws, n, self.fixed, rng), np.float64)
        import jax
        from numpyro import handlers

        model = self.family.model
        with _float64() as jnp:
            kwargs = self._jax_kwargs(jnp)
            placeholder = jnp.zeros((int(n), self.d))

            def one(key, values):
                run = handlers.substitute(handlers.seed(_unobserved(model), key), values)
                return handlers.trace(run).get_trace(placeholder, **kwargs)[OBSERVED]["value"]

            values = _jax(draws, jnp)
            size = len(next(iter(values.values())))
            keys = jax.random.split(jax.random.PRNGKey(int(rng.integers(2**31))), size)
            return np.asarray(jax.vmap(one)(keys, values), np.float64)

    def log_joint(self, targets: np.ndarray, draws: dict) -> np.ndarray:
        """``log p(θ_s, targets)`` ``[S]`` of the model (float64)."""
        closed = getattr(self.family, "log_joint", None)
        if closed is not None:
            return np.asarray(closed(targets, self.kwargs, draws), np.float64)
        with _float64() as jnp:
            return log_joint(self.family.model, jnp.asarray(targets), self._jax_kwargs(jnp), draws)

    def prior_draws(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` draws ``{site: [n, ...]}`` of the model's latent and deterministic sites under
        its prior (the family's ``prior_posterior`` where it has one)."""
        closed = getattr(self.family, "prior_posterior", None)
        if closed is not None:
            return closed(self.kwargs).sample(rng, n)
        import jax
        from numpyro.infer import Predictive

        with _float64() as jnp:
            out = Predictive(
                self.family.model, num_samples=int(n), exclude_deterministic=False, parallel=True
            )(
                jax.random.PRNGKey(int(rng.integers(2**31))),
                jnp.zeros((1, self.d)),
                **self._jax_kwargs(jnp),
            )
            return {k: np.asarray(v, np.float64) for k, v in out.items() if k != OBSERVED}

    def _jax_kwargs(self, jnp) -> dict:
        return {
            k: jnp.asarray(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
            for k, v in self.kwargs.items()
        }


@contextlib.contextmanager
def _float64():
    """JAX's float64 mode for the duration of a block (the host-side checks are float64 like
    the closed forms; the global setting is untouched); yields ``jax.numpy``."""
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        yield jnp


def log_joint(model, targets, kwargs: dict, draws: dict) -> np.ndarray:
    """``log p(θ_s, targets)`` ``[S]`` of a NumPyro ``model(targets, **kwargs)`` at constrained
    parameter values ``draws {site: [S, ...]}`` — the density of the parameters themselves, with
    no Jacobian of NUTS's unconstrained coordinates and no auxiliary ``*_raw`` sites (a Stiefel
    site ``U`` is evaluated by substituting ``U_raw = U``: its frame is U itself).  Evaluated
    by an eager ``vmap`` (primitives compiled once per shape, nothing compiled per call)."""
    import jax
    import jax.numpy as jnp
    from numpyro import handlers

    t = jnp.asarray(targets)
    params = {k: jnp.asarray(v) for k, v in draws.items()}
    if "U" in params:
        params["U" + AUXILIARY_SUFFIX] = params["U"]

    def one(p):
        tr = handlers.trace(handlers.substitute(handlers.seed(model, 0), data=p)).get_trace(
            t, **kwargs
        )
        total = 0.0
        for name, site in tr.items():
            if site["type"] != "sample" or name.endswith(AUXILIARY_SUFFIX):
                continue
            lp = site["fn"].log_prob(site["value"])
            total = total + jnp.sum(lp * (1.0 if site["scale"] is None else site["scale"]))
        return total

    # eager vmap, not a jit of this call's closure: a fresh jit compiled on every fit
    return np.asarray(jax.vmap(one)(params), np.float64)


def _jax(draws: dict, jnp) -> dict:
    return {k: jnp.asarray(np.asarray(v, np.float64)) for k, v in draws.items()}


def _unobserved(model):
    """``model`` with the observed ``targets`` site sampled instead (its value dropped)."""
    from numpyro.primitives import Messenger

    class Unobserved(Messenger):
        def process_message(self, msg):
            if msg["type"] == "sample" and msg["name"] == OBSERVED:
                msg["is_observed"], msg["value"] = False, None

    return Unobserved(model)


def with_log_density(post, targets, model=None, model_kwargs: dict | None = None):
    """Copy of a sampled posterior with the log joint density of each draw.

    Adds ``stats["log_density"] [chains, draws]``: the log joint of each draw's constrained
    parameters, which ``post.point("map")`` maximises — in closed form for the kind's default
    model (``model=None``, the family's float64 ``log_joint``), by substituting every stored site into
    a user's ``model`` otherwise (:func:`log_joint`: the density of the model's own sample sites).

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
    """
    kwargs = model_kwargs if model_kwargs is not None else post.model_kwargs
    if kwargs is None:
        raise AnchorDivError("model_kwargs: needed to evaluate the posterior density")
    shape = next(iter(post.samples.values())).shape[:2]
    flat = post.flat_samples()
    if model is None:
        flat = {k: v for k, v in flat.items() if k in post.family_class.sites}
        lik = Likelihood(post.family_class, kwargs, post.fixed, int(post.info["d"]))
        lp = lik.log_joint(np.asarray(targets, np.float64), flat)
    else:
        lp = log_joint(model, targets, kwargs, flat)
    return dataclasses.replace(post, stats={**(post.stats or {}), "log_density": lp.reshape(shape)})


__all__ = ["AUXILIARY_SUFFIX", "OBSERVED", "Likelihood", "log_joint", "with_log_density"]
