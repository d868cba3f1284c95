"""Power-scaling prior sensitivity: how much the prior drives a posterior (Kallioinen, Paananen,
Bürkner & Vehtari 2023; MATH.md, "Power-scaling prior sensitivity").

The prior is raised to a power α near 1: the diagnostic per posterior quantity is the
cumulative Jensen–Shannon distance per unit log₂ α (ArviZ's ``psens``; above :data:`THRESHOLD`
the quantity is prior-sensitive), and the α curve gives each site's posterior mean and the
retrieval of the posterior-mean scorer.  ``method="exact"`` updates the power-scaled conjugate
prior in closed form; ``"psis"`` Pareto-smooths weights ``p(θ_s)^(α − 1)`` on the draws.
Details: ``docs/guides/model-criticism.md``.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import scipy.special

from ..errors import AnchorDivError, check_choice, integer, positive, user_stacklevel
from ..threads import limited_blas
from . import arviz as adz
from .criticism import k_threshold
from .families import checks_of

#: a quantity whose sensitivity exceeds this is prior-sensitive (Kallioinen et al. 2023)
THRESHOLD = 0.05
#: the α curve's default powers (those that leave an exact family's prior improper are left out)
DEFAULT_ALPHAS = (0.8, 0.9, 1.0, 1.1, 1.25)
#: the diagnostic's finite difference: α = 1/(1 + δ) and 1 + δ (ArviZ's default)
DELTA = 0.01
METHODS = ("auto", "exact", "psis")


def cjs_distance(x, weights) -> np.ndarray:
    """The cumulative Jensen–Shannon distance ``[m]`` between the columns of ``x [S, m]`` and the
    same draws weighted by ``weights [S]`` (ArviZ's ``_cjs_dist``; 0 for a constant column)."""
    x = np.asarray(x, np.float64)
    s = len(x)
    order = np.argsort(x, axis=0, kind="stable")
    width = np.diff(np.take_along_axis(x, order, 0), axis=0)
    w = np.asarray(weights, np.float64)[order]
    p = np.linspace(1 / s, 1 - 1 / s, s - 1)[:, None]
    q = np.cumsum(w / w.sum(0), axis=0)[:-1]
    ip, iq = (p * width).sum(0), (q * width).sum(0)

    def log2(v):
        return np.log2(v, out=np.zeros_like(v), where=v > 0)

    mid = log2(0.5 * (p + q))
    pq = (width * p * (log2(p) - mid)).sum(0) + 0.5 / np.log(2) * (iq - ip)
    qp = (width * q * (log2(q) - mid)).sum(0) + 0.5 / np.log(2) * (ip - iq)
    bound = ip + iq
    ok = bound > 0
    out = np.sqrt((np.maximum(pq, 0) + np.maximum(qp, 0)) / np.where(ok, bound, 1.0))
    return np.where(ok, out, 0.0)


def sensitivity_values(x, log_weights: tuple, delta: float) -> np.ndarray:
    """Power-scaling sensitivity ``[m]`` of the columns of ``x`` (ArviZ's ``psens``)."""
    total = 0.0
    for lw in log_weights:
        w = np.exp(lw - lw.max())
        total = total + np.maximum(cjs_distance(x, w), cjs_distance(-np.asarray(x), w))
    return total / (2 * np.log2(1 + delta))


@dataclasses.dataclass
class PriorSensitivity:
    """The result of :func:`prior_sensitivity`.

    Parameters
    ----------
    method : str
        ``"exact"`` (the closed-form power-scaled posterior) or ``"psis"`` (reweighted draws).
    alphas : numpy.ndarray, shape [A]
        The powers of the α curve (1 among them).
    sensitivity : dict of str to numpy.ndarray
        Per quantity of the posterior, the diagnostic of each of its elements (CJS distance per
        unit log₂ α); :meth:`table` gives each quantity's largest.
    site_means : list of dict
        Per α, each site's posterior mean under the power-scaled prior.
    mcse : list of dict or None
        Per α, the Monte-Carlo standard error of each site mean (``"psis"``; None: exact).
    pareto_k : numpy.ndarray or None
        Per α, the Pareto k of the smoothed weights (``"psis"``; None: exact).
    topk_overlap : numpy.ndarray, shape [A, Q], or None
        Per α and query, the fraction of the α = 1 scorer's top-k the power-scaled
        posterior-mean scorer keeps (given queries and a gallery).
    auprc : numpy.ndarray, shape [A, Q], or None
        Per α and query, the scorer's AUPRC (given relevance).
    k : int or None
        The top-k size.
    num_draws : int
        Draws the diagnostic ran on.
    delta : float
        Its finite difference (α = 1/(1 + δ), 1 + δ).
    note : str
        What was left out and why (α values that leave the prior improper).
    threshold : float
        :data:`THRESHOLD`.

    Examples
    --------
    >>> from anchordiv.checks import PriorSensitivity
    >>> res = PriorSensitivity("exact", np.array([0.9, 1.0]), {"x": np.array(0.08)},
    ...                        [{"mu": np.zeros(2)}, {"mu": np.zeros(2)}], None, None,
    ...                        None, None, None, 100, 0.01)
    >>> res.sensitive
    ['x']
    """

    method: str
    alphas: np.ndarray
    sensitivity: dict
    site_means: list
    mcse: list | None
    pareto_k: np.ndarray | None
    topk_overlap: np.ndarray | None
    auprc: np.ndarray | None
    k: int | None
    num_draws: int
    delta: float
    note: str = ""
    threshold: float = THRESHOLD

    @property
    def worst(self) -> dict[str, float]:
        """Each quantity's largest sensitivity over its elements."""
        return {n: float(np.max(v)) for n, v in self.sensitivity.items()}

    @property
    def unreliable(self) -> list[float]:
        """The α whose Pareto k exceeds ArviZ's threshold for :attr:`num_draws` draws
        (:func:`~.criticism.k_threshold`; PSIS only): their means and scorers are not
        trustworthy."""
        if self.pareto_k is None:
            return []
        t = k_threshold(self.num_draws)
        return [float(a) for a, k in zip(self.alphas, self.pareto_k) if not k <= t]

    @property
    def sensitive(self) -> list[str]:
        """The quantities above :attr:`threshold` (prior-sensitive)."""
        return [n for n, v in self.worst.items() if v > self.threshold]

    def table(self):
        """``pandas.DataFrame``, one row per quantity: its largest ``sensitivity``, the element
        ``at`` (an index tuple; ``()`` for a scalar) and the ``diagnosis``."""
        import pandas as pd

        rows = {}
        for name, v in self.sensitivity.items():
            v, s = np.asarray(v), float(np.max(v))
            at = np.unravel_index(int(np.argmax(v)), v.shape) if v.ndim else ()
            diagnosis = "prior-sensitive" if s > self.threshold else "-"
            rows[name] = {"sensitivity": s, "at": str(tuple(map(int, at))), "diagnosis": diagnosis}
        return pd.DataFrame.from_dict(rows, orient="index")

    def curve(self):
        """``pandas.DataFrame``, one row per α: each site's mean shift from α = 1 relative to
        its size (``shift_<site>``: ‖m_α − m₁‖ / ‖m₁‖), the Pareto k (``"psis"``) and the mean
        top-k overlap and AUPRC over queries (given them)."""
        import pandas as pd

        one = self.site_means[self.reference]
        rows = []
        for i, a in enumerate(self.alphas):
            row = {"alpha": float(a)}
            for site, m in self.site_means[i].items():
                shift = np.linalg.norm(m - one[site]) / max(np.linalg.norm(one[site]), 1e-300)
                row[f"shift_{site}"] = float(shift)
            if self.pareto_k is not None:
                row["pareto_k"] = float(self.pareto_k[i])
            if self.topk_overlap is not None:
                row["topk_overlap"] = float(self.topk_overlap[i].mean())
            if self.auprc is not None:
                row["auprc"] = _mean_auprc(self.auprc[i])
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def reference(self) -> int:
        """The index of α = 1 in :attr:`alphas`."""
        return int(np.flatnonzero(self.alphas == 1.0)[0])

    def __repr__(self) -> str:
        head = (
            f"PriorSensitivity({self.method}, {self.num_draws} draws, alphas "
            f"{self.alphas.min():g}–{self.alphas.max():g}, threshold {self.threshold:g})"
        )
        rows = [
            f"  {n}: {v:.3f}" + ("  prior-sensitive" if v > self.threshold else "")
            for n, v in self.worst.items()
        ]
        if self.topk_overlap is not None:
            au = self.auprc
            parts = [
                f"α {a:g}: overlap {self.topk_overlap[i].mean():.3f}"
                + ("" if au is None else f", AUPRC {_mean_auprc(au[i]):.3f}")
                for i, a in enumerate(self.alphas)
                if i != self.reference
            ]
            base = "" if au is None else f" (AUPRC {_mean_auprc(au[self.reference]):.3f} at α 1)"
            rows.append(f"  retrieval, top-{self.k}{base}: " + "; ".join(parts))
        if self.note:
            rows.append(f"  note: {self.note}")
        return "\n".join([head, *rows])

    def describe(self) -> str:
        """The result in words (for reports and the CLI)."""
        how = (
            "the closed-form power-scaled posterior (exact)"
            if self.method == "exact"
            else "Pareto-smoothed importance weights on the draws (PSIS)"
        )
        sens = self.sensitive
        words = f"Power-scaling the prior by α (Kallioinen et al. 2023; {how}): " + (
            f"{len(sens)} of {len(self.worst)} posterior quantities are prior-sensitive "
            f"(above {self.threshold:g}): {', '.join(sens)}."
            if sens
            else f"no posterior quantity is prior-sensitive (all {len(self.worst)} below "
            f"{self.threshold:g}; largest {max(self.worst.values(), default=0.0):.3f})."
        )
        lo, hi = int(np.argmin(self.alphas)), int(np.argmax(self.alphas))
        if self.topk_overlap is not None:
            words += (
                f" The posterior-mean scorer keeps {100 * self.topk_overlap[lo].mean():.0f} % "
                f"of its top-{self.k} at α = {self.alphas[lo]:g} and "
                f"{100 * self.topk_overlap[hi].mean():.0f} % at α = {self.alphas[hi]:g}"
            )
            if self.auprc is not None:
                a = [_mean_auprc(self.auprc[i]) for i in (lo, self.reference, hi)]
                words += f"; its AUPRC is {a[0]:.3f}, {a[1]:.3f} (α = 1) and {a[2]:.3f}"
            words += "."
        bad = self.unreliable
        if bad:
            words += (
                f" Pareto k above {k_threshold(self.num_draws):.2f} at α = "
                f"{', '.join(f'{a:g}' for a in bad)}: the reweighted draws do not represent "
                f"the power-scaled posterior there."
            )
        if self.note:
            words += f" {self.note}"
        return words

    def plot(self, path=None):
        """The diagnostic per quantity (bars, the threshold dashed) beside the α curve (mean
        shifts of the sites and, given queries, the top-k overlap and AUPRC); saved to ``path``
        when given."""
        import matplotlib.pyplot as plt

        from ..plots import finish

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
        names = list(self.worst)
        ax1.barh(names, [self.worst[n] for n in names], color="C0")
        ax1.axvline(self.threshold, color="k", ls="--", lw=0.8, label=f"{self.threshold:g}")
        ax1.set_xlabel("sensitivity (CJS distance per unit log₂ α)")
        ax1.legend(fontsize=8)
        table = self.curve()
        for col in table.columns:
            if col.startswith("shift_") or col in ("topk_overlap", "auprc"):
                ax2.plot(table["alpha"], table[col], marker="o", label=col)
        ax2.set_xscale("log")
        ax2.set_xlabel("α (prior power)")
        ax2.legend(fontsize=8)
        ax2.set_title(self.method)
        return finish(fig, path)


def _mean_auprc(values) -> float:
    """The mean AUPRC over queries with a relevant item (NaN rows left out)."""
    v = np.asarray(values, np.float64)
    ok = np.isfinite(v)
    return float(v[ok].mean()) if ok.any() else float("nan")


def _alphas(alphas, exact_at) -> tuple[np.ndarray, str]:
    """The α grid (sorted, with 1) and a note of the default α left out (given ones are checked)."""
    given = alphas is not None
    grid = sorted({positive("alpha", a) for a in (alphas if given else DEFAULT_ALPHAS)} | {1.0})
    kept, dropped, why = [], [], ""
    for a in grid:
        try:
            exact_at(a)
            kept.append(a)
        except AnchorDivError as err:
            if given:
                raise
            dropped.append(a)
            why = why or str(err).removeprefix("alpha: ")
    note = ""
    if dropped:
        note = f"α = {', '.join(f'{a:g}' for a in dropped)} left out of the default grid: {why}"
    return np.asarray(kept), note


@limited_blas
def prior_sensitivity(
    post,
    alphas=None,
    *,
    queries=None,
    gallery=None,
    relevance=None,
    k: int = 10,
    method: str = "auto",
    num_draws: int | None = None,
    seed: int = 0,
    delta: float = DELTA,
    diagnostic: bool = True,
) -> PriorSensitivity:
    """How much the prior drives the posterior ``post``: power-scaling of the prior
    (Kallioinen et al. 2023; module docstring).

    Parameters
    ----------
    post : Posterior
        An adapted posterior (exact, NUTS or SVI; not a delta guide's point, a user's own
        NumPyro model or a ``subspace=`` run, whose prior density is not known).
    alphas : sequence of float, optional
        The powers of the α curve (1 is added); default :data:`DEFAULT_ALPHAS` less those that
        leave an exact family's prior improper (given ones that do are an error).
    queries : array_like, shape [Q, d], optional
        Queries for the retrieval part (with ``gallery``).
    gallery : array_like, shape [G, d], optional
        The gallery.
    relevance : array_like of bool, shape [Q, G], optional
        Binary relevance (adds the AUPRC per α).
    k : int, default 10
        Top-k size (≤ G).
    method : {"auto", "exact", "psis"}, default "auto"
        ``"exact"`` where the posterior is the conjugate update and its family has
        ``power_scaled_posterior``, else ``"psis"``; ``"exact"`` on a NUTS/SVI posterior of such
        a family gives the closed-form α curve of the same model (the diagnostic still
        reweights its draws); ``"psis"`` on an exact posterior reweights its exact draws.
    num_draws : int, optional
        Draws of the diagnostic (:func:`~.uncertainty.inference_data`'s default).
    seed : int, default 0
        Seed of the draws.
    delta : float, default 0.01
        The diagnostic's finite difference.
    diagnostic : bool, default True
        Compute the per-quantity diagnostic (draws); ``False`` with ``method="exact"`` gives the
        α curve alone, in closed form and without draws.

    Returns
    -------
    PriorSensitivity
        ``table()`` (per quantity), ``curve()`` (per α), ``sensitive``, ``describe()``,
        ``plot()``.

    Raises
    ------
    AnchorDivError
        A posterior whose prior density is unknown, an ``alpha`` ≤ 0 or one that leaves an exact
        family's prior improper, ``method="exact"`` where there is no closed form, bad shapes.

    Examples
    --------
    >>> broad = np.random.default_rng(0).normal(size=(40, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> post = ad.adapt("gaussian", broad, broad[:6], tau=20.0, kappa0=5.0, nu0=10.0)
    >>> res = ad.prior_sensitivity(post, alphas=(0.8, 1.25), queries=broad[:3], gallery=broad,
    ...                            k=5, num_draws=100)
    >>> res.method, res.alphas.tolist()
    ('exact', [0.8, 1.0, 1.25])
    >>> res.table().columns.tolist()
    ['sensitivity', 'at', 'diagnosis']
    """
    from .uncertainty import default_draws, draws_with_log_prior, no_log_prior, retrieval_arguments
    from .uncertainty import posterior_argument

    post = posterior_argument(post, "prior_sensitivity")
    check_choice("method", method, METHODS)
    if post.point_guide:
        raise AnchorDivError(
            "prior_sensitivity: a delta guide's fit is a point: it has no spread to reweight "
            "(fit with ad.NUTS or another guide, or the exact update)"
        )
    why = no_log_prior(post)
    if why is not None:
        raise AnchorDivError(f"prior_sensitivity: the prior of this posterior is unknown: {why}")
    delta = positive("delta", delta)
    targets = post.fixed.get("targets")
    prior = post.prior
    closed = targets is not None and prior is not None
    closed = closed and prior.power_scaled_posterior(1.0, targets) is not None
    if method == "auto":
        method = "exact" if closed and post.closed_form else "psis"
    if method == "exact" and not closed:
        raise AnchorDivError(
            f"method='exact': the {post.kind} family has no closed-form power-scaled posterior "
            f"(its prior object defines no power_scaled_posterior"
            + ("" if targets is not None else ", or the posterior kept no targets")
            + "); use method='psis'"
        )
    if method == "psis" and not diagnostic:
        raise AnchorDivError("diagnostic=False: only with method='exact' (PSIS needs the draws)")

    def exact_at(a):  # the family's power-scaled posterior (or only a check of α)
        return prior.power_scaled_posterior(a, targets) if closed else None

    grid, note = _alphas(alphas, exact_at)
    retrieval = queries is not None or gallery is not None
    if retrieval:
        if queries is None or gallery is None:
            raise AnchorDivError("queries and gallery: give both for the retrieval part")
        q, g, k = retrieval_arguments(queries, gallery, k, relevance, dim=post.dim)
    elif relevance is not None:
        raise AnchorDivError("relevance: applies to the retrieval part (queries and gallery)")

    sens, lp, flat, s = {}, None, None, 0
    sites = post.family_class.sites
    if diagnostic:
        n = integer("num_draws", default_draws(post) if num_draws is None else num_draws, low=4)
        draws, flat, lp = draws_with_log_prior(post, n, seed)
        shape = next(iter(draws.values())).shape[:2]
        s = int(np.prod(shape))
        if not np.all(np.isfinite(lp)):
            raise AnchorDivError(
                f"prior_sensitivity: the log prior is not finite at "
                f"{int(np.sum(~np.isfinite(lp)))} of {s} draws"
            )
        quantities = checks_of(post.family_class).quantities(draws, post.params("mean"))
        ratios = [(a - 1) * lp for a in (1 / (1 + delta), 1 + delta)]
        lws = [
            r - scipy.special.logsumexp(r)
            if method == "exact"
            else adz.psis_log_weights(r[None])[0][0]
            for r in ratios
        ]
        for name, v in quantities.items():
            v = np.asarray(v, np.float64)
            sens[name] = sensitivity_values(v.reshape((s, -1)), lws, delta).reshape(v.shape[2:])

    means, mcse, ks, models = [], None, None, []
    if method == "exact":
        for a in grid:
            m = exact_at(a).mean()
            means.append({site: np.asarray(m[site], np.float64) for site in sites if site in m})
            if retrieval:
                models.append(post.to_model(m))
    else:
        mcse, kvals = [], []
        flat_sites = {site: np.asarray(flat[site], np.float64) for site in sites if site in flat}
        # NUTS: the chains' relative efficiency
        reff = 1.0 if post.independent_draws else min(1.0, adz.ess(lp.reshape(shape)) / s)
        rng = np.random.default_rng(seed + 4)
        summarise = post.family_class.likelihood_type.summarise
        for a in grid:
            if a == 1.0:  # the draws themselves (PSIS of constant ratios fails on 1.x)
                w, kk = np.full(s, 1.0 / s), 0.0
            else:
                lw, karr = adz.psis_log_weights(((a - 1) * lp)[None])
                w, kk = np.exp(lw[0]), float(karr[0])
            kvals.append(kk)
            m, e = {}, {}
            for site, v in flat_sites.items():
                m[site] = np.tensordot(w, v, axes=1)
                e[site] = np.sqrt(np.tensordot(w**2, (v - m[site]) ** 2, axes=1) / reff)
            means.append(m)
            mcse.append(e)
            if retrieval:
                picked = flat
                if a != 1.0:  # stratified resampling of the draws by the weights
                    cw = np.cumsum(w / w.sum())
                    idx = np.minimum(np.searchsorted(cw, (rng.random() + np.arange(s)) / s), s - 1)
                    picked = {k: v[idx] for k, v in flat.items()}
                models.append(post.to_model(summarise(picked, "mean", None)))
        ks = np.asarray(kvals)
    overlap = auprc = None
    if retrieval:  # each α's scorer against α = 1's
        from ..retrieval.divergence import top_k
        from .uncertainty import model_auprc, overlap as kept

        ref = top_k(models[int(np.flatnonzero(grid == 1.0)[0])], q, g, k)[0]
        overlap = np.asarray([kept(top_k(m, q, g, k)[0], ref, k) for m in models])
        if relevance is not None:
            auprc = np.asarray([model_auprc(m, q, g, relevance) for m in models])
    fields = (method, grid, sens, means, mcse, ks, overlap, auprc, k if retrieval else None, s)
    result = PriorSensitivity(*fields, delta, note)
    if result.unreliable:
        warnings.warn(
            f"prior_sensitivity: Pareto k above {k_threshold(s):.2f} at α = "
            f"{', '.join(f'{a:g}' for a in result.unreliable)} (PSIS on {s} draws): the "
            f"reweighted draws do not represent the power-scaled posterior there; use α closer "
            f"to 1, more draws, or a family with a closed form (method='exact')",
            stacklevel=user_stacklevel(),
        )
    return result


__all__ = ["DEFAULT_ALPHAS", "PriorSensitivity", "THRESHOLD", "cjs_distance", "prior_sensitivity"]
