"""What every run of a prior shares, below the inference methods: its inputs checked
(:func:`checked_inputs`), its start (:func:`start`: frozen targets, the method's inputs, the
``info`` every posterior reports) and the exact (conjugate) update itself
(:func:`exact_update`).  The family protocol (``Family.update``) and the methods
(:mod:`.methods`: ``Exact().run`` is :func:`exact_update`) both call these, so the protocol
imports no runner.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ..errors import AnchorDivError, as_matrix, check_duplicates, check_spread, user_stacklevel
from ..provenance import AnchorDivWarning, resolve_tau, unit_norm, with_provenance
from .posterior import ExactPosterior, exact_descriptions
from .registry import FAMILIES, is_conjugate
from .statistics import frozen


def is_prior(obj) -> bool:
    """Whether ``obj`` is a prior object of a registered family.

    Examples
    --------
    >>> from anchordiv.adaptation.update import is_prior
    >>> is_prior(ad.NIWPrior.from_anchors(np.eye(3), kappa0=1.0, nu0=5.0)), is_prior(np.eye(3))
    (True, False)
    """
    fam = FAMILIES.get(getattr(obj, "kind", None))
    return fam is not None and isinstance(obj, fam)


def check_targets(targets, d: int) -> np.ndarray:
    """Validated ``targets [n, d]`` (n ≥ 1; a single target is fine: the prior supplies the
    spread)."""
    t = np.asarray(targets)
    if t.size == 0 or (t.ndim == 2 and t.shape[0] == 0):
        raise AnchorDivError(
            "target_anchors: the target set is empty; adaptation needs at least one target anchor"
        )
    if t.shape[-1] != d:
        raise AnchorDivError(
            f"target_anchors: dimension mismatch: d={t.shape[-1]}, but the broad anchors have d={d}"
        )
    return check_duplicates("target_anchors", as_matrix("target_anchors", t, dim=d))


def prior_provenance(prior):
    """A stand-in carrying the encoder and τ of the saved model a prior was loaded from
    (``ad.load_prior``), so that τ defaults to it and a mismatched encoder is an error."""
    card = prior.card.get("card", {})
    if not card:
        return None
    return with_provenance(
        np.zeros((1, prior.dim)), encoder=card.get("encoder"), logit_scale=card.get("tau")
    )


def checked_inputs(
    prior, targets, *, tau: float | None, normalize: bool, broad
) -> tuple[np.ndarray, float, np.ndarray | None]:
    """``(targets [n, d], τ, broad [N, d] or None)`` checked for a run on ``prior``: what a
    method's ``run`` and :func:`exact_update` take."""
    if not is_prior(prior):
        raise AnchorDivError(
            f"prior: a prior object (ad.NIWPrior, ad.load_prior, ...), got {type(prior).__name__}"
        )
    t = check_targets(targets, prior.dim)
    b = broad if broad is None else as_matrix("broad_anchors", broad, min_rows=2, dim=prior.dim)
    b = b if b is None else check_spread("broad_anchors", b)
    source = broad if broad is not None else prior_provenance(prior)
    tau = resolve_tau(tau, target_anchors=targets, broad_anchors=source)
    return unit_norm("target_anchors", t, normalize), tau, b


def start(
    prior, targets: np.ndarray, broad, name: str, inputs: Callable
) -> tuple[np.ndarray, object, dict, dict]:
    """``(frozen targets, exact parameters or None, info, posterior fields)`` of a run of the
    method ``name`` whose ``inputs(prior, targets)`` gives ``(exact parameters or None, model
    kwargs, info, fixed)``."""
    t = frozen(targets)  # the update and the evidence share one scatter
    exact, kwargs, info, fixed = inputs(prior, t)
    info = run_info(prior, t, info, broad, name)
    return t, exact, info, dict(fixed={**fixed, "targets": t}, prior=prior, model_kwargs=kwargs)


def conjugate_inputs(prior, targets: np.ndarray) -> tuple[object, dict, dict, dict]:
    """:func:`exact_inputs` of a prior that has a closed-form update (else a clear error)."""
    if not is_conjugate(prior):
        raise AnchorDivError(
            f"method: the {prior.kind} prior has no closed-form update; use ad.SVI(...) or "
            f"ad.NUTS(...) (a family with one is ad.Conjugate: it defines exact)"
        )
    return exact_inputs(prior, targets)


def exact_update(
    prior, targets: np.ndarray, *, tau: float, broad: np.ndarray | None = None
) -> ExactPosterior:
    """The exact posterior of ``prior`` given checked ``targets [n, d]`` (:func:`checked_inputs`)
    at the logit scale ``tau``: ``ad.Exact().run``.

    Raises
    ------
    AnchorDivError
        The prior's family has no closed-form update.
    """
    t, params, info, fields = start(prior, targets, broad, "exact", conjugate_inputs)
    return ExactPosterior(prior.kind, "exact", tau, t.dtype.str, info, exact=params, **fields)


def exact_inputs(prior, targets: np.ndarray) -> tuple[object, dict, dict, dict]:
    """``(exact parameters, model kwargs, info, fixed)`` from the prior's conjugate update
    (``prior.exact``): a method's ``inputs`` where it uses that update."""
    params, info, fixed = prior.exact(targets)
    kwargs = info.pop("model_kwargs", None)
    return params, prior.prior_kwargs() if kwargs is None else kwargs, info, fixed


def run_info(prior, targets: np.ndarray, info: dict, broad, name: str) -> dict:
    """``info`` completed with what every posterior reports; warns where the fit is
    target-only."""
    info.update(
        kind=prior.kind,
        method=name,
        prior=prior.prior,
        d=prior.dim,
        n_broad=len(broad) if broad is not None else prior.broad_count(),
        n_targets=len(targets),
        **exact_descriptions(type(prior)),
    )
    warn_target_only(info, prior.kind, len(targets), prior.dim)
    if info["n_broad"] is None:
        del info["n_broad"]
    return info


def warn_target_only(info: dict, kind: str, n: int, d: int) -> None:
    """Warn for a target-only prior (``info["target_only"]`` says why) fitted to fewer targets
    than dimensions; not where the held-out recipe chose the strengths (its point)."""
    what = info.get("target_only")
    if what is None or n >= d or str(info.get("chosen_by", "")).startswith("held-out"):
        return
    warnings.warn(
        f"{kind}: a target-only fit ({what}) to n = {n} targets in d = {d} "
        f"dimensions: at most n − 1 directions are informed by data; the rest "
        f"come from the ridge — give the broad prior some weight",
        AnchorDivWarning,
        stacklevel=user_stacklevel(),
    )
