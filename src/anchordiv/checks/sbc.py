"""Simulation-based calibration (Talts et al. 2018; docs/mathematics.md, "Calibration: simulation-based calibration"), for the library's
posteriors and for users' own models.

Each simulation ranks the truth θ̃ among posterior draws given data simulated from it; the
randomised PIT ``u = (rank + V)/(L + 1)`` is tested for uniformity (χ² and Kolmogorov–Smirnov)
and the 90 % coverage reported.  Ties within rounding are broken at random (:func:`tie_rtol`);
``thin`` thins correlated draws.

    result = ad.sbc(prior_sampler, simulator, inference, {"trace": trace_fn},
                    num_simulations=200, seed=0)
    result.summary()          # χ² and KS p-values, 90 % coverage per quantity
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import scipy.stats
from .._tolerance import TIE_RTOL, TIE_ULPS
from ..progress import tqdm

from ..adaptation.protocol import get_family
from ..adaptation.methods import METHODS, NUTS, SVI, ModelMethod, options as method_options
from .families import checks_of
from ..errors import AnchorDivError, check_choice, integer
from ..threads import limited_blas


@dataclasses.dataclass
class SBCResult:
    """Ranks of the truth among posterior draws, from :func:`anchordiv.sbc`.

    Parameters
    ----------
    ranks : numpy.ndarray of int, shape [N, Q]
        Ranks in 0..L per simulation and quantity.
    pit : numpy.ndarray, shape [N, Q]
        Randomised probability integral transforms.
    names : list of str
        The Q quantities.
    num_draws : int
        L, draws per simulation after thinning.
    bins : int
        Bins of the χ² test.

    Examples
    --------
    >>> from anchordiv.checks import SBCResult
    >>> rng = np.random.default_rng(0)
    >>> res = SBCResult(rng.integers(0, 100, size=(50, 1)), rng.uniform(size=(50, 1)), ["m"], 99, 5)
    >>> sorted(res.summary()["m"])
    ['chi2_p', 'coverage90', 'ks_p']
    """

    ranks: np.ndarray
    pit: np.ndarray
    names: list[str]
    num_draws: int
    bins: int

    def __repr__(self) -> str:
        rows = [
            f"  {n}: chi2 p {s['chi2_p']:.3f}, KS p {s['ks_p']:.3f}, 90% coverage "
            f"{s['coverage90']:.3f}"
            for n, s in self.summary().items()
        ]
        return "\n".join(
            [f"SBCResult({len(self.ranks)} simulations x {self.num_draws} draws)", *rows]
        )

    def chi2_pvalues(self) -> dict[str, float]:
        """χ² goodness of fit of the PIT to U(0, 1) on :attr:`bins` equal bins."""
        out = {}
        for j, name in enumerate(self.names):
            counts, _ = np.histogram(self.pit[:, j], bins=self.bins, range=(0.0, 1.0))
            out[name] = float(scipy.stats.chisquare(counts).pvalue)
        return out

    def ks_pvalues(self) -> dict[str, float]:
        """Kolmogorov–Smirnov test of the PIT against U(0, 1)."""
        return {
            name: float(scipy.stats.kstest(self.pit[:, j], "uniform").pvalue)
            for j, name in enumerate(self.names)
        }

    def coverage(self, interval: float = 0.9) -> dict[str, float]:
        """Fraction of simulations whose truth lies in the central ``interval`` of the draws."""
        lo, hi = (1 - interval) / 2, (1 + interval) / 2
        return {
            name: float(np.mean((self.pit[:, j] >= lo) & (self.pit[:, j] <= hi)))
            for j, name in enumerate(self.names)
        }

    def summary(self) -> dict[str, dict[str, float]]:
        """``{quantity: {"chi2_p", "ks_p", "coverage90"}}``."""
        chi, ks, cov = self.chi2_pvalues(), self.ks_pvalues(), self.coverage()
        return {n: {"chi2_p": chi[n], "ks_p": ks[n], "coverage90": cov[n]} for n in self.names}

    def _ecdf_diff(self, j: int, z: np.ndarray) -> np.ndarray:
        """``F̂(z) − z`` of quantity ``j``'s PIT."""
        return np.searchsorted(np.sort(self.pit[:, j]), z, side="right") / len(self.pit) - z

    def _panels(self, path, title, draw, ylabel: str):
        """One panel per quantity, ``draw(j, ax)`` on each; saved to ``path`` when given."""
        import matplotlib

        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        from ..plots import finish

        q = len(self.names)
        fig, axes = plt.subplots(1, q, figsize=(3.2 * q, 2.6), squeeze=False)
        for j, ax in enumerate(axes[0]):
            draw(j, ax)
        axes[0][0].set_ylabel(ylabel)
        if title:
            fig.suptitle(title, fontsize=10)
        return finish(fig, path)

    def plot(self, path=None, *, title: str | None = None):
        """Rank histograms (one panel per quantity) with the central 99 % band of a bin count
        under uniform ranks; saved to ``path`` (PNG) when given.  Returns the figure."""
        n = len(self.pit)
        lo, hi = scipy.stats.binom(n, 1 / self.bins).ppf([0.005, 0.995])
        p = self.chi2_pvalues()

        def draw(j, ax):
            ax.axhspan(lo, hi, color="0.85", label="99 % band (uniform)")
            ax.hist(self.pit[:, j], bins=self.bins, range=(0, 1), color="C0", edgecolor="w")
            ax.axhline(n / self.bins, color="k", lw=0.8)
            ax.set_title(f"{self.names[j]}\nχ² p = {p[self.names[j]]:.2f}", fontsize=9)
            ax.set_xlabel("normalised rank")

        return self._panels(path, title, draw, "simulations")

    def ecdf_bands(
        self, alpha: float = 0.05, *, num_points=None, simulations: int = 1000, seed: int = 0
    ) -> tuple[np.ndarray, ...]:
        """``(z [K], low [K], high [K])``: the simultaneous ``1 − alpha`` band of the PIT's ECDF
        difference ``F̂(z) − z`` under calibration (Säilynoja, Bürkner & Vehtari 2022): the
        pointwise binomial band at the level γ for which ``1 − alpha`` of simulated uniform
        samples of the same size stay inside at every z at once.  ``num_points`` K defaults
        to min(N, 100) evenly spaced z."""
        n = len(self.pit)
        k = num_points or min(n, 100)
        z = np.arange(1, k + 1) / (k + 1)
        u = np.sort(np.random.default_rng(seed).uniform(size=(simulations, n)), axis=1)
        counts = np.stack([np.searchsorted(row, z, side="right") for row in u])  # [M, K]
        binom = scipy.stats.binom(n, z)
        tail = np.minimum(binom.cdf(counts), binom.sf(counts - 1))
        gamma = float(np.quantile(2 * tail.min(1), alpha))
        return z, binom.ppf(gamma / 2) / n - z, binom.ppf(1 - gamma / 2) / n - z

    def ecdf_outside(self, alpha: float = 0.05) -> dict[str, bool]:
        """Whether each quantity's ECDF difference leaves the simultaneous band anywhere."""
        z, lo, hi = self.ecdf_bands(alpha)
        return {
            name: bool(np.any((d < lo - 1e-12) | (d > hi + 1e-12)))
            for j, name in enumerate(self.names)
            for d in [self._ecdf_diff(j, z)]
        }

    def plot_ecdf(self, path=None, *, alpha: float = 0.05, title: str | None = None):
        """ECDF difference ``F̂(z) − z`` of each quantity's PIT with the simultaneous
        ``1 − alpha`` band (:meth:`ecdf_bands`) — the SBC plot of Säilynoja et al., which unlike
        a histogram does not depend on a bin choice.  Saved to ``path`` when given."""
        z, lo, hi = self.ecdf_bands(alpha)
        grid = np.linspace(0, 1, 401)
        outside = self.ecdf_outside(alpha)
        band = f"{round(100 * (1 - alpha))} % simultaneous band"

        def draw(j, ax):
            ax.fill_between(z, lo, hi, color="0.85", step="mid", label=band)
            colour = "C3" if outside[self.names[j]] else "C0"
            ax.plot(grid, self._ecdf_diff(j, grid), color=colour, lw=1)
            ax.axhline(0, color="k", lw=0.6)
            ax.set_title(self.names[j], fontsize=9)
            ax.set_xlabel("normalised rank z")
            if j == 0:
                ax.legend(fontsize=7, loc="lower left")

        return self._panels(path, title, draw, "ECDF(z) − z")


