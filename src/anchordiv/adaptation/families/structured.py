"""Structured Gaussian priors as objects: the factor-analysis and LKJ NumPyro models of
:mod:`anchordiv.adaptation.priors.structured` with hyperparameters built from the broad anchors.  They have
no closed-form update: run them with ``ad.NUTS``/``ad.SVI``.

    prior = ad.StructuredPrior.factor(broad [N, d], rank=16)      # or .lkj(broad)
    post = ad.infer(prior, targets, ad.SVI(guide="lowrank", subspace=16), broad=broad)

A structured prior is a Gaussian-family prior (kind ``gaussian``, sites ``mu``, ``Sigma``)
whose model is the structured one; its ``base`` NIW prior (fixed strengths, the same broad
moments) supplies what the family needs around it: the exact geometry outside the subspace under
``subspace=`` and the reference quantities.  Saved posteriors keep that base prior (the model is
a Python function).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import numpy as np

from ...errors import AnchorDivError
from ..priors import structured
from ..family import as_rng
from ..inference import Exact
from .gaussian import NIWPrior


@dataclasses.dataclass(frozen=True, eq=False)
class StructuredPrior(NIWPrior):
    """A user's structured NumPyro prior on the gaussian sites (``mu``, ``Sigma``); NUTS or SVI.

    Made by :meth:`factor` (factor analysis) or :meth:`lkj` (LKJ correlations); the exact update
    is the base NIW prior's.

    Parameters
    ----------
    mu0, cov, kappa0, nu0, prior, chosen_by, at_bound, origin
        The :class:`NIWPrior` fields of the base prior.
    structure : str, default ""
        The structure's name ("factor", "lkj", ...).
    user_model : callable, optional
        The NumPyro model.
    builder : callable, optional
        ``broad [N, d'] -> model_kwargs``, called on the projected broad anchors under
        ``subspace=``.
    model_kwargs : dict
        The builder's output at full d.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> prior = ad.StructuredPrior.factor(broad, rank=2)
    >>> prior.structure, prior.dim
    ('factor', 4)
    """

    structure: str = ""
    user_model: Callable | None = None
    builder: Callable | None = None
    model_kwargs: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def build(
        cls, structure: str, model, builder, broad, *, kappa0: float, nu0: float | None
    ) -> "StructuredPrior":
        broad = np.asarray(broad, np.float64)
        d = broad.shape[1]
        base = NIWPrior.from_anchors(
            broad, kappa0=kappa0, nu0=d + 1.0 + kappa0 if nu0 is None else nu0
        )
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(NIWPrior)}
        return cls(
            **fields,
            structure=structure,
            user_model=model,
            builder=builder,
            model_kwargs=builder(broad),
        )

    @classmethod
    def factor(
        cls,
        broad,
        *,
        rank: int = 16,
        prior_anchors: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
    ) -> "StructuredPrior":
        """Factor analysis ``Σ = W Wᵀ + diag(ψ)`` centred on the broad PPCA fit at ``rank``
        (:func:`anchordiv.adaptation.priors.structured.factor_model`)."""
        return cls.build(
            "factor",
            structured.factor_model,
            structured.factor_prior(rank, prior_anchors=prior_anchors, kappa0=kappa0),
            broad,
            kappa0=kappa0,
            nu0=nu0,
        )

    @classmethod
    def lkj(
        cls,
        broad,
        *,
        concentration: float = 2.0,
        prior_anchors: float = 10.0,
        kappa0: float = 10.0,
        nu0: float | None = None,
    ) -> "StructuredPrior":
        """LKJ correlations with log-normal scales centred on the broad standard deviations
        (:func:`anchordiv.adaptation.priors.structured.lkj_model`)."""
        return cls.build(
            "lkj",
            structured.lkj_model,
            structured.lkj_prior(
                concentration=concentration, prior_anchors=prior_anchors, kappa0=kappa0
            ),
            broad,
            kappa0=kappa0,
            nu0=nu0,
        )

    def base(self) -> NIWPrior:
        return NIWPrior(**{f.name: getattr(self, f.name) for f in dataclasses.fields(NIWPrior)})

    def prepare(self, method, broad):
        if isinstance(method, Exact):
            raise AnchorDivError(
                f"method: the {self.structure} prior has no closed-form update; "
                f"use ad.NUTS(...) or ad.SVI(...)"
            )
        if method.model is not None:
            raise AnchorDivError(f"model: the {self.structure} prior brings its own model")
        kwargs = self.builder if broad is not None else self.model_kwargs
        return self.base(), dataclasses.replace(method, model=self.user_model, model_kwargs=kwargs)

    def isotropic(self):
        raise AnchorDivError(
            f"isotropic: the {self.structure} prior has no isotropic control "
            f"(use its base prior: prior.base().isotropic())"
        )

    def sample(self, key, n: int) -> dict[str, np.ndarray]:
        """``n`` prior draws of every site of the model ``{site: [n, ...]}``."""
        from numpyro.infer import Predictive

        rng = as_rng(key)
        targets = np.zeros((1, self.dim))
        # parallel=True: one vmap (the default lax.map compiled a new scan on every call)
        out = Predictive(
            self.user_model, num_samples=int(n), exclude_deterministic=False, parallel=True
        )(jax.random.PRNGKey(int(rng.integers(2**31))), targets, **self.model_kwargs)
        return {k: np.asarray(v, np.float64) for k, v in out.items() if k != "targets"}

    def prior_predictive(self, key, n_draws: int, n_anchors: int) -> np.ndarray:
        rng = as_rng(key)
        return NIWPrior.predictive(self.sample(rng, n_draws), n_anchors, {}, rng)

    def to_arrays(self):
        """The base prior's arrays (the model is a Python function: not saved)."""
        return self.base().to_arrays()


jax.tree_util.register_dataclass(
    StructuredPrior,
    data_fields=["mu0", "cov", "kappa0", "nu0", "model_kwargs"],
    meta_fields=[
        f.name
        for f in dataclasses.fields(StructuredPrior)
        if f.name not in ("mu0", "cov", "kappa0", "nu0", "model_kwargs")
    ],
)

__all__ = ["StructuredPrior"]
