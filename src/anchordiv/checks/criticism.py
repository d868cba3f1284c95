"""Model criticism: compare candidate priors by the leave-one-out predictive density of the
target anchors, ``elpd = Σᵢ log p(tᵢ | T₋ᵢ)``, with an estimator that is right at any d.

    result = ad.compare_priors({"strong": {"broad": broad, "kappa0": 50, "nu0": d + 100},
                                "fitted": post}, targets, kind="gaussian")
    result.table          # elpd_loo, p_loo, elpd_diff, weight, se, dse, warning, estimator
    result.estimators     # {name: "exact" | "psis" | "kfold"}, result.notes says why

Estimators: ``"exact"`` (the closed-form NIW Student-t predictive), ``"psis"`` (accepted only
when every Pareto k is below :func:`k_threshold`) and ``"kfold"``; ``"auto"`` gives every row
the same quantity (:func:`estimate_table`).  Details: ``docs/guides/model-criticism.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.optimize
import scipy.special

from ..errors import AnchorDivError, as_matrix, check_choice, integer, user_stacklevel
from ..provenance import provenance_of, resolve_tau, unit_norm, with_provenance
from .._tolerance import DOUBLING_SE, TIE_RTOL
from .arviz import MIN_TAIL, tail_size
from .families import checks_of
from .uncertainty import inference_data
from ..threads import limited_blas

#: the largest Pareto k threshold (ArviZ's, for S ≥ 2200 draws)
K_THRESHOLD = 0.7
ESTIMATORS = ("auto", "exact", "psis", "kfold")
#: guide draws of an SVI importance sample when ``num_draws`` is not given
SVI_DRAWS = 1000
#: options of the inference method (not of the prior): dropped for the exact refits
INFERENCE_OPTIONS = set(
    "method model model_kwargs subspace seed progress init_strategy x64 num_samples num_warmup "
    "num_chains target_accept_prob dense_mass max_tree_depth chain_method guide guide_rank "
    "optimizer learning_rate lr_decay num_steps num_particles convergence_window "
    "convergence_tol".split()
)


def k_threshold(num_draws: int) -> float:
    """ArviZ's Pareto-k threshold for ``num_draws`` (S) draws: ``min(1 − 1/log10(S), 0.7)``."""
    return float(min(1 - 1 / np.log10(max(int(num_draws), 2)), K_THRESHOLD))


@dataclasses.dataclass
class Estimate:
    """One candidate's leave-one-out: ``pointwise [n]`` (``log p(tᵢ | T₋ᵢ)``), ``estimator``,
    ``note`` (how it was computed and why), ``pareto_k [n]`` and its ``threshold`` (Monte-Carlo
    rows), ``p_loo`` (effective number of parameters: PSIS's, or the closed form's
    ``Σᵢ log p(tᵢ | T) − log p(tᵢ | T₋ᵢ)``; NaN for K-fold, whose folds have no all-target
    fit to compare with), ``mcse`` and ``unreliable`` (the reason a row is not ranked)."""

    pointwise: np.ndarray
    estimator: str
    note: str
    pareto_k: np.ndarray | None = None
    threshold: float = float("nan")
    p_loo: float = float("nan")
    #: Monte-Carlo standard error of :attr:`elpd` (0 for a closed form)
    mcse: float = 0.0
    #: draws of the Monte-Carlo average (None for a closed form)
    num_draws: int | None = None
    #: why the estimate cannot be ranked (None: it can): its Monte-Carlo average is not trusted
    unreliable: str | None = None

    @property
    def elpd(self) -> float:
        return float(self.pointwise.sum())

    @property
    def reliable(self) -> bool:
        return self.unreliable is None

    @property
    def se(self) -> float:
        return float(np.sqrt(len(self.pointwise) * np.var(self.pointwise)))


@dataclasses.dataclass
class PriorComparison:
    """The result of :func:`anchordiv.compare_priors`.

    Parameters
    ----------
    table : pandas.DataFrame
        ``az.compare``'s layout (rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, warning,
        scale) plus ``estimator`` and ``note``, best first.
    loo : dict of str to Estimate
        Each candidate's LOO estimate (pointwise values, Pareto k for PSIS).
    idata : dict of str to arviz.InferenceData or xarray.DataTree
        The data (:func:`~anchordiv.checks.uncertainty.inference_data`) of the candidates
        whose draws were used (PSIS).
    note : str
        Which estimator the rows share and why they are comparable (:func:`estimate_table`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> cmp = ad.compare_priors({"a": broad, "b": broad[:10]}, broad[:5], kind="gaussian",
    ...                         tau=20.0, kappa0=5.0, nu0=10.0)
    >>> float(cmp.table["weight"].sum())
    1.0
    """

    table: Any  # a pandas DataFrame (pandas imports lazily)
    loo: dict
    idata: dict
    note: str = ""

    def __repr__(self) -> str:
        rows = [
            f"  {n}: elpd_loo {r['elpd_loo']:.1f}, weight {r['weight']:.2f}, "
            f"{self.loo[n].estimator}"
            for n, r in self.table.iterrows()
        ]
        return "\n".join([f"PriorComparison({len(self.loo)} priors)", *rows])

    @property
    def estimators(self) -> dict[str, str]:
        return {n: e.estimator for n, e in self.loo.items()}

    @property
    def notes(self) -> dict[str, str]:
        return {n: e.note for n, e in self.loo.items()}

    @property
    def pareto_k(self) -> dict[str, np.ndarray]:
        """Pareto k per target anchor of every candidate whose estimate is a Monte-Carlo
        average over draws: PSIS's importance ratios, or K-fold's ``p(t | θ_s)`` over a refit's
        draws."""
        return {n: e.pareto_k for n, e in self.loo.items() if e.pareto_k is not None}

    @property
    def high_k(self) -> dict[str, int]:
        """Target anchors with Pareto k above the candidate's threshold (:attr:`pareto_k`)."""
        return {n: int(np.sum(k > self.loo[n].threshold)) for n, k in self.pareto_k.items()}

    def plot(self, path=None):
        """ELPD comparison (:func:`elpd_panel`, estimator per candidate in the labels) beside
        the Pareto k of the Monte-Carlo candidates (:attr:`pareto_k`); saved to ``path`` when
        given."""
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator

        from ..plots import finish

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.6 * len(self.loo) + 2.2))
        elpd_panel(ax1, self.table.rename(index=lambda n: f"{n} ({self.loo[n].estimator})"))
        ax1.set_title("leave-one-out ELPD of the target anchors")
        for i, (name, k) in enumerate(self.pareto_k.items()):
            label = f"{name} ({self.high_k[name]} > {self.loo[name].threshold:.2f})"
            ax2.scatter(np.arange(len(k)), k, s=12, color=f"C{i}", label=label)
            ax2.axhline(self.loo[name].threshold, color=f"C{i}", lw=0.8, ls="--")
        if self.pareto_k:
            ax2.legend(fontsize=8)
        else:
            centre = dict(ha="center", va="center", transform=ax2.transAxes)
            ax2.text(0.5, 0.5, "no Monte-Carlo estimate", **centre)
        ax2.set_xlabel("target anchor")
        ax2.set_ylabel("Pareto k")
        # ELPDs of many targets are large numbers and anchors many: few ticks, no overlap
        ax1.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax2.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        return finish(fig, path)


