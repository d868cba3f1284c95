"""Adaptation curves: retrieval quality against the number of target anchors (docs/mathematics.md, "Evaluation").

For each budget n and each of ``n_subsets`` seeded target subsets (drawn with
``default_rng([seed, n, s])``, shared by all models: differences are paired), every model of
the registry builds a scorer from ``(broad [m, d], subset [n, d], tau)`` and is evaluated by
:func:`anchordiv.evaluation.evaluate`; a model undefined at a budget is recorded with
``auprc = NaN`` and its error.  Cell intervals are two-level percentile bootstraps over subsets
and queries.  :meth:`Curve.needs`: the smallest budget from which the mean AUPRC stays at or
above ``chance + fraction · (full − chance)`` (with a log-linear interpolation beside it)."""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import functools
import importlib
import inspect
import re
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
from ..progress import tqdm

from ..anchors import KINDS as ANCHOR_KINDS
from ..anchors import Gaussian, Softmax, fit
from ..retrieval.baselines import inversion
from ..errors import AnchorDivError, as_matrix, in_unit_interval, integer, user_stacklevel
from ..provenance import AnchorDivWarning, provenance_of, with_provenance
from .evaluate import bootstrap_interval, check_relevance, evaluate, write_json, write_rows
from ..threads import limited_blas

DEFAULT_BUDGETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
ROLES = ("target", "posterior", "isotropic", "baseline", "custom")

#: ``f(broad [m, d], target [n, d], tau) -> scorer`` (any scorer :func:`evaluate` accepts).
Factory = Callable[[np.ndarray, np.ndarray, float], object]


@dataclasses.dataclass(frozen=True)
class CurveModel:
    """A named model factory of :func:`adaptation_curve` plus what it is.

    Parameters
    ----------
    factory : callable
        ``f(broad [m, d], target [n, d], tau) -> scorer``.
    role : str, default "custom"
        One of :data:`ROLES`.
    kind : str, optional
        The anchor kind it builds (pairs posterior / isotropic-control / target-only models of
        the same kind).
    uses_target : bool, default True
        False marks scorers that ignore the target anchors (cosine): evaluated once.

    Examples
    --------
    >>> from anchordiv.evaluation import CurveModel
    >>> CurveModel(lambda b, t, tau: "cosine", role="baseline", uses_target=False).uses_target
    False
    """

    factory: Factory
    role: str = "custom"
    kind: str | None = None
    uses_target: bool = True


#: Entry-point group through which installed packages add curve models: each entry point's
#: name is the model name, its object a factory ``f(broad, target, tau)`` (or a CurveModel).
ENTRY_POINTS = "anchordiv.models"


def check_factory(name: str, factory) -> None:
    """An :class:`AnchorDivError` unless ``factory`` can be called as ``f(broad, target, tau)``."""
    if not callable(factory):
        raise AnchorDivError(
            f"model {name!r}: the factory must be callable "
            f"f(broad [m, d], target [n, d], tau) -> scorer, got "
            f"{type(factory).__name__}"
        )
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return
    try:
        signature.bind(None, None, None)
    except TypeError as err:
        raise AnchorDivError(
            f"model {name!r}: the factory must accept (broad [m, d], target [n, d], tau) and "
            f"return a scorer, but {getattr(factory, '__name__', 'it')}{signature} cannot be "
            f"called that way ({err})"
        ) from None


