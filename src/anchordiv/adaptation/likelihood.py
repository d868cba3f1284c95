"""The targets' likelihood under a family's model, at fixed hyperparameters: one object for the
pointwise log likelihood (LOO, PSIS, K-fold), simulated anchors (posterior and prior predictive
checks, SBC), the log joint ("map" of draws), prior draws, and what the model's sites must be.

    lik = post.likelihood()                 # or prior.likelihood()
    lik.log_density(draws {site: [S, ...]}, targets [n, d])   # [S, n]
    lik.sample(draws, n, rng)                                 # [S, n, d]
    lik.log_joint(targets [n, d], draws)                      # [S]
    lik.prior_draws(rng, n)                                   # {site: [n, ...]}

:class:`Likelihood` gets every one of them from the family's NumPyro model
``model(targets, **model_kwargs)`` by tracing it (NumPyro's ``log_likelihood``,
:func:`log_joint` and ``Predictive``), in float64 whatever JAX's global precision: the observed
site must be named ``"targets"`` and sit in a plate over the anchors.  That is all a family of
one's own needs.  A family with closed forms names a subclass as its ``likelihood_type`` and
overrides what it has (the library's families do: float64 numpy, no tracing) — the anchor
model's density and simulator (:meth:`Likelihood.log_density`, :meth:`Likelihood.sample`), the
prior's (:meth:`Likelihood.log_joint`, :meth:`Likelihood.exact_prior`), and what its sites are
(:meth:`Likelihood.site_shapes`, :attr:`Likelihood.positive_definite`,
:meth:`Likelihood.summarise`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .._tolerance import first_max
from ..errors import AnchorDivError

#: the observed site every family's model names
OBSERVED = "targets"
#: sites of the explicit models that only parametrise another site (excluded from densities)
AUXILIARY_SUFFIX = "_raw"


def observed_name_error(observed: list[str], model) -> str:
    """Why a model whose observed site(s) ``observed`` are not named :data:`OBSERVED` cannot be
    used (the message of an :class:`AnchorDivError`)."""
    name = getattr(model, "__qualname__", None) or type(model).__name__
    return (
        f"model: {name} observes the site(s) {', '.join(repr(k) for k in observed) or '(none)'}; "
        f"the target anchors' site must be named {OBSERVED!r}: "
        f"numpyro.sample({OBSERVED!r}, ..., obs=targets) in a plate over the anchors (the "
        f"likelihood, LOO and the predictive checks read it by that name)"
    )


class Likelihood:
    """The likelihood of target anchors under ``family``'s model with hyperparameters
    ``kwargs`` (module docstring): the generic one, traced from the model.

    Parameters
    ----------
    family : type
        The family class (its ``model``).
    kwargs : dict
        The model's keyword arguments (``Posterior.model_kwargs``).
    fixed : dict
        Arrays every draw shares (``Posterior.fixed``).
    d : int
        The embedding dimension.

    Examples
    --------
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> lik = post.likelihood()
    >>> lik
    NIWLikelihood(NIWPrior, d=4)
    >>> lik.log_density(post.draws(0, 3), np.eye(4)[:2]).shape
    (3, 2)
    """

    #: sites holding covariance matrices (checked symmetric positive definite in a user's model)
    positive_definite: ClassVar[tuple[str, ...]] = ()

    def __init__(self, family, kwargs: dict | None, fixed: dict | None, d: int):
        self.family, self.kwargs, self.fixed, self.d = family, dict(kwargs or {}), fixed or {}, d

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.family.__name__}, d={self.d})"

    @property
    def model(self) -> Callable:
        """The NumPyro model traced: the family's."""
        return self.family.model

    def log_density(self, draws: dict, targets: np.ndarray) -> np.ndarray:
        """Pointwise ``log p(t_i | θ_s)`` ``[S, n]`` (float64)."""
        from numpyro.infer.util import log_likelihood

        with _float64() as jnp:
            try:
                out = log_likelihood(
                    self.model,
                    _jax(draws, jnp),
                    jnp.asarray(targets),
                    **self._jax_kwargs(jnp),
                )
            except (AssertionError, KeyError, TypeError, ValueError) as err:
                raise AnchorDivError(self._unreadable(draws, err)) from None
            if OBSERVED not in out:
                raise AnchorDivError(observed_name_error(list(out), self.model))
            return np.asarray(out[OBSERVED], np.float64)

    def _unreadable(self, draws: dict, err: Exception) -> str:
        """Why the traced model could not score ``draws`` (an :class:`AnchorDivError`'s
        message): the sites it was given, and what a model needs of them."""
        given = ", ".join(f"{k} {tuple(np.shape(v))}" for k, v in draws.items()) or "none"
        return (
            f"likelihood: the {self.family.__name__} model, traced, cannot score these draws "
            f"(sites {given}; {type(err).__name__}: {str(err) or 'no message'}): the generic "
            f"likelihood substitutes the draws into the model and needs a value for every one "
            f"of its latent sample sites, with a leading draw axis — draws of derived sites "
            f"only (an auxiliary '*{AUXILIARY_SUFFIX}' site left out, a deterministic site in "
            f"its place) need the family's own likelihood_type"
        )

    def sample(self, draws: dict, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` anchors simulated per draw ``[S, n, d]`` from the likelihood."""
        import jax
        from numpyro import handlers

        model = self.model
        with _float64() as jnp:
            kwargs = self._jax_kwargs(jnp)
            placeholder = jnp.zeros((int(n), self.d))

            def one(key, values):
                run = handlers.substitute(handlers.seed(_unobserved(model), key), values)
                trace = handlers.trace(run).get_trace(placeholder, **kwargs)
                if OBSERVED not in trace:
                    observed = [k for k, s in trace.items() if s.get("is_observed")]
                    raise AnchorDivError(observed_name_error(observed, model))
                return trace[OBSERVED]["value"]

            values = _jax(draws, jnp)
            size = len(next(iter(values.values())))
            keys = jax.random.split(jax.random.PRNGKey(int(rng.integers(2**31))), size)
            return np.asarray(jax.vmap(one)(keys, values), np.float64)

    def log_joint(self, targets: np.ndarray, draws: dict) -> np.ndarray:
        """``log p(θ_s, targets)`` ``[S]`` of the model (float64)."""
        with _float64() as jnp:
            return log_joint(self.model, jnp.asarray(targets), self._jax_kwargs(jnp), draws)

    def exact_prior(self):
        """The model's prior as exact parameters (``mean()``, ``mode()``, ``sample(rng, n)``),
        or None where it has no closed form (then :meth:`prior_draws` traces the model)."""
        return None

    def prior_draws(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` draws ``{site: [n, ...]}`` of the model's latent and deterministic sites under
        its prior (the :meth:`exact_prior`'s own draws where there is one)."""
        exact = self.exact_prior()
        if exact is not None:
            return exact.sample(rng, n)
        import jax
        from numpyro.infer import Predictive

        with _float64() as jnp:
            # no posterior samples to condition on: numpyro's deterministic-site option has
            # nothing to act on, so it is left at its default
            out = Predictive(self.model, num_samples=int(n), parallel=True)(
                jax.random.PRNGKey(int(rng.integers(2**31))),
                jnp.zeros((1, self.d)),
                **self._jax_kwargs(jnp),
            )
            return {k: np.asarray(v, np.float64) for k, v in out.items() if k != OBSERVED}

    # ---- the sites ------------------------------------------------------------------------
    @classmethod
    def site_shapes(cls, d: int, shapes: dict) -> dict[str, tuple]:
        """Expected shapes of the family's sites at dimension ``d`` given a model's site
        shapes ``{site: shape of one draw}`` (a free size, e.g. components, is read from
        there); ``{}``: no requirement."""
        return {}

    @classmethod
    def check_values(cls, values: dict, kind: str) -> None:
        """Raise an :class:`AnchorDivError` naming the first :attr:`positive_definite` site of
        ``values`` (one draw or a batch) that is not a symmetric positive-definite matrix."""
        for site in cls.positive_definite:
            if site in values and not _positive_definite(np.asarray(values[site], np.float64)):
                m = np.shape(values[site])
                raise AnchorDivError(
                    f"model: site {site!r} is not a symmetric positive-definite "
                    f"covariance {list(m[-2:])} (kind {kind!r}); "
                    f"build it as e.g. L Lᵀ + diag(ψ) with ψ > 0"
                )

    @classmethod
    def summarise(cls, s: dict, which: str, lp: np.ndarray | None) -> dict:
        """Point parameters from samples ``{site: [S, ...]}``: the draw of highest posterior
        density ``lp [S]`` (``"map"``) or the mean."""
        if which == "map":
            i = first_max(lp)
            return {k: v[i] for k, v in s.items()}
        return {k: v.mean(0) for k, v in s.items()}

    def _jax_kwargs(self, jnp) -> dict:
        return {
            k: jnp.asarray(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
            for k, v in self.kwargs.items()
        }


class UserModelLikelihood(Likelihood):
    """The generic, traced likelihood of a user's own NumPyro ``model(targets, **kwargs)`` (a
    run with ``model=``): what its draws were sampled under, whatever the family's likelihood
    is (:func:`anchordiv.inference_data`'s ``log_likelihood`` group of such a run)."""

    def __init__(self, family, model: Callable, kwargs: dict | None, fixed: dict | None, d: int):
        super().__init__(family, _float_arrays(kwargs or {}), fixed, d)
        self._model = model

    def __repr__(self) -> str:
        name = getattr(self._model, "__qualname__", type(self._model).__name__)
        return f"{type(self).__name__}({name}, d={self.d})"

    @property
    def model(self) -> Callable:
        return self._model


def _float_arrays(kwargs: dict) -> dict:
    """``kwargs`` with JAX arrays as NumPy float64 arrays (traced again in float64)."""
    out = {}
    for k, v in kwargs.items():
        a = np.asarray(v) if hasattr(v, "dtype") and hasattr(v, "shape") else None
        out[k] = a.astype(np.float64) if a is not None and a.dtype.kind == "f" else v
    return out


def _positive_definite(m: np.ndarray) -> bool:
    sym = np.allclose(
        m, np.swapaxes(m, -1, -2), rtol=1e-5, atol=1e-8 * max(np.abs(m).max(initial=0.0), 1e-300)
    )
    if not (sym and bool(np.all(np.isfinite(m)))):
        return False
    try:
        np.linalg.cholesky(0.5 * (m + np.swapaxes(m, -1, -2)))
    except np.linalg.LinAlgError:
        return False
    return True


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
    parameters, which ``post.point("map")`` maximises — the family's own model's
    (``model=None``: its likelihood type's :meth:`Likelihood.log_joint`, closed form where it has
    one) or a user's ``model``'s, every stored site substituted (:func:`log_joint`: the density
    of the model's own sample sites).

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
        lik = dataclasses.replace(post, model_kwargs=kwargs).likelihood()
        lp = lik.log_joint(np.asarray(targets, np.float64), flat)
    else:
        lp = log_joint(model, targets, kwargs, flat)
    return dataclasses.replace(post, stats={**(post.stats or {}), "log_density": lp.reshape(shape)})


__all__ = [
    "AUXILIARY_SUFFIX",
    "OBSERVED",
    "Likelihood",
    "UserModelLikelihood",
    "log_joint",
    "observed_name_error",
    "with_log_density",
]