def elpd_panel(ax, table) -> None:
    """``az.plot_compare``'s picture of a comparison table (best first) on the matplotlib axes
    ``ax``, drawn the same under every ArviZ: each candidate's ``elpd_loo ± se`` (open circles,
    best on top), each other candidate's difference from the best ``± dse`` (triangles, just
    below its row) and a dashed line at the best ELPD."""
    n = len(table)
    y = np.arange(n)[::-1].astype(float)
    elpd = table["elpd_loo"].to_numpy(float)
    ax.errorbar(elpd, y, xerr=table["se"].to_numpy(float), fmt="o", mfc="none", color="k")
    if n > 1:
        ax.errorbar(
            elpd[1:], y[1:] - 0.3, xerr=table["dse"].to_numpy(float)[1:], fmt="^", color="0.5"
        )
    ax.axvline(elpd[0], color="0.5", ls="--", lw=0.8)
    ax.set_yticks(y, list(table.index))
    ax.set_ylim(-0.8, n - 0.4)
    ax.set_xlabel("ELPD (log)")


# ---- warnings --------------------------------------------------------------------------------

#: a number in a warning's text (counts, norms): what differs between warnings of one cause
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def warning_cause(message: warnings.WarningMessage) -> tuple:
    """What makes two warnings the same: their category and their text with every number
    blanked (``"8 of 8 rows"`` and ``"4 of 4 rows"`` are one cause)."""
    return message.category, _NUMBER.sub("#", str(message.message))