def register_model(
    name: str,
    factory: Factory,
    *,
    role: str = "custom",
    kind: str | None = None,
    uses_target: bool = True,
    overwrite: bool = False,
) -> CurveModel:
    """Add a model factory to :data:`MODELS` under ``name`` (usable in :func:`adaptation_curve`).

    Parameters
    ----------
    name : str
        The model's name.
    factory : callable
        ``f(broad [m, d], target [n, d], tau) -> scorer``; a factory of another signature is
        refused.
    role : {"target", "posterior", "isotropic", "baseline", "custom"}, default "custom"
        What the model is (:data:`ROLES`).
    kind : str, optional
        The anchor kind it builds (pairs posterior / isotropic / target-only models of a kind).
    uses_target : bool, default True
        False for scorers that ignore the target anchors (evaluated once).
    overwrite : bool, default False
        Replace a registered name.

    Returns
    -------
    CurveModel
        The registered entry.

    Raises
    ------
    AnchorDivError
        A factory of another signature, an unknown role, or an existing name without
        ``overwrite``.

    Examples
    --------
    >>> from anchordiv.evaluation.curves import MODELS
    >>> entry = ad.register_model("doc-target", lambda b, t, tau: ad.fit("gaussian", t, tau=tau),
    ...                           role="target", kind="gaussian")
    >>> entry.role, "doc-target" in MODELS
    ('target', True)
    >>> del MODELS["doc-target"]
    """
    check_factory(name, factory)
    if role not in ROLES:
        raise AnchorDivError(f"role: unknown {role!r}; choose one of {', '.join(ROLES)}")
    if name in MODELS and not overwrite:
        raise AnchorDivError(f"name: model {name!r} is already registered (pass overwrite=True)")
    MODELS[name] = CurveModel(factory, role, kind, uses_target)
    return MODELS[name]


def _target_only(kind, broad, target, tau):
    return fit(kind, target, tau=tau)


_POSTERIORS: collections.OrderedDict = collections.OrderedDict()


def curve_method(kind):
    """The inference method of a family's curve models: its ``curve_method`` hook
    (:mod:`anchordiv.checks.families`: the exact update where the family is conjugate, else
    a short NUTS run, unless the family declares its own)."""
    from ..adaptation.registry import get_family
    from ..checks.families import checks_of

    return checks_of(get_family(kind)).curve_method


def broad_posterior(kind, broad, target, tau):
    """``ad.adapt(kind, broad, target, prior="broad", method=...)`` with the kind's default
    strengths and its :func:`curve_method`, remembered for the last few inputs: the posterior
    model and its isotropic control both need it in the same grid cell."""
    from ..adaptation import adapt  # imported lazily so that the curves work without it
    from ..adaptation.statistics import digest

    key = (kind, float(tau), digest(broad), digest(target))
    if key not in _POSTERIORS:
        method = curve_method(kind)
        _POSTERIORS[key] = adapt(kind, broad, target, tau=tau, prior="broad", method=method)
        while len(_POSTERIORS) > 4:
            _POSTERIORS.popitem(last=False)
    return _POSTERIORS[key]


def adapted(kind, broad, target, tau):
    """The broad posterior's point model (:func:`broad_posterior`, ``point("mean")``)."""
    return broad_posterior(kind, broad, target, tau).point("mean")


def isotropic_control(kind, broad, target, tau):
    """The same prior strength as the broad posterior, isotropic prior covariance (same trace):
    the broad posterior's prior object's :meth:`~anchordiv.adaptation.protocol.Family.isotropic`
    control, updated by the same :func:`curve_method`, so strengths chosen by empirical Bayes
    carry over and only the prior covariance's shape differs."""
    from ..adaptation import infer

    prior = broad_posterior(kind, broad, target, tau).prior.isotropic()
    return infer(prior, target, curve_method(kind), tau=tau).point("mean")


def family_model(name: str) -> CurveModel | None:
    """``posterior-<kind>`` / ``isotropic-<kind>`` for any adaptation family in the registry,
    read live (a family registered from a user's module after import works too); None for
    other names."""
    from ..adaptation.registry import FAMILIES

    role, _, kind = name.partition("-")
    if role not in ("posterior", "isotropic") or kind not in FAMILIES:
        return None
    factory = adapted if role == "posterior" else isotropic_control
    return CurveModel(functools.partial(factory, kind), role, kind)


class Registry(collections.abc.MutableMapping):
    """The curve models by name: those registered with :func:`register_model` and, read live
    from the adaptation registry, ``posterior-<kind>`` and ``isotropic-<kind>`` of every
    family (:func:`family_model`; a family registered after import included).  A registered
    name wins over a family model of the same name."""

    def __init__(self):
        self._own: dict[str, CurveModel] = {}

    def __getitem__(self, name: str) -> CurveModel:
        model = self._own.get(name) or family_model(name)
        if model is None:
            raise KeyError(name)
        return model

    def __setitem__(self, name: str, model: CurveModel) -> None:
        self._own[name] = model

    def __delitem__(self, name: str) -> None:
        del self._own[name]

    def __iter__(self):
        from ..adaptation.registry import FAMILIES

        yield from self._own
        for kind in tuple(FAMILIES):
            for role in ("posterior", "isotropic"):
                if f"{role}-{kind}" not in self._own:
                    yield f"{role}-{kind}"

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"Registry({', '.join(self)})"


