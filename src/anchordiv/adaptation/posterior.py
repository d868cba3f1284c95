"""The posterior object every inference method returns, and its point summaries.

A :class:`Posterior` holds either an exact conjugate family (:mod:`anchordiv.adaptation.families`) or draws
of the model's sites (NUTS, SVI guide draws); ``point``/``sample`` turn either into anchor models
through the kind's family (:meth:`~anchordiv.adaptation.family.Family.to_model`), so scoring never
depends on how the posterior was computed.  The protocol every posterior shares: ``kind``,
``tau``, ``prior`` (the prior object it was computed from), ``point(which)``, ``sample(seed,
n)``.  ArviZ conversion is the checks layer's ``ad.inference_data(post)``; saving is
:meth:`Posterior.save` / ``ad.load_posterior``.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from ..anchors.base import AnchorModel
from ..errors import AnchorDivError, integer, user_stacklevel
from .._safeio import malformed
from ..io import check_loaded_model, read_bundle, write_bundle
from ..threads import limited_blas
from .capabilities import optional
from .likelihood import Likelihood
from .registry import get_family


@dataclasses.dataclass
class Posterior:
    """Result of :func:`adapt` / :func:`infer`: an exact or sampled posterior over anchor models.

    Use :meth:`point` for an anchor model, :meth:`sample` for posterior draws of anchor models,
    :meth:`save` to store it, ``ad.inference_data(post)`` for ArviZ.

    Parameters
    ----------
    kind : str
        The family.
    method : {"exact", "nuts", "svi"}
        How it was inferred.
    tau : float
        The encoder's logit scale of the adapted models.
    dtype : str
        dtype of the adapted models.
    info : dict
        Chosen hyperparameters, counts, diagnostics (JSON-able).
    family : object, optional
        Exact posterior parameters (:mod:`anchordiv.adaptation.families`).
    samples : dict, optional
        ``{site: [chains, draws, ...]}``: every latent and deterministic site of the model that
        ran — NUTS draws or SVI guide draws.
    stats : dict, optional
        NUTS sample statistics.
    fixed : dict
        Arrays every draw shares (latent mean, radius; subspace runs add ``basis [d, d]``).
    points : dict, optional
        Summaries computed at fit time (e.g. the SVI guide's MAP).
    elbo : numpy.ndarray, optional
        SVI: the ELBO per step.
    completion : object, optional
        Subspace runs: the exact full-d posterior of the default prior that supplies the
        geometry outside the subspace (:mod:`.subspace`).
    prior : Family, optional
        The prior object (:mod:`.family`).
    model_kwargs : dict, optional
        The keyword arguments the family's NumPyro model ran with (or would run with) for these
        targets: its prior hyperparameters (``model(targets, **model_kwargs)``); saved with the
        posterior, so a loaded one draws, scores and checks exactly as the fitted one.
    raw : object, optional
        The NumPyro ``MCMC`` or SVI result object for advanced use (not saved).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> post = ad.adapt("gaussian", broad, broad[:5], tau=20.0, kappa0=5.0, nu0=10.0)
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
    family: object = None
    samples: dict | None = None
    stats: dict | None = None
    fixed: dict = dataclasses.field(default_factory=dict)
    points: dict | None = None
    elbo: np.ndarray | None = None
    completion: object = None
    prior: object = None
    model_kwargs: dict | None = None
    raw: object = dataclasses.field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        """A few lines: what was fitted, how, its size and the scalar entries of ``info``."""
        head = [
            f"kind={self.kind!r}",
            f"method={self.method!r}",
            f"d={self.info.get('d', '?')}",
            f"tau={self.tau:g}",
        ] + ([f"subspace={self.subspace}"] if self.subspace else [])
        lines = [f"Posterior({', '.join(head)})"]
        if self.samples:
            shapes = ", ".join(f"{k} {list(np.shape(v))[2:]}" for k, v in self.samples.items())
            first = np.shape(next(iter(self.samples.values())))
            lines.append(f"  draws: {first[0]} chains x {first[1]}; sites: {shapes}")
        elif self.family is not None:
            lines.append(f"  exact: {type(self.family).__name__}")
        scalars = [
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.info.items()
            if isinstance(v, (int, float, str, bool)) and k not in ("kind", "method", "d")
        ]
        lines.append("  info: " + ", ".join(scalars))
        return "\n".join(line if len(line) <= 120 else line[:117] + "..." for line in lines)

    @property
    def subspace(self) -> int | None:
        """The subspace rank r of a subspace run (None otherwise)."""
        return self.info.get("subspace")

    def params(self, which: str = "mean") -> dict[str, np.ndarray]:
        """Point-summary parameters (``"mean"`` or ``"map"``) as float64 arrays."""
        if which not in ("mean", "map"):
            raise AnchorDivError(f"which: 'mean' or 'map', got {which!r}")
        if self.family is not None:
            return self.family.mode() if which == "map" else self.family.mean()  # type: ignore[attr-defined]
        if self.points and which in self.points:
            p = self.points[which]
        elif which == "mean" and self.info.get("guide") == "delta":
            raise AnchorDivError(f"point('mean'): {self.info.get('point_mean', 'none')}")
        else:
            lp = self.flat_lp() if which == "map" else None
            p = self.family_class.likelihood_type.summarise(self.flat_samples(), which, lp)
        return self.lift([p], which=which)[0]

    @property
    def family_class(self):
        """The family of the prior object the posterior carries (a family registered from a
        user's module included); the registry's entry for ``kind`` only for posteriors saved
        without their prior."""
        if self.prior is not None and getattr(self.prior, "kind", None) == self.kind:
            return type(self.prior)
        return get_family(self.kind)

    def exact_chains(self, rng, chains: int, per_chain: int) -> dict | None:
        """Exact draws ``{site: [chains, per_chain, ...]}`` from the family's own sampler of the
        full posterior (the :class:`.capabilities.Conjugate` option ``exact_chains``: the mixture's Gibbs chains, which sample the
        assignments too), or None where the family has none (its parameters' ``sample``
        serves) or the posterior lacks what it needs (targets, model keywords; subspace runs)."""
        own = optional(self.family_class, "exact_chains")
        ready = self.subspace is None and "targets" in self.fixed and self.model_kwargs is not None
        if own is None or self.family is None or not ready:
            return None
        return own(self, rng, chains, per_chain)

    def likelihood(self) -> Likelihood:
        """The targets' likelihood under the family's model at this posterior's
        :attr:`model_kwargs` (pointwise log likelihood, simulated anchors, log joint)."""
        fam = self.family_class
        return fam.likelihood_type(fam, self.model_kwargs, self.fixed, int(self.info["d"]))

    def lift(self, ps: list[dict], which: str = "mean", rng=None) -> list[dict]:
        """Full-d parameters from a subspace run's parameter sets ``ps`` (points, or draws with
        ``rng``): the family's sites lifted (its ``lift``, :class:`.capabilities.Projectable`), every other site of the
        model kept as it is; the identity outside subspace runs."""
        if self.subspace is None:
            return ps
        sites = self.family_class.sites
        full = self.family_class.lift(
            [{k: p[k] for k in sites} for p in ps],
            self.completion,
            self.fixed["basis"],
            self.subspace,
            which=which,
            rng=rng,
        )
        return [{**{k: v for k, v in p.items() if k not in sites}, **f} for p, f in zip(ps, full)]

    def lift_draws(self, draws: dict, rng) -> dict:
        """:meth:`lift` for stacked draws ``{site: [S, ...]}`` (every site kept)."""
        if self.subspace is None:
            return draws
        n = len(next(iter(draws.values())))
        full = self.lift([{k: v[i] for k, v in draws.items()} for i in range(n)], rng=rng)
        return {k: np.stack([f[k] for f in full]) for k in full[0]}

    def to_model(self, p: dict) -> AnchorModel:
        """The anchor model of one parameter set (a user's model: its covariance sites are
        checked positive definite first, with an error naming the site)."""
        fam = self.family_class
        if self.info.get("custom_model"):
            fam.likelihood_type.check_values(p, self.kind)
        return fam.to_model(p, self.tau, self.dtype, self.fixed)

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
    def draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        """Posterior parameter draws.

        Sampled posteriors are resampled from the stored draws without replacement where possible;
        subspace runs are lifted with fresh draws of the geometry outside the subspace; every other
        site of the model is kept.

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
        n = integer("n", n, low=1)
        rng = np.random.default_rng(seed)
        if self.family is not None:
            chains = self.exact_chains(rng, 1, n)
            if chains is not None:
                return {k: v[0] for k, v in chains.items()}
            return self.family.sample(rng, n)  # type: ignore[attr-defined]
        flat = self.flat_samples()
        total = len(next(iter(flat.values())))
        idx = rng.choice(total, size=n, replace=n > total)
        return self.lift_draws({k: v[idx] for k, v in flat.items()}, rng)

    @limited_blas
    def sample(self, seed: int, n: int) -> list[AnchorModel]:
        """Posterior draws as anchor models (same shapes: scoring them never retraces).

        Parameters
        ----------
        seed : int
            Seed of the draws.
        n : int
            Number of draws (≥ 1).

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

        return elbo_plot(self.elbo, path, title=f"SVI ({self.info.get('guide')}) — {self.kind}")

    def flat_samples(self) -> dict[str, np.ndarray]:
        """NUTS samples with chains merged ``{site: [chains·draws, ...]}``."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def flat_lp(self) -> np.ndarray | None:
        """Log posterior density of each draw (chains merged) that ``"map"`` maximises: the
        model's log joint at the constrained parameters (``stats["log_density"]``, see
        :func:`~.density.with_log_density`).  Posteriors sampled without it fall back to
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
            "anchordiv.adaptation.likelihood.with_log_density",
            stacklevel=user_stacklevel(),
        )
        return -self.stats["potential_energy"].reshape(-1)

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
            The directory written.
        """
        arrays, meta = self.to_arrays()
        return write_bundle(path, arrays, {**meta, **card}, overwrite=overwrite)

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, meta)``: the flat arrays and the JSON-able card of :meth:`save`."""
        arrays = {f"fixed.{k}": np.asarray(v) for k, v in self.fixed.items()}
        for prefix in ("family", "completion"):
            if getattr(self, prefix) is not None:
                arrays.update(_param_arrays(prefix, getattr(self, prefix)))
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
        arrays.update({f"model_kwargs.{k}": np.asarray(v) for k, v in self.kwargs_arrays().items()})
        info = self.info
        name = lambda f: type(f).__name__ if f is not None else None  # noqa: E731
        module = lambda f: type(f).__module__ if f is not None else None  # noqa: E731
        meta = {
            "type": "posterior",
            "posterior_type": type(self).__name__,
            "kind": self.kind,
            "method": self.method,
            "tau": self.tau,
            "dtype": self.dtype,
            "dim": info.get("d"),
            "info": info,
            "family": name(self.family),
            "family_module": module(self.family),
            "completion": name(self.completion),
            "completion_module": module(self.completion),
            "prior": prior_meta,
            "model_kwargs": self.model_kwargs is not None,
        }
        return arrays, meta

    def kwargs_arrays(self) -> dict:
        """:attr:`model_kwargs` as saved: every value an array or a scalar (a model keyword that
        is neither cannot be saved: an error names it)."""
        out = {}
        for k, v in (self.model_kwargs or {}).items():
            if not (np.isscalar(v) or hasattr(v, "shape")):
                raise AnchorDivError(
                    f"save: model keyword {k!r} is a {type(v).__name__}; only arrays and "
                    f"scalars are saved"
                )
            out[k] = v
        return out

    @classmethod
    def from_arrays(cls, arrays: dict, card: dict) -> "Posterior":
        """Inverse of :meth:`to_arrays` (bit-exact arrays)."""
        points = {}
        for key, v in _group(arrays, "points.").items():
            which, site = key.split(".", 1)
            points.setdefault(which, {})[site] = v
        prior = None
        if card.get("prior"):
            meta = card["prior"]
            prior = get_family(meta["family"]).from_arrays(_group(arrays, "prior."), meta)
        if cls is Posterior:
            cls = _saved_type(card)
        return cls(
            card["kind"],
            card["method"],
            card["tau"],
            card["dtype"],
            card["info"],
            family=_params(arrays, "family.", card["family"], card.get("family_module")),
            samples=_group(arrays, "samples.") or None,
            stats=_group(arrays, "stats.") or None,
            fixed=_group(arrays, "fixed."),
            points=points or None,
            elbo=arrays.get("elbo"),
            completion=_params(
                arrays, "completion.", card.get("completion"), card.get("completion_module")
            ),
            prior=prior,
            model_kwargs=_scalars(_group(arrays, "model_kwargs."))
            if card.get("model_kwargs")
            else None,
        )


