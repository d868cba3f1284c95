"""The Gaussian family: Normal–Inverse-Wishart prior of the Gaussian anchor model (MATH.md, D.2;
the math and the explicit model live in :mod:`anchordiv.adaptation.priors.niw`).

    prior = ad.NIWPrior.from_anchors(broad [N, d], targets=targets)   # κ₀, ν₀ by the recipe
    prior = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=d + 6.0)  # or fixed strengths
    prior.chosen_by, prior.kappa0, prior.nu0                          # what was chosen, and how
    post = prior.update(targets)                                      # NIW(μₙ, κₙ, νₙ, Ψₙ)

Sites: ``mu [d]``, ``Sigma [d, d]`` (PD).  Likelihood ``t_i ~ N(μ, Σ)``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from ...anchors import Gaussian
from ...anchors.base import as_tau, jax_dtype, psd_factor
from ...errors import AnchorDivError, check_covariance, positive
from ..priors import niw
from .. import recipe
from ..density import gaussian_logpdf, log_niw
from ..family import Family, check_prior_mode, isotropic_like
from ..registry import family
from ..quantities import N_EIGEN, SMALL_D, cosine


def cov_factor(cov: np.ndarray) -> np.ndarray:
    """A factor F with F Fᵀ = Σ: Cholesky (O(d³/3), fast at d = 768) with an eigen fallback.

    Parameters
    ----------
    cov : numpy.ndarray, shape [d, d]
        A symmetric positive semi-definite Σ.

    Returns
    -------
    numpy.ndarray, shape [d, d]
        F.

    Examples
    --------
    >>> from anchordiv.adaptation import cov_factor
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> F = cov_factor(S)
    >>> bool(np.allclose(F @ F.T, S))
    True
    """
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return psd_factor(cov)


def covariance_weakness(info: dict, d: int) -> str | None:
    """Target-only when the prior's covariance carries < 1 pseudo-anchor (``info``: the exact
    update's; NIW kinds)."""
    strength = info.get("covariance_pseudo_anchors", float(info.get("nu0", d + 2)) - d - 1)
    return (
        f"the prior's covariance carries {strength:.3g} pseudo-anchors" if strength < 1.0 else None
    )


def gaussian_predictive(mu, cov, n, rng) -> np.ndarray:
    """``n`` draws per ``(mu [S, d], cov [S, d, d])`` ``[S, n, d]``."""
    z = rng.normal(size=(len(mu), n, mu.shape[-1]))
    return mu[:, None, :] + np.einsum("sij,snj->sni", np.linalg.cholesky(cov), z)