#: The registry: name -> :class:`CurveModel`.  Add your own with :func:`register_model`.
MODELS: Registry = Registry()

for _kind in ANCHOR_KINDS:
    register_model(_kind, functools.partial(_target_only, _kind), role="target", kind=_kind)
register_model("cosine", lambda broad, target, tau: "cosine", role="baseline", uses_target=False)
register_model(
    "inversion", lambda broad, target, tau: functools.partial(inversion, target), role="baseline"
)

#: the default models: the target-only softmax and Gaussian anchor models, the Gaussian's
#: posterior under the broad prior and its isotropic control, and the baselines
DEFAULT_MODELS = (
    Softmax.kind,
    Gaussian.kind,
    f"posterior-{Gaussian.kind}",
    f"isotropic-{Gaussian.kind}",
    "cosine",
    "inversion",
)


def budgets_for(n_target: int, budgets=None) -> list[int]:
    """Sorted budgets below ``n_target`` plus ``n_target`` itself ("all"); each budget a whole
    number ≥ 1 (a string such as ``"2,4"`` is an error, not a sequence of characters); given
    ``budgets`` all above ``n_target`` (the curve: the full count only) warn
    (:class:`AnchorDivWarning`)."""
    chosen = DEFAULT_BUDGETS if budgets is None else budgets
    if isinstance(chosen, (str, bytes)) or not np.iterable(chosen):
        raise AnchorDivError(f"budgets: expected a list of integers, got {chosen!r}")
    given = [integer("budgets", b, low=1) for b in chosen]
    out = sorted({b for b in given if b < n_target})
    above = sorted({b for b in given if b > n_target})
    if budgets is not None and above and not out:  # a grid reaching past some tasks is normal
        warnings.warn(
            f"budgets: {', '.join(map(str, above))} exceed the {n_target} target anchors and are "
            f"left out; the curve has the full count {n_target} only",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )
    return out + [n_target]


def _as_curve_model(name: str, obj) -> CurveModel:
    model = obj if isinstance(obj, CurveModel) else CurveModel(obj)
    check_factory(name, model.factory)
    return model


def resolve_model(spec: str) -> dict[str, CurveModel]:
    """``{name: model}`` for one model spec: a registered name (:data:`MODELS`), a name from an
    installed package's ``anchordiv.models`` entry point, ``module:function`` (a factory,
    named after the function; ``name=module:function`` names it) or ``module`` alone (imported
    so that its :func:`register_model` calls run: every model it registers)."""
    name, _, target = spec.rpartition("=") if "=" in spec else ("", "", spec)
    if target in MODELS and not name:
        return {target: MODELS[target]}
    if family_model(target) is not None:
        return {name or target: family_model(target)}
    if ":" in target:
        module, _, attr = target.partition(":")
        factory = getattr(_import(module, spec), attr, None)
        if factory is None:
            raise AnchorDivError(f"model {spec!r}: module {module!r} has no {attr!r}")
        return {name or attr: _as_curve_model(name or attr, factory)}
    from importlib.metadata import entry_points

    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINTS)}
    if target in plugins:
        return {name or target: _as_curve_model(name or target, plugins[target].load())}
    if "." in target or _importable(target):
        _import(target, spec)
        found = {n: m for n, m in MODELS.items() if _defined_in(m.factory) == target}
        if not found:
            raise AnchorDivError(
                f"model {spec!r}: module {target!r} registers no model "
                "(call anchordiv.register_model in it, or pass module:function)"
            )
        return found
    raise AnchorDivError(
        f"model {spec!r}: unknown; registered: {', '.join(MODELS)}"
        + (f"; from installed packages: {', '.join(plugins)}" if plugins else "")
        + ". Pass a factory f(broad, target, tau) as module:function, a module that calls "
        f"anchordiv.register_model, or install one under the {ENTRY_POINTS!r} entry points"
    )


