"""Broad → target adaptation: fit a prior to broad anchors, update it with target anchors,
summarise, and score with the adapted anchor model (MATH.md, "Adaptation", App. D).

    post = ad.adapt("gaussian", broad [N, d], targets [n, d], tau=20.0)
    model = post.point("mean")          # or "map": an anchor model for ad.divergence / ad.top_k
    draws = post.sample(seed=0, n=20)   # posterior draws of anchor models
    idata = post.inference_data(num_draws=200, seed=0)   # arviz.InferenceData

Options per kind (units in pseudo-anchors: how many anchors the broad prior is worth):

* ``gaussian`` (NIW): ``kappa0`` (strength of the prior mean), ``nu0`` (> d + 1; ``nu0 − d − 1``
  is the strength of the prior covariance) — each a number or ``"auto"`` (default: empirical
  Bayes, the maximiser of the closed-form marginal likelihood of the targets, reported in
  ``post.info``); ``reg`` relative ridge of the broad covariance (1e-3).
* ``latent-gaussian`` (matrix Bingham): ``rank`` k (default: 95 % of the broad variance),
  ``beta`` target weight in [0, 1] (default ``n/(n + prior_anchors)``), ``prior_anchors`` (10).
* ``latent-spherical`` (posterior-like Bingham): ``rank`` (≥ 2), ``beta``, ``prior_anchors``,
  ``concentration`` κ of the draws (default ``prior_anchors + n``), ``radius`` (1).
* ``mixture`` (Dirichlet–NIW): ``components`` (4), ``alpha0`` (10), ``kappa0`` (10), ``nu0``
  (default d + 11), ``seed`` (0), ``reg`` (1e-3), ``max_iter`` (200).

Every kind: ``prior="broad"`` (default) or ``"isotropic"`` — the same strength with an isotropic
prior covariance of the same trace (the control separating an informative broad prior from mere
shrinkage); ``method="exact"`` (default) or ``"nuts"`` (``num_samples``, ``num_warmup``,
``num_chains``, ``seed``, ``progress``) on the explicit NumPyro model of
:mod:`anchordiv.priors`; custom priors: ``model=fn`` (a NumPyro model
``fn(targets, **model_kwargs)`` with the kind's sites, see :data:`anchordiv.priors.SITES`) and
``model_kwargs={...}`` (overrides/extra hyperparameters; the defaults are the kind's prior's).

Costs and caveats: exact Gaussian draws are O(d³) each; exact latent draws use a Gibbs sampler
costing O(k·d³) per sweep (20 burn-in sweeps, then one per draw — seconds per draw at d = 384,
k = 50), so keep ``n``/``num_draws`` modest there.  Mixture draws come from the posterior given
the MAP-EM responsibilities (the assignment uncertainty is not propagated); NUTS on the mixture
model is not protected against label switching (the informative broad prior usually prevents
it; check ``az.rhat``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from . import priors
from .priors import cache as _cache  # noqa: F401  (priors.cache for the broad statistics)
from .anchors import Gaussian, GaussianMixture, LatentGaussian, LatentSpherical
from .anchors.base import AnchorModel, as_tau, psd_factor
from .anchors.latent import principal_subspace
from .errors import AnchorDivError, as_matrix, in_unit_interval, integer, positive
from .io import read_bundle, write_bundle

COMMON = {"method": "exact", "prior": "broad", "model": None, "model_kwargs": None,
          "num_samples": 500, "num_warmup": 500, "num_chains": 2, "seed": 0, "progress": True}
OPTIONS = {
    "gaussian": {"kappa0": "auto", "nu0": "auto", "reg": 1e-3},
    "latent-gaussian": {"rank": None, "beta": None, "prior_anchors": priors.bingham.PRIOR_ANCHORS},
    "latent-spherical": {"rank": None, "beta": None, "prior_anchors": priors.bingham.PRIOR_ANCHORS,
                         "concentration": None, "radius": 1.0},
    "mixture": {"components": 4, "alpha0": 10.0, "kappa0": 10.0, "nu0": None, "seed": 0,
                "reg": 1e-3, "max_iter": 200},
}
KINDS = tuple(OPTIONS)
FAMILIES = {c.__name__: c for c in (priors.NIW, priors.BinghamPosterior, priors.DirichletNIW)}


# ---- the posterior object ----------------------------------------------------------------

@dataclasses.dataclass
class Posterior:
    """Result of :func:`adapt`.

    ``kind``; ``method`` ("exact" | "nuts"); ``tau``; ``dtype`` of the adapted models;
    ``info`` (chosen hyperparameters, counts — JSON-able); ``family`` (exact posterior
    parameters, :mod:`anchordiv.priors`) or ``samples``/``stats`` (NUTS: ``[chains, draws, ...]``
    sites and sample statistics); ``fixed`` (arrays every draw shares: latent mean, radius).
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

    def params(self, which: str = "mean") -> dict[str, np.ndarray]:
        """Point-summary parameters (``"mean"`` or ``"map"``) as float64 arrays."""
        if which not in ("mean", "map"):
            raise AnchorDivError(f"which: 'mean' or 'map', got {which!r}")
        if self.family is not None:
            return self.family.mode() if which == "map" else self.family.mean()
        return summarise_samples(self.kind, self.flat_samples(), which, self.flat_lp())

    def point(self, which: str = "mean") -> AnchorModel:
        """The adapted anchor model at the posterior mean or MAP (usable with ad.divergence).

        Latent kinds: both give the principal subspace of the posterior (for NUTS, ``"mean"`` is
        the top-k eigenvectors of the sampled E[UUᵀ], ``"map"`` the highest-density draw)."""
        return to_model(self.kind, self.params(which), self.tau, self.dtype, self.fixed)

    def draws(self, seed: int, n: int) -> dict[str, np.ndarray]:
        """``n`` posterior parameter draws ``{site: [n, ...]}`` (NUTS: resampled from the
        chains without replacement where possible)."""
        n = integer("n", n, low=1)
        rng = np.random.default_rng(seed)
        if self.family is not None:
            return self.family.sample(rng, n)
        flat = self.flat_samples()
        total = len(next(iter(flat.values())))
        idx = rng.choice(total, size=n, replace=n > total)
        return {k: v[idx] for k, v in flat.items()}

    def sample(self, seed: int, n: int) -> list[AnchorModel]:
        """``n`` posterior draws as anchor models (same shapes: scoring them never retraces)."""
        d = self.draws(seed, n)
        return [to_model(self.kind, {k: v[i] for k, v in d.items()}, self.tau, self.dtype,
                         self.fixed) for i in range(n)]

    def inference_data(self, num_draws: int = 200, seed: int = 0):
        """ArviZ InferenceData of interpretable posterior quantities (+ NUTS sample stats);
        see :func:`anchordiv.uncertainty.inference_data`."""
        from .uncertainty import inference_data

        return inference_data(self, num_draws=num_draws, seed=seed)

    def flat_samples(self) -> dict[str, np.ndarray]:
        """NUTS samples with chains merged ``{site: [chains·draws, ...]}``."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def flat_lp(self) -> np.ndarray:
        return -self.stats["potential_energy"].reshape(-1)

    def save(self, path, **card) -> Path:
        """Save to the directory ``path`` (see :func:`save_posterior`)."""
        return save_posterior(self, path, **card)


def to_model(kind: str, p: dict, tau: float, dtype: str, fixed: dict) -> AnchorModel:
    """Anchor model from one set of parameters (float64 arrays) in ``dtype``."""
    dt = np.dtype(dtype)
    if kind == "gaussian":
        return Gaussian(jnp.asarray(p["mu"], dt), jnp.asarray(cov_factor(p["Sigma"]), dt),
                        as_tau(tau, dt))
    if kind == "latent-gaussian":
        return LatentGaussian(jnp.asarray(fixed["mean"], dt), jnp.asarray(p["U"], dt),
                              as_tau(tau, dt))
    if kind == "latent-spherical":
        return LatentSpherical.from_basis(np.asarray(p["U"], dt), tau=tau,
                                          radius=float(fixed["radius"]))
    return GaussianMixture.from_params(p["weights"], np.asarray(p["means"], dt), p["covs"],
                                       tau=tau)


def cov_factor(cov: np.ndarray) -> np.ndarray:
    """F with F Fᵀ = Σ: Cholesky (O(d³/3), fast at d = 768) with an eigen fallback."""
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return psd_factor(cov)


def summarise_samples(kind: str, s: dict, which: str, lp: np.ndarray) -> dict:
    """Point parameters from samples ``{site: [S, ...]}``: the highest-density draw
    (``"map"``) or the mean (latent kinds: principal subspace of the mean projector)."""
    if which == "map":
        i = int(np.argmax(lp))
        return {k: v[i] for k, v in s.items()}
    if kind in ("latent-gaussian", "latent-spherical"):
        u = s["U"]
        proj = np.einsum("sik,sjk->ij", u, u) / len(u)
        _, v = np.linalg.eigh(proj)
        return {"U": np.ascontiguousarray(v[:, ::-1][:, : u.shape[-1]])}
    return {k: v.mean(0) for k, v in s.items()}


# ---- the entry point ---------------------------------------------------------------------

def adapt(kind: str, broad_anchors, target_anchors, *, tau: float = 100.0,
          **options) -> Posterior:
    """Adapt an anchor model of ``kind`` from ``broad_anchors [N, d]`` to
    ``target_anchors [n, d]``; see the module docstring for the options."""
    if kind not in OPTIONS:
        raise AnchorDivError(f"kind: unknown {kind!r}; adaptation supports {', '.join(KINDS)}")
    opts = resolve_options(kind, options)
    broad, targets = check_anchors(broad_anchors, target_anchors)
    tau = positive("tau", tau)
    if opts["method"] not in ("exact", "nuts"):
        raise AnchorDivError(f"method: 'exact' or 'nuts', got {opts['method']!r}")
    if opts["prior"] not in ("broad", "isotropic"):
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {opts['prior']!r}")
    if opts["model"] is not None and opts["method"] != "nuts":
        raise AnchorDivError("model: a custom NumPyro model runs with method='nuts'")
    family, info, fixed = EXACT[kind](broad, targets, opts)
    info.update(kind=kind, method=opts["method"], prior=opts["prior"], d=broad.shape[1],
                n_broad=len(broad), n_targets=len(targets))
    post = Posterior(kind, "exact", tau, targets.dtype.str, info, family=family, fixed=fixed)
    if opts["method"] == "nuts":
        post = run_nuts(post, targets, opts)
    return post


def resolve_options(kind: str, options: dict) -> dict:
    allowed = {**COMMON, **OPTIONS[kind]}
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise AnchorDivError(f"{kind}: unknown option(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(sorted(allowed))}")
    return {**allowed, **options}


def check_anchors(broad, targets) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``broad [N, d]`` (N ≥ 2) and ``targets [n, d]`` (n ≥ 1, same d)."""
    b = as_matrix("broad_anchors", broad, min_rows=2)
    t = np.asarray(targets)
    if t.size == 0 or (t.ndim == 2 and t.shape[0] == 0):
        raise AnchorDivError("target_anchors: the target set is empty; adaptation needs at "
                             "least one target anchor")
    if t.shape[-1] != b.shape[1]:
        raise AnchorDivError(f"target_anchors: dimension mismatch: d={t.shape[-1]}, but the "
                             f"broad anchors have d={b.shape[1]}")
    return b, as_matrix("target_anchors", t, dim=b.shape[1])


