"""The protocol a family implements: the :class:`Family` base class (its declared members and
``update``) and the :class:`Hooks` the checks read (registration and the capabilities
:class:`Conjugate` and :class:`Projectable` are in :mod:`.registry`).

A *family* is a prior over one anchor model's parameters; an instance is a **prior object**, a
frozen dataclass registered as a JAX pytree by :func:`family`, built from broad anchors::

    prior = ad.NIWPrior.from_anchors(broad [N, d], targets=targets)   # the held-out recipe
    post = prior.update(targets [n, d])                                  # exact conjugate update
    post = ad.infer(prior, targets, ad.NUTS(num_samples=500))            # or any method

What a family defines: :attr:`~Family.sites`, :attr:`~Family.model` (its explicit NumPyro
model), :meth:`~Family.from_anchors`, :meth:`~Family.prior_kwargs`, :meth:`~Family.isotropic`
(the control) and :meth:`~Family.to_model`.  Every other member has a default a family may
override (:attr:`~Family.likelihood_type`, :meth:`~Family.model_inputs`,
:meth:`~Family.model_extras`, :attr:`~Family.hooks`, ...; the optional members of the
capabilities are ``None`` where a family has none); the update, prior draws and predictive,
persistence and the repr are generic.  A family of one's own is a subclass in one's own module
with the :func:`family` decorator (``docs/guides/adaptation.md``, "Adding a family").

A family's :class:`Hooks` (its class attribute ``hooks``) tell the checks and the adaptation
curves what it knows of itself beyond its model; every field is optional (``None``: the generic
default, or a base class's, read along the MRO by :func:`anchordiv.checks.families.checks_of`)::

    @ad.family("mine")
    class MyPrior(ad.Family):
        hooks = Hooks(quantities=my_quantities, dims={"radius": ["component"]})

:func:`cosine`, :func:`principal_angles` and :func:`own_sites` build the families' quantities.
"""

from __future__ import annotations

import abc
import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import ClassVar

import jax
import numpy as np

from .._safeio import parse_json
from ..errors import AnchorDivError
from ..io import check_axes, check_loaded_model, write_bundle
from ..threads import limited_blas
from .model import AUXILIARY_SUFFIX, OBSERVED, Likelihood  # noqa: F401
from .registry import FAMILIES, Conjugate, Projectable, check_prior_mode, family, get_family  # noqa: F401
from .registry import is_conjugate, no_subspace, protocol  # noqa: F401
from .update import check_targets, checked_inputs, exact_update

#: the Gaussian quantities include ``mu`` and ``Sigma`` themselves up to this d
SMALL_D = 8
#: leading covariance eigenvalues reported
N_EIGEN = 5
#: a model's own sites reach the posterior group up to this many values per draw
OWN_SITE_MAX = 1024