def _defined_in(factory) -> str | None:
    """The module that defines ``factory`` (through ``functools.partial``)."""
    return getattr(getattr(factory, "func", factory), "__module__", None)


def _importable(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _import(module: str, spec: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise AnchorDivError(f"model {spec!r}: cannot import {module!r} ({err})") from None


def _resolve(models) -> dict[str, CurveModel]:
    if isinstance(models, dict):
        return {n: _as_curve_model(n, m) for n, m in models.items()}
    if isinstance(models, str):  # one name, or names separated by commas (as on the CLI)
        models = [m for m in models.split(",") if m]
    resolved = {n: m for spec in models for n, m in resolve_model(spec).items()}
    if not resolved:
        raise AnchorDivError("models: none given")
    return resolved


def subset(n_target: int, budget: int, index: int, seed: int) -> np.ndarray:
    """Row indices of target subset ``index`` of size ``budget`` (all rows at full budget)."""
    if budget >= n_target:
        return np.arange(n_target)
    rng = np.random.default_rng([seed, budget, index])
    return np.sort(rng.choice(n_target, size=budget, replace=False))


# ---- results -----------------------------------------------------------------------------


@dataclasses.dataclass
class Curve:
    """Results of :func:`adaptation_curve`.

    Parameters
    ----------
    models : dict of str to CurveModel
        The evaluated models.
    budgets : list of int
        The target-anchor counts.
    per_query : dict of (str, int) to numpy.ndarray, shape [S, Q]
        AUPRC per (model, budget): S subsets × Q queries, NaN where undefined.
    rows : list of dict
        The tidy table (model, role, kind, budget, subset, auprc, error).
    prevalence : float
        The mean random-ranking AUPRC of the evaluated queries.
    level : float, default 0.95
        Interval level of the summaries.
    n_boot : int, default 2000
        Bootstrap resamples.
    seed : int, default 0
        Bootstrap seed.

    Examples
    --------
    >>> from anchordiv.evaluation import Curve, CurveModel
    >>> pq = {("m", 2): np.array([[0.5, 0.7]]), ("m", 4): np.array([[0.6, 0.8]])}
    >>> curve = Curve({"m": CurveModel(lambda b, t, tau: "cosine")}, [2, 4], pq, [], 0.25,
    ...               n_boot=100)
    >>> [round(float(x), 2) for x in curve.means("m")]
    [0.6, 0.7]
    """

    models: dict[str, CurveModel]
    budgets: list[int]
    per_query: dict[tuple[str, int], np.ndarray]
    rows: list[dict]
    prevalence: float
    level: float = 0.95
    n_boot: int = 2000
    seed: int = 0

    def _defined(self, model: str, budget: int) -> np.ndarray:
        v = self.per_query[(model, budget)]
        return v[np.any(np.isfinite(v), axis=1)]  # subsets where the model was built

    def cell(self, model: str, budget: int) -> tuple[float, float, float]:
        """``(mean, low, high)`` over subsets and queries (two-level bootstrap)."""
        return self._interval(self._defined(model, budget))

    def _interval(self, v: np.ndarray) -> tuple[float, float, float]:
        if len(v) == 0:
            return (np.nan, np.nan, np.nan)
        return bootstrap_interval(v, level=self.level, n_boot=self.n_boot, seed=self.seed)

    def summary(self) -> list[dict]:
        """One row per (model, budget): mean AUPRC, interval, subsets used, prevalence."""
        return [
            {
                **_ident(name, m, b),
                **dict(zip(("auprc", "low", "high"), self.cell(name, b))),
                "n_subsets": len(self._defined(name, b)),
                "prevalence": self.prevalence,
            }
            for name, m in self.models.items()
            for b in self.budgets
        ]

    def means(self, model: str) -> np.ndarray:
        """``[len(budgets)]`` mean AUPRC (NaN where undefined)."""
        defined = (self._defined(model, b) for b in self.budgets)
        finite = [v[:, np.all(np.isfinite(v), axis=0)] for v in defined]  # with a relevant item
        return np.array([v.mean() if v.size else np.nan for v in finite])

    def contrast(self, a: str, b: str) -> list[dict]:
        """Paired difference ``a − b`` per budget (same subsets and queries), with interval."""
        out = []
        for budget in self.budgets:
            diff = self.per_query[(a, budget)] - self.per_query[(b, budget)]
            m, lo, hi = self._interval(diff[np.any(np.isfinite(diff), axis=1)])
            out.append({"budget": budget, "difference": m, "low": lo, "high": hi})
        return out

    def needs(self, fraction: float = 0.9, *, above_chance: bool = True) -> dict:
        """Budget each model needs to reach ``fraction`` of its full-coverage quality, and the
        posterior / isotropic-control / target-only comparisons (module docstring)."""
        in_unit_interval("fraction", fraction)
        chance = self.prevalence if above_chance else 0.0
        per_model = {n: _need(self.budgets, self.means(n), fraction, chance) for n in self.models}
        return {
            "fraction": fraction,
            "above_chance": above_chance,
            "chance": chance,
            "models": per_model,
            "comparisons": self._comparisons(per_model, fraction, chance),
        }

    def _comparisons(self, per_model: dict, fraction: float, chance: float) -> list[dict]:
        by_role = {(m.role, m.kind): n for n, m in self.models.items()}
        out = []
        for (role, kind), name in by_role.items():
            ref = by_role.get(("target", kind))
            if role not in ("posterior", "isotropic") or ref is None:
                continue
            full = per_model[ref]["full_auprc"]  # the target-only model's full-coverage mean
            common = _need(self.budgets, self.means(name), fraction, chance, full=full)
            need = per_model[ref]["budget_needed"]
            row = {
                "model": name,
                "reference": ref,
                "ratio_own": _ratio(need, per_model[name]["budget_needed"]),
                "budget_to_reference_level": common["budget_needed"],
                "ratio_reference_level": _ratio(need, common["budget_needed"]),
            }
            control = by_role.get(("isotropic", kind))
            if role == "posterior" and control is not None:
                row["minusisotropic_control"] = self.contrast(name, control)
            out.append(row)
        return out

    # ---- reading it -------------------------------------------------------------------------
    def table(self) -> str:
        """The results as a readable table: one row per model, one column per budget, cells
        ``mean [low, high]`` AUPRC (``—`` where the model is undefined at that budget)."""

        def cell(model, budget):
            mean, lo, hi = self.cell(model, budget)
            return "—" if not np.isfinite(mean) else f"{mean:.3f} [{lo:.2f}, {hi:.2f}]"

        head = ["model"] + [f"n={b}" for b in self.budgets]
        body = [[name] + [cell(name, b) for b in self.budgets] for name in self.models]
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *body]]
        title = f"mean AUPRC [{self.level:.0%} interval] by target anchors "
        title += f"(prevalence {self.prevalence:.3f})"
        return "\n".join([title, *lines])

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (
            f"Curve({len(self.models)} models x {len(self.budgets)} budgets "
            f"{self.budgets}, {len(self.rows)} cells, prevalence {self.prevalence:.3f})"
        )

    # ---- files ---------------------------------------------------------------------------
    #: the files :meth:`write` writes into its directory
    FILES = ("curve.csv", "curve_summary.csv", "needs.json", "curve.png")

    def write(
        self,
        out_dir,
        *,
        fraction: float = 0.9,
        title: str = "adaptation curve",
        overwrite: bool = False,
    ) -> dict:
        """Write ``curve.csv`` (tidy, per subset), ``curve_summary.csv`` (per model × budget),
        ``needs.json`` and ``curve.png`` into ``out_dir``; returns their paths.  If any of them
        exists already, nothing is written unless ``overwrite=True``."""
        from ..errors import check_output
        from ..plots import plot_curve

        out = Path(out_dir)
        for name in self.FILES:
            check_output(out / name, overwrite, file=True)
        summary = self.summary()
        paths = {
            "table": write_rows(out / "curve.csv", self.rows),
            "summary": write_rows(out / "curve_summary.csv", summary),
            "needs": write_json(out / "needs.json", self.needs(fraction)),
            "plot": plot_curve(summary, out / "curve.png", prevalence=self.prevalence, title=title),
        }
        return {k: str(v) for k, v in paths.items()}