# ---- exact updates, one per kind ----------------------------------------------------------

def exact_gaussian(broad, targets, o):
    d = broad.shape[1]
    mu0, cov = priors.niw.prior_scale(broad, reg=positive("reg", o["reg"], allow_zero=True),
                                      prior=o["prior"])
    auto = {k: o[k] == "auto" for k in ("kappa0", "nu0")}
    kappa0 = None if auto["kappa0"] else positive("kappa0", o["kappa0"])
    nu0 = None if auto["nu0"] else priors.niw.check_nu0(o["nu0"], d)
    chosen = "user"
    if kappa0 is None or nu0 is None:
        kappa0, nu0, _ = priors.empirical_bayes(mu0, cov, targets, kappa0=kappa0, nu0=nu0)
        chosen = "empirical Bayes (" + ", ".join(k for k, v in auto.items() if v) + ")"
    prior = priors.NIW.from_scale(mu0, cov, kappa0, nu0)
    info = {"kappa0": kappa0, "nu0": nu0, "mean_pseudo_anchors": kappa0,
            "covariance_pseudo_anchors": nu0 - d - 1, "chosen_by": chosen,
            "log_marginal_likelihood": prior.log_marginal(targets),
            "model_kwargs": prior.model_kwargs()}
    return prior.update(targets), info, {}


