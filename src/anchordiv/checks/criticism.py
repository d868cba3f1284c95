"""Model criticism: compare candidate priors by the leave-one-out predictive density of the
target anchors, ``elpd = Σᵢ log p(tᵢ | T₋ᵢ)``, with an estimator that is right at any d.

    result = ad.compare_priors({"strong": {"broad": broad, "kappa0": 50, "nu0": d + 100},
                                "isotropic": {"broad": broad, "prior": "isotropic"},
                                "mine": {"broad": broad, "kind": "my-family"},
                                "fitted": post},                  # an adapted Posterior
                               targets, kind="gaussian")          # τ from the provenance
    result.table          # elpd_loo, p_loo, elpd_diff, weight, se, dse, warning, estimator
    result.estimators     # {name: "exact" | "psis" | "kfold"}, result.notes says why
    result.note           # the estimator the rows share, and why they are comparable
    result.plot("compare.png")

Candidates may be of different kinds (built-in ones and a user's family registered with
``ad.family``): each is scored by its own model's density of the same targets in R^d, so every
row is in the same units.  A Posterior is of its own kind, a dict candidate may name its
``"kind"``, the others take the call's ``kind=``.

Estimators:

* ``"exact"`` — the Gaussian kind's default model (any method, any prior covariance): the
  closed-form NIW posterior predictive, a multivariate Student-t, for every held-out target.
  Strengths chosen from the targets (the held-out recipe, the default, or empirical Bayes)
  are re-chosen on every ``T₋ᵢ`` when the candidate is a recipe (broad anchors or an options
  dict), so the whole procedure is left out; for an already adapted Posterior they are held
  at the chosen values (said in the note).
* ``"psis"`` — Pareto-smoothed importance sampling (Vehtari, Gelman & Gabry 2017) over the
  posterior draws, accepted only when every Pareto k is below ArviZ's sample-size-dependent
  threshold ``min(1 − 1/log10(S), 0.7)`` (:func:`k_threshold`).  SVI fits are importance-
  weighted against the model's posterior first (``log p(T, θ) − log q(θ)``, the approximate-
  posterior correction), so a poor guide shows up as high k instead of a biased ELPD.  The
  latent Gaussian kind qualifies: its pointwise likelihood ``log p(tᵢ | T₋ᵢ, U)`` integrates
  the PPCA mean out, so it is leave-one-out-correct.  Not used where the family says its
  draws are not the Bayes posterior of that likelihood under a prior its refits keep (the
  ``psis_caveat`` of :mod:`.families`: latent spherical, posterior-like; a latent Gaussian
  with a fixed β or a tempered likelihood), where the prior was chosen on the targets, nor
  for a delta guide (a point has no density).
* ``"kfold"`` — K-fold cross-validation on ``folds`` (10) folds, the same partition for every
  candidate.  A model with a closed-form predictive scores each fold by it (no draws: with K
  = n it is the exact LOO); any other is refit on the training folds and scored by the
  Monte-Carlo predictive ``log mean_s p(tᵢ | θ_s)`` over each refit's draws, which is biased
  low (Jensen) by an amount that grows with d: its Pareto k per target is reported and set
  the ``warning`` column (:func:`kfold_loo`).  It needs the recipe (an adapted Posterior
  without a closed form cannot be refit: an error).

``estimator="auto"`` gives every row the same quantity (:func:`estimate_table`): each
candidate's first choice is exact, else PSIS (if its Pareto k are all below the threshold),
else K-fold.  Exact and PSIS rows are both the leave-one-out ELPD and stay together; once any
candidate needs K-fold, every candidate is scored by K-fold on the same folds, since a
K-fold ELPD (each target predicted from n(1 − 1/K) others) is not a leave-one-out one.

At d ≳ 32 PSIS fails for these models (a Student-t predictive moves a lot when one target is
left out, so the importance ratios have infinite variance; k > 1 at d = 64): the exact and
K-fold estimators are what make the ranking right there.  Stacking weights (Yao et al. 2018)
are computed in log space from the pointwise ELPDs; a stacking that does not reach its
optimum gives NaN weights and a warning, never made-up ones.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.optimize
import scipy.special

from ..errors import AnchorDivError, as_matrix, integer, user_stacklevel
from ..provenance import provenance_of, resolve_tau, unit_norm, with_provenance
from .._tolerance import DOUBLING_SE
from .arviz import MIN_TAIL, tail_size
from .families import checks_of
from .uncertainty import inference_data
from ..threads import limited_blas

#: the largest Pareto k threshold (ArviZ's, for S ≥ 2200 draws)
K_THRESHOLD = 0.7
ESTIMATORS = ("auto", "exact", "psis", "kfold")
#: guide draws of an SVI importance sample when ``num_draws`` is not given (K-fold refits
#: draw :func:`~.uncertainty.default_draws`: 200, fewer where draws are costly)
SVI_DRAWS = 1000
#: options of the inference method (not of the prior): dropped for the exact refits
INFERENCE_OPTIONS = {
    "method",
    "model",
    "model_kwargs",
    "subspace",
    "seed",
    "progress",
    "init_strategy",
    "x64",
    "num_samples",
    "num_warmup",
    "num_chains",
    "target_accept_prob",
    "dense_mass",
    "max_tree_depth",
    "chain_method",
    "guide",
    "guide_rank",
    "optimizer",
    "learning_rate",
    "lr_decay",
    "num_steps",
    "num_particles",
    "convergence_window",
    "convergence_tol",
}


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
    #: why the estimate cannot be ranked (None: it can) — its Monte-Carlo average is not
    #: trustworthy (Pareto k above the threshold, or too few draws to fit a tail)
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
        return {
            n: int(np.sum(e.pareto_k > e.threshold))
            for n, e in self.loo.items()
            if e.pareto_k is not None
        }

    def plot(self, path=None):
        """ELPD comparison (:func:`elpd_panel`, estimator per candidate in the labels) beside
        the Pareto k of the Monte-Carlo candidates (:attr:`pareto_k`); saved to ``path`` when
        given."""
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.6 * len(self.loo) + 2.2))
        elpd_panel(ax1, self.table.rename(index=lambda n: f"{n} ({self.loo[n].estimator})"))
        ax1.set_title("leave-one-out ELPD of the target anchors")
        for i, (name, k) in enumerate(self.pareto_k.items()):
            ax2.scatter(
                np.arange(len(k)),
                k,
                s=12,
                color=f"C{i}",
                label=f"{name} ({self.high_k[name]} > {self.loo[name].threshold:.2f})",
            )
            ax2.axhline(self.loo[name].threshold, color=f"C{i}", lw=0.8, ls="--")
        if self.pareto_k:
            ax2.legend(fontsize=8)
        else:
            ax2.text(
                0.5,
                0.5,
                "no Monte-Carlo estimate",
                ha="center",
                va="center",
                transform=ax2.transAxes,
            )
        ax2.set_xlabel("target anchor")
        ax2.set_ylabel("Pareto k")
        # ELPDs of many targets are large numbers and anchors many: few ticks, no overlap
        from matplotlib.ticker import MaxNLocator

        ax1.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax2.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        from ..plots import finish

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
    """Each candidate's kind: a Posterior's own; a dict candidate's ``"kind"`` entry; else the
    call's ``kind``; else the one kind the Posterior candidates share.  An AnchorDivError naming
    the candidate where none of these says it."""
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
            out[name] = default = deprecated_default_kind(name, KINDS)
    return out


def deprecated_default_kind(name: str, kinds) -> str:
    """The kind of a candidate nothing names: :data:`~anchordiv.adaptation.DEFAULT_KIND`, with a
    :class:`DeprecationWarning` (an :class:`AnchorDivError` in 0.6.0)."""
    from ..adaptation import DEFAULT_KIND

    warnings.warn(
        f"compare_priors: the kind of candidate {name!r} is not named; it is taken to be "
        f"{DEFAULT_KIND!r}, which is deprecated and an error in 0.6.0 — pass kind= (the kind "
        f"of every candidate that does not say its own) or a 'kind' entry in its dict "
        f"(registered kinds: {', '.join(kinds)})",
        DeprecationWarning,
        stacklevel=user_stacklevel(),
    )
    return DEFAULT_KIND


def _fit(kind: str, recipe, targets: np.ndarray, tau):
    from ..adaptation import adapt

    broad, opts = recipe
    return adapt(kind, broad, targets, tau=tau, **opts)


def _posterior(candidate, recipe, kind: str, targets: np.ndarray, tau):
    """The candidate's posterior on all targets: an adapted Posterior itself, else its fit."""
    return candidate if recipe is None else _fit(kind, recipe, targets, tau)


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