def _values(f: Callable, params, name: str, expect: int) -> np.ndarray:
    """``f(params)`` as ``[expect]`` float64 scalars, else an error naming the quantity."""
    v = np.asarray(f(params), np.float64).reshape(-1)
    if v.shape != (expect,):
        raise AnchorDivError(
            f"quantities[{name!r}]: must map params with a leading draw axis "
            f"of length {expect} to {expect} scalars, got shape {v.shape}"
        )
    return v


@limited_blas
def sbc(
    prior_sampler: Callable,
    simulator: Callable,
    inference: Callable,
    quantities: dict[str, Callable],
    *,
    num_simulations: int = 200,
    thin: int = 1,
    bins: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> SBCResult:
    """Run simulation-based calibration of an inference procedure (module docstring).

    For each simulation: draw parameters from the prior, simulate data, run the inference and
    rank the true value of every quantity among the posterior draws; calibrated inference gives
    uniform ranks.  Works for any model: nothing here depends on the library's kinds.

    Parameters
    ----------
    prior_sampler : callable
        ``prior_sampler(rng) -> params``: a dict of parameter arrays drawn from the prior.
    simulator : callable
        ``simulator(rng, params) -> data``: data (e.g. target anchors ``[n, d]``) given params.
    inference : callable
        ``inference(rng, data) -> draws``: posterior draws, a dict of arrays with a leading draw
        axis ``[L, ...]`` (e.g. ``lambda rng, t: ad.adapt(...).draws(int(rng.integers(2**31)),
        99)``).
    quantities : dict of str to callable
        name → ``f(params_with_leading_axis) -> [L]`` scalar functions, applied to the draws and
        to the truth (given a leading axis of 1).
    num_simulations : int, default 200
        N, the number of simulations.
    thin : int, default 1
        Keep every ``thin``-th draw.
    bins : int, optional
        χ² bins (default ``N/10`` clipped to [4, 20]).
    seed : int, default 0
        Fixes every random choice.
    progress : bool, default True
        Show a progress bar.

    Returns
    -------
    SBCResult
        Ranks, PIT values and the uniformity tests (``summary()``, ``plot()``, ``plot_ecdf()``).

    Raises
    ------
    AnchorDivError
        No scalar quantity given, or ``inference`` returns a different number of draws (after
        thinning) from one simulation to the next.

    Examples
    --------
    A conjugate normal mean (prior N(0, 1), 5 observations of unit variance), exactly calibrated:

    >>> res = ad.sbc(lambda r: {"m": r.normal()},
    ...              lambda r, p: r.normal(p["m"], 1.0, size=5),
    ...              lambda r, x: {"m": r.normal(x.sum() / 6, np.sqrt(1 / 6), size=99)},
    ...              {"m": lambda p: p["m"]}, num_simulations=40, progress=False)
    >>> res.ranks.shape, res.num_draws
    ((40, 1), 99)
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    n_sim = integer("num_simulations", num_simulations, low=2)
    thin = integer("thin", thin, low=1)
    for name, fn in (
        ("prior_sampler", prior_sampler),
        ("simulator", simulator),
        ("inference", inference),
    ):
        if not callable(fn):
            raise AnchorDivError(f"{name}: expected a function, got {type(fn).__name__}")
    if not isinstance(quantities, dict) or not quantities:
        raise AnchorDivError("quantities: give at least one scalar quantity")
    bad = [name for name, fn in quantities.items() if not callable(fn)]
    if bad:
        raise AnchorDivError(f"quantities: {', '.join(map(repr, bad))} not a function of a draw")
    names = list(quantities)
    bins = integer("bins", bins, low=2) if bins is not None else int(np.clip(n_sim // 10, 4, 20))
    rng = np.random.default_rng(seed)
    ranks, pit, num_draws = [], [], None
    for _ in tqdm(range(n_sim), desc="SBC", unit="simulation", disable=not progress):
        truth = prior_sampler(rng)
        draws = {k: np.asarray(v)[::thin] for k, v in inference(rng, simulator(rng, truth)).items()}
        length = len(next(iter(draws.values())))
        if num_draws is not None and length != num_draws:
            raise AnchorDivError(
                f"inference: returned {length} draws after thinning, earlier "
                f"{num_draws}; keep the number fixed"
            )
        num_draws = length
        row_r, row_u = [], []
        rtol = tie_rtol([*draws.values(), *truth.values()])
        lead = {k: np.asarray(v)[None] for k, v in truth.items()}
        for name in names:
            f = quantities[name]
            v, t = _values(f, draws, name, length), _values(f, lead, name, 1)[0]
            tie = np.abs(v - t) <= rtol * np.maximum(np.abs(v), abs(t))
            below, ties = int(np.sum((v < t) & ~tie)), int(np.sum(tie))
            r = below + int(rng.integers(0, ties + 1))
            row_r.append(r)
            row_u.append((r + rng.uniform()) / (length + 1))
        ranks.append(row_r)
        pit.append(row_u)
    return SBCResult(np.asarray(ranks), np.asarray(pit), names, int(num_draws), bins)


def tie_rtol(arrays) -> float:
    """The relative window within which a quantity of the draws ties with the truth's: the
    rounding of the coarsest float among ``arrays`` (:data:`~anchordiv._tolerance.TIE_ULPS`
    of its ε), at least :data:`~anchordiv._tolerance.TIE_RTOL` — a draw that equals the truth
    up to the rounding of its precision, or of the quantity's arithmetic on a batch of another
    shape, is a tie (broken at random), not a rank."""
    dtypes = [np.asarray(a).dtype for a in arrays]
    eps = [TIE_ULPS * np.finfo(t).eps for t in dtypes if np.issubdtype(t, np.floating)]
    return float(max([TIE_RTOL, *eps]))


# ---- the library's own posteriors -------------------------------------------------------------

#: settings of each method class in :func:`library_problem` (others run with their defaults)
SETTINGS: dict[type, dict] = {
    NUTS: {"num_warmup": 300, "num_chains": 1},
    SVI: {"guide": "lowrank", "num_steps": 1500},
}


def sbc_method(cls: type, num_draws: int = 2, seed: int = 0, x64: bool = False):
    """The configuration of method class ``cls`` that SBC runs: :data:`SETTINGS`, and of
    ``num_samples``, ``seed``, ``progress`` (off) and ``x64`` the options the method has."""
    run = {"num_samples": num_draws, "seed": seed, "progress": False, "x64": x64}
    names = method_options(cls())
    return cls(**{k: v for k, v in run.items() if k in names}, **SETTINGS.get(cls, {}))


def library_problem(
    kind,
    *,
    method: str = "exact",
    d: int = 3,
    n: int = 5,
    num_draws: int = 99,
    thin: int | None = None,
    seed: int = 0,
    separation: float = 8.0,
    options: dict | None = None,
) -> dict:
    """SBC ingredients for the library's own posteriors of ``kind``.

    The prior is the one :func:`anchordiv.adapt` builds from the family's fixed broad anchors
    (``sbc_broad`` of :mod:`.families`) with its fixed strengths (``sbc_options``: empirical
    Bayes would make the prior depend on the data), built once; the truths are exact prior
    draws (the model's own where it has no closed form) and the simulator is the family's
    likelihood (NIW: Gaussian; latent kinds: the PPCA likelihood with the broad ℓ and σ²;
    mixture: the Gaussian mixture).  Gibbs and NUTS draws are thinned (default thin 2 and 4) to
    near-independence.  Families without an exact update (no
    :class:`~anchordiv.Conjugate` capability: spectral, the structured
    ``factor-gaussian`` and ``lkj-gaussian``) run NUTS and SVI only.

    Parameters
    ----------
    kind : str or type
        The family: a registered kind or a family class (a user's included).
    method : {"exact", "nuts", "svi"}, default "exact"
        ``"exact"``: the conjugate update's draws; ``"nuts"``: the kind's explicit model on the
        cached compiled chain runner; ``"svi"``: a low-rank guide (:data:`SVI_SETTINGS`).
    d : int, default 3
        Dimension.
    n : int, default 5
        Target anchors per simulation.
    num_draws : int, default 99
        Posterior draws per simulation.
    thin : int, optional
        Thinning (default per method).
    seed : int, default 0
        Seed of the broad anchors.
    separation : float, default 8.0
        Distance between the mixture's two broad cluster centres (spread 0.5; 8 is well
        separated, 1.5 overlaps so that assignments are uncertain).
    options : dict, optional
        Prior options over the family's ``sbc_options`` (:mod:`.families`) (e.g. ``{"shrinkage": "horseshoe"}``
        for spectral).

    Returns
    -------
    dict
        Keyword arguments of :func:`sbc`: ``prior_sampler``, ``simulator``, ``inference``,
        ``quantities``, ``thin``.

    Examples
    --------
    >>> from anchordiv.checks.sbc import library_problem
    >>> res = ad.sbc(**library_problem("gaussian", d=2, n=3, num_draws=19),
    ...              num_simulations=8, progress=False)
    >>> res.ranks.shape
    (8, 3)
    """
    import jax

    from ..adaptation import infer

    check_choice("method", method, METHODS)
    cls = METHODS[method]
    fam: Any = kind if isinstance(kind, type) else get_family(kind)
    rng = np.random.default_rng(seed)
    hooks = checks_of(fam)
    broad = hooks.sbc_broad(d, rng, separation)
    quantities = hooks.sbc_quantities(d, rng)
    prior = fam.from_anchors(broad, broad[:n], **{**hooks.sbc_options(d), **(options or {})})
    # the exact update's inputs, or the model inputs NUTS and SVI both run on (no update)
    try:
        params, kwargs, _, ref_fixed = sbc_method(cls).inputs(prior, broad[:n])
    except AnchorDivError as err:  # a method the family cannot run (no exact update)
        raise AnchorDivError(
            f"method: the {fam.kind} family has no {method} update ({err})"
        ) from None
    if thin is None:  # Markov chains thinned to near-independence, a Gibbs sampler's less
        gibbs = params is not None and hooks.gibbs_cost(params)
        thin = 4 if not cls.independent_draws else 2 if gibbs else 1
    # the likelihood the update is conjugate to
    lik = fam.likelihood_type(fam, kwargs, hooks.sbc_fixed(ref_fixed), d)

    # the truth in the precision the inference runs in (a float64 truth would rank by rounding)
    runs_model = issubclass(cls, ModelMethod)  # NUTS/SVI run in the run dtype; exact in float64
    x64 = jax.config.jax_enable_x64  # type: ignore[attr-defined]
    precision = np.float64 if params is not None and not runs_model or x64 else np.float32

    def prior_sampler(r):
        draw = lik.prior_draw(r)
        return {k: np.asarray(v, precision).astype(np.float64) for k, v in draw.items()}

    def simulator(r, p):
        return lik.sample({k: np.asarray(v)[None] for k, v in p.items()}, n, r)[0]

    def inference(r, t):  # {site: [num_draws * thin, ...]} by ad.infer, in draw order
        s, size = int(r.integers(2**31)), num_draws * thin
        post = infer(prior, t, sbc_method(cls, size, s, bool(x64)), tau=1.0)
        draws = post.ordered_draws(s, size)
        return {k: np.asarray(v, np.float64) for k, v in draws.items() if k in type(prior).sites}

    return {
        "prior_sampler": prior_sampler,
        "simulator": simulator,
        "inference": inference,
        "quantities": quantities,
        "thin": thin,
    }