def latent_rank(broad, targets, o, *, low: int) -> int:
    d = broad.shape[1]
    if o["rank"] is None:
        _, u, _ = priors.cache.cached(principal_subspace, broad)
        rank = min(max(u.shape[1], low), d - 1)
    else:
        rank = integer("rank", o["rank"], low=low)
    if rank >= d:
        raise AnchorDivError(f"rank: must be < d = {d} (a rank-d subspace is the whole space), "
                             f"got {rank}")
    if rank > len(broad) - 1:
        raise AnchorDivError(f"rank: {rank} is larger than the broad anchors allow: at most "
                             f"n_broad − 1 = {len(broad) - 1}")
    return rank


def latent_beta(targets, o) -> float:
    if o["beta"] is not None:
        return in_unit_interval("beta", o["beta"])
    n0 = positive("prior_anchors", o["prior_anchors"])
    return len(targets) / (len(targets) + n0)


def check_target_rank(rank, targets, beta):
    if beta == 1 and rank > len(targets) - 1:
        raise AnchorDivError(f"rank: {rank} is larger than the target anchors allow with "
                             f"beta = 1: at most n_targets − 1 = {len(targets) - 1}")


def exact_latent_gaussian(broad, targets, o):
    rank, beta = latent_rank(broad, targets, o, low=1), latent_beta(targets, o)
    check_target_rank(rank, targets, beta)
    post, extra = priors.latent_gaussian_update(broad, targets, rank=rank, beta=beta,
                                                prior=o["prior"])
    info = {"rank": rank, "beta": beta, **extra}
    return post, info, {"mean": post.location}


