"""The posterior every inference method returns, and its point summaries:
:class:`ExactPosterior` (the conjugate update's parameters), :class:`SampledPosterior` (NUTS
chains or an SVI guide's draws) and :class:`SubspacePosterior` (a ``subspace=r`` run lifted to
full d with the default prior's exact posterior).  ``point``/``sample`` turn any of them into
anchor models through the family (:attr:`~Posterior.prior`), so scoring never depends on how the
posterior was computed.  Saving: :meth:`Posterior.save` / ``ad.load_posterior``.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from .._safeio import malformed
from ..anchors.base import AnchorModel
from ..errors import AnchorDivError, integer, user_stacklevel
from ..io import MAX_LOADED_TAU, check_axes, check_loaded_model, expect_type, read_bundle
from ..io import write_bundle
from ..threads import limited_blas
from .model import Likelihood, UserModelLikelihood
from .registry import FAMILIES, get_family, is_conjugate


@dataclasses.dataclass
class Posterior:
    """Result of :func:`adapt` / :func:`infer`: an exact or sampled posterior over anchor models.

    Use :meth:`point` for an anchor model, :meth:`sample` for posterior draws of anchor models,
    :meth:`save` to store it, ``ad.inference_data(post)`` for ArviZ.  The abstract base: build
    the type you mean (:class:`ExactPosterior` with ``exact`` parameters,
    :class:`SubspacePosterior` with a ``subspace`` rank, :class:`SampledPosterior` with draws);
    ``Posterior(...)`` itself is an error.

    Parameters
    ----------
    kind : str
        The family's kind (that of ``prior`` where one is given).
    method : str
        How it was inferred (the method's name: ``"exact"``, ``"nuts"``, ``"svi"``).
    tau : float
        The encoder's logit scale of the adapted models.
    dtype : str
        dtype of the adapted models.
    info : dict
        Chosen hyperparameters, counts, diagnostics (JSON-able; never read to decide anything).
    exact : object, optional
        Exact posterior parameters.
    samples : dict, optional
        ``{site: [chains, draws, ...]}``: every latent and deterministic site of the model.
    stats : dict, optional
        NUTS sample statistics.
    fixed : dict
        Arrays every draw shares (latent mean, radius; subspace runs add ``basis [d, d]``).
    points : dict, optional
        Summaries computed at fit time (e.g. the SVI guide's MAP).
    elbo : numpy.ndarray, optional
        SVI: the ELBO per step.
    completion : object, optional
        Subspace runs: the default prior's exact full-d posterior, outside the subspace.
    prior : Family, optional
        The prior object (:mod:`.protocol`): the posterior's handle to its family.
    model_kwargs : dict, optional
        The keyword arguments the family's NumPyro model ran (or would run) with for these
        targets; saved, so a loaded posterior draws, scores and checks as the fitted one.
    raw : object, optional
        The NumPyro ``MCMC`` or SVI result object for advanced use (not saved).
    subspace : int, optional
        The rank r of a ``subspace=r`` run (None: full d).
    custom_model : bool, default False
        Whether a user's NumPyro model ran instead of the family's own.
    guide : str, optional
        The SVI guide's name (a user guide's class name); None for an exact or NUTS posterior.

    Raises
    ------
    AnchorDivError
        ``Posterior(...)`` itself (the abstract base), or a ``prior`` of another kind than
        ``kind``.

    Examples
    --------
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> post
    Posterior(kind='gaussian', method='exact', d=4, tau=20)
    ...
    >>> len(post.sample(seed=0, n=3))
    3
    >>> {k: v.shape for k, v in post.draws(seed=0, n=3).items()}
    {'mu': (3, 4), 'Sigma': (3, 4, 4)}
    """

    kind: str
    method: str
    tau: float
    dtype: str
    info: dict
    exact: object = None
    samples: dict | None = None
    stats: dict | None = None
    fixed: dict = dataclasses.field(default_factory=dict)
    points: dict | None = None
    elbo: np.ndarray | None = None
    completion: object = None
    prior: object = None
    model_kwargs: dict | None = None
    raw: object = dataclasses.field(default=None, repr=False, compare=False)
    subspace: int | None = None
    custom_model: bool = False
    guide: str | None = None
    _: dataclasses.KW_ONLY
    #: ``(model, kwargs)`` of a run on a user's own NumPyro model (``model=``, full d): the
    #: model its draws come from (:meth:`model_likelihood`); not saved
    user_model: tuple | None = dataclasses.field(default=None, repr=False, compare=False)

    #: whether the draws are the conjugate update's own (closed-form parameters)
    closed_form: ClassVar[bool] = False

    def __post_init__(self):
        if type(self) is Posterior:
            raise AnchorDivError(
                "Posterior(...): the abstract base of the posterior types; build "
                "ExactPosterior(...) (exact parameters), SampledPosterior(...) (draws) or "
                "SubspacePosterior(...) (draws of a subspace=r run)"
            )
        if self.prior is not None and getattr(self.prior, "kind", None) != self.kind:
            raise AnchorDivError(
                f"Posterior: kind {self.kind!r}, but its prior is a "
                f"{getattr(self.prior, 'kind', None)!r} prior ({type(self.prior).__name__})"
            )
        self.fixed = {} if self.fixed is None else self.fixed
        self.custom_model = bool(self.custom_model)

    def __repr__(self) -> str:
        """A few lines: what was fitted, how, its size and the scalar entries of ``info``."""
        head = [
            f"kind={self.kind!r}",
            f"method={self.method!r}",
            f"d={self.info.get('d', '?')}",
            f"tau={self.tau:g}",
        ] + ([f"subspace={self.subspace}"] if self.subspace else [])
        lines = [f"Posterior({', '.join(head)})", self._content_line()]
        scalars = [
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.info.items()
            if isinstance(v, (int, float, str, bool)) and k not in ("kind", "method", "d")
        ]
        lines.append("  info: " + ", ".join(scalars))
        return "\n".join(line if len(line) <= 120 else line[:117] + "..." for line in lines)

    def _content_line(self) -> str:
        """The repr's second line: what the posterior holds."""
        shapes = ", ".join(f"{k} {list(np.shape(v))[2:]}" for k, v in (self.samples or {}).items())
        first = np.shape(next(iter(self.samples.values()))) if self.samples else (0, 0)
        return f"  draws: {first[0]} chains x {first[1]}; sites: {shapes}"

    # ---- the family ---------------------------------------------------------------------------
    @property
    def family_class(self):
        """The family: the class of :attr:`prior` (a family registered from a user's module
        included); the registry's entry for :attr:`kind` only for a posterior built without its
        prior."""
        return type(self.prior) if self.prior is not None else family_of(self.kind)

    @property
    def dim(self) -> int:
        """The embedding dimension d of the adapted models."""
        return int(self.prior.dim if self.prior is not None else self.info["d"])  # type: ignore[attr-defined]

    @property
    def variational(self) -> bool:
        """Whether the draws are an SVI guide's (:attr:`guide`)."""
        return self.guide is not None

    @property
    def point_guide(self) -> bool:
        """Whether it is a delta guide's fit (SVI MAP): a point, with no spread to calibrate or
        importance-sample."""
        return self.guide == "delta"

    @property
    def independent_draws(self) -> bool:
        """Whether the draws are independent (exact or guide draws), not Markov chains."""
        return True

    def likelihood(self) -> Likelihood:
        """The targets' likelihood under the family's model at this posterior's
        :attr:`model_kwargs` (pointwise log likelihood, simulated anchors, log joint)."""
        fam = self.family_class
        return fam.likelihood_type(fam, self.model_kwargs, self.fixed, self.dim)

    def model_likelihood(self) -> Likelihood | None:
        """The likelihood of the model the draws come from: the family's (:meth:`likelihood`),
        or a user's own model's (``model=``) where this posterior still holds it
        (:attr:`user_model`); None where that model is not known (a user's model of a saved
        posterior, or of a ``subspace=`` run, whose model saw projected targets)."""
        if not self.custom_model:
            return self.likelihood()
        if self.user_model is None:
            return None
        model, kwargs = self.user_model
        return UserModelLikelihood(self.family_class, model, kwargs, self.fixed, self.dim)

    # ---- what each type implements --------------------------------------------------------------
    def params(self, which: str = "mean") -> dict[str, np.ndarray]:
        """Point-summary parameters (``"mean"`` or ``"map"``) as float64 arrays."""
        if which not in ("mean", "map"):
            raise AnchorDivError(f"which: 'mean' or 'map', got {which!r}")
        return self._params(which)

    def _params(self, which: str) -> dict[str, np.ndarray]:
        """:meth:`params` of a checked ``which`` (each type's own)."""
        raise NotImplementedError

    @limited_blas
    def draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        """Posterior parameter draws: an exact posterior's from the family's own sampler where
        it has one, else the parameters' ``sample``; a sampled one's resampled from the stored
        draws without replacement where possible (subspace runs lifted with fresh draws of the
        geometry outside the subspace; every other site of the model kept).

        Parameters
        ----------
        seed : int
            Seed of the draws.
        n : int
            Number of draws (≥ 1).

        Returns
        -------
        dict of str to numpy.ndarray
            ``{site: [n, ...]}``.
        """
        seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
        return self._draws(np.random.default_rng(seed), integer("n", n, low=1))

    def _draws(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """:meth:`draws` of a checked ``n`` from ``rng`` (each type's own)."""
        raise NotImplementedError

    def ordered_draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        """``n`` draws in the order they were made (a sampler's chain order; fresh draws of an
        exact posterior): what thinning needs."""
        raise NotImplementedError

    def chain_draws(self, seed: int, chains: int, per_chain: int) -> dict[str, np.ndarray]:
        """Draws ``{site: [chains, per_chain, ...]}`` as independent chains: an exact posterior
        from its family's own sampler (``exact_chains``) or ``independent(params, rng, chains,
        per_chain)``; a sampled one resampled from its draws (:meth:`draws`)."""
        draws = self.draws(seed, chains * per_chain)
        return {k: v.reshape((chains, -1) + v.shape[1:]) for k, v in draws.items()}

    def exact_chains(self, rng, chains: int, per_chain: int) -> dict | None:
        """Exact draws ``{site: [chains, per_chain, ...]}`` from the family's own sampler of the
        full posterior (the :class:`~anchordiv.Conjugate` option ``exact_chains``), or None
        where there is none (a posterior given by draws included)."""
        return None

    def lift(self, ps: list[dict], which: str = "mean", rng=None) -> list[dict]:
        """Full-d parameters of parameter sets ``ps``: the identity but for subspace runs."""
        return ps

    def lift_draws(self, draws: dict, rng) -> dict:
        """:meth:`lift` for stacked draws ``{site: [S, ...]}``: the identity but for subspace
        runs."""
        return draws

    def principal_directions(self, k: int) -> np.ndarray | None:
        """The run's own ``[d, k]`` leading broad directions (a subspace run's basis), or None."""
        return None

    def saved_params(self) -> dict[str, object]:
        """The parameter objects this posterior saves, by card key (``family``: the exact
        parameters; ``completion``: a subspace run's)."""
        return {}

    # ---- shared ---------------------------------------------------------------------------------
    def to_model(self, p: dict) -> AnchorModel:
        """The anchor model of one parameter set (a user's model: its covariance sites are
        checked positive definite first, with an error naming the site)."""
        fam = self.family_class
        if self.custom_model:
            fam.likelihood_type.check_values(p, self.kind)
        model = fam.to_model(p, self.tau, self.dtype, self.fixed)
        if not isinstance(model, AnchorModel):
            raise AnchorDivError(
                f"to_model: the {self.kind!r} family ({fam.__module__}.{fam.__qualname__}) "
                f"returned a {type(model).__name__}, not an anchor model; its to_model(p, tau, "
                f"dtype, fixed) must return an ad.AnchorModel (e.g. ad.Gaussian(mean, factor, "
                f"tau))"
            )
        return model

    @limited_blas
    def point(self, which: str = "mean") -> AnchorModel:
        """The adapted anchor model at the posterior mean or MAP (usable with ad.divergence).

        Latent kinds: both give the principal subspace of the posterior (for sampled posteriors,
        ``"mean"`` is the top-k eigenvectors of the sampled E[UUᵀ]).

        Parameters
        ----------
        which : {"mean", "map"}, default "mean"
            The point summary.

        Returns
        -------
        AnchorModel
            The adapted model.
        """
        return self.to_model(self.params(which))

    @limited_blas
    def sample(self, seed: int, n: int) -> list[AnchorModel]:
        """Posterior draws as anchor models (same shapes: scoring them never retraces).

        Parameters
        ----------
        seed, n : int
            The seed and number (≥ 1) of the draws, as for :meth:`draws`.

        Returns
        -------
        list of AnchorModel
            ``n`` anchor models.
        """
        d = self.draws(seed, n)
        return [self.to_model({k: v[i] for k, v in d.items()}) for i in range(n)]

    def plot_elbo(self, path) -> Path:
        """Write the SVI ELBO per step to the PNG ``path``."""
        if self.elbo is None:
            raise AnchorDivError(
                f"plot_elbo: a {self.method} posterior has no ELBO trace (only method='svi')"
            )
        from ..plots import elbo_plot

        return elbo_plot(self.elbo, path, title=f"SVI ({self.guide}) — {self.kind}")

    def flat_samples(self) -> dict[str, np.ndarray]:
        """The stored draws with chains merged ``{site: [chains·draws, ...]}`` (an
        :class:`AnchorDivError` where there are none)."""
        if not self.samples or any(np.ndim(v) < 2 or not np.size(v) for v in self.samples.values()):
            raise AnchorDivError(f"{self.kind}: this posterior has no stored draws")
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def flat_lp(self) -> np.ndarray | None:
        """Log posterior density of each draw (chains merged) that ``"map"`` maximises: the
        model's log joint at the constrained parameters (``stats["log_density"]``, see
        :func:`~anchordiv.adaptation.with_log_density`).  Posteriors sampled without it fall back to
        −potential energy, which is the density of NUTS's *unconstrained* coordinates
        (Jacobians included), with a warning."""
        if not self.stats:
            return None
        if "log_density" in self.stats:
            return np.asarray(self.stats["log_density"]).reshape(-1)
        warnings.warn(
            "point('map'): this posterior has no stats['log_density'] (the density "
            "of the constrained parameters); using −potential energy, which includes "
            "the Jacobian of the unconstrained coordinates — see "
            "anchordiv.adaptation.model.with_log_density",
            stacklevel=user_stacklevel(),
        )
        return -self.stats["potential_energy"].reshape(-1)

    # ---- saving ---------------------------------------------------------------------------------
    def save(self, path, *, overwrite: bool = False, **card) -> Path:
        """Save as a bundle (``arrays.npz`` + ``card.json``, the ``save_model`` format).

        Everything but ``raw`` (NumPyro's run objects) round-trips bit-exactly
        (:func:`load_posterior`).

        Parameters
        ----------
        path : str or Path
            Destination directory.
        overwrite : bool, default False
            Replace an existing non-empty destination; otherwise it is refused
            (:class:`~anchordiv.errors.OutputExistsError`).
        **card
            Extra card fields (``encoder``, ``anchor_source``, ...).

        Returns
        -------
        Path
            The directory written."""
        arrays, meta = self.to_arrays()
        return write_bundle(path, arrays, {**meta, **card}, overwrite=overwrite)

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, meta)``: the flat arrays and the JSON-able card of :meth:`save`."""
        arrays = {f"fixed.{k}": np.asarray(v) for k, v in self.fixed.items()}
        saved = self.saved_params()
        for prefix, params in saved.items():
            arrays.update({f"{prefix}.{k}": np.asarray(v) for k, v in _fields(params).items()})
        for group in ("samples", "stats"):
            arrays.update({f"{group}.{k}": v for k, v in (getattr(self, group) or {}).items()})
        for which, p in (self.points or {}).items():
            arrays.update({f"points.{which}.{k}": np.asarray(v) for k, v in p.items()})
        if self.elbo is not None:
            arrays["elbo"] = np.asarray(self.elbo)
        prior_meta = None
        if self.prior is not None:
            prior_arrays, prior_meta = self.prior.to_arrays()  # type: ignore[attr-defined]
            arrays.update({f"prior.{k}": v for k, v in prior_arrays.items()})
        for k, v in (self.model_kwargs or {}).items():  # every value an array or a scalar
            if not (np.isscalar(v) or hasattr(v, "shape")):
                raise AnchorDivError(
                    f"save: model keyword {k!r} is a {type(v).__name__}; only arrays and "
                    f"scalars are saved"
                )
            arrays[f"model_kwargs.{k}"] = np.asarray(v)
        meta = {
            "type": "posterior",
            "posterior_type": type(self).__name__,
            "kind": self.kind,
            "family_class_module": self.family_class.__module__,
            "method": self.method,
            "tau": self.tau,
            "dtype": self.dtype,
            "dim": self.info.get("d"),
            "info": self.info,
            "subspace": self.subspace,
            "custom_model": self.custom_model,
            "guide": self.guide,
            "prior": prior_meta,
            "model_kwargs": self.model_kwargs is not None,
        }
        for key in ("family", "completion"):  # the saved parameters' class and its module
            f = saved.get(key)
            meta[key] = type(f).__name__ if f is not None else None
            meta[f"{key}_module"] = type(f).__module__ if f is not None else None
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: dict, card: dict) -> "Posterior":
        """Inverse of :meth:`to_arrays` (bit-exact arrays).  A card written before the typed
        fields (``subspace``, ``custom_model``, ``guide``) has them read from its ``info``."""
        points: dict = {}
        for key, v in _group(arrays, "points.").items():
            which, site = key.split(".", 1)
            points.setdefault(which, {})[site] = v
        prior = None
        if card.get("prior"):
            meta = card["prior"]
            fam = family_of(meta["family"], card.get("family_class_module") or _module(card))
            prior = fam.from_arrays(_group(arrays, "prior."), meta)
        if cls is Posterior:
            cls = _saved_type(card)
        info = card["info"]
        legacy = info if isinstance(info, dict) else {}  # a card from before the typed fields
        typed = {k: card.get(k, legacy.get(k)) for k in ("subspace", "custom_model", "guide")}
        kwargs = _scalars(_group(arrays, "model_kwargs.")) if card.get("model_kwargs") else None
        return cls(
            *(card[k] for k in ("kind", "method", "tau", "dtype")),
            info,
            exact=_params(arrays, "family.", card["family"], card.get("family_module")),
            samples=_group(arrays, "samples.") or None,
            stats=_group(arrays, "stats.") or None,
            fixed=_group(arrays, "fixed."),
            points=points or None,
            elbo=arrays.get("elbo"),
            completion=_params(
                arrays, "completion.", card.get("completion"), card.get("completion_module")
            ),
            prior=prior,
            model_kwargs=kwargs,
            **typed,
        )


class ExactPosterior(Posterior):
    """A conjugate posterior: :attr:`exact` holds its parameters (``mean()``, ``mode()``,
    ``sample(rng, n)``), :attr:`~Posterior.prior` the prior object it updated.  Its points are
    the parameters' mean and mode; its draws are exact (the family's own sampler where it has
    one, ``exact_chains``); it saves the parameters.

    Parameters
    ----------
    *args, **kwargs
        The :class:`Posterior` fields.

    Examples
    --------
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> type(post).__name__, type(post.exact).__name__
    ('ExactPosterior', 'NIW')
    >>> post.independent_draws, post.variational
    (True, False)
    """

    closed_form: ClassVar[bool] = True

    def _content_line(self) -> str:
        return f"  exact: {type(self.exact).__name__}"

    def _params(self, which: str) -> dict[str, np.ndarray]:
        return self.exact.mode() if which == "map" else self.exact.mean()  # type: ignore[attr-defined]

    def _draws(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        chains = self.exact_chains(rng, 1, n)
        if chains is not None:
            return {k: v[0] for k, v in chains.items()}
        return self.exact.sample(rng, n)  # type: ignore[attr-defined]

    def ordered_draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        return self.draws(seed, n)

    def chain_draws(self, seed: int, chains: int, per_chain: int) -> dict[str, np.ndarray]:
        own = self.exact_chains(np.random.default_rng(seed), chains, per_chain)
        return own if own is not None else super().chain_draws(seed, chains, per_chain)

    def exact_chains(self, rng, chains: int, per_chain: int) -> dict | None:
        """Exact draws ``{site: [chains, per_chain, ...]}`` from the family's own sampler of the
        full posterior (the :class:`~anchordiv.Conjugate` option ``exact_chains``: the
        mixture's Gibbs chains, which sample the assignments too), or None where the family has
        none (its parameters' ``sample`` serves) or the posterior lacks what it needs (targets,
        model keywords)."""
        if "targets" not in self.fixed or self.model_kwargs is None:
            return None
        return self.family_class.exact_chains(self, rng, chains, per_chain)

    def saved_params(self) -> dict[str, object]:
        return {"family": self.exact}


class SampledPosterior(Posterior):
    """A posterior given by draws of the model's sites: NUTS chains, or an SVI guide's
    independent draws (:attr:`~Posterior.guide`) — :attr:`~Posterior.samples`
    ``{site: [chains, draws, ...]}``, :attr:`~Posterior.prior` the prior object whose model ran
    (with :attr:`~Posterior.model_kwargs`).  Its points are those fixed at fit time
    (:attr:`~Posterior.points`) or summaries of the draws; its draws are resampled from the
    stored ones.

    Parameters
    ----------
    *args, **kwargs
        The :class:`Posterior` fields.

    Examples
    --------
    >>> from anchordiv.adaptation import SampledPosterior
    >>> post = SampledPosterior("gaussian", "nuts", 20.0, "float32", {"d": 2},
    ...                         samples={"mu": np.zeros((1, 3, 2)), "Sigma": np.ones((1, 3, 2, 2))})
    >>> type(post).__name__, post.independent_draws
    ('SampledPosterior', False)
    """

    @property
    def independent_draws(self) -> bool:
        """Whether the draws are independent (an SVI guide's) rather than Markov chains
        (NUTS)."""
        return self.variational

    def _params(self, which: str) -> dict[str, np.ndarray]:
        if self.points and which in self.points:
            p = self.points[which]
        elif which == "mean" and self.point_guide:
            raise AnchorDivError(f"point('mean'): {self.info.get('point_mean', 'none')}")
        else:
            lp = self.flat_lp() if which == "map" else None
            p = self.family_class.likelihood_type.summarise(self.flat_samples(), which, lp)
        return self.lift([p], which=which)[0]

    def _draws(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        flat = self.flat_samples()
        total = len(next(iter(flat.values())))
        idx = rng.choice(total, size=n, replace=n > total)
        return self.lift_draws({k: v[idx] for k, v in flat.items()}, rng)

    def ordered_draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        flat = self.flat_samples()
        total = len(next(iter(flat.values())))
        if n > total:
            raise AnchorDivError(f"ordered_draws: {n} draws asked, the posterior holds {total}")
        return self.lift_draws({k: v[:n] for k, v in flat.items()}, np.random.default_rng(seed))


class SubspacePosterior(SampledPosterior):
    """Draws of a ``subspace=r`` run: the sites live on the broad anchors' top-r principal
    directions (``fixed["basis"]``) and every point or draw is lifted to full d with
    :attr:`~Posterior.completion`, the default prior's exact posterior, outside them (the
    family's ``lift``, :class:`.protocol.Projectable`); it saves the completion.

    Parameters
    ----------
    *args, **kwargs
        The :class:`Posterior` fields.

    Examples
    --------
    >>> from anchordiv.adaptation import SubspacePosterior, SampledPosterior
    >>> issubclass(SubspacePosterior, SampledPosterior)
    True
    """

    def lift(self, ps: list[dict], which: str = "mean", rng=None) -> list[dict]:
        """Full-d parameters from the run's parameter sets ``ps`` (points, or draws with
        ``rng``): the family's sites lifted (its ``lift``), every other site of the model kept
        as it is."""
        fam = self.family_class
        sites = fam.sites
        full = fam.lift(
            [{k: p[k] for k in sites} for p in ps],
            self.completion,
            self.fixed["basis"],
            self.subspace,
            which=which,
            rng=rng,
        )
        return [{**{k: v for k, v in p.items() if k not in sites}, **f} for p, f in zip(ps, full)]

    def lift_draws(self, draws: dict, rng) -> dict:
        n = len(next(iter(draws.values())))
        full = self.lift([{k: v[i] for k, v in draws.items()} for i in range(n)], rng=rng)
        return {k: np.stack([f[k] for f in full]) for k in full[0]}

    def principal_directions(self, k: int) -> np.ndarray | None:
        return self.fixed["basis"][:, :k]

    def saved_params(self) -> dict[str, object]:
        return {"completion": self.completion} if self.completion is not None else {}


#: the posterior classes by name (what a saved posterior's card says it is)
POSTERIOR_TYPES = {
    c.__name__: c for c in (Posterior, ExactPosterior, SampledPosterior, SubspacePosterior)
}


def family_of(kind: str, module: str | None = None) -> type[Any]:
    """The family class registered under ``kind``; one not registered in this process is an
    :class:`AnchorDivError` that names ``module`` (where the saved family was defined) to
    import first."""
    if kind not in FAMILIES and module:
        raise AnchorDivError(
            f"kind: unknown {kind!r}: its family is not registered in this process; import "
            f"{module} first (the module that defines it and registers it with ad.family); "
            f"loading never imports code named in a file"
        )
    return get_family(kind)


def _module(card: dict) -> str | None:
    """The family's module of a card written before ``family_class_module``: the exact
    parameters' module where they are the family's (a user's family defines both)."""
    module = card.get("family_module")
    return module if isinstance(module, str) and not module.startswith("anchordiv.") else None


def _saved_type(card: dict) -> type:
    """The class a saved posterior was (bundles from before the types: from its contents)."""
    name = card.get("posterior_type")
    if name in POSTERIOR_TYPES and name != "Posterior":
        return POSTERIOR_TYPES[name]
    if card.get("family"):
        return ExactPosterior
    sub = card["subspace"] if "subspace" in card else card["info"].get("subspace")
    return SubspacePosterior if sub else SampledPosterior


def _fields(obj) -> dict:
    """A dataclass instance's fields by name."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _group(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


def _scalars(group: dict) -> dict:
    """0-d arrays back to Python scalars (ints, floats, strings stay what they were)."""
    return {k: (v.item() if v.ndim == 0 else v) for k, v in group.items()}


def _params(arrays: dict, prefix: str, name, module) -> object:
    """The exact-posterior object saved under ``prefix``.  Its class is looked up, never
    imported: by name among the classes defined in the modules of the registered families
    (:func:`exact_classes`); a name found nowhere is an :class:`AnchorDivError` that says how to
    register the family that defines it."""
    if not name:
        return None
    cls = exact_classes().get(name)
    if cls is None or (module is not None and cls.__module__ != module):
        where = f" (from {module!r})" if module else ""
        raise AnchorDivError(
            f"load: the exact-posterior class {name!r}{where} is not one of the registered "
            f"families' classes; loading never imports code named in a file — import "
            f"{module or 'the module that defines it'} first (where its family is registered "
            f"with ad.family(...))"
        )
    fields = {f.name for f in dataclasses.fields(cls)}
    values = _scalars(_group(arrays, prefix))
    if set(values) != fields:
        raise AnchorDivError(
            f"load: {name} needs arrays {sorted(fields)}, the bundle has {sorted(values)}"
        )
    return cls(**values)


def exact_classes() -> dict[str, type]:
    """The classes a saved posterior's ``family``/``completion`` may name: those the families
    in the registry (built-in ones, and those the user registered in this process with
    ``ad.family``) declare as their exact-parameter and completion classes
    (:attr:`~anchordiv.Family.exact_types`), by class name — never any other
    class of their modules."""
    out: dict[str, type] = {}
    for fam in FAMILIES.values():
        for cls in getattr(fam, "exact_types", ()):
            if isinstance(cls, type) and dataclasses.is_dataclass(cls):
                out.setdefault(cls.__name__, cls)
    return out


def check_loaded_inputs(path, post) -> None:
    """Refuse a loaded posterior whose model keywords or fixed inputs its family's prior would
    never give its model (:meth:`Family.check_model_inputs`: the constructors' rules; a user's
    model's keywords and a subspace run's projected ones are its own), or whose NUTS
    statistics are not ``[chains, draws]`` of its draws, or whose ``subspace`` rank is set
    on a full-d posterior (or is not in [1, d]), or whose stored draws or point summaries
    lack a site of its family's model or hold one of another shape
    (:func:`check_loaded_sites`)."""
    if post.subspace is not None:
        if not isinstance(post, SubspacePosterior):
            raise AnchorDivError(
                f"{path}: posterior field subspace = {post.subspace!r} on a "
                f"{type(post).__name__} (only a subspace run has one)"
            )
        integer(f"{path}: posterior field subspace", post.subspace, low=1, high=post.dim)
    else:
        kwargs = None if post.custom_model else post.model_kwargs
        try:
            family_of(post.kind).check_model_inputs(kwargs, post.fixed, post.dim)
        except AnchorDivError as err:
            raise AnchorDivError(f"{path}: posterior {err}") from None
        check_loaded_sites(path, post)
    leading = {np.shape(v)[:2] for v in (post.samples or {}).values()}
    for k, v in (post.stats or {}).items():
        if {np.shape(v)[:2]} != leading:
            raise AnchorDivError(
                f"{path}: posterior field stats.{k} has shape {list(np.shape(v))}, not "
                f"[chains, draws] of its draws ({sorted(leading)})"
            )


def string_keywords(kind) -> set[str]:
    """The keywords of a registered family's model that take a string (those with a string
    default, e.g. the spectral ``shrinkage``); none for a kind not registered."""
    import inspect

    fam = FAMILIES.get(kind)
    if fam is None:
        return set()
    params = inspect.signature(fam.model).parameters.values()
    return {p.name for p in params if isinstance(p.default, str)}


def check_loaded_sites(path, post) -> None:
    """Refuse a loaded full-d posterior whose stored draws or point summaries lack a site of
    its family's model (:attr:`Family.sites`: what its quantities, draws and point summaries
    read) or hold one of another shape than the family's likelihood declares at its
    dimension (``site_shapes``, as a user's model is checked before sampling)."""
    fam = family_of(post.kind)
    d = int(post.info.get("d", 1))
    groups = {"samples": {k: np.shape(v)[2:] for k, v in (post.samples or {}).items()}}
    for which, p in (post.points or {}).items():
        groups[f"points.{which}"] = {k: np.shape(v) for k, v in p.items()}
    for group, shapes in groups.items():
        if not shapes:
            continue
        missing = [s for s in fam.sites if s not in shapes]
        if missing:
            raise AnchorDivError(
                f"{path}: posterior field {group} has no draws of the {post.kind} model's "
                f"site(s) {missing} (it holds {sorted(shapes)})"
            )
        for site, want in fam.likelihood_type.site_shapes(d, shapes).items():
            if tuple(shapes[site]) != tuple(want):
                per = "each draw of " if group == "samples" else ""
                raise AnchorDivError(
                    f"{path}: posterior field {group}.{site}: {per}shape "
                    f"{list(shapes[site])}, the {post.kind} model's is {list(want)} at d = {d}"
                )


def load_posterior(path, *, verify: bool = True, sha256: str | None = None) -> Posterior:
    """Load a posterior saved by :meth:`Posterior.save` (bit-exact arrays).

    Parameters
    ----------
    path : str or Path
        The posterior directory.
    verify : bool, default True
        Check the arrays against the card's data hash and the card against its digest.
    sha256 : str, optional
        A pinned digest (``ad.bundle_digest``): a bundle with another one is refused.

    Returns
    -------
    Posterior
        The posterior (``raw`` is not saved: None).

    Raises
    ------
    AnchorDivError
        ``path`` is not a saved posterior, fails the hash check, names a class that is not a
        registered family's (no code named in a file is ever imported), or its content does
        not make a posterior whose point summary and draws are anchor models.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> loaded = ad.load_posterior(post.save(pathlib.Path(tempfile.mkdtemp()) / "post"))
    >>> bool(np.array_equal(loaded.point().mean, post.point().mean))
    True
    """
    arrays, card = read_bundle(path, verify=verify, sha256=sha256)
    expect_type(path, card, "posterior", "a posterior")
    with malformed(Path(path), "posterior"), warnings.catch_warnings():
        post = Posterior.from_arrays(arrays, card)
        check_loaded_posterior(path, post)
        family_of(post.kind, card.get("family_class_module") or _module(card))
        if isinstance(post, ExactPosterior) and post.exact is None:
            raise AnchorDivError(f"{path}: an exact posterior without its parameters")
        warnings.simplefilter("ignore")
        check_loaded_arrays(path, post)
        check_loaded_inputs(path, post)
        for probe in (
            lambda: [post.point()],
            lambda: [post.point("map")],
            lambda: post.sample(seed=0, n=1),
        ):
            try:  # the first uses: a model from the point summary and from one draw
                models = probe()
            except AnchorDivError:
                continue  # the posterior's own clear error, raised again where it is used
            for model in models:
                check_loaded_model(model)
    return post


def check_loaded_posterior(path, post: Posterior) -> None:
    """Refuse a loaded posterior whose fields its constructor's callers would never pass: kind
    and method strings, τ a positive number of at most
    :data:`~anchordiv.io.MAX_LOADED_TAU`, a floating dtype, ``info`` an object with an integer
    ``d``, and stored draws ``[chains, draws, ...]`` with one (non-zero) count of each."""
    tau = post.tau
    if not isinstance(post.kind, str) or not isinstance(post.method, str):
        raise AnchorDivError(f"{path}: malformed posterior (kind, method)")
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau <= MAX_LOADED_TAU:
        raise AnchorDivError(f"{path}: posterior field tau = {tau!r} is not a number in (0, 1e6]")
    try:
        floating = np.dtype(post.dtype).kind == "f"
    except TypeError:
        floating = False
    if not floating or not isinstance(post.dtype, str):
        raise AnchorDivError(f"{path}: posterior field dtype = {post.dtype!r} is not a float dtype")
    if not isinstance(post.info, dict):
        raise AnchorDivError(f"{path}: malformed posterior (info)")
    d = post.info.get("d", 1)
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise AnchorDivError(f"{path}: malformed posterior (info, its dimension d = {d!r})")
    leading = {np.shape(v)[:2] for v in (post.samples or {}).values()}
    if len(leading) > 1 or any(len(s) < 2 or min(s) < 1 for s in leading):
        raise AnchorDivError(
            f"{path}: posterior field samples: the draws are not [chains, draws, ...] of one "
            f"non-zero size ({sorted(leading)})"
        )


def check_loaded_arrays(path, post: Posterior) -> None:
    """A loaded posterior's prior checked as :func:`~anchordiv.load_prior` checks one, its
    model arguments of the shapes its prior gives them, and its exact parameters, stored
    draws, model arguments and fixed arrays finite (an :class:`AnchorDivError` naming the
    field otherwise), every array of numbers (no strings or objects but a string keyword of
    the model, :func:`string_keywords`), and its exact parameters named like its prior's fields of the prior's axes
    (:attr:`Family.axes`: the draws they give are the family's shapes)."""
    prior: Any = post.prior
    if prior is not None:
        prior.check_loaded(post.info.get("d", prior.dim))
        want = prior.prior_kwargs()
        for k, v in (post.model_kwargs or {}).items():
            if k in want and np.shape(v) != np.shape(want[k]):
                raise AnchorDivError(
                    f"{path}: posterior field model_kwargs.{k} has shape {list(np.shape(v))}, "
                    f"its prior gives {list(np.shape(want[k]))}"
                )
    groups = {"model_kwargs": post.model_kwargs, "fixed": post.fixed, "samples": post.samples}
    groups.update({"stats": post.stats, "elbo": {"": post.elbo}})
    groups.update({f"points.{k}": p for k, p in (post.points or {}).items()})
    groups.update({k: _fields(p) for k, p in post.saved_params().items() if p is not None})
    text = string_keywords(post.kind)
    for group, values in groups.items():
        if values is None:
            continue
        if not isinstance(values, dict):
            raise AnchorDivError(f"{path}: posterior field {group} is not a mapping of arrays")
        for k, v in values.items():
            if v is None:  # a parameter not set
                continue
            if isinstance(v, str):  # only where the model takes a string (spectral shrinkage)
                if group == "model_kwargs" and not post.custom_model and k not in text:
                    raise AnchorDivError(
                        f"{path}: posterior field model_kwargs.{k} = {v[:20]!r} is a string, "
                        f"not a number"
                    )
                continue
            a = np.asarray(v)
            if a.dtype.kind not in "biufc":  # strings or objects would reach JAX or HDF5 raw
                name = f"{group}.{k}".rstrip(".")
                raise AnchorDivError(
                    f"{path}: posterior field {name} holds {a.dtype} values, not numbers"
                )
            draws = group == "samples" or group.startswith("points.")
            if draws and a.dtype.kind not in "fc":  # a sampler's draws are floating point
                raise AnchorDivError(
                    f"{path}: posterior field {group}.{k} holds {a.dtype} values, not the "
                    f"floating-point draws of a sampler"
                )
            if a.dtype.kind == "c":
                raise AnchorDivError(f"{path}: posterior field {group}.{k} is complex, not real")
            # a diverged run's ELBO or sampler statistics may hold them (points: their models)
            unchecked = group in ("stats", "elbo") or group.startswith("points.")
            if a.dtype.kind == "f" and not unchecked and not np.all(np.isfinite(a)):
                raise AnchorDivError(f"{path}: posterior field {group}.{k} holds NaN or inf")
    exact = post.exact if post.subspace is None else None
    axes = getattr(FAMILIES.get(post.kind), "axes", {})
    named = {k: v for k, v in (_fields(exact) if exact is not None else {}).items() if k in axes}
    if named:
        named["d"], axes = np.zeros(post.info.get("d", 1)), {**axes, "d": "d"}
        check_axes(f"{path}: posterior field family", named, axes)


def save_posterior(post: Posterior, path, *, overwrite: bool = False, **card) -> Path:
    """Save a posterior (:meth:`Posterior.save`).

    Parameters
    ----------
    post : Posterior
        The posterior.
    path : str or Path
        Destination directory.
    overwrite : bool, default False
        Replace an existing non-empty destination; otherwise it is refused
        (:class:`~anchordiv.errors.OutputExistsError`).
    **card
        Extra card fields.

    Returns
    -------
    Path
        The directory written.

    Raises
    ------
    AnchorDivError
        ``post`` is not a :class:`Posterior`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> out = ad.save_posterior(post, pathlib.Path(tempfile.mkdtemp()) / "post")
    >>> ad.load_posterior(out).kind
    'gaussian'
    """
    if not isinstance(post, Posterior):
        raise AnchorDivError(f"post: expected a Posterior, got {type(post).__name__}")
    return post.save(path, overwrite=overwrite, **card)


def to_model(kind: str, p: dict, tau: float, dtype: str, fixed: dict) -> AnchorModel:
    """Anchor model from one set of parameters (:meth:`Family.to_model` of the kind's family).

    Parameters
    ----------
    kind : str
        The family.
    p : dict of str to numpy.ndarray
        One parameter set (float64 arrays, e.g. ``{"mu": [d], "Sigma": [d, d]}``).
    tau : float
        The encoder's logit scale.
    dtype : str
        dtype of the model.
    fixed : dict
        Arrays every draw shares (``Posterior.fixed``).

    Returns
    -------
    AnchorModel
        The model.

    Examples
    --------
    >>> from anchordiv.adaptation import to_model
    >>> to_model("gaussian", {"mu": np.zeros(3), "Sigma": np.eye(3)}, 20.0, "float32", {})
    Gaussian(mean[3], factor[3, 3], tau=20)
    """
    return get_family(kind).to_model(p, tau, dtype, fixed)


class RunSpec(NamedTuple):
    """What an inference runner knows of the posterior it samples for (the fields its points
    and descriptions depend on), before that posterior exists: the names of the
    :class:`Posterior` attributes it stands for, so the point helpers below read either."""

    #: the family's kind
    kind: str
    #: the family class
    family_class: Any
    #: the embedding dimension d
    dim: int
    #: arrays every draw shares (the targets; a subspace run's ``basis [d, d]``)
    fixed: dict
    #: the rank r of a ``subspace=r`` run (None: full d)
    subspace: int | None = None
    #: a subspace run's exact full-d posterior outside the subspace
    completion: object = None


class Fit(NamedTuple):
    """What a runner returns (``nuts.run_nuts``, ``svi.run_svi``): plain state, no posterior —
    ``ModelMethod.run`` builds the one :class:`Posterior` from it."""

    #: ``{site: [chains, draws, ...]}`` (float64)
    samples: dict
    #: per-draw sampler statistics ``{field: [chains, draws]}``, or None
    stats: dict | None
    #: point summaries fixed at fit time (``{"map": ..., "mean": ...}``), or None
    points: dict | None
    #: the entries the run adds to the posterior's ``info``
    info: dict
    #: the runner's own objects (``Posterior.raw``; not saved)
    raw: object = None
    #: SVI: the ELBO per step
    elbo: np.ndarray | None = None


MAP_JOINT = "joint mode of (μ, Σ) of the full-d model"
#: how point summaries are computed, in words, where a family's ``descriptions`` do not say:
#: the exact posterior's ``"mean"`` and ``"map"``, the ``"mean"`` of draws, and what a delta
#: guide on the family's own model finds
DESCRIPTIONS = {
    "exact_mean": "closed-form conjugate posterior mean",
    "exact_map": "closed-form joint mode of the model's parameters",
    "mean_of_draws": "average of the draws",
    "joint_mode": "joint mode of the model's parameters (full d)",
}


def describe(fam, key: str) -> str:
    """The words for ``key`` (of :data:`DESCRIPTIONS`) of a family class: its own
    ``descriptions`` or the default."""
    return fam.descriptions.get(key, DESCRIPTIONS[key])


def exact_descriptions(fam) -> dict[str, str]:
    """``{"point_mean", "point_map"}`` of an exact posterior of the family class ``fam``."""
    return {"point_mean": describe(fam, "exact_mean"), "point_map": describe(fam, "exact_map")}


def joint_correction(fam, draws: dict, d: int) -> np.ndarray:
    """``−(d − r) log|Σ₁₁|`` per draw ``[S]`` (summed over mixture components): the log
    Jacobian of ``Σ → (Σ₁₁, Σ₁₁⁻¹Σ₁₂, Σ₂₂·₁)`` that turns the subspace density of (μ₁, Σ₁₁) into
    the full joint density restricted to them; ``draws`` hold subspace sites ``[S, ...]``, the
    covariance blocks under ``fam.covariance_site``."""
    sig = np.asarray(draws[fam.covariance_site], np.float64)
    r = sig.shape[-1]
    logdet = np.linalg.slogdet(sig)[1]
    return -(d - r) * logdet.reshape(len(logdet), -1).sum(-1)


def delta_mean(post, exact, custom: bool) -> tuple[dict | None, str]:
    """``(mean parameters or None, how)`` for a delta-guide fit: the conjugate posterior mean
    of the kind's own model (``exact``: the conjugate update's parameters; in the subspace
    coordinates for subspace runs: its lift is the full mean, the lift being linear in Σ₁₁);
    None for a user's model or where the conjugate mean does not project (no ``project_mean``,
    :class:`~anchordiv.Projectable`: latent kinds under ``subspace=``)."""
    if custom:
        return None, (
            "none: a delta guide (MAP) of a custom model has no posterior mean; use "
            "guide='normal'/'lowrank' or method='nuts'"
        )
    fam = post.family_class
    if exact is None or not is_conjugate(fam):
        return None, (
            f"none: the {post.kind} family has no closed-form posterior mean and a "
            f"delta guide is a MAP; use guide='normal'/'lowrank' or method='nuts'"
        )
    how = describe(fam, "exact_mean") + " of the kind's model (a delta guide is a MAP)"
    if post.subspace is None:
        return exact.mean(), how
    mean = fam.project_mean(exact.mean(), post.fixed["basis"][:, : post.subspace])
    if mean is None:
        return None, (
            "none under subspace= with a delta guide: use method='exact' for the conjugate mean"
        )
    return mean, how


def sampled_descriptions(post, *, best: str) -> dict:
    """``{"point_mean", "point_map"}`` for a posterior given by draws; ``best`` says which
    density the ``"map"`` draw maximises."""
    mean = describe(post.family_class, "mean_of_draws")
    if post.subspace is not None:
        mean += ", lifted with the conditional expectation outside the subspace"
    return {"point_mean": mean, "point_map": best}