class ExactPosterior(Posterior):
    """A conjugate posterior (``method="exact"``): :attr:`~Posterior.family` holds its parameters
    (``mean()``, ``mode()``, ``sample(rng, n)``), :attr:`~Posterior.prior` the prior object it
    updated.  Same fields and methods as :class:`Posterior`.

    Parameters
    ----------
    *args, **kwargs
        The :class:`Posterior` fields.

    Examples
    --------
    >>> post = ad.adapt("gaussian", np.eye(4), np.eye(4)[:2], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> type(post).__name__, type(post.family).__name__
    ('ExactPosterior', 'NIW')
    """


class SampledPosterior(Posterior):
    """A posterior given by draws of the model's sites (``method="nuts"``: NUTS draws;
    ``"svi"``: the guide's draws): :attr:`~Posterior.samples` ``{site: [chains, draws, ...]}``,
    :attr:`~Posterior.prior` the prior object whose model ran (with
    :attr:`~Posterior.model_kwargs`).  Same fields and methods as :class:`Posterior`.

    Parameters
    ----------
    *args, **kwargs
        The :class:`Posterior` fields.

    Examples
    --------
    >>> from anchordiv.adaptation import SampledPosterior
    >>> issubclass(SampledPosterior, ad.Posterior)
    True
    """