@dataclasses.dataclass(frozen=True)
class Hooks:
    """A family's hooks (module docstring); ``None``: the default or a base class's.

    Parameters
    ----------
    quantities : callable
        ``(draws {site: [chains, draws, ...]}, ref {site: ...}) -> {name: [chains, draws,
        ...]}``: interpretable quantities of draws against the point summary ``ref`` (ArviZ's
        posterior and prior groups).
    dims : dict
        ArviZ dims of the quantities beyond (chain, draw).
    sbc_broad : callable
        ``(d, rng, separation) -> broad [400, d]``: the fixed broad anchors of the SBC problem.
    sbc_options : callable
        ``d -> dict``: fixed strengths of the SBC problem (``from_anchors`` keywords; empirical
        Bayes would make the prior depend on the data).
    sbc_quantities : callable
        ``(d, rng) -> {name: f}``, each ``f`` a scalar function of parameters with a leading
        draw axis ``[S, ...] -> [S]``.
    draw_size : callable
        ``params -> int or None``: float64 values of the largest covariance of one exact draw
        (memory budget of the default draw count).
    gibbs_cost : callable
        ``params -> (relative cost of a sweep, burn-in sweeps) or None``: exact draws that are
        Gibbs chains.
    psis_caveat : callable
        ``post -> str or None``: why PSIS-LOO over the draws of ``post`` would not estimate
        its leave-one-out refits.
    prior_scale : callable
        ``(model kwargs, mean params) -> [d, d] or None``: the broad scale whose leading
        eigenvectors the posterior predictive checks project on.
    student_t_predictive : bool
        The model's posterior predictive is the NIW Student-t (exact LOO).
    conditional_predictive : callable
        ``(model kwargs, draws {site: [S, ...]}, train [n, d], test [m, d], rng) -> log p
        [R, m]``: the family's predictive of held-out targets given the training targets in
        closed form — exact (``R = 1``: the diagonal family's product of Student-t's), or
        given each draw's latent structure (``R = S``, draw order: the mixture's Student-t
        mixture given the assignments, Rao-Blackwellized).  K-fold scores each fold by it
        (:func:`anchordiv.checks.criticism.kfold_loo`).
    exact_calibration : str, optional
        How approximate exact draws are calibrated (InferenceData attributes): a note that
        points to the benchmark results holding the measured numbers, quoting none.
    curve_method : object, optional
        The inference method of the family's ``posterior-<kind>`` / ``isotropic-<kind>``
        adaptation-curve models (an ``ad.Exact()``, ``ad.NUTS(...)`` or ``ad.SVI(...)``;
        default: exact where the family is conjugate, else a short NUTS run).
    sbc_fixed : callable
        ``fixed -> fixed``: the arrays the SBC problem's likelihood shares, from those of the
        update (default: as they are; the latent kinds centre their PPCA at 0).
    data_chosen : callable
        ``options -> [name, ...]``: the ``adapt`` options (the kind's defaults filled in) whose
        value is chosen on the targets (an ``"auto"`` of the recipe or empirical Bayes: a refit
        on T₋ᵢ has another prior, so PSIS-LOO would be optimistic); default none.
    ppc_directions : callable
        ``(post, k) -> [d, k] or None``: the family's own leading broad directions that the
        posterior predictive checks project on (the spectral eigenbasis); None: those of
        :attr:`prior_scale`.

    Examples
    --------
    >>> from anchordiv.adaptation.protocol import Hooks
    >>> ad.NIWPrior.hooks.dims["mu"], Hooks().quantities is None
    (['dim'], True)
    """

    quantities: Callable | None = None
    dims: Mapping[str, list[str]] | None = None
    sbc_broad: Callable | None = None
    sbc_options: Callable | None = None
    sbc_quantities: Callable | None = None
    draw_size: Callable | None = None
    gibbs_cost: Callable | None = None
    psis_caveat: Callable | None = None
    prior_scale: Callable | None = None
    student_t_predictive: bool | None = None
    conditional_predictive: Callable | None = None
    exact_calibration: str | None = None
    curve_method: object | None = None
    sbc_fixed: Callable | None = None
    data_chosen: Callable | None = None
    ppc_directions: Callable | None = None


def declared_hooks(cls: type) -> Hooks:
    """The hooks ``cls`` declares, merged field by field along its MRO (a subclass's own
    non-``None`` fields over its bases'); ``None`` where no class declares a field."""
    found: dict = {}
    for base in reversed(cls.__mro__):
        own = base.__dict__.get("hooks")
        if isinstance(own, Hooks):
            found.update({k: v for k, v in vars(own).items() if v is not None})
    return Hooks(**found)