def exact_latent_spherical(broad, targets, o):
    rank, beta = latent_rank(broad, targets, o, low=2), latent_beta(targets, o)
    check_target_rank(rank, targets, beta)
    kappa = o["concentration"]
    kappa = positive("concentration", kappa) if kappa is not None else \
        positive("prior_anchors", o["prior_anchors"]) + len(targets)
    post, extra = priors.latent_spherical_update(broad, targets, rank=rank, beta=beta,
                                                 concentration=kappa, prior=o["prior"])
    info = {"rank": rank, "beta": beta, "concentration": kappa, **extra}
    return post, info, {"radius": np.asarray(positive("radius", o["radius"]))}


def exact_mixture(broad, targets, o):
    d = broad.shape[1]
    k = integer("components", o["components"], low=1)
    if len(broad) < 2 * k:
        raise AnchorDivError(f"broad_anchors: too few for {k} components: need at least "
                             f"{2 * k}, got {len(broad)}")
    nu0 = d + 11.0 if o["nu0"] is None else o["nu0"]
    prior = priors.mixture_prior(
        broad, components=k, seed=int(o["seed"]), reg=positive("reg", o["reg"], allow_zero=True),
        alpha0=positive("alpha0", o["alpha0"]), kappa0=positive("kappa0", o["kappa0"]),
        nu0=nu0, prior=o["prior"])
    post, resp, iters = priors.map_em(prior, targets,
                                      max_iter=integer("max_iter", o["max_iter"], low=1))
    info = {"components": k, "alpha0": float(o["alpha0"]), "kappa0": float(o["kappa0"]),
            "nu0": float(nu0), "em_iterations": iters, "model_kwargs": prior.model_kwargs(),
            "target_counts": resp.sum(0).tolist()}
    return post, info, {}


EXACT = {"gaussian": exact_gaussian, "latent-gaussian": exact_latent_gaussian,
         "latent-spherical": exact_latent_spherical, "mixture": exact_mixture}


# ---- NUTS on the explicit (or a user's) NumPyro model -------------------------------------

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


# ---- persistence ---------------------------------------------------------------------------

def family_arrays(family) -> dict[str, np.ndarray]:
    return {f"family.{f.name}": np.asarray(getattr(family, f.name))
            for f in dataclasses.fields(family)}


def save_posterior(post: Posterior, path, **card) -> Path:
    """Save ``post`` as a bundle (``arrays.npz`` + ``card.json``, the ``save_model`` format);
    extra keywords (``encoder``, ``anchor_source``, ...) go into the card."""
    if not isinstance(post, Posterior):
        raise AnchorDivError(f"post: expected a Posterior, got {type(post).__name__}")
    arrays = {f"fixed.{k}": np.asarray(v) for k, v in post.fixed.items()}
    if post.family is not None:
        arrays.update(family_arrays(post.family))
    for group in ("samples", "stats"):
        arrays.update({f"{group}.{k}": v for k, v in (getattr(post, group) or {}).items()})
    info = {k: v for k, v in post.info.items() if k != "model_kwargs"}
    meta = {"type": "posterior", "kind": post.kind, "method": post.method, "tau": post.tau,
            "dtype": post.dtype, "dim": info.get("d"), "info": info,
            "family": type(post.family).__name__ if post.family is not None else None}
    return write_bundle(path, arrays, {**meta, **card})


def _group(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def load_posterior(path, *, verify: bool = True) -> Posterior:
    """Load a posterior saved by :func:`save_posterior` (bit-exact arrays)."""
    arrays, card = read_bundle(path, verify=verify)
    if card.get("type") != "posterior":
        raise AnchorDivError(f"{path}: holds a {card.get('type')!r}, not a posterior")
    family = None
    if card["family"]:
        fields = {k: (v.item() if v.ndim == 0 else v)
                  for k, v in _group(arrays, "family.").items()}
        family = FAMILIES[card["family"]](**fields)
    return Posterior(card["kind"], card["method"], card["tau"], card["dtype"], card["info"],
                     family=family, samples=_group(arrays, "samples.") or None,
                     stats=_group(arrays, "stats.") or None, fixed=_group(arrays, "fixed."))


__all__ = ["KINDS", "OPTIONS", "Posterior", "adapt", "load_posterior", "save_posterior",
           "to_model"]