class SubspacePosterior(SampledPosterior):
    """Draws of a ``subspace=r`` run: the sites live on the broad anchors' top-r principal
    directions (``fixed["basis"]``) and every point or draw is lifted to full d with
    :attr:`~Posterior.completion`, the default prior's exact posterior, outside them.

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


#: the posterior classes by name (what a saved posterior's card says it is)
POSTERIOR_TYPES = {
    c.__name__: c for c in (Posterior, ExactPosterior, SampledPosterior, SubspacePosterior)
}


def retyped(post: Posterior, cls: type, **changes) -> Posterior:
    """``post`` as a ``cls`` (one of :data:`POSTERIOR_TYPES`) with ``changes`` (the fields of
    :func:`dataclasses.replace`)."""
    fields = {f.name: getattr(post, f.name) for f in dataclasses.fields(post)}
    return cls(**{**fields, **changes})


def _saved_type(card: dict) -> type:
    """The class a saved posterior was (bundles from before the types: from its contents)."""
    name = card.get("posterior_type")
    if name in POSTERIOR_TYPES:
        return POSTERIOR_TYPES[name]
    if card.get("family"):
        return ExactPosterior
    return SubspacePosterior if card["info"].get("subspace") else SampledPosterior


def _param_arrays(prefix: str, params) -> dict[str, np.ndarray]:
    return {
        f"{prefix}.{f.name}": np.asarray(getattr(params, f.name))
        for f in dataclasses.fields(params)
    }


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
            f"families' classes; loading never imports code named in a file — import the "
            f"module that defines it and registers its family with ad.family(...) first"
        )
    fields = {f.name for f in dataclasses.fields(cls)}
    values = _scalars(_group(arrays, prefix))
    if set(values) != fields:
        raise AnchorDivError(
            f"load: {name} needs arrays {sorted(fields)}, the bundle has {sorted(values)}"
        )
    return cls(**values)


def exact_classes() -> dict[str, type]:
    """The classes a saved posterior's ``family``/``completion`` may name: the dataclasses
    defined in the module of a family in the registry (built-in ones, and those the user
    registered in this process with ``ad.family``), by class name."""
    import sys

    from .registry import FAMILIES

    out: dict[str, type] = {}
    for fam in FAMILIES.values():
        mod = sys.modules.get(fam.__module__)
        for obj in vars(mod).values() if mod is not None else ():
            if (
                isinstance(obj, type)
                and obj.__module__ == fam.__module__
                and dataclasses.is_dataclass(obj)
                and obj not in FAMILIES.values()
            ):
                out.setdefault(obj.__name__, obj)
    return out


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
    if card.get("type") != "posterior":
        raise AnchorDivError(f"{path}: holds a {card.get('type')!r}, not a posterior")
    with malformed(Path(path), "posterior"), warnings.catch_warnings():
        post = Posterior.from_arrays(arrays, card)
        if not isinstance(post.kind, str) or not isinstance(post.info, dict):
            raise AnchorDivError(f"{path}: malformed posterior (kind, info)")
        get_family(post.kind)
        warnings.simplefilter("ignore")
        for probe in (lambda: [post.point()], lambda: post.sample(seed=0, n=1)):
            try:  # the first uses: a model from the point summary and from one draw
                models = probe()
            except AnchorDivError:
                continue  # the posterior's own clear error, raised again where it is used
            for model in models:
                check_loaded_model(model)
    return post


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


__all__ = [
    "ExactPosterior",
    "POSTERIOR_TYPES",
    "Posterior",
    "SampledPosterior",
    "SubspacePosterior",
    "load_posterior",
    "retyped",
    "save_posterior",
    "to_model",
]