#: Rules that choose ``kappa0``/``nu0 = "auto"`` (:meth:`NIWPrior.from_anchors`).
STRENGTH_RULES = ("evidence", "held-out")


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
        check_covariance("cov", self.cov, dim=len(mu0))
        if isinstance(self.kappa0, (int, float, np.number)):
            positive("kappa0", self.kappa0)
        if isinstance(self.nu0, (int, float, np.number)):
            niw.check_nu0(self.nu0, len(mu0))

    cli_options = {
        "kappa0": (
            "number|auto",
            "prior mean strength (pseudo-anchors); default 'auto' (chosen by --strengths)",
        ),
        "nu0": ("number|auto", "IW degrees of freedom (> d + 1) or 'auto'"),
        "strengths": (
            STRENGTH_RULES,
            "rule choosing 'auto' strengths: held-out (default, the "
            "recipe: exact-LOO density capped by the targets' "
            "novelty) or evidence (empirical Bayes, the default "
            "before issue 17)",
        ),
        "reg": ("number", "relative ridge of the broad fit"),
    }
    posterior_types = (niw.NIW,)
    #: its model's posterior predictive is the NIW Student-t (exact LOO in the checks layer)
    student_t_predictive: ClassVar[bool] = True
    static_fields = ("prior", "origin", "chosen_by", "at_bound")
    dims = {"cov_eigenvalues": ["eigenvalue"], "mu": ["dim"], "Sigma": ["dim", "dim_"]}
    model = staticmethod(niw.niw_model)

    @classmethod
    def from_anchors(
        cls,
        broad,
        targets=None,
        *,
        kappa0="auto",
        nu0="auto",
        reg: float = 1e-3,
        prior: str = "broad",
        strengths: str = "held-out",
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
          with a weak hyperprior (:func:`anchordiv.adaptation.priors.niw.empirical_bayes_fit`);
          one strength may be fixed and the other chosen.

        Two numbers are used as given (``chosen_by="user"``) under either rule.

        Parameters
        ----------
        broad : array_like, shape [N, d]
            Broad anchors.
        targets : array_like, shape [n, d], optional
            Target anchors (needed for ``"auto"`` strengths).
        kappa0, nu0 : float or "auto", default "auto"
            The strengths (ν₀ > d + 1).
        reg : float, default 1e-3
            Relative ridge of the broad covariance.
        prior : {"broad", "isotropic"}, default "broad"
            The broad covariance or the isotropic control.
        strengths : {"held-out", "evidence"}, default "held-out"
            The rule for ``"auto"`` strengths.

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
        mu0, cov = niw.prior_scale(
            broad, reg=positive("reg", reg, allow_zero=True), prior=check_prior_mode(prior)
        )
        auto = {
            k: isinstance(v, str) and v == "auto" for k, v in (("kappa0", kappa0), ("nu0", nu0))
        }
        k0 = None if auto["kappa0"] else positive("kappa0", kappa0)
        n0 = None if auto["nu0"] else niw.check_nu0(nu0, d)
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
        eb = niw.empirical_bayes_fit(mu0, cov, targets, kappa0=k0, nu0=n0)
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

    def niw(self) -> niw.NIW:
        return niw.NIW.from_scale(self.mu0, self.cov, self.kappa0, self.nu0)

    def isotropic(self) -> "NIWPrior":
        return dataclasses.replace(
            self, cov=isotropic_like(np.asarray(self.cov)), prior="isotropic"
        )

    def prior_kwargs(self) -> dict:
        return self.niw().model_kwargs()

    def log_marginal(self, targets) -> float:
        return self.niw().log_marginal(np.asarray(targets, np.float64))

    def model_inputs(self, targets):
        info = {
            "kappa0": float(self.kappa0),
            "nu0": float(self.nu0),
            "mean_pseudo_anchors": float(self.kappa0),
            "covariance_pseudo_anchors": float(self.nu0) - self.dim - 1,
            "chosen_by": self.chosen_by,
            "at_bound": self.at_bound,
        }
        return self.prior_kwargs(), info, {}

    def exact(self, targets):
        kwargs, info, fixed = self.model_inputs(targets)
        p = self.niw()
        info["log_marginal_likelihood"] = p.log_marginal(targets)
        return p.update(targets), info, fixed

    # ---- per kind -------------------------------------------------------------------------
    @classmethod
    def to_model(cls, p, tau, dtype, fixed):
        dt = jax_dtype(dtype)  # float64 is float32 unless JAX runs in float64
        return Gaussian(
            jnp.asarray(p["mu"], dt), jnp.asarray(cov_factor(p["Sigma"]), dt), as_tau(tau, dt)
        )

    @classmethod
    def log_likelihood(cls, draws, targets, fixed):
        return gaussian_logpdf(
            np.asarray(targets, np.float64),
            np.asarray(draws["mu"], np.float64),
            np.asarray(draws["Sigma"], np.float64),
        )

    @classmethod
    def predictive(cls, draws, n, fixed, rng):
        return gaussian_predictive(
            np.asarray(draws["mu"], np.float64), np.asarray(draws["Sigma"], np.float64), n, rng
        )

    @classmethod
    def log_joint(cls, targets, kwargs, draws):
        d = {k: np.asarray(v, np.float64) for k, v in draws.items()}
        return log_niw(d["mu"], d["Sigma"], kwargs) + cls.log_likelihood(d, targets, {}).sum(-1)

    @classmethod
    def prior_posterior(cls, kwargs):
        return niw.NIW(
            np.asarray(kwargs["mu0"]),
            float(kwargs["kappa0"]),
            float(kwargs["nu0"]),
            np.asarray(kwargs["psi0"]),
        )

    @classmethod
    def project(cls, kwargs, u):
        from ..subspace import project_niw

        return project_niw(kwargs, u, "mu0")

    @classmethod
    def lift(cls, ps, completion, basis, r, *, which="mean", rng=None):
        from ..subspace import Conditional

        cond = Conditional(completion, basis, r)
        return [
            cond.lift(
                np.asarray(p["mu"], np.float64), np.asarray(p["Sigma"], np.float64), which, rng
            )
            for p in ps
        ]

    @classmethod
    def quantities(cls, s, ref):
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

    @classmethod
    def sbc_quantities(cls, d, rng):
        v = rng.normal(size=d)
        v /= np.linalg.norm(v)
        rng.normal(size=(d, d))  # (kept: the stream the quantities were drawn from)
        return {
            "tr Σ": lambda p: np.trace(p["Sigma"], axis1=-2, axis2=-1),
            "vᵀΣv": lambda p: np.einsum("i,sij,j->s", v, p["Sigma"], v),
            "μ·v": lambda p: p["mu"] @ v,
        }

    @classmethod
    def site_shapes(cls, d, shapes):
        return {"mu": (d,), "Sigma": (d, d)}

    @classmethod
    def draw_size(cls, params):
        return int(np.size(params.psi))

    @classmethod
    def positive_definite_sites(cls):
        return ("Sigma",)

    @classmethod
    def project_mean(cls, mean, u):
        return {"mu": mean["mu"] @ u, "Sigma": u.T @ mean["Sigma"] @ u}

    @classmethod
    def subspace_mode(cls, point, completion, r):
        from ..points import subspace_joint_mode

        return subspace_joint_mode(point, completion, r)

    @classmethod
    def target_only(cls, info, d):
        return covariance_weakness(info, d)

    @classmethod
    def prior_scale(cls, kwargs, mean):
        return np.asarray(kwargs["psi0"] if "psi0" in kwargs else mean["Sigma"], np.float64)

    @classmethod
    def sbc_options(cls, d):
        return {"kappa0": 2.0, "nu0": d + 4.0}


__all__ = ["NIWPrior", "cov_factor", "covariance_weakness", "gaussian_predictive"]
