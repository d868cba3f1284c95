"""The inputs of an inference run, validated once: the prior object, the method, the target
anchors (shape, duplicates, unit norm), the broad anchors and the logit scale τ (given, or the
one recorded with the anchors or with the prior's saved model).  :func:`.inference.infer` and
:meth:`.family.Family.update` both start here, then call the method's ``run``."""

from __future__ import annotations

import numpy as np

from ..errors import AnchorDivError, as_matrix, check_duplicates, check_spread
from ..provenance import resolve_tau, unit_norm, with_provenance
from .methods import Method
from .registry import is_prior


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
    return (
        with_provenance(
            np.zeros((1, prior.dim)), encoder=card.get("encoder"), logit_scale=card.get("tau")
        )
        if card
        else None
    )


def validated(
    prior, targets, method, *, tau: float | None, normalize: bool, broad
) -> tuple[np.ndarray, float, np.ndarray | None]:
    """``(targets [n, d], τ, broad [N, d] or None)`` checked for a run of ``method`` on
    ``prior``: what ``method.run`` takes.

    Raises
    ------
    AnchorDivError
        Not a prior object or a method, targets of the wrong dimension, empty or duplicated,
        broad anchors too few or all identical, or no τ."""
    if not is_prior(prior):
        raise AnchorDivError(
            f"prior: a prior object (ad.NIWPrior, ad.load_prior, ...), got {type(prior).__name__}"
        )
    if not isinstance(method, Method):
        raise AnchorDivError(f"method: ad.Exact(), ad.NUTS(...) or ad.SVI(...), got {method!r}")
    t = check_targets(targets, prior.dim)
    b = (
        None
        if broad is None
        else check_spread(
            "broad_anchors", as_matrix("broad_anchors", broad, min_rows=2, dim=prior.dim)
        )
    )
    named = {
        "target_anchors": targets,
        "broad_anchors": broad if broad is not None else prior_provenance(prior),
    }
    tau = resolve_tau(tau, **named)
    return unit_norm("target_anchors", t, normalize), tau, b


__all__ = ["check_targets", "prior_provenance", "validated"]
