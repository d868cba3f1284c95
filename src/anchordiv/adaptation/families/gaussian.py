"""The Gaussian family: Normal–Inverse-Wishart prior of the Gaussian anchor model (MATH.md, D.2):
its explicit NumPyro model, the conjugate posterior :class:`NIW`, empirical Bayes, the subspace
projection and lift, and the prior object :class:`NIWPrior`.

    prior = ad.NIWPrior.from_anchors(broad [N, d], targets=targets)   # κ₀, ν₀ by the recipe
    prior = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=d + 6.0)  # or fixed strengths
    prior.chosen_by, prior.kappa0, prior.nu0                          # what was chosen, and how
    post = prior.update(targets)                                      # NIW(μₙ, κₙ, νₙ, Ψₙ)

Sites: ``mu [d]``, ``Sigma [d, d]`` (PD).  Likelihood ``t_i ~ N(μ, Σ)``.

Prior ``Σ ~ IW(ν₀, Ψ₀)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``; target anchors ``t_i ~ N(μ, Σ)``.  From the
broad anchors B: ``μ₀ = mean(B)``, ``Ψ₀ = (ν₀ − d − 1)·C`` with ``C = Cov(B)`` (plus a relative
ridge ``reg``), so that ``E[Σ] = C``.  Units: κ₀ is the number of pseudo-anchors the prior mean is
worth, ``ν₀ − d − 1`` the number the prior covariance is worth.  ``prior="isotropic"`` replaces C
by ``tr(C)/d · I`` (same strength, same trace, no direction information): the control that
separates an informative broad prior from mere shrinkage.

Conjugate update with n targets, mean t̄ and scatter S = Σ (t_i − t̄)(t_i − t̄)ᵀ:
``κₙ = κ₀ + n``, ``νₙ = ν₀ + n``, ``μₙ = (κ₀μ₀ + n t̄)/κₙ``,
``Ψₙ = Ψ₀ + S + (κ₀ n/κₙ)(t̄ − μ₀)(t̄ − μ₀)ᵀ``.  Posterior mean ``(μₙ, Ψₙ/(νₙ − d − 1))``;
joint mode ``(μₙ, Ψₙ/(νₙ + d + 2))``.  The marginal likelihood of the targets is closed form and,
with a weak hyperprior on the log strengths, drives empirical Bayes (:func:`empirical_bayes_fit`).

The modules beside this one hold the rest of the kind: :mod:`.gaussian_bartlett` (the NIW law in
the Bartlett coordinates NUTS runs on), :mod:`.gaussian_likelihood` (closed forms of the
likelihood and the NIW density), :mod:`.gaussian_evidence` (empirical Bayes) and
:mod:`.gaussian_subspace` (the subspace projection and lift); their names are importable from
here too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpyro
import scipy.special

from ...errors import AnchorDivError, check_covariance, positive
from .. import recipe
from ..family import Family, check_prior_mode, isotropic_like
from ..hooks import N_EIGEN, SMALL_D, Hooks, cosine, unit_vector
from ..registry import family
from ..cache import derived
from ..statistics import broad_moments, scatter
from .gaussian_bartlett import BartlettGaussian, niw_bartlett
from .gaussian_evidence import EB_BOUNDS, MarginalCurve, empirical_bayes, empirical_bayes_fit
from .gaussian_likelihood import (
    GaussianLikelihood,
    cov_cholesky,
    cov_factor,
    gaussian_logpdf,
    gaussian_model,
    gaussian_predictive,
    log_iw,
    log_multigamma,
    log_niw,
)
from .gaussian_subspace import Conditional, lift_gaussian, project_niw


def niw_model(targets, *, mu0, kappa0, nu0, psi0, psi0_tril=None, map_jacobian=False):
    """The explicit NumPyro model of the gaussian kind (copy and change it for a custom prior).

    The law is exactly ``Σ ~ IW(ν₀, Ψ₀)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``, written in the whitened
    Bartlett coordinates of :func:`niw_bartlett` so that NUTS and SVI move in a well-conditioned,
    O(n d²)-per-step space at any d (no Cholesky of a sampled Σ, float32-safe).  Sites:
    deterministic ``Sigma [d, d]`` and ``mu [d]``; latent ``bartlett_chi2 [d]``,
    ``bartlett_normal [d(d−1)/2]``, ``mu_std [d]``; observed ``targets``.

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    mu0 : array_like, shape [d]
        μ₀.
    kappa0 : float
        κ₀ > 0.
    nu0 : float
        ν₀ > d − 1.
    psi0 : array_like, shape [d, d]
        Ψ₀, positive definite.
    psi0_tril : array_like, shape [d, d], optional
        Its Cholesky factor, if already known.
    map_jacobian : bool, default False
        Add the log-Jacobian that turns the density of the Bartlett coordinates into the
        density of (μ, Σ): a delta guide (MAP) then finds the joint mode
        ``(μₙ, Ψₙ/(νₙ + d + 2))`` of the parameters, not of their coordinates.

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    mu, law, jac = niw_bartlett("", mu0, kappa0, nu0, psi0, psi0_tril)
    if map_jacobian:
        numpyro.factor("map_jacobian", jac)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", law, obs=targets)


