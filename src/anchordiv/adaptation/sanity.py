"""Warnings for fits whose result is not what a user would assume: a model that
never observes the targets (its "posterior" is the prior), and target-only fits with far fewer
targets than dimensions (the covariance or subspace is fit to n ≪ d points, with no prior
information to fill the other directions)."""

from __future__ import annotations

import warnings

from ..provenance import AnchorDivWarning
from ..errors import user_stacklevel


def warn_unobserved(trace: dict) -> None:
    """Warn when a traced model observes nothing.

    Parameters
    ----------
    trace : dict
        ``{site: {"type", "is_observed", ...}}`` (a NumPyro trace).

    Returns
    -------
    None
        Warns with :class:`~anchordiv.AnchorDivWarning` when no site is observed.
    """
    observed = [k for k, s in trace.items() if s["type"] == "sample" and s["is_observed"]]
    if not observed:
        warnings.warn(
            "model: no sample site observes the targets (no obs=targets), so the "
            "posterior is the prior: the targets change nothing",
            AnchorDivWarning,
            stacklevel=user_stacklevel(),
        )


def warn_target_only(info: dict, kind: str, n: int, d: int) -> None:
    """Warn for a target-only prior fitted to fewer targets than dimensions.

    A family says why a fit is target-only in its info, under ``"target_only"`` (< 1
    pseudo-anchor of covariance, latent ``beta = 1``).  Not for strengths the held-out recipe
    chose: it lowers them because the targets' held-out novelty says they span what retrieval
    needs (the prior still shapes the other directions), which is the point of the recipe, not
    an oversight.

    Parameters
    ----------
    info : dict
        The posterior's info (strengths, ``chosen_by``, ``target_only``).
    kind : str
        The family's kind (named in the warning).
    n : int
        Targets.
    d : int
        Dimension.

    Returns
    -------
    None
        Warns with :class:`~anchordiv.AnchorDivWarning` when it applies.
    """
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


__all__ = ["warn_target_only", "warn_unobserved"]