def _niw(kwargs: dict):
    """The NIW prior of the Gaussian model's keyword arguments (``mu0, kappa0, nu0, psi0``)."""
    from ..adaptation.families import NIW

    return NIW(
        np.asarray(kwargs["mu0"], np.float64),
        float(kwargs["kappa0"]),
        float(kwargs["nu0"]),
        np.asarray(kwargs["psi0"], np.float64),
    )


#: what a note adds for an adapted Posterior whose data-chosen strengths cannot be re-chosen
HELD = " (data-chosen strengths held at the values chosen with all targets)"


def closed_form_heldout(post, recipe, train: np.ndarray, test: np.ndarray, tau) -> np.ndarray:
    """``log p(t | T_train)`` ``[m]`` of held-out targets ``test [m, d]``: the closed-form
    Student-t predictive of ``post``'s NIW model updated on ``train [n', d]``
    (:func:`has_closed_form`).  Strengths chosen on the targets are re-chosen on ``train`` when
    the candidate has a ``recipe`` (an exact refit of its prior), else held at ``post``'s."""
    from .diagnostics import predictive_logpdf

    if recipe is not None and _chosen_on_targets(post):
        broad, opts = recipe
        exact = {k: v for k, v in opts.items() if k not in INFERENCE_OPTIONS}
        kwargs = _fit(post.kind, (broad, exact), train, tau).model_kwargs
    else:
        kwargs = post.model_kwargs
    niw = _niw(kwargs).update(train)
    return np.array([predictive_logpdf(niw, x) for x in np.asarray(test, np.float64)])


