"""Exact (conjugate) updates, one per kind: ``(family, info, fixed)`` from broad and target
anchors and the resolved options (MATH.md, "Adaptation", App. D)."""

from __future__ import annotations

import numpy as np

from .. import priors
from ..anchors.latent import principal_subspace
from ..errors import AnchorDivError, in_unit_interval, integer, positive


def exact_gaussian(broad, targets, o):
    d = broad.shape[1]
    mu0, cov = priors.niw.prior_scale(broad, reg=positive("reg", o["reg"], allow_zero=True),
                                      prior=o["prior"])
    auto = {k: o[k] == "auto" for k in ("kappa0", "nu0")}
    kappa0 = None if auto["kappa0"] else positive("kappa0", o["kappa0"])
    nu0 = None if auto["nu0"] else priors.niw.check_nu0(o["nu0"], d)
    chosen, at_bound = "user", []
    if kappa0 is None or nu0 is None:
        eb = priors.niw.empirical_bayes_fit(mu0, cov, targets, kappa0=kappa0, nu0=nu0)
        kappa0, nu0, at_bound = eb["kappa0"], eb["nu0"], eb["at_bound"]
        chosen = "empirical Bayes (" + ", ".join(k for k, v in auto.items() if v) + ")"
    prior = priors.NIW.from_scale(mu0, cov, kappa0, nu0)
    info = {"kappa0": kappa0, "nu0": nu0, "mean_pseudo_anchors": kappa0,
            "covariance_pseudo_anchors": nu0 - d - 1, "chosen_by": chosen,
            "at_bound": ", ".join(at_bound),
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
    return post, info, {"mean": post.location, **ppca_fixed(broad, targets, rank)}


def ppca_fixed(broad, targets, rank) -> dict:
    """The latent kinds' PPCA likelihood constants kept in ``post.fixed`` (target mean, broad
    signal ℓ and noise σ² at the rank) for the pointwise log-likelihood (:mod:`.density`)."""
    _, signal, noise = priors.bingham.ppca_scale(
        priors.cache.cached(priors.bingham.broad_spectrum, broad), rank)
    return {"ppca_mean": np.asarray(targets, np.float64).mean(0),
            "ppca_signal": np.asarray(signal), "ppca_noise": np.asarray(noise)}


def exact_latent_spherical(broad, targets, o):
    rank, beta = latent_rank(broad, targets, o, low=2), latent_beta(targets, o)
    check_target_rank(rank, targets, beta)
    kappa = o["concentration"]
    kappa = positive("concentration", kappa) if kappa is not None else \
        priors.posterior_bingham.likelihood_concentration(broad, len(targets), rank=rank,
                                                          beta=beta)
    post, extra = priors.latent_spherical_update(broad, targets, rank=rank, beta=beta,
                                                 concentration=kappa, prior=o["prior"])
    info = {"rank": rank, "beta": beta, "concentration": kappa, **extra}
    return post, info, {"radius": np.asarray(positive("radius", o["radius"])),
                        **ppca_fixed(broad, targets, rank)}


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