def _ratio(a, b):
    return float(a / b) if a is not None and b is not None else None


def _need(budgets, means, fraction, chance, *, full=None) -> dict:
    """Smallest budget from which ``means`` stays ≥ the level, and its log-linear estimate."""
    b = np.asarray(budgets, np.float64)
    ok = np.isfinite(means)
    full = means[-1] if full is None else full
    names = ("level", "budget_needed", "budget_needed_interpolated")
    result = {"full_auprc": float(full), **dict.fromkeys(names)}
    if not np.isfinite(full):
        return result
    level = chance + fraction * (full - chance)
    result["level"] = float(level)
    meets = ok & (means >= level)
    fails = np.nonzero(ok & ~meets)[0]  # undefined budgets do not break a run
    start = fails[-1] + 1 if len(fails) else 0
    run = np.nonzero(meets[start:])[0]
    if len(run) == 0:
        return result
    first = start + run[0]
    result["budget_needed"] = int(b[first])
    result["budget_needed_interpolated"] = float(b[first])
    if len(fails):
        j = fails[-1]
        t = (level - means[j]) / (means[first] - means[j])
        result["budget_needed_interpolated"] = float(
            np.exp(np.log(b[j]) + t * np.log(b[first] / b[j]))
        )
    return result


# ---- the study ---------------------------------------------------------------------------