def exact_loo(post, targets: np.ndarray, recipe) -> Estimate:
    """Closed-form Student-t LOO of the NIW model (module docstring): every ``log p(tᵢ | T₋ᵢ)``
    by :func:`closed_form_heldout` (one-point downdates of the scatter where the strengths are
    held)."""
    from .diagnostics import loo_pointwise

    eb = _chosen_on_targets(post)
    n = len(targets)
    if eb and recipe is not None and n > 1:
        out = np.array(
            [
                closed_form_heldout(
                    post, recipe, np.delete(targets, i, 0), targets[i : i + 1], post.tau
                )[0]
                for i in range(n)
            ]
        )
        return Estimate(
            out,
            "exact",
            "closed-form Student-t predictive; data-chosen strengths re-chosen on every T₋ᵢ",
            p_loo=_p_kfold(post, targets, out, post.tau),
        )
    note = "closed-form Student-t predictive of the NIW prior"
    if eb and n > 1:
        note += HELD
    out = loo_pointwise(_niw(post.model_kwargs), targets)
    return Estimate(out, "exact", note, p_loo=_p_kfold(post, targets, out, post.tau))


#: ``adapt`` options whose ``"auto"`` is chosen on the targets (the recipe, empirical Bayes;
#: the latent kinds' ``prior_anchors`` only together with ``beta="auto"``, otherwise it is the
#: constant default)
DATA_CHOSEN = ("kappa0", "nu0", "rank", "prior_anchors")


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
    opts = {**defaults, **recipe[1]}
    auto = [
        k
        for k in DATA_CHOSEN
        if k in defaults
        and isinstance(opts.get(k), str)
        and opts[k] == "auto"
        and (k != "prior_anchors" or opts.get("beta") == "auto")
    ]
    if auto:
        return (
            f"{', '.join(auto)} {'is' if len(auto) == 1 else 'are'} chosen on the targets "
            f"('auto'), so a refit on T₋ᵢ has another prior"
        )
    return None