# ---- helpers of the families' quantities --------------------------------------------------------
def principal_angles(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Principal angles in degrees, ascending, between two subspaces.

    Examples
    --------
    >>> from anchordiv.adaptation.protocol import principal_angles
    >>> principal_angles(np.eye(3)[:, :1], np.eye(3)[:, 1:2]).round(1)
    array([90.])
    """
    s = np.linalg.svd(np.swapaxes(u, -1, -2) @ v, compute_uv=False)
    return np.degrees(np.arccos(np.clip(s, -1.0, 1.0)))


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine between the last axes of two arrays (broadcast).

    Examples
    --------
    >>> from anchordiv.adaptation.protocol import cosine
    >>> float(cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])).round(3))
    0.707
    """
    return (a * b).sum(-1) / np.maximum(
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-300
    )


def own_sites(sites, draws: dict, taken: dict) -> dict:
    """A model's own parameters ``{site: [chains, draws, ...]}`` beyond the family's ``sites``
    (a custom or structured model's loadings, scales, ...) for az.summary / az.plot_trace: every
    stored site but ``sites``, those in ``taken``, auxiliary ``*_raw`` coordinates and sites of
    more than :data:`OWN_SITE_MAX` values per draw."""
    return {
        k: v
        for k, v in draws.items()
        if k not in sites
        and k not in taken
        and not k.endswith(AUXILIARY_SUFFIX)
        and int(np.prod(v.shape[2:], dtype=int)) <= OWN_SITE_MAX
    }


def unit_vector(d: int, rng) -> np.ndarray:
    """A random unit vector ``[d]`` (a fixed direction of an SBC quantity)."""
    v = rng.normal(size=d)
    return v / np.linalg.norm(v)


def isotropic_like(cov: np.ndarray) -> np.ndarray:
    """``tr(C)/d · I`` ``[..., d, d]`` for ``cov [..., d, d]`` (same trace, no direction)."""
    d = cov.shape[-1]
    tr = np.trace(cov, axis1=-2, axis2=-1)[..., None, None]
    return tr / d * np.broadcast_to(np.eye(d), cov.shape)


#: the methods that run host linear algebra: a family's own (a user's included) run under the
#: library's BLAS thread policy (:mod:`anchordiv.threads`), wrapped once per subclass
HOST_LINALG = ("from_anchors", "exact", "log_marginal", "sample")


@protocol
class Family(abc.ABC):
    """Abstract base of the adaptable families (module docstring): a prior object.

    A family is a frozen dataclass built by ``Family.from_anchors(broad, targets, **strengths)``;
    ``prior.update(targets, tau=...)`` runs the exact update (a :class:`Conjugate` family),
    ``ad.infer(prior, targets, method)`` any method, ``prior.save(path)`` stores it
    (:func:`anchordiv.load_prior` reads it back).

    The members a family defines are in the module docstring; every one the base class has is
    documented below.

    Parameters
    ----------
    **fields
        The concrete family's dataclass fields (see each family).

    Examples
    --------
    >>> from anchordiv.adaptation import FAMILIES
    >>> sorted(FAMILIES)[:3]
    ['diagonal-gaussian', 'factor-gaussian', 'gaussian']
    >>> ad.NIWPrior.sites
    ('mu', 'Sigma')
    """

    #: the kind the family is registered under (set by :func:`family`)
    kind: ClassVar[str] = "abstract"
    #: the posterior sites its anchor model is built from, in order
    sites: ClassVar[tuple[str, ...]] = ()
    #: the explicit NumPyro model, a plain function ``model(targets, **model_kwargs)`` whose
    #: observed site, named :data:`OBSERVED` (``"targets"``), is in a plate over the anchors;
    #: a sample site named ``*`` + :data:`AUXILIARY_SUFFIX` (``"_raw"``) only parametrises a
    #: deterministic one (no density of its own in the log joint, no ArviZ quantity)
    model: ClassVar[Callable]
    #: the targets' likelihood: traced from :attr:`model` by default; a subclass of
    #: :class:`~anchordiv.adaptation.model.Likelihood` where the family has closed forms
    likelihood_type: ClassVar[type[Likelihood]] = Likelihood
    #: names of the fields that are not arrays or numbers (static in the pytree, saved as JSON)
    static_fields: ClassVar[tuple[str, ...]] = ("prior",)
    #: how the family's point summaries are formed, in words, where the defaults
    #: (:data:`.posterior.DESCRIPTIONS`: ``exact_mean``, ``exact_map``, ``mean_of_draws``,
    #: ``joint_mode``) do not say it
    descriptions: ClassVar[dict[str, str]] = {}
    #: what the checks and the adaptation curves know of the family (ArviZ quantities, SBC
    #: problem, PSIS caveat, curve method, ...): merged field by field along the MRO, the
    #: generic defaults filled in by :func:`anchordiv.checks.families.checks_of`
    hooks: ClassVar[Hooks] = Hooks()
    #: why a saved model cannot stand in for the broad anchors of this family
    #: (``ad.load_prior(model_dir, kind=...)`` refuses it), or None where it can
    needs_anchors: ClassVar[str | None] = None
    #: the site whose log-determinant is the subspace Jacobian of the full-d joint mode (a
    #: :class:`Projectable` family's option), or None
    covariance_site: ClassVar[str | None] = None
    #: the classes of its exact parameters (what :meth:`exact` returns first) and of its
    #: subspace completion: the only classes a saved posterior of this family may name
    #: (:func:`~anchordiv.adaptation.posterior.exact_classes`); a conjugate family declares them
    exact_types: ClassVar[tuple[type, ...]] = ()
    #: each array field's axes, one letter per axis (``d`` the dimension; as
    #: :attr:`anchordiv.anchors.base.AnchorModel.axes`): a loaded prior is checked against them,
    #: and, where a family declares any, its other numeric fields must be scalars
    axes: ClassVar[dict[str, str]] = {}
    #: the axes of the model's array keywords and of the arrays in ``fixed`` (as :attr:`axes`):
    #: a loaded posterior's are checked against them (:meth:`check_model_inputs`); None: not
    #: declared (a user's family: the keywords are checked against the model's signature only)
    model_axes: ClassVar[dict[str, str] | None] = None
    #: the prior mode, ``"broad"`` or ``"isotropic"``: a field where the family records it (a
    #: subclass's field ``prior`` gets this default)
    prior: str = "broad"
    #: where the prior came from (a saved model's card as JSON, set by
    #: :func:`~anchordiv.adaptation.load_prior`): a static field of every registered family,
    #: which :func:`family` adds where a class declares none
    origin = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in HOST_LINALG:
            attr = cls.__dict__.get(name)
            if isinstance(attr, classmethod):
                setattr(cls, name, classmethod(limited_blas(attr.__func__)))
            elif callable(attr):
                setattr(cls, name, limited_blas(attr))

    @classmethod
    def required_members(cls) -> tuple[str, ...]:
        """The members every family defines: :attr:`sites`, :attr:`model` and the abstract
        methods (:func:`family` refuses a class that lacks one)."""
        return ("sites", "model", *sorted(Family.__abstractmethods__))

    @classmethod
    def missing_members(cls) -> list[str]:
        """The required members this class lacks (:meth:`required_members`): ``sites`` empty
        or not a tuple of site names, ``model`` not callable, an abstract method not defined."""
        sites = cls.sites
        missing = []
        if not sites:
            missing.append("sites")
        elif not (isinstance(sites, tuple) and all(isinstance(x, str) for x in sites)):
            missing.append(f"sites (a tuple of site names, got {sites!r})")
        if not callable(getattr(cls, "model", None)):  # declared, without a value, above
            missing.append("model")
        return missing + sorted(getattr(cls, "__abstractmethods__", ()))

    # ---- the prior object -------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def from_anchors(
        cls, broad: np.ndarray, targets: np.ndarray | None = None, **strengths
    ) -> "Family":
        """The prior fitted to ``broad [N, d]``; ``targets [n, d]`` only where a strength is
        chosen from them (empirical Bayes)."""

    @abc.abstractmethod
    def isotropic(self) -> "Family":
        """The control: the same strengths, the covariance information replaced by an isotropic
        one of the same trace."""

    @abc.abstractmethod
    def prior_kwargs(self) -> dict:
        """Hyperparameters of :attr:`model` that do not depend on the targets (the prior
        group: the likelihood's ``exact_prior``)."""

    @property
    def dim(self) -> int:
        """The embedding dimension: the last axis of the first array field."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if np.ndim(v) >= 1:
                return int(np.shape(v)[-1])
        raise AnchorDivError(f"dim: the {self.kind} prior has no array field to read d from")

    def broad_count(self) -> int | None:
        """How many broad anchors the prior was built from, where the family records it (the
        latent families' ``n_broad``); None by default."""
        return None

    def chosen_on_targets(self) -> bool:
        """Whether the prior's strengths were chosen on the targets (the held-out recipe,
        empirical Bayes) rather than given; False by default."""
        return False

    def model_inputs(self, targets: np.ndarray) -> tuple[dict, dict, dict]:
        """``(model_kwargs, info, fixed)`` that NUTS and SVI run :attr:`model` with given
        ``targets [n, d]`` — no conjugate update: by default the prior's own
        :meth:`prior_kwargs`, no info, :meth:`predictive_fixed`.  Families whose model's
        hyperparameters are fitted to the targets (the latent kinds) override it."""
        return self.prior_kwargs(), {}, self.predictive_fixed()

    @classmethod
    def model_extras(cls, kwargs: dict, *, map_density: bool) -> dict:
        """Keywords added to the model's ``kwargs`` for a NUTS or SVI run (a user's ``model=``
        gets those its signature takes): what the family's model derives from its
        hyperparameters once per run (the gaussian kind's Cholesky factor of ψ₀), and, with
        ``map_density`` (a delta guide), what makes its density that of its parameters
        (``map_jacobian=True``) so that an optimum of the run is their mode.  Nothing by
        default."""
        return {}

    def check_loaded(self, dim: int | None) -> None:
        """Refuse a loaded prior whose arrays could not be used: its fields of the dataclass's
        types where numbers are expected, of the shapes the family declares (:attr:`axes`),
        finite, its dimension ``dim`` (the card's), and, for a conjugate family, an update of
        two probe targets that gives a usable model (else, where the family declares
        :attr:`model_axes`: its model's keywords, :meth:`prior_kwargs`, pass
        :meth:`check_model_inputs`)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        numbers = {k: v for k, v in fields.items() if k not in self.static_fields}
        check_axes(f"prior {self.kind}", numbers, self.axes, scalars=bool(self.axes))
        for name, v in fields.items():
            if name in self.static_fields and not isinstance(
                v, (str, bool, int, float, type(None))
            ):
                raise AnchorDivError(f"prior: field {name} is not a string, number or null")
            if name in self.static_fields or v is None or isinstance(v, str):
                continue
            a = np.asarray(v)
            if a.dtype.kind not in "biuf" or not np.all(np.isfinite(a)):
                raise AnchorDivError(f"prior: field {name} is not finite numbers")
        if self.dim != dim:
            raise AnchorDivError(f"prior: dimension {self.dim}, the card says {dim}")
        origin = self.origin
        if origin and (
            not isinstance(origin, str) or not isinstance(parse_json(origin, "origin"), dict)
        ):
            raise AnchorDivError("prior: its origin is not a JSON object")
        if is_conjugate(self):  # the first use, on two probe targets: it must give a model
            probe = np.eye(self.dim)[: min(2, self.dim)]
            check_loaded_model(self.update(probe, tau=10.0).point())
        elif self.model_axes is not None:  # the first use: the model's keywords, as declared
            type(self).check_model_inputs(self.prior_kwargs(), self.predictive_fixed(), self.dim)

    @classmethod
    def check_model_inputs(cls, kwargs: dict | None, fixed: dict, d: int) -> None:
        """Refuse a loaded posterior's model keywords ``kwargs`` (None: not saved) and fixed
        inputs ``fixed`` that the family's prior would never give its model at dimension ``d``:
        a keyword the model requires missing or one it does not take, arrays off
        :attr:`model_axes` (scalars elsewhere), targets that are not ``[n, d]`` finite numbers
        whose squares are finite.  Families add their constructors' value rules (positive
        strengths, positive-definite scales), each through the validator the constructor uses.

        Raises
        ------
        AnchorDivError
            Naming the first keyword or fixed input that breaks a rule.
        """
        import inspect

        if "targets" in fixed:
            t = np.asarray(check_targets(fixed["targets"], d), np.float64)
            with np.errstate(over="ignore"):
                if not np.isfinite(np.einsum("ij,ij->", t, t)):
                    raise AnchorDivError(
                        "fixed.targets: entries so large that their squares overflow "
                        f"(largest |t| = {float(np.abs(t).max()):.3g}); targets are embeddings"
                    )
        if kwargs is None:
            return
        params = list(inspect.signature(cls.model).parameters.values())
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            named = [p for p in params[1:] if p.kind in keyword]  # the first: the targets
            required = {p.name for p in named if p.default is p.empty}
            missing, unknown = required - set(kwargs), set(kwargs) - {p.name for p in named}
            if missing or unknown:
                raise AnchorDivError(
                    f"model_kwargs: the {cls.kind} model needs {sorted(required)}; missing "
                    f"{sorted(missing)}, not taken {sorted(unknown)}"
                )
        if cls.model_axes is not None:
            values = {"model_kwargs." + k: v for k, v in kwargs.items()}
            values.update({"fixed." + k: v for k, v in fixed.items() if k != "targets"})
            axes = {"model_kwargs." + k: v for k, v in cls.model_axes.items()}
            axes.update({"fixed." + k: v for k, v in cls.model_axes.items()})
            values["d"], axes["d"] = np.zeros(d), "d"
            check_axes(f"posterior of kind {cls.kind}", values, axes, scalars=True)

    @limited_blas
    def update(self, targets, *, tau: float | None = None, normalize: bool = False):
        """The exact posterior given target anchors (``ad.infer(self, targets, ad.Exact())``:
        the same validation, then ``ad.Exact().run``).

        Parameters
        ----------
        targets : array_like, shape [n, d]
            Target anchors.
        tau : float, optional
            The encoder's logit scale (default: recorded with the targets or the prior).
        normalize : bool, default False
            Scale target rows to unit norm.

        Returns
        -------
        Posterior
            The exact posterior.
        """
        t, tau, _ = checked_inputs(self, targets, tau=tau, normalize=normalize, broad=None)
        return exact_update(self, t, tau=tau)

    def likelihood(self) -> Likelihood:
        """The targets' likelihood under :attr:`model` at the prior's hyperparameters (a
        :attr:`likelihood_type`)."""
        return self.likelihood_type(
            type(self), self.prior_kwargs(), self.predictive_fixed(), self.dim
        )

    def sample(self, key, n: int) -> dict[str, np.ndarray]:
        """``n`` prior draws ``{site: [n, ...]}``; ``key`` a JAX PRNG key or an int seed."""
        return self.likelihood().prior_draws(as_rng(key), n)

    def prior_predictive(self, key, n_draws: int, n_anchors: int) -> np.ndarray:
        """Anchors simulated from the prior ``[n_draws, n_anchors, d]``."""
        rng, lik = as_rng(key), self.likelihood()
        return lik.sample(lik.prior_draws(rng, n_draws), n_anchors, rng)

    def predictive_fixed(self) -> dict:
        """The ``fixed`` arrays :meth:`predictive` needs for prior-predictive anchors."""
        return {}

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict]:
        """``(arrays, meta)``: the prior's fields, bit-exact (:meth:`from_arrays` inverts it)."""
        arrays, meta = {}, {"family": self.kind}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in self.static_fields or v is None:
                meta[f.name] = v
            else:
                arrays[f.name] = np.asarray(v)
        return arrays, meta

    def __repr__(self) -> str:
        """One line: arrays by shape, numbers to 4 digits, modes as text, where it came from."""
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "origin":
                if v:
                    parts.append(f"from={self.card.get('path', '?')!r}")
            elif v is None or isinstance(v, (str, bool)):
                if v not in (None, ""):
                    parts.append(f"{f.name}={v!r}")
            elif np.ndim(v) == 0:
                try:
                    parts.append(f"{f.name}={float(v):.4g}")
                except TypeError:  # a tracer or another leaf
                    parts.append(f"{f.name}={type(v).__name__}")
            else:
                parts.append(f"{f.name}{list(np.shape(v))}")
        return f"{type(self).__name__}({', '.join(parts)})"

    @property
    def card(self) -> dict:
        """Where the prior came from (:func:`~anchordiv.adaptation.load_prior`: the saved model's
        card and path); ``{}`` for a prior built from anchors."""
        return json.loads(self.origin) if self.origin else {}

    # ---- optional members of the capabilities (None: the family has none) -------------------
    @classmethod
    def exact_chains(cls, post, rng, chains: int, per_chain: int) -> dict | None:
        """Exact draws ``{site: [chains, per_chain, ...]}`` of the whole posterior ``post`` from
        the family's own sampler, where the exact parameters' ``sample`` conditions on something
        (a :class:`Conjugate` option: the mixture's Gibbs chains sample the assignments too);
        None: the parameters' ``sample`` serves."""
        return None

    def power_scaled_posterior(self, alpha: float, targets: np.ndarray) -> object | None:
        """The exact posterior parameters (``mean()``, ``sample(rng, n)``) under this prior
        raised to the power ``alpha``, given ``targets [n, d]`` — a :class:`Conjugate` option
        for a family whose power-scaled prior is again of its conjugate form (the gaussian
        and diagonal-gaussian kinds); None: ``anchordiv.checks.prior_sensitivity`` reweights
        the draws instead (PSIS).  An ``alpha`` that leaves the prior improper is an
        :class:`~anchordiv.errors.AnchorDivError`."""
        return None

    def completion(self, targets: np.ndarray) -> object | None:
        """The exact full-d posterior that lifts subspace draws (a :class:`Projectable` option,
        for a family that is not :class:`Conjugate` itself), or None."""
        return None

    @classmethod
    def project_mean(cls, mean, u: np.ndarray) -> dict | None:
        """Posterior-mean parameters ``mean`` in the basis ``u [d, r]`` (a delta guide's
        subspace mean; a :class:`Projectable` option), or None."""
        return None

    @classmethod
    def subspace_mode(cls, point: dict, completion, r: int) -> dict | None:
        """A delta guide's subspace mode rescaled to the joint mode's block (a
        :class:`Projectable` option), or None."""
        return None

    def save(self, path, *, overwrite: bool = False, **card):
        """Save as a bundle (``arrays.npz`` + ``card.json``; ``ad.load_prior`` reads it); an
        existing non-empty ``path`` is refused unless ``overwrite=True``."""
        arrays, meta = self.to_arrays()
        head = {"type": "prior", "kind": self.kind, "family_class_module": type(self).__module__}
        card = {**head, "dim": self.dim, "prior": meta, **card}
        return write_bundle(path, arrays, card, overwrite=overwrite)

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict) -> "Family":
        """The prior :meth:`to_arrays` wrote: ``arrays`` its array fields, ``meta`` the rest."""
        kw = {f.name: meta.get(f.name) for f in dataclasses.fields(cls) if f.name in meta}
        kw.update({k: (v.item() if np.ndim(v) == 0 else v) for k, v in arrays.items()})
        return cls(**kw)

    @classmethod
    @abc.abstractmethod
    def to_model(cls, p: dict, tau: float, dtype: str, fixed: dict):
        """The anchor model of one parameter set ``p`` (float64 arrays) in ``dtype``."""


def as_rng(key) -> np.random.Generator:
    """A numpy Generator from an int seed, a JAX PRNG key or a Generator."""
    if isinstance(key, np.random.Generator):
        return key
    if isinstance(key, (int, np.integer)):
        return np.random.default_rng(int(key))
    data = np.asarray(
        jax.random.key_data(key)
        if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key)
        else key
    )
    return np.random.default_rng([int(x) for x in data.reshape(-1)])