def check_nu0(nu0: float, d: int) -> float:
    v = positive("nu0", nu0)
    if v <= d + 1:
        raise AnchorDivError(
            f"nu0: must be > d + 1 = {d + 1} (so that E[Σ] exists); got {nu0!r}. "
            f"nu0 − d − 1 is the prior covariance's strength in pseudo-anchors"
        )
    return v


@dataclass(frozen=True)
class NIW:
    """Normal–inverse-Wishart parameters (float64): ``Σ ~ IW(ν, Ψ)``, ``μ | Σ ~ N(μ, Σ/κ)``.

    Parameters
    ----------
    mu : numpy.ndarray, shape [d]
        The mean.
    kappa : float
        κ > 0.
    nu : float
        ν > d − 1.
    psi : numpy.ndarray, shape [d, d]
        Ψ, positive definite.

    Examples
    --------
    >>> from anchordiv.adaptation.families import NIW
    >>> prior = NIW.from_scale(np.zeros(3), np.eye(3), 2.0, 6.0)   # E[Σ] = I
    >>> post = prior.update(np.eye(3)[:2])
    >>> post.kappa, post.nu
    (4.0, 8.0)
    """

    mu: np.ndarray
    kappa: float
    nu: float
    psi: np.ndarray

    @classmethod
    def from_scale(cls, mu0, cov, kappa0: float, nu0: float) -> "NIW":
        """The prior with ``E[Σ] = cov``: ``Ψ₀ = (ν₀ − d − 1)·cov``."""
        d = cov.shape[0]
        return cls(
            np.asarray(mu0, np.float64),
            positive("kappa0", kappa0),
            check_nu0(nu0, d),
            (nu0 - d - 1) * np.asarray(cov, np.float64),
        )

    @property
    def dim(self) -> int:
        return int(self.mu.shape[0])

    def update_stats(self, n: float, tbar: np.ndarray, s: np.ndarray) -> "NIW":
        """Conjugate update from (weighted) count n, mean ``t̄ [d]`` and scatter ``S [d, d]``."""
        kn = self.kappa + n
        delta = tbar - self.mu
        psi = self.psi + s + (self.kappa * n / kn) * np.outer(delta, delta)
        return NIW((self.kappa * self.mu + n * tbar) / kn, kn, self.nu + n, 0.5 * (psi + psi.T))

    def update(self, targets) -> "NIW":
        """Conjugate posterior given ``targets [n, d]``."""
        return self.update_stats(*scatter(targets))

    def power_scaled(self, alpha: float) -> "NIW":
        """This NIW density raised to the power ``alpha`` and renormalised: again NIW, with
        ``κ → ακ``, ``Ψ → αΨ``, ``ν + d + 2 → α(ν + d + 2)``, μ unchanged (MATH.md,
        "Power-scaling prior sensitivity").  An α that leaves it improper (ν' ≤ d − 1) is
        refused with the smallest α that keeps it proper."""
        a, d = positive("alpha", alpha), self.dim
        if a == 1.0:
            return self
        nu = a * (self.nu + d + 2) - d - 2
        if nu <= d - 1:
            raise AnchorDivError(
                f"alpha: {alpha:g} makes the power-scaled inverse-Wishart prior improper: "
                f"ν' = α(ν + d + 2) − d − 2 = {nu:.4g} ≤ d − 1 = {d - 1} (ν = {self.nu:.4g}); "
                f"it is proper for α > {(2 * d + 1) / (self.nu + d + 2):.4g}"
            )
        return NIW(self.mu, a * self.kappa, nu, a * self.psi)

    def mean(self) -> dict[str, np.ndarray]:
        """Posterior mean ``{"mu": μₙ, "Sigma": Ψₙ/(νₙ − d − 1)}``."""
        return {"mu": self.mu, "Sigma": self.psi / (self.nu - self.dim - 1)}

    def mode(self) -> dict[str, np.ndarray]:
        """Joint mode ``{"mu": μₙ, "Sigma": Ψₙ/(νₙ + d + 2)}``."""
        return {"mu": self.mu, "Sigma": self.psi / (self.nu + self.dim + 2)}

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` exact draws ``{"mu": [n, d], "Sigma": [n, d, d]}`` (Bartlett decomposition)."""
        d = self.dim
        chol = np.linalg.cholesky(self.psi)
        sig = np.empty((n, d, d))
        mus = np.empty((n, d))
        for i in range(n):
            a = np.tril(rng.normal(size=(d, d)), -1)
            a[np.diag_indices(d)] = np.sqrt(rng.chisquare(self.nu - np.arange(d)))
            f = np.linalg.solve(a, chol.T).T  # L A^{-T} (a is lower triangular)
            sig[i] = f @ f.T
            mus[i] = self.mu + f @ rng.normal(size=d) / np.sqrt(self.kappa)
        return {"mu": mus, "Sigma": sig}

    def log_marginal(
        self, targets, *, post: "NIW | None" = None, logdet_psi: float | None = None
    ) -> float:
        """log p(targets) under this NIW prior (closed form); ``post`` (its update on
        ``targets``) and ``logdet_psi`` (log|Ψ|) where the caller has them already."""
        n, d = np.shape(targets)
        post = self.update(targets) if post is None else post
        logdet = lambda m: np.linalg.slogdet(m)[1]  # noqa: E731
        return float(
            -0.5 * n * d * np.log(np.pi)
            + scipy.special.multigammaln(post.nu / 2, d)
            - scipy.special.multigammaln(self.nu / 2, d)
            + 0.5 * self.nu * (logdet(self.psi) if logdet_psi is None else logdet_psi)
            - 0.5 * post.nu * logdet(post.psi)
            + 0.5 * d * (np.log(self.kappa) - np.log(post.kappa))
        )

    def model_kwargs(self) -> dict:
        """Keyword arguments of :func:`niw_model` for this prior."""
        return {"mu0": self.mu, "kappa0": self.kappa, "nu0": self.nu, "psi0": self.psi}


def weak_covariance(strength: float) -> dict:
    """``{"target_only": why}`` for a prior covariance worth ``strength`` < 1 pseudo-anchor (the
    fit is then target-only in the directions the targets leave open, :mod:`..sanity`), else
    ``{}``."""
    if strength >= 1.0:
        return {}
    return {"target_only": f"the prior's covariance carries {strength:.3g} pseudo-anchors"}


class NIWLikelihood(GaussianLikelihood):
    """:class:`GaussianLikelihood` under the NIW prior of :func:`niw_model`, all in closed form."""

    def log_joint(self, targets, draws):
        d = {k: np.asarray(v, np.float64) for k, v in draws.items()}
        return log_niw(d["mu"], d["Sigma"], self.kwargs) + self.log_density(d, targets).sum(-1)

    def exact_prior(self):
        kw = self.kwargs
        return NIW(
            np.asarray(kw["mu0"]), float(kw["kappa0"]), float(kw["nu0"]), np.asarray(kw["psi0"])
        )


#: Rules that choose ``kappa0``/``nu0 = "auto"`` (:meth:`NIWPrior.from_anchors`).
STRENGTH_RULES = ("evidence", "held-out")


# ---- what the checks know of the family (:class:`~anchordiv.adaptation.hooks.Hooks`) ----------
def gaussian_quantities(s: dict, ref: dict) -> dict[str, np.ndarray]:
    """Mean cosine and norm, covariance trace, leading eigenvalues and the angle of the leading
    axis to the point summary's (degrees); ``mu`` and ``Sigma`` themselves at d ≤ 8."""
    w, v = np.linalg.eigh(s["Sigma"])
    _, vr = np.linalg.eigh(ref["Sigma"])
    lead = np.abs((v[..., :, -1] * vr[:, -1]).sum(-1))
    out = {
        "mean_cosine": cosine(s["mu"], ref["mu"]),
        "mean_norm": np.linalg.norm(s["mu"], axis=-1),
        "cov_trace": np.trace(s["Sigma"], axis1=-2, axis2=-1),
        "cov_eigenvalues": w[..., ::-1][..., :N_EIGEN],
        "leading_axis_angle": np.degrees(np.arccos(np.clip(lead, 0.0, 1.0))),
    }
    if s["mu"].shape[-1] <= SMALL_D:
        out.update(mu=s["mu"], Sigma=s["Sigma"])
    return out


def gaussian_sbc_quantities(d: int, rng) -> dict:
    """tr Σ, vᵀΣv and μ·v for a fixed unit v."""
    v = unit_vector(d, rng)
    return {
        "tr Σ": lambda p: np.trace(p["Sigma"], axis1=-2, axis2=-1),
        "vᵀΣv": lambda p: np.einsum("i,sij,j->s", v, p["Sigma"], v),
        "μ·v": lambda p: p["mu"] @ v,
    }


def gaussian_prior_scale(kwargs: dict, mean: dict) -> np.ndarray:
    """The prior's scale ``psi0`` (else the posterior-mean covariance) ``[d, d]``."""
    return np.asarray(kwargs["psi0"] if "psi0" in kwargs else mean["Sigma"], np.float64)


#: the dims of :func:`gaussian_quantities`
GAUSSIAN_DIMS = {"cov_eigenvalues": ["eigenvalue"], "mu": ["dim"], "Sigma": ["dim", "dim_"]}


@family("gaussian")
class NIWPrior(Family):
    """Normal–inverse-Wishart prior of the gaussian kind.

    ``Σ ~ IW(ν₀, (ν₀ − d − 1) C)``, ``μ | Σ ~ N(μ₀, Σ/κ₀)``; strengths in pseudo-anchors: κ₀
    for the mean, ν₀ − d − 1 for the covariance.  Build with :meth:`from_anchors`.

    Parameters
    ----------
    mu0 : numpy.ndarray, shape [d]
        μ₀, the broad mean.
    cov : numpy.ndarray, shape [d, d]
        C = E[Σ], the broad (ridged) covariance.
    kappa0 : float
        κ₀ > 0.
    nu0 : float
        ν₀ > d + 1.
    prior : {"broad", "isotropic"}, default "broad"
        Which covariance C is (the isotropic control has the same trace).
    chosen_by : str, default "user"
        "user", "held-out recipe (…)" or "empirical Bayes (…)".
    at_bound : str, default ""
        The strengths that ended on the search bound.
    origin : str, default ""
        Where the prior came from (JSON: a saved model's path and card).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.NIWPrior.from_anchors(broad, kappa0=5.0, nu0=10.0)
    >>> prior.dim, prior.kappa0, prior.chosen_by
    (4, 5.0, 'user')
    >>> auto = ad.NIWPrior.from_anchors(broad, broad[:4])       # strengths from the targets
    >>> auto.chosen_by.split(" (")[0]
    'held-out recipe'
    """

    exact_types = (NIW,)
    axes = {"mu0": "d", "cov": "dd"}

    mu0: np.ndarray
    cov: np.ndarray
    kappa0: float
    nu0: float
    prior: str = "broad"
    chosen_by: str = "user"
    at_bound: str = ""
    origin: str = ""

    sites = ("mu", "Sigma")
    covariance_site = "Sigma"
    hooks = Hooks(
        quantities=gaussian_quantities,
        dims=GAUSSIAN_DIMS,
        sbc_options=lambda d: {"kappa0": 2.0, "nu0": d + 4.0},
        sbc_quantities=gaussian_sbc_quantities,
        draw_size=lambda params: int(np.size(params.psi)),
        prior_scale=gaussian_prior_scale,
        student_t_predictive=True,
        svi_coverage={"tr Σ": 0.915, "vᵀΣv": 0.895, "μ·v": 0.895},
    )

    def __post_init__(self):
        """Concrete hyperparameters are checked (a pytree rebuilt from tracers is not):
        ``cov`` must be a finite symmetric positive-definite ``[d, d]`` (``cov = -I`` gave
        Σ = 0 and all-zero divergences), ``mu0`` finite, ``kappa0 > 0``, ``nu0 > d + 1``."""
        if not isinstance(self.cov, (np.ndarray, list, tuple)):
            return
        mu0 = np.asarray(self.mu0, np.float64)
        if mu0.ndim != 1 or not np.isfinite(mu0).all():
            raise AnchorDivError(
                f"mu0: expected a finite vector [d], got shape "
                f"{list(mu0.shape)}" + ("" if mu0.ndim != 1 else " with NaN or inf entries")
            )
        if np.shape(self.cov) != (len(mu0), len(mu0)):
            check_covariance("cov", self.cov, dim=len(mu0))  # names the shape
        derived(cov_cholesky, self.cov)  # once per cached broad covariance
        if isinstance(self.kappa0, (int, float, np.number)):
            positive("kappa0", self.kappa0)
        if isinstance(self.nu0, (int, float, np.number)):
            check_nu0(self.nu0, len(mu0))

    static_fields = ("prior", "origin", "chosen_by", "at_bound")
    model = staticmethod(niw_model)
    likelihood_type = NIWLikelihood
    descriptions = {
        "exact_map": "closed-form joint mode of (μ, Σ) of the full-d model",
        "joint_mode": "joint mode of (μ, Σ) of the full-d model",
    }

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        kappa0: float | Literal["auto"] = "auto",
        nu0: float | Literal["auto"] = "auto",
        reg: float = 1e-3,
        prior: str = "broad",
        strengths: Literal["held-out", "evidence"] = "held-out",
    ) -> "NIWPrior":
        """Prior centred on the broad mean and (ridged) covariance.

        A strength ``"auto"`` is chosen from ``targets`` by the rule ``strengths``:

        * ``"held-out"`` (default): the recipe of
          :func:`anchordiv.adaptation.recipe.gaussian_strengths` — one strength s (κ₀ = s,
          ν₀ = d + 1 + s) by exact leave-one-out predictive density, capped by the targets'
          held-out novelty so that the posterior approaches the target-only fit as the targets
          span their own subspace.  Computed from the broad covariance for
          ``prior="isotropic"`` too, so a control keeps the same strengths.  It chooses both
          strengths together: give both numbers, or leave both ``"auto"``;
        * ``"evidence"``: empirical Bayes, the maximiser of the closed-form marginal likelihood
          with a weak hyperprior (:func:`anchordiv.adaptation.families.gaussian.empirical_bayes_fit`);
          one strength may be fixed and the other chosen.

        Two numbers are used as given (``chosen_by="user"``) under either rule.

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Target anchors (needed for ``"auto"`` strengths).
        kappa0 : float or "auto", default "auto"
            Prior mean strength, in pseudo-anchors (``"auto"``: chosen by ``strengths``).
        nu0 : float or "auto", default "auto"
            Inverse-Wishart degrees of freedom (> d + 1; ν₀ − d − 1 pseudo-anchors of
            covariance), or ``"auto"``.
        reg : float, default 1e-3
            Relative ridge of the broad covariance.
        prior : {"broad", "isotropic"}, default "broad"
            The broad covariance or the isotropic control.
        strengths : {"held-out", "evidence"}, default "held-out"
            The rule choosing ``"auto"`` strengths: the held-out recipe (exact-LOO density
            capped by the targets' novelty) or empirical Bayes.

        Returns
        -------
        NIWPrior
            The prior.

        Raises
        ------
        AnchorDivError
            An unknown rule, invalid strengths, or ``"auto"`` without targets.
        """
        d = np.shape(broad)[1]
        if strengths not in STRENGTH_RULES:
            raise AnchorDivError(
                f"strengths: one of {', '.join(STRENGTH_RULES)}, got {strengths!r}"
            )
        mu0, cov = broad_moments(
            broad, reg=positive("reg", reg, allow_zero=True), prior=check_prior_mode(prior)
        )
        auto = {
            k: isinstance(v, str) and v == "auto" for k, v in (("kappa0", kappa0), ("nu0", nu0))
        }
        k0 = None if auto["kappa0"] else positive("kappa0", kappa0)
        n0 = None if auto["nu0"] else check_nu0(nu0, d)
        if k0 is not None and n0 is not None:
            return cls(mu0, cov, k0, n0, prior)
        if targets is None:
            raise AnchorDivError(
                f"targets: kappa0/nu0 = 'auto' chooses the strengths on the "
                f"target anchors (strengths={strengths!r}); pass targets= or "
                f"give both strengths"
            )
        if strengths == "held-out":
            return cls.held_out(broad, targets, mu0, cov, auto, reg=reg, prior=prior)
        eb = empirical_bayes_fit(mu0, cov, targets, kappa0=k0, nu0=n0)
        chosen = "empirical Bayes (" + ", ".join(k for k, v in auto.items() if v) + ")"
        return cls(mu0, cov, eb["kappa0"], eb["nu0"], prior, chosen, ", ".join(eb["at_bound"]))

    @classmethod
    def held_out(cls, broad, targets, mu0, cov, auto: dict, *, reg, prior) -> "NIWPrior":
        """``from_anchors(..., strengths="held-out")``: both strengths from the recipe."""
        if not all(auto.values()):
            raise AnchorDivError(
                "strengths='held-out' chooses kappa0 and nu0 together; leave "
                "both 'auto', give both numbers, or pass "
                "strengths='evidence' to choose the other by empirical Bayes"
            )
        moments = (mu0, cov) if prior == "broad" else None  # the control: the broad's
        g = recipe.gaussian_strengths(broad, targets, reg=reg, moments=moments)
        return cls(
            mu0, cov, g["kappa0"], g["nu0"], prior, f"held-out recipe ({g['chosen_by']})", ""
        )

    @property
    def dim(self) -> int:
        return int(np.shape(self.mu0)[0])

    def niw(self) -> NIW:
        return NIW.from_scale(self.mu0, self.cov, self.kappa0, self.nu0)

    def isotropic(self) -> "NIWPrior":
        return dataclasses.replace(
            self, cov=isotropic_like(np.asarray(self.cov)), prior="isotropic"
        )

    def prior_kwargs(self) -> dict:
        return self.niw().model_kwargs()

    def log_marginal(self, targets) -> float:
        return self.niw().log_marginal(np.asarray(targets, np.float64))

    def chosen_on_targets(self) -> bool:
        """Whether ``kappa0``/``nu0`` were chosen on the targets (``chosen_by`` is not
        ``"user"``: the held-out recipe or empirical Bayes)."""
        return self.chosen_by.startswith(("empirical", "held-out"))

    def model_inputs(self, targets):
        info = {
            "kappa0": float(self.kappa0),
            "nu0": float(self.nu0),
            "mean_pseudo_anchors": float(self.kappa0),
            "covariance_pseudo_anchors": float(self.nu0) - self.dim - 1,
            "chosen_by": self.chosen_by,
            "at_bound": self.at_bound,
            **weak_covariance(float(self.nu0) - self.dim - 1),
        }
        return self.prior_kwargs(), info, {}

    def exact(self, targets):
        kwargs, info, fixed = self.model_inputs(targets)
        p = self.niw()
        post = p.update(targets)
        logdet_psi = self.dim * np.log(float(self.nu0) - self.dim - 1) + self.cov_logdet()
        info["log_marginal_likelihood"] = p.log_marginal(targets, post=post, logdet_psi=logdet_psi)
        return post, info, fixed

    def power_scaled_posterior(self, alpha: float, targets) -> NIW:
        """The exact posterior under this prior raised to the power ``alpha``: the power-scaled
        NIW (:meth:`NIW.power_scaled`) updated by the conjugate update."""
        return self.niw().power_scaled(alpha).update(targets)

    def cov_logdet(self) -> float:
        """log|C| of the prior covariance, from its Cholesky factor (computed once per cached
        broad covariance, :func:`cov_cholesky`)."""
        return 2.0 * float(np.log(np.diagonal(derived(cov_cholesky, self.cov))).sum())

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        return gaussian_model(p, tau, dtype)

    @classmethod
    def project(cls, kwargs, u):
        return project_niw(kwargs, u, "mu0")

    @classmethod
    def lift(cls, ps, completion, basis, r, *, which="mean", rng=None):
        return lift_gaussian(ps, completion, basis, r, which, rng)

    @classmethod
    def project_mean(cls, mean, u):
        return {"mu": mean["mu"] @ u, "Sigma": u.T @ mean["Sigma"] @ u}

    @classmethod
    def subspace_mode(cls, point, completion, r):
        from ..points import subspace_joint_mode

        return subspace_joint_mode(point, completion, r)


__all__ = [
    "GAUSSIAN_DIMS",
    "MarginalCurve",
    "gaussian_prior_scale",
    "gaussian_quantities",
    "gaussian_sbc_quantities",
    "cov_cholesky",
    "gaussian_model",
    "lift_gaussian",
    "GaussianLikelihood",
    "NIWLikelihood",
    "BartlettGaussian",
    "Conditional",
    "EB_BOUNDS",
    "NIW",
    "NIWPrior",
    "STRENGTH_RULES",
    "check_nu0",
    "cov_factor",
    "weak_covariance",
    "empirical_bayes",
    "empirical_bayes_fit",
    "gaussian_logpdf",
    "gaussian_predictive",
    "log_iw",
    "log_multigamma",
    "log_niw",
    "niw_bartlett",
    "niw_model",
    "project_niw",
]