def psis_unavailable(post) -> str | None:
    """Why PSIS cannot be used on ``post``'s draws (None when it can): the family's
    the ``psis_caveat`` of :mod:`.families`, or a delta guide."""
    caveat = checks_of(post.family_class).psis_caveat(post)
    if caveat is not None:
        return caveat
    if post.point_guide:
        return "a delta guide is a point: nothing to importance-sample"
    return None


def _svi_draws(post, targets, num: int, seed: int) -> np.ndarray:
    """``log p(tᵢ | θ_s)`` ``[S, n]`` and log weights ``[S]`` of fresh guide draws."""
    from ..adaptation.svi import guide_log_weights

    draws, lw = guide_log_weights(post, num, seed)
    draws = post.lift_draws(draws, np.random.default_rng(seed))  # a subspace run's lift
    return post.likelihood().log_density(draws, targets), lw


def psis_loo(post, targets: np.ndarray, num_draws: int | None, seed: int):
    """PSIS-LOO of ``post``'s draws: ``(Estimate, InferenceData or None)``; SVI draws are
    importance-weighted by ``log p − log q`` first."""
    from . import arviz as adz

    with warnings.catch_warnings():  # high k is judged below, against the S-dependent threshold
        warnings.simplefilter("ignore")
        if post.variational:
            ll, lw = _svi_draws(post, targets, num_draws or SVI_DRAWS, seed)
            logr, k = adz.psis_log_weights((lw[:, None] - ll).T)  # [n, S]
            pointwise = scipy.special.logsumexp(logr + ll.T, axis=1)
            # the self-normalised posterior predictive of every target given all of them
            lwn = lw - scipy.special.logsumexp(lw)
            lppd = scipy.special.logsumexp(lwn[:, None] + ll, axis=0)
            est = Estimate(
                pointwise,
                "psis",
                "PSIS over guide draws weighted by log p − log q "
                "(approximate-posterior correction)",
                np.asarray(k),
                k_threshold(len(lw)),
                float(np.sum(lppd - pointwise)),
                num_draws=len(lw),
            )
            return _judged(est), None
        idata = inference_data(post, num_draws=num_draws, seed=seed, targets=targets, prior=False)
        pointwise, k, p_loo = adz.loo(idata)
    sizes = idata["posterior"].sizes
    s = int(sizes["chain"] * sizes["draw"])
    est = Estimate(
        pointwise, "psis", f"PSIS over {s} posterior draws", k, k_threshold(s), p_loo, num_draws=s
    )
    return _judged(est), idata


def _judged(est: Estimate) -> Estimate:
    """``est`` with its reason to be unreliable (:func:`_psis_accepted`) set and noted."""
    why = _psis_accepted(est)
    if why is None:
        return est
    return dataclasses.replace(est, unreliable=why, note=f"{est.note}; {why}")


def kfold_parts(n: int, folds: int, seed: int) -> list[np.ndarray]:
    """The K-fold partition of ``n`` targets (K = min(folds, n)): the same for every candidate
    of a comparison."""
    if n < 2:
        raise AnchorDivError("kfold: cross-validation needs at least 2 target anchors")
    k = min(integer("folds", folds, low=2), n)
    return np.array_split(np.random.default_rng(seed).permutation(n), k)