@limited_blas  # a cell on a Dask worker, or called on its own, keeps the cap too
def _evaluate_cell(models, broad, target, tau, queries, gallery, relevance, query_index, chunk):
    """Build each model on one target subset and evaluate them together: ``({name: [Q] |
    err}, prevalence [Q], {name: [(category, message), ...]})`` — the warnings each model's
    construction raised, kept so that the curve reports them once per model, not per cell."""
    scorers, errors, warned = {}, {}, {}
    for name, m in models.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                scorers[name] = m.factory(broad, target, tau)
            except AnchorDivError as err:
                errors[name] = str(err)
            except Exception as err:  # a user's factory failing: a NaN cell and one warning
                if m.role != "custom":
                    raise
                text = (str(err).strip().splitlines() or [""])[0]
                errors[name] = f"{type(err).__name__}: {text}" if text else type(err).__name__
                caught.append(_Raised(f"the factory raised {errors[name]}; the cell is NaN"))
        if caught:
            warned[name] = [
                (getattr(w, "category", AnchorDivWarning), str(w.message)) for w in caught
            ]
    opts = dict(query_index=query_index, baselines=(), chunk=chunk, progress=False)
    ev = evaluate(scorers, queries, gallery, relevance, **opts) if scorers else None
    return ({**(ev.per_query if ev else {}), **errors}, ev.prevalence if ev else None, warned)


@dataclasses.dataclass
class _Raised:
    """A user's factory that raised, reported like a warning it gave (one line per model)."""

    message: str


def _warn_per_model(outs, jobs) -> set:
    """One summary warning per model for the warnings its construction raised in any cell;
    returns the names warned about."""
    built = collections.Counter(name for models, _ in jobs for name in models)
    per_model: dict[str, list] = {}
    cells: collections.Counter = collections.Counter()
    for _, _, warned in outs:
        for name, caught in warned.items():
            per_model.setdefault(name, []).extend(caught)
            cells[name] += 1
    for name, caught in per_model.items():
        kinds = collections.Counter(re.sub(r"\d+(\.\d+)?", "#", m) for _, m in caught)
        common, count = kinds.most_common(1)[0]
        first = next(m for _, m in caught if re.sub(r"\d+(\.\d+)?", "#", m) == common)
        others = f"; and {len(kinds) - 1} other kind(s)" if len(kinds) > 1 else ""
        warnings.warn(
            f"model {name!r}: {len(caught)} warning(s) in {cells[name]} of {built[name]} "
            f"cells; most often ({count}x, numbers differing): {first}{others}",
            caught[0][0],
            stacklevel=user_stacklevel(),
        )
    return set(per_model)