@contextlib.contextmanager
def one_warning_per_cause(what: str):
    """Collect the warnings raised inside the block and re-emit each cause
    (:func:`warning_cause`) once when it ends — the first of its kind, saying how many more
    there were — at the first line outside anchordiv, through the caller's filters (an
    ``"error"`` filter still raises, then).
    ``what`` names the call in that count (``"this compare_priors call"``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    first: dict[tuple, warnings.WarningMessage] = {}
    count: dict[tuple, int] = {}
    for w in caught:
        key = warning_cause(w)
        first.setdefault(key, w)
        count[key] = count.get(key, 0) + 1
    for key, w in first.items():
        text = str(w.message)
        if count[key] > 1:
            text += f" [and {count[key] - 1} more like it in {what}]"
        # at the caller's line, as its own module (a script's DeprecationWarning still shows)
        warnings.warn(text, w.category, stacklevel=user_stacklevel())


# ---- candidates ----------------------------------------------------------------------------


def _recipe(candidate, options: dict):
    """``(broad, options)`` to refit a candidate, or None for an adapted Posterior (a dict
    candidate's ``kind`` entry is not an option: :func:`candidate_kinds` reads it)."""
    from ..adaptation import Posterior

    if isinstance(candidate, Posterior):
        return None
    if isinstance(candidate, dict):
        opts = {k: v for k, v in candidate.items() if k != "kind"}
        if "broad" not in opts:
            raise AnchorDivError("priors: a dict candidate needs its broad anchors under 'broad'")
        recipe = opts.pop("broad"), {**options, **opts}
    else:
        recipe = candidate, dict(options)
    if "normalize" in recipe[1]:
        raise AnchorDivError(
            "priors: normalize in a candidate would fit it to other targets than the ones "
            "scored; pass normalize=True to compare_priors, which normalizes the targets once "
            "for every candidate"
        )
    return recipe


def candidate_kinds(priors: dict, kind: str | None) -> dict[str, str]:
    """Each candidate's kind: a Posterior's, a dict's ``"kind"``, ``kind``, or the one the
    Posteriors share; a candidate none of these names is an :class:`AnchorDivError`
    (:func:`unnamed_kind`)."""
    from ..adaptation import KINDS, Posterior

    posts = {c.kind for c in priors.values() if isinstance(c, Posterior)}
    default = kind if kind is not None else (next(iter(posts)) if len(posts) == 1 else None)
    out = {}
    for name, c in priors.items():
        if isinstance(c, Posterior):
            out[name] = c.kind
        elif isinstance(c, dict) and c.get("kind") is not None:
            out[name] = str(c["kind"])
        elif default is not None:
            out[name] = default
        else:
            raise unnamed_kind(name, KINDS)
    return out


def unnamed_kind(name: str, kinds) -> AnchorDivError:
    """The error for a candidate whose kind nothing names (no ``kind=``, no ``"kind"`` entry,
    no Posterior candidates of one kind): it used to default to ``"gaussian"``."""
    return AnchorDivError(
        f"compare_priors: the kind of candidate {name!r} is not named; pass kind= (the kind of "
        f"every candidate that does not say its own) or a 'kind' entry in its dict "
        f"(registered kinds: {', '.join(kinds)})"
    )


def not_arviz(name: str, candidate) -> None:
    """An :class:`AnchorDivError` for a candidate that is ArviZ data, saying what one is."""
    from .uncertainty import arviz_data

    if arviz_data(candidate):
        raise AnchorDivError(
            f"priors[{name!r}]: ArviZ data ({type(candidate).__name__}) is not a candidate; "
            f"compare_priors takes, per name, broad anchors [N, d], a dict of ad.adapt options "
            f"with the broad anchors under 'broad', or an adapted Posterior (ad.adapt, "
            f"ad.infer, ad.load_posterior) — ad.inference_data's result is for ArviZ's own "
            f"az.loo / az.compare"
        )


def _fit(kind: str, recipe, targets: np.ndarray, tau):
    from ..adaptation import adapt

    broad, opts = recipe
    return adapt(kind, broad, targets, tau=tau, **opts)


# ---- estimators ----------------------------------------------------------------------------


def has_closed_form(post) -> bool:
    """Whether ``post``'s model has a closed-form posterior predictive: its family's checks say
    its own model's is the NIW Student-t (``student_t_predictive``, :mod:`.families`),
    whatever method ran it, and no user's model replaced it."""
    return (
        checks_of(post.family_class).student_t_predictive
        and not post.custom_model
        and post.model_kwargs is not None
    )


def _chosen_on_targets(post) -> bool:
    """Whether ``post``'s strengths were chosen on its targets (held-out recipe, empirical
    Bayes): its prior says so (a posterior saved without its prior: not known, False)."""
    return post.prior is not None and post.prior.chosen_on_targets()


#: what a note adds for an adapted Posterior whose data-chosen strengths cannot be re-chosen
HELD = " (data-chosen strengths held at the values chosen with all targets)"


def closed_form_heldout(post, recipe, train: np.ndarray, test: np.ndarray, tau) -> np.ndarray:
    """``log p(t | T_train)`` ``[m]`` of held-out targets ``test [m, d]``: the closed-form
    Student-t predictive of ``post``'s NIW model updated on ``train [n', d]``
    (:func:`has_closed_form`).  Strengths chosen on the targets are re-chosen on ``train`` when
    the candidate has a ``recipe`` (an exact refit of its prior), else held at ``post``'s."""
    if recipe is not None and _chosen_on_targets(post):
        broad, opts = recipe
        exact = {k: v for k, v in opts.items() if k not in INFERENCE_OPTIONS}
        post = _fit(post.kind, (broad, exact), train, tau)
    niw = post.likelihood().exact_prior().update(train)
    logdet = np.linalg.slogdet(niw.psi)[1]  # log p(x | T_train): the NIW marginal of one point
    return np.array([niw.log_marginal(x[None], logdet_psi=logdet) for x in np.asarray(test, float)])


def exact_loo(post, targets: np.ndarray, recipe) -> Estimate:
    """Closed-form Student-t LOO of the NIW model (module docstring): every ``log p(tᵢ | T₋ᵢ)``
    by :func:`closed_form_heldout` (one-point downdates of the scatter where the strengths are
    held)."""
    from .diagnostics import loo_pointwise

    eb, n = _chosen_on_targets(post), len(targets)
    if eb and recipe is not None and n > 1:
        t, tau = targets, post.tau
        out = np.array(
            [
                closed_form_heldout(post, recipe, np.delete(t, i, 0), t[i : i + 1], tau)[0]
                for i in range(n)
            ]
        )
        note = "closed-form Student-t predictive; data-chosen strengths re-chosen on every T₋ᵢ"
    else:
        out = loo_pointwise(post.likelihood().exact_prior(), targets)
        note = "closed-form Student-t predictive of the NIW prior" + (HELD if eb and n > 1 else "")
    return Estimate(out, "exact", note, p_loo=_p_kfold(post, targets, out, post.tau))


def data_chosen(post, recipe) -> str | None:
    """Why the candidate's prior depends on the targets (None when it does not): strengths or
    a rank chosen on them (``post.info["chosen_by"]``; an option left ``"auto"`` in the
    candidate's recipe).  Then a refit on T₋ᵢ has another prior, and PSIS over the draws of
    the fit on all targets is optimistic (3.6 nat for a latent-Gaussian recipe candidate);
    K-fold refits re-choose them on every fold."""
    from ..adaptation import OPTIONS

    if _chosen_on_targets(post):
        return f"the strengths were chosen on the targets ({post.info['chosen_by']})"
    if recipe is None:
        return None
    defaults = OPTIONS.get(post.kind, {})
    chosen = checks_of(post.family_class).data_chosen({**defaults, **recipe[1]})
    auto = [k for k in chosen if k in defaults]
    if not auto:
        return None
    verb = "is" if len(auto) == 1 else "are"
    return f"{', '.join(auto)} {verb} chosen on the targets ('auto'), so a refit on T₋ᵢ has another prior"


def psis_unavailable(post) -> str | None:
    """Why PSIS cannot be used on ``post``'s draws (None when it can): the family's
    the ``psis_caveat`` of :mod:`.families`, or a delta guide."""
    caveat = checks_of(post.family_class).psis_caveat(post)
    point = "a delta guide is a point: nothing to importance-sample" if post.point_guide else None
    return caveat if caveat is not None else point


def psis_loo(post, targets: np.ndarray, num_draws: int | None, seed: int):
    """PSIS-LOO of ``post``'s draws: ``(Estimate, InferenceData or None)``; SVI draws weighted by
    ``log p − log q`` first."""
    from . import arviz as adz

    with warnings.catch_warnings():  # high k is judged below, against the S-dependent threshold
        warnings.simplefilter("ignore")
        if post.variational:
            from ..adaptation.svi import guide_log_weights

            draws, lw = guide_log_weights(post, num_draws or SVI_DRAWS, seed)
            draws = post.lift_draws(draws, np.random.default_rng(seed))  # a subspace run's lift
            ll = post.likelihood().log_density(draws, targets)  # [S, n]
            logr, k = adz.psis_log_weights((lw[:, None] - ll).T)  # [n, S]
            pointwise = scipy.special.logsumexp(logr + ll.T, axis=1)
            # the self-normalised posterior predictive of every target given all of them
            lwn = lw - scipy.special.logsumexp(lw)
            lppd = scipy.special.logsumexp(lwn[:, None] + ll, axis=0)
            note = (
                "PSIS over guide draws weighted by log p − log q (approximate-posterior correction)"
            )
            s, p_loo, k, idata = len(lw), float(np.sum(lppd - pointwise)), np.asarray(k), None
        else:
            idata = inference_data(
                post, num_draws=num_draws, seed=seed, targets=targets, prior=False
            )
            pointwise, k, p_loo = adz.loo(idata)
            s = int(idata["posterior"].sizes["chain"] * idata["posterior"].sizes["draw"])
            note = f"PSIS over {s} posterior draws"
    est = Estimate(pointwise, "psis", note, k, k_threshold(s), p_loo, num_draws=s)
    return _judged(est), idata


def _judged(est: Estimate) -> Estimate:
    """``est`` marked unreliable (and noted) when a Pareto k is above its threshold."""
    why = monte_carlo_reason(est.pareto_k, est.num_draws, "the importance ratios")
    if why is None:
        return est
    why = f"PSIS unreliable: {why}"
    return dataclasses.replace(est, unreliable=why, note=f"{est.note}; {why}")


def kfold_parts(n: int, folds: int, seed: int) -> list[np.ndarray]:
    """The K-fold partition of ``n`` targets (K = min(folds, n)), the same for every candidate."""
    if n < 2:
        raise AnchorDivError("kfold: cross-validation needs at least 2 target anchors")
    k = min(integer("folds", folds, low=2), n)
    return np.array_split(np.random.default_rng(seed).permutation(n), k)


def kfold_loo(kind, recipe, targets, tau, folds, num_draws, seed, why, post=None) -> Estimate:
    """K-fold ELPD of one candidate: closed-form folds, or refits scored by Monte Carlo."""
    parts = kfold_parts(len(targets), folds, seed)
    k = len(parts)
    closed = post is not None and has_closed_form(post)
    if recipe is None and not closed:
        raise AnchorDivError(
            f"priors: this adapted Posterior needs K-fold refits ({why}); pass the candidate "
            f"as broad anchors or an options dict so it can be refit"
        )
    out, pareto, sizes, var = np.empty(len(targets)), np.full(len(targets), np.nan), [], 0.0
    structured = 0  # folds scored by the conditional (Rao-Blackwellized) predictive
    doubling = 0.0  # their ELPD on all draws minus on the first half (a bias estimate)
    frozen = 0  # Monte-Carlo folds whose draws all gave the same value (never moved)
    for test in parts:
        train = np.delete(targets, test, axis=0)
        if closed:
            out[test] = closed_form_heldout(post, recipe, train, targets[test], tau)
            continue
        ll, rao_blackwell = _heldout_ll(
            _fit(kind, recipe, train, tau), train, targets[test], seed, num_draws
        )
        if not rao_blackwell:
            out[test], mc_var, pareto[test] = mc_predictive(ll)
        else:  # few distinct values (ties): no Pareto tail to fit; the doubling check instead
            structured += 1
            out[test], mc_var, _ = mc_predictive(ll, tail=False, chains=KFOLD_CHAINS)
            if len(ll) > 1:
                half = mc_predictive(ll[: len(ll) // 2], False)[0]
                doubling += float(np.sum(out[test] - half))
                frozen += never_moved(ll)
        var += mc_var
        sizes.append(len(ll))
    if closed:
        held = HELD if recipe is None and _chosen_on_targets(post) else ""
        note = f"{k}-fold ({why}); each fold scored by the closed-form Student-t predictive "
        note += f"given its training targets{held}"
        return Estimate(out, "kfold", note, p_loo=_p_kfold(post, targets, out, tau))
    exact = structured == k and all(s == 1 for s in sizes)
    if structured:
        how = (
            "the family's exact predictive (closed form, or summed over every latent "
            "assignment of the fold's training targets)"
            if exact
            else "the closed-form predictive given each draw's latent structure "
            "(Rao-Blackwellized, averaged over the draws)"
        )
    else:
        how = "log mean_s p(t | θ_s)"
    note = f"{k}-fold refits ({why}); each held-out target scored by {how} over " + (
        "its fold's posterior" if exact else f"{min(sizes)} draws of its fold's posterior"
    )
    if exact:
        return Estimate(out, "kfold", note, p_loo=_p_kfold(post, targets, out, tau))
    threshold = k_threshold(min(sizes))
    mcse = float(np.sqrt(var))
    note += f"; Monte-Carlo standard error {mcse:.2g}"
    if structured:
        note += f"; draws-doubling change {doubling:.2g}"
        reason = (
            None
            if abs(doubling) <= DOUBLING_SE * mcse
            else f"the ELPD moved by {doubling:.2g} from S/2 to S draws, more than "
            f"{DOUBLING_SE:g} Monte-Carlo standard errors ({mcse:.2g}): still biased"
        )
        if frozen:
            reason = (
                f"in {frozen} of {k} folds every one of the {min(sizes)} draws gave the same "
                "predictive (the chains never left one latent assignment), so the Monte-Carlo "
                "error is unknown, not 0"
            )
    else:
        reason = monte_carlo_reason(pareto, min(sizes), "p(t | ·) over the draws")
    if reason is not None:
        note += f"; {reason}: the ELPD is biased low by an unknown amount and not ranked"
    p = _p_kfold(post, targets, out, tau, num_draws, seed)
    return Estimate(out, "kfold", note, pareto, threshold, p, mcse, min(sizes), unreliable=reason)


class LazyDraws(Mapping):
    """Posterior draws ``{site: [S, ...]}`` made on first access (an exact fold predictive
    never draws: a Gibbs-sampled family's draws at d = 128 cost seconds per fold)."""

    def __init__(self, make):
        self._make = make

    @functools.cached_property
    def _draws(self) -> dict:
        return self._make()

    def __getitem__(self, key):
        return self._draws[key]

    def __iter__(self):
        return iter(self._draws)

    def __len__(self) -> int:
        return len(self._draws)


#: independent chains of a fold's draws scored by a family's conditional predictive: their
#: between-chain variance is the Monte-Carlo error (:func:`mc_predictive`)
KFOLD_CHAINS = 4


def _chain_major(post, seed: int, num_draws: int) -> dict:
    """``num_draws`` (rounded up to whole chains) draws of :data:`KFOLD_CHAINS` independent
    chains, ``{site: [S, ...]}`` chain after chain."""
    per = -(-int(num_draws) // KFOLD_CHAINS)
    draws = post.chain_draws(seed, KFOLD_CHAINS, per)
    return {k: v.reshape((-1,) + v.shape[2:]) for k, v in draws.items()}


def _heldout_ll(post, train, test, seed: int, num_draws) -> tuple[np.ndarray, bool]:
    """``(log p(test | ·, train), by the hook)``: ``[R, m]`` by the family's
    ``conditional_predictive`` hook where it applies (over :data:`KFOLD_CHAINS` chains, chain
    after chain, when not exact), else ``log p(t | θ_s)`` ``[S, m]``."""
    from .uncertainty import default_draws

    hook = checks_of(post.family_class).conditional_predictive
    kw = post.model_kwargs
    if hook is None or post.custom_model or kw is None or post.subspace is not None:
        draws = post.draws(seed, num_draws or default_draws(post))
        return post.likelihood().log_density(draws, test), False
    draws = LazyDraws(lambda: _chain_major(post, seed, num_draws or default_draws(post)))
    return np.asarray(hook(kw, draws, train, test, np.random.default_rng(seed)), np.float64), True


#: contiguous batches of the batch-means variance of a Monte-Carlo average
BATCHES = 10


def never_moved(ll: np.ndarray) -> bool:
    """Whether every draw (row) of ``ll [S, m]``, S ≥ 2, gave the same values, within
    :data:`~anchordiv._tolerance.TIE_RTOL` of their magnitude: a Monte-Carlo average that
    never moved, whose spread says nothing of its error."""
    ll = np.asarray(ll, np.float64)
    if len(ll) < 2 or not np.all(np.isfinite(ll)):
        return False
    scale = np.maximum(np.abs(ll).max(0), 1.0)
    return bool(np.all(np.ptp(ll, axis=0) <= TIE_RTOL * scale))


def mc_predictive(
    ll: np.ndarray, tail: bool = True, chains: int | None = None
) -> tuple[np.ndarray, float, np.ndarray]:
    """``(log mean_s p [m], variance of their sum, Pareto k [m])`` of a fold's ``ll [S, m]``
    (batch-means variance, or with ``chains`` the between-chain variance of ``ll`` given chain
    after chain; S = 1: exact, k −inf; k NaN unless ``tail``)."""
    from . import arviz as adz

    ll = np.asarray(ll, np.float64)
    lme = scipy.special.logsumexp(ll, axis=0) - np.log(len(ll))
    if len(ll) == 1:
        return lme, 0.0, np.full(ll.shape[1], -np.inf)
    ratio = np.exp(ll - lme).sum(1)  # Σᵢ p_is / p̄ᵢ per draw
    # the variance of its mean by batch means (2+ per batch), or between the chains' means
    b = min(BATCHES, len(ratio) // 2) if chains is None else min(int(chains), len(ratio))
    if b < 2:
        var = float(np.var(ratio) / len(ratio))
    else:
        var = float(np.var([part.mean() for part in np.array_split(ratio, b)], ddof=1) / b)
    if not tail:
        return lme, var, np.full(ll.shape[1], np.nan)
    with warnings.catch_warnings():  # judged by the caller, against the S-dependent threshold
        warnings.simplefilter("ignore")
        k = adz.psis_log_weights(ll.T)[1]
    return lme, var, np.asarray(k)


def monte_carlo_reason(pareto: np.ndarray, num_draws: int, what: str) -> str | None:
    """Why a Monte-Carlo average over ``num_draws`` draws cannot be trusted (None when it
    can): too few draws to fit a Pareto tail at all (:data:`.arviz.MIN_TAIL`; k = inf, plain
    weights: its reliability is unknown), or Pareto k of ``what`` above
    :func:`k_threshold` (an average of infinite variance: biased, its error not estimable)."""
    k = np.asarray(pareto, np.float64)
    k = k[~np.isnan(k)]
    if tail_size(num_draws) < MIN_TAIL:
        return (
            f"too few draws ({num_draws}) to fit a Pareto tail to {what} (fewer than "
            f"{MIN_TAIL} tail draws; k = inf and plain weights): its reliability is unknown"
        )
    threshold = k_threshold(num_draws)
    if np.all(k <= threshold):
        return None
    bad = int(np.sum(~(k <= threshold)))
    return f"{bad} of {len(k)} Pareto k of {what} above {threshold:.2f} (max {np.max(k):.2f})"


def _p_kfold(post, targets: np.ndarray, elpd: np.ndarray, tau, num_draws=None, seed=0) -> float:
    """``p = Σᵢ log p(tᵢ | T) − elpd`` (the effective number of parameters, as ``loo``'s
    ``p_kfold``) with ``post``'s own predictive of every target given all of them: closed form
    where it has one, else as the K-fold rows score a fold (Rao-Blackwellized or
    Monte-Carlo); NaN without ``post``."""
    if post is None:
        return float("nan")
    if has_closed_form(post):
        lppd = closed_form_heldout(post, None, targets, targets, tau)
    else:
        lppd = mc_predictive(_heldout_ll(post, targets, targets, seed, num_draws)[0])[0]
    return float(np.sum(lppd) - np.sum(elpd))


def _auto(post, recipe) -> tuple[str, str | None]:
    """``estimator="auto"``'s first choice for one candidate: ``("exact", None)``, ``("psis",
    None)`` (subject to its Pareto k), or ``("kfold", why)``."""
    if has_closed_form(post):
        return "exact", None
    why = psis_unavailable(post) or data_chosen(post, recipe)
    return ("kfold", why) if why else ("psis", None)


#: what every row of a comparison estimates
QUANTITY = "Σᵢ log p(tᵢ | ·) of the targets as given (a density in R^d)"


@limited_blas
def estimate_table(
    candidates: dict, targets, *, estimator="auto", tau=None, folds=10, num_draws=None, seed=0
) -> tuple[dict, dict, str]:
    """One consistent estimator over a comparison: ``({name: Estimate}, {name: InferenceData},
    note)`` of ``candidates {name: (kind, recipe, posterior)}`` (module docstring).

    Under ``"auto"`` every row estimates the same quantity: exact and PSIS rows are both the
    leave-one-out ELPD, so they stay together; once any candidate needs refits (its PSIS is
    unavailable or unreliable), every candidate is scored by K-fold on the same folds, the
    closed-form ones by their closed-form fold predictive.  A named estimator applies to all.
    ``note`` says which of these the table is and why."""
    loo: dict[str, Estimate] = {}
    idata, plan = {}, {}
    for name, (kind, recipe, post) in candidates.items():
        if estimator == "exact" and not has_closed_form(post):
            raise AnchorDivError(
                f"estimator='exact': candidate {name!r}, a {'custom ' * post.custom_model}{kind} "
                "model, has no closed-form predictive; use 'kfold' or 'auto'"
            )
        if estimator == "psis":
            why = psis_unavailable(post) or data_chosen(post, recipe)
            if why is not None:
                raise AnchorDivError(f"estimator='psis': not usable here: {why}")
        plan[name] = _auto(post, recipe) if estimator == "auto" else (estimator, None)
    if estimator in ("auto", "psis") and all(e != "kfold" for e, _ in plan.values()):
        for name, (e, _) in plan.items():
            if e != "psis":
                continue
            kind, recipe, post = candidates[name]
            loo[name], data = psis_loo(post, targets, num_draws, seed)
            why = loo[name].unreliable
            if estimator == "auto" and why is not None:
                plan[name] = ("kfold", why)
                break  # every candidate is K-fold now: no more PSIS to compute
            if data is not None:
                idata[name] = data
    need = {name: why for name, (e, why) in plan.items() if e == "kfold"}
    if need:
        first = next(iter(need))
        note = "K-fold for every candidate, on the same folds"
        if estimator == "auto" and len(need) < len(plan):
            note += (
                f": {first!r} needs refits ({need[first]}), and K-fold's ELPD (each target scored "
                "given the n(1 − 1/K) targets outside its fold) is not the leave-one-out one of "
                "the other estimators"
            )
        loo, idata = {}, {}
        for name, (kind, recipe, post) in candidates.items():
            why = need.get(name) or (
                "requested" if estimator == "kfold" else f"one estimator: {first!r} needs refits"
            )
            if recipe is None and not has_closed_form(post):
                raise AnchorDivError(
                    f"priors: {f'candidate {name!r}' if name else 'the candidate'} is an adapted "
                    f"Posterior and the comparison needs K-fold refits ({why}); pass it as "
                    f"broad anchors or an options dict so it can be refit"
                )
            t = post.tau if tau is None else tau
            loo[name] = kfold_loo(kind, recipe, targets, t, folds, num_draws, seed, why, post=post)
        return loo, idata, f"{note}; every row is {QUANTITY}"
    for name, (e, _) in plan.items():
        if e == "exact":
            loo[name] = exact_loo(candidates[name][2], targets, candidates[name][1])
    kinds = sorted({loo[name].estimator for name in candidates})
    if kinds == ["exact", "psis"]:
        note = (
            "exact and PSIS rows both estimate the leave-one-out ELPD Σᵢ log p(tᵢ | T₋ᵢ) (PSIS "
            "accepted only with every Pareto k below its threshold, to Monte-Carlo error), so "
            "the table is comparable"
        )
    else:
        note = f"one estimator for every candidate: {kinds[0]}"
    return {name: loo[name] for name in candidates}, idata, f"{note}; every row is {QUANTITY}"


# ---- comparison ----------------------------------------------------------------------------


def stacking_weights(pointwise: np.ndarray) -> np.ndarray:
    """Stacking weights (Yao et al. 2018) from pointwise ELPDs ``[n, K]``: the w on the simplex
    maximising ``Σᵢ log Σ_k w_k exp(elpd_ik)``, in log space.  Verified by its optimality
    condition (``mean_i p_ik ≤ 1``, = 1 where ``w_k > 0``); NaN weights and a warning that
    says why when it fails."""
    lpd = np.asarray(pointwise, np.float64)
    n, k = lpd.shape
    if k == 1:
        return np.ones(1)
    lpd = lpd - lpd.max(1, keepdims=True)  # per-anchor shift: same optimum

    def parts(z):
        logw = z - scipy.special.logsumexp(z)
        mix = lpd + logw  # [n, K]
        total = scipy.special.logsumexp(mix, axis=1)  # [n]
        ratio = np.exp(lpd - total[:, None]).mean(0)  # ∂/∂w_k of the mean log score
        return -total.sum(), -ratio * np.exp(logw) * n + n * np.exp(logw), ratio

    res = scipy.optimize.minimize(
        lambda z: parts(z)[:2],
        np.zeros(k),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 1000, "gtol": 1e-10},
    )
    w = np.exp(res.x - scipy.special.logsumexp(res.x))
    ratio = parts(res.x)[2]
    # KKT on the simplex: ratio_k ≤ 1 everywhere, = 1 where the weight is not zero
    gap = np.concatenate([ratio - 1, np.abs(ratio - 1)[w > 1e-4]])
    cond = float(gap.max()) if np.all(np.isfinite(ratio)) else np.inf
    if not np.all(np.isfinite(w)) or cond > 1e-3:
        warnings.warn(
            f"stacking did not reach its optimum ({res.message}; optimality gap "
            f"{cond:.2g}): weights are NaN",
            stacklevel=user_stacklevel(),
        )
        return np.full(k, np.nan)
    return w


def comparison_table(loo: dict):
    """az.compare's layout from ``{name: Estimate}``, best first, plus ``estimator``/``note``.

    Only reliable rows are ranked (:attr:`Estimate.reliable`): they come first, best first,
    with their stacking weights; an unreliable row follows with rank and weight NaN (no
    weight at all when fewer than two rows are reliable).  ``dse`` adds the two rows'
    Monte-Carlo errors (``mcse``) to the paired standard error."""
    import pandas as pd

    lens = {len(e.pointwise) for e in loo.values()}
    if len(lens) != 1:
        raise AnchorDivError("priors: candidates were scored on different numbers of targets")
    names = sorted(loo, key=lambda n: (not loo[n].reliable, -loo[n].elpd))
    ranked = [n for n in names if loo[n].reliable]
    best = loo[names[0]]
    weights = dict.fromkeys(names, float("nan"))
    if len(ranked) >= 2 or (ranked and len(ranked) == len(names)):
        weights.update(
            zip(ranked, stacking_weights(np.stack([loo[n].pointwise for n in ranked], 1)))
        )
    rows = []
    for i, name in enumerate(names):
        e = loo[name]
        diff = best.pointwise - e.pointwise
        mc = best.mcse**2 + e.mcse**2 if name != names[0] else 0.0
        rows.append(
            {
                "rank": float(i) if e.reliable else float("nan"),
                "elpd_loo": e.elpd,
                "p_loo": e.p_loo,
                "elpd_diff": float(diff.sum()),
                "weight": float(weights[name]),
                "se": float(np.sqrt(e.se**2 + e.mcse**2)),
                "dse": float(np.sqrt(len(diff) * np.var(diff) + mc)),
                "mcse": e.mcse,
                "warning": bool(
                    not e.reliable
                    or (e.pareto_k is not None and np.any(~(e.pareto_k <= e.threshold)))
                ),
                "scale": "log",
                "estimator": e.estimator,
                "note": e.note,
            }
        )
    return pd.DataFrame(rows, index=names)


#: what makes an unreliable Monte-Carlo row comparable
REMEDY = (
    "a family with a closed-form or Rao-Blackwellized predictive (gaussian; mixture), exact "
    "refits (estimator='kfold' on such a family), or a smaller d (subspace=) where the "
    "Monte-Carlo predictive's Pareto k stay below the threshold; more draws rarely help"
)


def unreliable_message(loo: dict) -> str | None:
    """The warning of a comparison with unreliable rows (None without): the rows, why, and
    what would make them comparable (:data:`REMEDY`)."""
    bad = {n: e.unreliable for n, e in loo.items() if not e.reliable}
    if not bad:
        return None
    rows = "; ".join(f"{n or 'the candidate'!r} ({why})" for n, why in bad.items())
    return (
        f"compare_priors: {len(bad)} of {len(loo)} rows cannot be ranked — their Monte-Carlo "
        f"estimate is unreliable: {rows}. They have no rank and no weight"
        + (" (nor has any row: fewer than two are reliable)" if len(loo) - len(bad) < 2 else "")
        + f". To compare them: {REMEDY}"
    )


@limited_blas
def compare_priors(
    priors: dict,
    targets,
    *,
    kind: str | None = None,
    tau: float | None = None,
    estimator: str = "auto",
    folds: int = 10,
    num_draws: int | None = None,
    seed: int = 0,
    normalize: bool = False,
    plot=None,
    **options,
) -> PriorComparison:
    """Compare candidate priors by the leave-one-out ELPD of the targets (module docstring).

    Each candidate is adapted to the same targets and scored by its LOO expected log predictive
    density; the table ranks them with stacking weights, in ``az.compare``'s layout.

    Parameters
    ----------
    priors : dict of str to candidate
        Each candidate: broad anchors ``[N, d]``, a dict of :func:`anchordiv.adapt` options with
        the broad anchors under ``"broad"`` (and, optionally, its kind under ``"kind"``), or an
        adapted Posterior (on the same targets).  Candidates of different kinds — built-in or
        registered with ``ad.family`` — compare in one table.
    targets : array_like, shape [n, d]
        The target anchors.
    kind : str, optional
        The kind of the candidates that do not say their own (broad anchors, a dict without
        ``"kind"``); a Posterior is always of its own kind.  Default: the kind of the Posterior
        candidates when they share one; otherwise such a candidate is an error.
    tau : float, optional
        As in :func:`anchordiv.adapt` (default: the encoder's, from the embeddings' provenance;
        it does not change an ELPD, only the adapted models).
    estimator : {"auto", "exact", "psis", "kfold"}, default "auto"
        "auto" keeps one quantity over the table: exact closed-form LOO where the posterior
        has one and PSIS where it is reliable (both the leave-one-out ELPD), or K-fold for
        every candidate on the same folds once any one needs refits (module docstring;
        ``result.note`` says which); a name applies to all.
    folds : int, default 10
        K of K-fold (``folds ≥ n`` is leave-one-out).
    num_draws : int, optional
        Posterior draws for PSIS and K-fold.
    seed : int, default 0
        Seed of the draws and of the K-fold partition.
    normalize : bool, default False
        Scale the target rows to unit norm once: every candidate is fitted to and scored on
        the same normalized targets (an adapted Posterior should have been fitted to them).
    plot : str or Path, optional
        Write :meth:`PriorComparison.plot` there.
    **options
        Passed to every :func:`anchordiv.adapt` call (e.g. ``kappa0``, ``nu0``).

    Returns
    -------
    PriorComparison
        ``table``, ``loo`` and ``idata`` per candidate, and the table's ``note``.

    Raises
    ------
    AnchorDivError
        ``priors`` is not a non-empty dict, an unknown estimator, a candidate whose kind is not
        known, a candidate with its own ``normalize``, or a candidate that cannot be adapted to
        the targets or scored by the estimator.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> cmp = ad.compare_priors({"broad": broad, "isotropic": {"broad": broad, "prior": "isotropic"}},
    ...                         broad[:5], kind="gaussian", tau=20.0, kappa0=5.0, nu0=10.0)
    >>> sorted(cmp.table.index), set(cmp.estimators.values())
    (['broad', 'isotropic'], {'exact'})
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    if not isinstance(priors, dict) or len(priors) < 1:
        raise AnchorDivError(
            "priors: a dict of name -> broad anchors / adapt options / "
            "Posterior, with at least one entry"
        )
    check_choice("estimator", estimator, ESTIMATORS)
    with one_warning_per_cause("this compare_priors call"):  # not one per refit
        loo, idata, note = _estimate_priors(
            priors, targets, kind, tau, estimator, folds, num_draws, seed, normalize, options
        )
    said = unreliable_message(loo)
    if said is not None:
        note += f"; unreliable rows not ranked: {', '.join(n for n in loo if not loo[n].reliable)}"
        warnings.warn(said, UserWarning, stacklevel=user_stacklevel())
    result = PriorComparison(comparison_table(loo), loo, idata, note)
    if plot is not None:
        result.plot(plot)
    return result


def _estimate_priors(
    priors, targets, kind, tau, estimator, folds, num_draws, seed, normalize, options
):
    """:func:`compare_priors`'s candidates fitted and scored: :func:`estimate_table`'s
    ``(loo, idata, note)``."""
    prov = provenance_of(targets)  # τ and encoder travel with the targets to every refit
    t = as_matrix("targets", targets).astype(np.float64)
    if normalize:
        t = unit_norm("targets", t, True)
    t = with_provenance(t, prov) if prov else t
    for name, c in priors.items():
        not_arviz(name, c)
    recipes = {name: _recipe(c, options) for name, c in priors.items()}
    kinds = candidate_kinds(priors, kind)
    broads = {f"broad anchors of {name!r}": r[0] for name, r in recipes.items() if r is not None}
    if broads:  # as adapt does: τ from the embeddings, one encoder for all of them
        tau = resolve_tau(tau, targets=t, **broads)
    candidates: dict = {}
    for name, c in priors.items():  # an adapted Posterior is itself, a recipe is fitted
        r = recipes[name]
        candidates[name] = (kinds[name], r, c if r is None else _fit(kinds[name], r, t, tau))
    return estimate_table(
        candidates, t, estimator=estimator, tau=tau, folds=folds, num_draws=num_draws, seed=seed
    )
