"""Model criticism: compare candidate priors by PSIS-LOO of the target anchors (Vehtari, Gelman
& Gabry 2017; MATH.md round 2).

    result = ad.compare_priors({"broad": broad,                       # broad anchors [N, d]
                                "isotropic": {"broad": broad, "prior": "isotropic"},
                                "target-only": {"broad": broad, "kappa0": 1e-6,
                                                "nu0": d + 1 + 1e-6}},
                               targets, kind="gaussian", tau=20.0)
    result.table          # az.compare: elpd_loo, p_loo, elpd_diff, weight, se, dse, warning
    result.pareto_k       # {name: Pareto k per target anchor}; k > 0.7: LOO unreliable there
    result.plot("compare.png")

Each candidate is broad anchors ``[N, d]``, a dict of :func:`anchordiv.adapt` options with the
broad anchors under ``"broad"`` (``prior="isotropic"``, fixed strengths, ``model=`` …), or an
already adapted :class:`~anchordiv.adaptation.Posterior` (adapted on the same targets).  The Pareto-k
diagnostics are part of the result and of the plot, never hidden: anchors with k > 0.7 are
counted in :attr:`PriorComparison.high_k` and the table's ``warning`` column is set.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import AnchorDivError, as_matrix
from .uncertainty import inference_data

#: Pareto k above which the PSIS-LOO estimate of an anchor is unreliable
K_THRESHOLD = 0.7


@dataclasses.dataclass
class PriorComparison:
    """``table`` (az.compare DataFrame), ``loo`` {name: ELPDData with pointwise values},
    ``pareto_k`` {name: [n]}, ``idata`` {name: InferenceData}."""

    table: object
    loo: dict
    pareto_k: dict
    idata: dict

    def __repr__(self) -> str:
        rows = [f"  {n}: elpd_loo {r['elpd_loo']:.1f}, weight {r['weight']:.2f}, "
                f"{self.high_k[n]} of {len(self.pareto_k[n])} anchors with Pareto k > 0.7"
                for n, r in self.table.iterrows()]
        return "\n".join([f"PriorComparison({len(self.loo)} priors, PSIS-LOO)", *rows])

    @property
    def high_k(self) -> dict[str, int]:
        """Number of target anchors with Pareto k > 0.7 per candidate."""
        return {n: int(np.sum(k > K_THRESHOLD)) for n, k in self.pareto_k.items()}

    def plot(self, path=None):
        """ELPD-LOO comparison (az.plot_compare) beside the Pareto k of every target anchor per
        candidate; saved to ``path`` when given.  Returns the figure."""
        import arviz as az
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.6 * len(self.loo) + 2.2))
        az.plot_compare(self.table, ax=ax1, insample_dev=False)
        ax1.set_title("PSIS-LOO of the target anchors")
        for i, (name, k) in enumerate(self.pareto_k.items()):
            ax2.scatter(np.arange(len(k)), k, s=12, label=f"{name} ({self.high_k[name]} > 0.7)",
                        color=f"C{i}")
        ax2.axhline(K_THRESHOLD, color="r", lw=0.8, ls="--")
        ax2.set_xlabel("target anchor")
        ax2.set_ylabel("Pareto k")
        ax2.legend(fontsize=8)
        # ELPDs of many targets are large numbers and anchors many: few ticks, no overlap
        from matplotlib.ticker import MaxNLocator

        ax1.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax2.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        from ..plots import finish

        return finish(fig, path)


def _posterior(candidate, kind: str, targets: np.ndarray, tau: float, options: dict):
    from ..adaptation import Posterior, adapt

    if isinstance(candidate, Posterior):
        if candidate.kind != kind:
            raise AnchorDivError(f"priors: a {candidate.kind!r} posterior among {kind!r} ones")
        return candidate
    if isinstance(candidate, dict):
        opts = dict(candidate)
        if "broad" not in opts:
            raise AnchorDivError("priors: a dict candidate needs its broad anchors under "
                                 "'broad'")
        broad = opts.pop("broad")
        return adapt(kind, broad, targets, tau=tau, **{**options, **opts})
    return adapt(kind, candidate, targets, tau=tau, **options)


def compare_priors(priors: dict, targets, *, kind: str = "gaussian", tau: float = 100.0,
                   num_draws: int | None = None, seed: int = 0, plot=None,
                   **options) -> PriorComparison:
    """Compare candidate priors (module docstring) by PSIS-LOO of ``targets [n, d]``.

    ``options`` go to every :func:`anchordiv.adapt` call; ``num_draws`` and ``seed`` to
    :func:`anchordiv.checks.uncertainty.inference_data`; ``plot``: a path for :meth:`~PriorComparison.
    plot`.  Candidates share the targets, so their ELPDs are comparable."""
    import warnings

    import arviz as az

    if not isinstance(priors, dict) or len(priors) < 1:
        raise AnchorDivError("priors: a dict of name -> broad anchors / adapt options / "
                             "Posterior, with at least one entry")
    t = as_matrix("targets", targets)
    idata, loo, ks = {}, {}, {}
    for name, candidate in priors.items():
        post = _posterior(candidate, kind, t, tau, options)
        idata[name] = inference_data(post, num_draws=num_draws, seed=seed, targets=t,
                                          prior=False)
        with warnings.catch_warnings():          # high k is reported in the result instead
            warnings.simplefilter("ignore")
            loo[name] = az.loo(idata[name], pointwise=True)
        ks[name] = np.asarray(loo[name].pareto_k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = az.compare(idata, ic="loo") if len(idata) > 1 else None
    result = PriorComparison(table, loo, ks, idata)
    if plot is not None and table is not None:
        result.plot(plot)
    return result


__all__ = ["K_THRESHOLD", "PriorComparison", "compare_priors"]