def _failed_everywhere(results: dict, names, warned: set) -> None:
    """An :class:`AnchorDivError` when every model failed in every cell (nothing was
    evaluated), naming each model's first reason; otherwise one warning per model that failed
    in all its cells and was not reported already (its curve is empty)."""
    reasons = {}
    for name in names:
        values = [v for (n, _), vs in results.items() if n == name for v in vs]
        if values and all(isinstance(v, str) for v in values):
            reasons[name] = (len(values), " ".join(values[0].split()))
    if len(reasons) == len(names):
        detail = "; ".join(f"{n!r}: {why}" for n, (_, why) in reasons.items())
        raise AnchorDivError(f"models: no model could be built in any cell ({detail})")
    for name, (count, why) in reasons.items():
        if name not in warned:
            warnings.warn(
                f"model {name!r}: failed in all {count} cells, its curve is empty: {why}",
                AnchorDivWarning,
                stacklevel=user_stacklevel(),
            )


def frozen_broad(broad: np.ndarray, provenance: dict | None = None) -> np.ndarray:
    """The curve's own read-only copy of the broad anchors: every cell and model builds from
    the same array, so its digest and the prior factorisations derived from it are computed
    once per curve (:func:`anchordiv.adaptation.statistics.frozen`).  ``provenance`` (the caller's
    array's, which a checked copy loses) goes with it: moment points stay marked as stand-ins
    (``stand_in``), so the swapped-anchors check does not count them."""
    from ..adaptation.statistics import frozen  # the adaptation layer, loaded lazily

    return frozen(with_provenance(broad, provenance) if provenance else broad)


