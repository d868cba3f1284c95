"""The mixture family: Dirichlet–NIW prior of the Gaussian mixture anchor model, centred on the
broad EM fit, updated by MAP-EM (MATH.md, D.5; the math and the explicit model live in
:mod:`anchordiv.adaptation.priors.dirichlet_niw`).

    prior = ad.DirichletNIWPrior.from_anchors(broad [N, d], components=4, em_seed=0)
    post = prior.update(targets [n, d])

Sites: ``weights [K]``, ``means [K, d]``, ``covs [K, d, d]`` (PD).  ``em_seed`` seeds the broad
EM fit (not a sampler).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import scipy.special

from ...anchors import GaussianMixture
from ...errors import AnchorDivError, integer, positive
from .. import mixture_gibbs
from ..priors import dirichlet_niw
from ..density import gaussian_logpdf, log_niw
from ..family import Family, check_prior_mode, isotropic_like
from ..registry import family
from ..quantities import cosine
from .gaussian import covariance_weakness, gaussian_predictive


@family("mixture")
class DirichletNIWPrior(Family):
    """Dirichlet–NIW prior of the mixture kind, centred on a broad EM fit.

    Build with :meth:`from_anchors` (``components``, ``em_seed``; ``nu0`` defaults to d + 11).

    Parameters
    ----------
    alpha : numpy.ndarray, shape [K]
        Dirichlet parameters (= 1 + α₀π⁰).
    mu : numpy.ndarray, shape [K, d]
        Per-component NIW means.
    kappa, nu : numpy.ndarray, shape [K]
        Per-component NIW strengths.
    psi : numpy.ndarray, shape [K, d, d]
        Per-component NIW scale matrices.
    alpha0, kappa0 : float, default 10.0
        The strengths it was built with.
    nu0 : float, default 0.0
        The ν₀ it was built with.
    em_seed : int, default 0
        Seed of the broad EM fit.
    reg : float, default 1e-3
        Relative ridge of the EM covariances.
    max_iter : int, default 200
        MAP-EM iterations of the update.
    prior : {"broad", "isotropic"}, default "broad"
        The broad components or the isotropic control.
    origin : str, default ""
        Where the prior came from.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.DirichletNIWPrior.from_anchors(broad, components=2)
    >>> prior.mu.shape
    (2, 4)
    """

    alpha: np.ndarray
    mu: np.ndarray
    kappa: np.ndarray
    nu: np.ndarray
    psi: np.ndarray
    alpha0: float = 10.0
    kappa0: float = 10.0
    nu0: float = 0.0
    em_seed: int = 0
    reg: float = 1e-3
    max_iter: int = 200
    prior: str = "broad"
    origin: str = ""

    sites = ("weights", "means", "covs")
    covariance_site = "covs"
    conditioning = ", given the MAP-EM responsibilities"
    cli_options = {
        "components": ("int", "number of components (default 4)"),
        "alpha0": ("number", "Dirichlet strength (pseudo-anchors)"),
        "kappa0": ("number", "prior mean strength (pseudo-anchors)"),
        "nu0": ("number", "IW degrees of freedom (> d + 1)"),
        "reg": ("number", "relative ridge of the broad fit"),
    }
    posterior_types = (dirichlet_niw.DirichletNIW,)
    static_fields = ("prior", "origin", "em_seed", "max_iter")
    dims = {"weights": ["component"], "mean_cosine": ["component"], "cov_trace": ["component"]}
    model = staticmethod(dirichlet_niw.dirichlet_niw_model)

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        components: int = 4,
        alpha0: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
        reg: float = 1e-3,
        em_seed: int = 0,
        max_iter: int = 200,
        prior: str = "broad",
    ) -> "DirichletNIWPrior":
        """Prior centred on the broad EM fit with ``components`` (seeded by ``em_seed``);
        ``nu0`` defaults to d + 11."""
        broad = np.asarray(broad)
        d = broad.shape[1]
        k = integer("components", components, low=1)
        if len(broad) < 2 * k:
            raise AnchorDivError(
                f"broad_anchors: too few for {k} components: need at least "
                f"{2 * k}, got {len(broad)}"
            )
        nu0 = d + 11.0 if nu0 is None else nu0
        a0, k0 = positive("alpha0", alpha0), positive("kappa0", kappa0)
        reg = positive("reg", reg, allow_zero=True)
        p = dirichlet_niw.mixture_prior(
            broad,
            components=k,
            seed=int(em_seed),
            reg=reg,
            alpha0=a0,
            kappa0=k0,
            nu0=nu0,
            prior=check_prior_mode(prior),
        )
        return cls(
            p.alpha,
            p.mu,
            p.kappa,
            p.nu,
            p.psi,
            float(a0),
            float(k0),
            float(nu0),
            int(em_seed),
            float(reg),
            integer("max_iter", max_iter, low=1),
            prior,
        )

    @property
    def dim(self) -> int:
        return int(np.shape(self.mu)[-1])

    def dirichlet_niw(self) -> dirichlet_niw.DirichletNIW:
        return dirichlet_niw.DirichletNIW(self.alpha, self.mu, self.kappa, self.nu, self.psi)

    def isotropic(self) -> "DirichletNIWPrior":
        return dataclasses.replace(
            self, psi=isotropic_like(np.asarray(self.psi)), prior="isotropic"
        )

    #: why a saved Gaussian model cannot give this prior (``ad.load_prior(model, kind=...)``)
    needs_anchors: ClassVar[str] = (
        "a mixture prior runs EM on the broad anchors themselves; a saved Gaussian model only "
        "gives their mean and covariance — use DirichletNIWPrior.from_anchors(broad)"
    )

    def prior_kwargs(self) -> dict:
        return self.dirichlet_niw().model_kwargs()

    def model_inputs(self, targets):
        info = {
            "components": len(self.alpha),
            "alpha0": float(self.alpha0),
            "kappa0": float(self.kappa0),
            "nu0": float(self.nu0),
        }
        return self.prior_kwargs(), info, {}

    def exact(self, targets):
        kwargs, info, fixed = self.model_inputs(targets)
        post, resp, iters = dirichlet_niw.map_em(
            self.dirichlet_niw(), targets, max_iter=int(self.max_iter)
        )
        info.update(em_iterations=iters, target_counts=resp.sum(0).tolist())
        return post, info, fixed

    @classmethod
    def exact_chains(cls, post, rng, chains: int, per_chain: int) -> dict:
        """Exact draws that carry the assignment uncertainty: independent Gibbs chains over
        (z, weights, means, covs) given the targets (:mod:`..mixture_gibbs`)."""
        return mixture_gibbs.posterior_chains(post, rng, chains, per_chain)

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return GaussianMixture.from_params(
            p["weights"], np.asarray(p["means"], np.dtype(dtype)), p["covs"], tau=tau
        )

    @classmethod
    def log_likelihood(cls, draws, targets, fixed):
        t = np.asarray(targets, np.float64)
        w = np.asarray(draws["weights"], np.float64)
        means, covs = np.asarray(draws["means"], np.float64), np.asarray(draws["covs"], np.float64)
        comp = np.stack(
            [gaussian_logpdf(t, means[:, j], covs[:, j]) for j in range(w.shape[1])], -1
        )  # [S, n, K]
        return scipy.special.logsumexp(comp + np.log(w)[:, None, :], axis=-1)

    @classmethod
    def predictive(cls, draws, n, fixed, rng):
        w = np.asarray(draws["weights"], np.float64)
        means, covs = np.asarray(draws["means"], np.float64), np.asarray(draws["covs"], np.float64)
        lab = np.stack([rng.choice(w.shape[1], size=n, p=wi / wi.sum()) for wi in w])  # [S, n]
        idx = np.arange(len(w))[:, None]
        z = rng.normal(size=(len(w), n, means.shape[-1]))
        return means[idx, lab] + np.einsum("snij,snj->sni", np.linalg.cholesky(covs[idx, lab]), z)

    @classmethod
    def log_joint(cls, targets, kwargs, draws):
        d = {k: np.asarray(v, np.float64) for k, v in draws.items()}
        alpha = float(kwargs["alpha0"]) * np.asarray(kwargs["weights0"], np.float64)
        w = d["weights"]
        log_dir = (
            scipy.special.gammaln(alpha.sum())
            - scipy.special.gammaln(alpha).sum()
            + ((alpha - 1) * np.log(w)).sum(-1)
        )
        comps = sum(
            log_niw(
                d["means"][:, j],
                d["covs"][:, j],
                {
                    "mu0": kwargs["means0"][j],
                    "kappa0": kwargs["kappa0"],
                    "nu0": kwargs["nu0"],
                    "psi0": kwargs["psi0"][j],
                },
            )
            for j in range(w.shape[1])
        )
        return log_dir + comps + cls.log_likelihood(d, targets, {}).sum(-1)

    @classmethod
    def prior_posterior(cls, kwargs):
        k = len(kwargs["weights0"])
        return dirichlet_niw.DirichletNIW(
            float(kwargs["alpha0"]) * np.asarray(kwargs["weights0"]),
            np.asarray(kwargs["means0"]),
            np.full(k, kwargs["kappa0"]),
            np.full(k, kwargs["nu0"]),
            np.asarray(kwargs["psi0"]),
        )

    @classmethod
    def project(cls, kwargs, u):
        from ..subspace import project_niw

        return project_niw(kwargs, u, "means0")

    @classmethod
    def lift(cls, ps, completion, basis, r, *, which="mean", rng=None):
        """Each component as the Gaussian family lifts it (its own exact conditionals)."""
        from ..subspace import Conditional

        conds = [
            Conditional(completion.component(k), basis, r) for k in range(len(completion.alpha))
        ]
        out = []
        for p in ps:
            f64 = {k: np.asarray(v, np.float64) for k, v in p.items()}
            full = [c.lift(m, s, which, rng) for c, m, s in zip(conds, f64["means"], f64["covs"])]
            out.append(
                {
                    "weights": f64["weights"],
                    "means": np.stack([x["mu"] for x in full]),
                    "covs": np.stack([x["Sigma"] for x in full]),
                }
            )
        return out

    @classmethod
    def quantities(cls, s, ref):
        return {
            "weights": s["weights"],
            "mean_cosine": cosine(s["means"], ref["means"]),
            "cov_trace": np.trace(s["covs"], axis1=-2, axis2=-1),
        }

    @classmethod
    def sbc_quantities(cls, d, rng):
        v = rng.normal(size=d)
        v /= np.linalg.norm(v)
        rng.normal(size=(d, d))  # (kept: the stream the quantities were drawn from)
        return {
            "weight₀": lambda p: p["weights"][..., 0],
            "tr Σ₀": lambda p: np.trace(p["covs"][..., 0, :, :], axis1=-2, axis2=-1),
            "μ₁·v": lambda p: p["means"][..., 1, :] @ v,
        }

    @classmethod
    def site_shapes(cls, d, shapes):
        k = shapes["weights"][0] if shapes["weights"] else 1
        return {"weights": (k,), "means": (k, d), "covs": (k, d, d)}

    @classmethod
    def draw_size(cls, params):
        return int(np.size(params.psi))

    @classmethod
    def positive_definite_sites(cls):
        return ("covs",)

    @classmethod
    def project_mean(cls, mean, u):
        return {
            "weights": mean["weights"],
            "means": mean["means"] @ u,
            "covs": np.swapaxes(u, 0, 1) @ mean["covs"] @ u,
        }

    @classmethod
    def target_only(cls, info, d):
        return covariance_weakness(info, d)

    @classmethod
    def prior_scale(cls, kwargs, mean):
        """The components' scale matrices, summed."""
        return np.asarray(kwargs["psi0"] if "psi0" in kwargs else mean["covs"], np.float64).sum(0)

    @classmethod
    def sbc_broad(cls, d, rng, separation=8.0):
        """Two clusters of spread 0.5 whose centres are ``separation`` apart (8: well
        separated; 1.5 overlaps, so that assignments are uncertain)."""
        rng.normal(size=(d, d))  # (kept: the stream the broad anchors were drawn from)
        centres = np.zeros((2, d))
        centres[:, 0] = [-separation / 2, separation / 2]
        return centres[rng.integers(2, size=400)] + 0.5 * rng.normal(size=(400, d))

    @classmethod
    def sbc_options(cls, d):
        return {"components": 2, "alpha0": 10.0, "kappa0": 20.0, "nu0": d + 6.0}


__all__ = ["DirichletNIWPrior", "gaussian_predictive"]