def kfold_loo(
    kind: str,
    recipe,
    targets: np.ndarray,
    tau,
    folds: int,
    num_draws: int | None,
    seed: int,
    why: str,
    post=None,
) -> Estimate:
    """K-fold cross-validation: each fold's held-out targets scored given its training targets.

    Where ``post``'s model has a closed-form predictive (:func:`has_closed_form`) each fold is
    scored by it (:func:`closed_form_heldout`; no draws, so K = n is exact LOO); otherwise the
    candidate is refit on the training targets and each held-out ``t`` is scored by the
    Monte-Carlo predictive ``log mean_s p(t | θ_s)`` over S draws of the refit (S =
    ``num_draws``, default :func:`~.uncertainty.default_draws`).  That average is biased low (a
    log of a mean, Jensen) by an amount that grows with the tail of ``p(t | θ_s)``; its Pareto k
    per target is returned with ArviZ's threshold for S, and a note counts those above it.

    Parameters
    ----------
    kind : str
        The candidate's kind (of the refits).
    recipe : tuple or None
        ``(broad [N, d], adapt options)``; None for an adapted Posterior (closed form only).
    targets : numpy.ndarray, shape [n, d]
        The target anchors.
    tau : float
        τ of the refits.
    folds : int
        K (at most n).
    num_draws : int or None
        S of the Monte-Carlo predictive.
    seed : int
        Seed of the partition (:func:`kfold_parts`) and of the draws.
    why : str
        Why K-fold (the note).
    post : Posterior, optional
        The candidate's posterior on all targets.

    Returns
    -------
    Estimate
        ``pointwise [n]``; ``pareto_k [n]`` and its threshold for the Monte-Carlo predictive.
    """
    from .uncertainty import default_draws

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
    for test in parts:
        train = np.delete(targets, test, axis=0)
        if closed:
            out[test] = closed_form_heldout(post, recipe, train, targets[test], tau)
            continue
        fold = _fit(kind, recipe, train, tau)
        draws = LazyDraws(lambda fold=fold: fold.draws(seed, num_draws or default_draws(fold)))
        ll = _conditional_predictive(fold, draws, train, targets[test], seed)
        if ll is None:
            ll = fold.likelihood().log_density(dict(draws), targets[test])  # [S, m]
            out[test], mc_var, pareto[test] = mc_predictive(ll)
        else:  # few distinct values (ties): no Pareto tail to fit; the doubling check instead
            structured += 1
            out[test], mc_var, _ = mc_predictive(ll, tail=False)
            if len(ll) > 1:
                doubling += float(np.sum(out[test] - mc_predictive(ll[: len(ll) // 2], False)[0]))
        var += mc_var
        sizes.append(len(ll))
    if closed:
        held = HELD if recipe is None and _chosen_on_targets(post) else ""
        return Estimate(
            out,
            "kfold",
            f"{k}-fold ({why}); each fold scored by the closed-form Student-t predictive "
            f"given its training targets{held}",
            p_loo=_p_kfold(post, targets, out, tau),
        )
    exact = structured == k and all(s == 1 for s in sizes)
    if structured:
        how = (
            "the family's closed-form predictive"
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
        self._make, self._draws = make, None

    def _get(self) -> dict:
        if self._draws is None:
            self._draws = self._make()
        return self._draws

    def __getitem__(self, key):
        return self._get()[key]

    def __iter__(self):
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def _conditional_predictive(fold, draws: dict, train, test, seed: int) -> np.ndarray | None:
    """``log p(t | ·, T_train)`` ``[R, m]`` of the held-out ``test [m, d]`` by the family's
    ``conditional_predictive`` hook: exact (one row) or Rao-Blackwellized (one row per draw,
    in draw order); None where the family has no such hook, a user's model replaced the
    family's, or the run's prior is not the full-d model."""
    hook = checks_of(fold.family_class).conditional_predictive
    kw = fold.model_kwargs
    if hook is None or fold.custom_model or kw is None or fold.subspace is not None:
        return None
    return np.asarray(hook(kw, draws, train, test, np.random.default_rng(seed)), np.float64)


def mc_predictive(ll: np.ndarray, tail: bool = True) -> tuple[np.ndarray, float, np.ndarray]:
    """The Monte-Carlo predictive of one fold from ``ll [S, m]`` (``log p(tᵢ | ·_s)`` of its
    held-out targets): ``(log mean_s [m], variance of their sum, Pareto k [m])``.  The variance
    is the delta method's on ``Σᵢ p_is / p̄ᵢ`` (the targets of a fold share draws), by batch
    means (:func:`_batch_variance`: the draws may be a chain);
    one row (S = 1) is an exact value: variance 0, k −inf; k is NaN unless ``tail``."""
    from . import arviz as adz

    ll = np.asarray(ll, np.float64)
    lme = scipy.special.logsumexp(ll, axis=0) - np.log(len(ll))
    if len(ll) == 1:
        return lme, 0.0, np.full(ll.shape[1], -np.inf)
    ratio = np.exp(ll - lme).sum(1)  # Σᵢ p_is / p̄ᵢ per draw
    var = _batch_variance(ratio)
    if not tail:
        return lme, var, np.full(ll.shape[1], np.nan)
    with warnings.catch_warnings():  # judged by the caller, against the S-dependent threshold
        warnings.simplefilter("ignore")
        k = adz.psis_log_weights(ll.T)[1]
    return lme, var, np.asarray(k)


#: contiguous batches of the batch-means variance of a Monte-Carlo average
BATCHES = 10


def _batch_variance(x: np.ndarray) -> float:
    """The variance of the mean of ``x [S]`` by batch means (:data:`BATCHES` contiguous
    batches): honest for autocorrelated draws (a Gibbs or NUTS chain in its order) as for
    independent ones; the plain ``Var(x)/S`` below 2 draws per batch."""
    b = min(BATCHES, len(x) // 2)
    if b < 2:
        return float(np.var(x) / len(x))
    means = np.array([part.mean() for part in np.array_split(x, b)])
    return float(np.var(means, ddof=1) / b)


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
        from .uncertainty import default_draws

        draws = LazyDraws(lambda: post.draws(seed, num_draws or default_draws(post)))
        ll = _conditional_predictive(post, draws, targets, targets, seed)
        if ll is None:
            ll = post.likelihood().log_density(dict(draws), targets)
        lppd = mc_predictive(ll)[0]
    return float(np.sum(lppd) - np.sum(elpd))


def _auto(post, recipe) -> tuple[str, str | None]:
    """``estimator="auto"``'s first choice for one candidate: ``("exact", None)``, ``("psis",
    None)`` (subject to its Pareto k), or ``("kfold", why)``."""
    if has_closed_form(post):
        return "exact", None
    why = psis_unavailable(post) or data_chosen(post, recipe)
    return ("kfold", why) if why else ("psis", None)


def _psis_accepted(est: Estimate) -> str | None:
    """Why a PSIS estimate is not accepted (None when every Pareto k is below its threshold)."""
    why = monte_carlo_reason(est.pareto_k, est.num_draws, "the importance ratios")
    return None if why is None else f"PSIS unreliable: {why}"


#: what every row of a comparison estimates
QUANTITY = "Σᵢ log p(tᵢ | ·) of the targets as given (a density in R^d)"


@limited_blas
def estimate_table(
    candidates: dict,
    targets: np.ndarray,
    *,
    estimator: str = "auto",
    tau=None,
    folds: int = 10,
    num_draws: int | None = None,
    seed: int = 0,
) -> tuple[dict, dict, str]:
    """One consistent estimator over a comparison: ``({name: Estimate}, {name: InferenceData},
    note)`` of ``candidates {name: (kind, recipe, posterior)}`` (module docstring).

    Under ``"auto"`` every row estimates the same quantity: exact and PSIS rows are both the
    leave-one-out ELPD, so they stay together; once any candidate needs refits (its PSIS is
    unavailable or unreliable), every candidate is scored by K-fold on the same folds, the
    closed-form ones by their closed-form fold predictive.  A named estimator applies to all.
    ``note`` says which of these the table is and why.
    """
    if estimator not in ESTIMATORS:
        raise AnchorDivError(f"estimator: one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    loo: dict = {}
    idata: dict = {}
    plan: dict = {}
    for name, (kind, recipe, post) in candidates.items():
        if estimator == "exact" and not has_closed_form(post):
            raise AnchorDivError(
                f"estimator='exact': candidate {name!r}, a "
                f"{'custom ' * post.custom_model}{kind} model, has no "
                f"closed-form predictive; use 'kfold' or 'auto'"
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
        if estimator == "auto" and len(need) < len(plan):
            note = (
                f"K-fold for every candidate, on the same folds: {first!r} needs refits "
                f"({need[first]}), and K-fold's ELPD (each target scored given the "
                f"n(1 − 1/K) targets outside its fold) is not the leave-one-out one of the "
                f"other estimators"
            )
        else:
            note = "K-fold for every candidate, on the same folds"
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
            loo[name] = kfold_loo(
                kind,
                recipe,
                targets,
                tau if tau is not None else post.tau,
                folds,
                num_draws,
                seed,
                why,
                post=post,
            )
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


def estimate_loo(
    post,
    targets: np.ndarray,
    recipe,
    *,
    estimator: str = "auto",
    tau=None,
    folds: int = 10,
    num_draws: int | None = None,
    seed: int = 0,
):
    """``(Estimate, InferenceData or None)`` for one candidate (:func:`estimate_table` of a
    table of one)."""
    loo, idata, _ = estimate_table(
        {"": (post.kind, recipe, post)},
        targets,
        estimator=estimator,
        tau=tau,
        folds=folds,
        num_draws=num_draws,
        seed=seed,
    )
    return loo[""], idata.get("")


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
    ranked = sorted((n for n in loo if loo[n].reliable), key=lambda n: -loo[n].elpd)
    rest = sorted((n for n in loo if not loo[n].reliable), key=lambda n: -loo[n].elpd)
    names = ranked + rest
    best = loo[names[0]]
    weights = dict.fromkeys(names, float("nan"))
    if len(ranked) >= 2 or (ranked and not rest):
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
    if not isinstance(priors, dict) or len(priors) < 1:
        raise AnchorDivError(
            "priors: a dict of name -> broad anchors / adapt options / "
            "Posterior, with at least one entry"
        )
    if estimator not in ESTIMATORS:
        raise AnchorDivError(f"estimator: one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    prov = provenance_of(targets)  # τ and encoder travel with the targets to every refit
    t = as_matrix("targets", targets).astype(np.float64)
    if normalize:
        t = unit_norm("targets", t, True)
    t = with_provenance(t, prov) if prov else t
    recipes = {name: _recipe(c, options) for name, c in priors.items()}
    kinds = candidate_kinds(priors, kind)
    broads = {f"broad anchors of {name!r}": r[0] for name, r in recipes.items() if r is not None}
    if broads:  # as adapt does: τ from the embeddings, one encoder for all of them
        tau = resolve_tau(tau, targets=t, **broads)
    candidates = {
        name: (kinds[name], recipes[name], _posterior(c, recipes[name], kinds[name], t, tau))
        for name, c in priors.items()
    }
    loo, idata, note = estimate_table(
        candidates,
        t,
        estimator=estimator,
        tau=tau,
        folds=folds,
        num_draws=num_draws,
        seed=seed,
    )
    said = unreliable_message(loo)
    if said is not None:
        note += f"; unreliable rows not ranked: {', '.join(n for n in loo if not loo[n].reliable)}"
        warnings.warn(said, UserWarning, stacklevel=user_stacklevel())
    result = PriorComparison(comparison_table(loo), loo, idata, note)
    if plot is not None:
        result.plot(plot)
    return result


__all__ = [
    "ESTIMATORS",
    "Estimate",
    "K_THRESHOLD",
    "PriorComparison",
    "compare_priors",
    "comparison_table",
    "candidate_kinds",
    "closed_form_heldout",
    "estimate_loo",
    "estimate_table",
    "exact_loo",
    "k_threshold",
    "kfold_loo",
    "kfold_parts",
    "mc_predictive",
    "monte_carlo_reason",
    "psis_loo",
    "stacking_weights",
    "unreliable_message",
]