@limited_blas
def adaptation_curve(
    broad,
    target,
    queries,
    gallery,
    relevance,
    *,
    tau: float,
    query_index=None,
    models=DEFAULT_MODELS,
    budgets=None,
    n_subsets: int = 5,
    seed: int = 0,
    level: float = 0.95,
    n_boot: int = 2000,
    chunk: int | None = None,
    progress: bool | None = None,
    client=None,
) -> Curve:
    """Run the (budget × subset × model) grid: retrieval quality by the number of target anchors.

    For each budget, ``n_subsets`` random subsets of the target anchors of that size are drawn;
    every model is built from the broad anchors and the subset and evaluated on the task.

    Parameters
    ----------
    broad : array_like, shape [m, d]
        Broad anchors.
    target : array_like, shape [N, d]
        Target anchors (subsets are drawn from them).
    queries : array_like, shape [Q, d]
        Query embeddings.
    gallery : array_like, shape [G, d]
        Gallery embeddings.
    relevance : array_like of bool, shape [Q, G]
        Binary relevance.
    tau : float
        The encoder's logit scale.
    query_index : array_like of int, shape [Q], optional
        As in :func:`anchordiv.evaluate`.
    models : tuple of str, str or dict, default DEFAULT_MODELS
        Names in :data:`MODELS` (a single string: one name or comma-separated names) or a
        dict ``name -> factory | CurveModel``.
    budgets : list of int, optional
        Candidate target-anchor counts (default :data:`DEFAULT_BUDGETS`; the full count is
        always added).
    n_subsets : int, default 5
        Subsets per budget.
    seed : int, default 0
        Seed of the subsets and the bootstrap.
    level : float, default 0.95
        Interval level.
    n_boot : int, default 2000
        Bootstrap resamples.
    chunk : int, optional
        Query rows per block.
    progress : bool, optional
        Show a progress bar.
    client : distributed.Client, optional
        Run the cells on a Dask cluster (the queries, gallery and relevance are scattered to
        every worker once; each cell is one task; the table is identical to the serial run's,
        see :mod:`anchordiv.scale.dask`).

    Returns
    -------
    Curve
        ``per_query`` AUPRC per (model, budget), the tidy ``rows``, ``summary()``, ``plot()``.

    Raises
    ------
    AnchorDivError
        Invalid inputs or an unknown model name.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> gallery = rng.normal(size=(8, 4)) + np.repeat([[2.0, 0, 0, 0], [0, 0, 0, 0]], 4, axis=0)
    >>> gallery /= np.linalg.norm(gallery, axis=1, keepdims=True)
    >>> relevance = np.zeros((4, 8), bool)
    >>> relevance[:, :4] = True
    >>> curve = ad.adaptation_curve(broad, gallery[:4], gallery[:4], gallery, relevance, tau=20.0,
    ...                             query_index=np.arange(4), models=("gaussian", "cosine"),
    ...                             budgets=[2], n_subsets=2, n_boot=200, progress=False)
    >>> curve.budgets, sorted(curve.models)
    ([2, 4], ['cosine', 'gaussian'])
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    resolved = _resolve(models)
    target = as_matrix("target", target)
    broad = frozen_broad(as_matrix("broad", broad), provenance_of(broad))
    dims = {"broad": broad.shape[1], "target": target.shape[1]}
    if dims["broad"] != dims["target"]:  # the one the gallery disagrees with is named
        d = np.shape(gallery)[-1] if np.ndim(gallery) else None
        wrong, right = ("broad", "target") if dims["broad"] != d else ("target", "broad")
        also = " and the gallery" if d == dims[right] else ""
        raise AnchorDivError(
            f"{wrong}: dimension mismatch: d={dims[wrong]}, but the {right} anchors{also} "
            f"have d={dims[right]}"
        )
    n_subsets = integer("n_subsets", n_subsets, low=1)
    n_boot = integer("n_boot", n_boot, low=1)  # before the cells, not at the summary
    in_unit_interval("level", level)
    # before the cells: a single [d] query is one row, as in evaluate
    relevance = check_relevance(relevance, len(np.atleast_2d(queries)), len(gallery))
    grid = budgets_for(len(target), budgets)
    fixed = {n: m for n, m in resolved.items() if not m.uses_target}
    varying = {n: m for n, m in resolved.items() if m.uses_target}
    cells = [(b, s) for b in grid for s in range(1 if b == len(target) else n_subsets)]
    jobs = ([(fixed, target)] if fixed else []) + [
        (varying, target[subset(len(target), b, s, seed)]) for b, s in cells
    ]
    data = (queries, gallery, relevance, query_index, chunk)
    outs = _run_cells(jobs, broad, tau, data, client=client, progress=progress)
    warned = _warn_per_model(outs, jobs)
    fixed_out, prevalence = outs.pop(0)[:2] if fixed else ({}, None)
    results: dict[tuple[str, int], list] = {(n, b): [] for n in resolved for b in grid}
    rows = []
    for (b, s), (out, prev, _) in zip(cells, outs):
        prevalence = prev if prev is not None else prevalence
        for name in resolved:
            value = out.get(name, fixed_out.get(name))
            results[(name, b)].append(value)
            failed = isinstance(value, str)
            auprc = np.nan if failed else float(np.nanmean(value))
            cell = {"subset": s, "auprc": auprc, "error": value if failed else ""}
            rows.append(_ident(name, resolved[name], b) | cell)
    _failed_everywhere(results, list(resolved), warned)
    per_query = {
        k: np.stack([np.full(len(prevalence), np.nan) if isinstance(v, str) else v for v in vs])
        for k, vs in results.items()
    }
    prevalence = float(np.nanmean(prevalence[np.isfinite(prevalence)]))
    return Curve(resolved, grid, per_query, rows, prevalence, level, n_boot, seed)


def _run_cells(jobs, broad, tau, data, *, client, progress) -> list[tuple[dict, object]]:
    """:func:`_evaluate_cell` for each ``(models, target subset)`` job, in order: here, or one
    task per cell on ``client`` with ``data = (queries, gallery, relevance, query_index,
    chunk)`` scattered once."""
    if client is None:
        return [
            _evaluate_cell(models, broad, target, tau, *data)
            for models, target in tqdm(jobs, desc="curve", unit="cell", disable=progress is False)
        ]
    from ..scale.dask import connect, wait

    queries, gallery, relevance, query_index, chunk = data
    with connect(client) as cl:
        shared = cl.scatter(
            [np.asarray(queries), np.asarray(gallery), np.asarray(relevance)], broadcast=True
        )
        futures = [
            cl.submit(
                _evaluate_cell, models, broad, target, tau, *shared, query_index, chunk, pure=False
            )
            for models, target in jobs
        ]
        wait(futures, progress=progress is not False, desc="curve")
        return cl.gather(futures)


def _ident(name: str, m: CurveModel, budget: int) -> dict:
    """The columns that name a model's cell in :attr:`Curve.rows` and :meth:`Curve.summary`."""
    return {"model": name, "role": m.role, "kind": m.kind or "", "budget": budget}
