"""Priors from disk: :func:`load_prior` reads a saved prior or turns a saved Gaussian anchor
model into the broad distribution of a prior (:func:`broad_from_model`: moment points whose
mean and covariance are the model's)."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np

from .._safeio import malformed
from .._tolerance import kept_spectrum
from ..anchors import Gaussian
from ..errors import AnchorDivError, as_matrix
from ..io import load_card, load_model, read_bundle, resolve_prior
from ..provenance import with_provenance
from ..threads import limited_blas
from .api import DEFAULT_KIND, build_prior, prior_options, resolve_family
from .posterior import family_of
from .protocol import Family


@limited_blas
def load_prior(
    path,
    kind: str = DEFAULT_KIND,
    *,
    targets=None,
    verify: bool = True,
    sha256: str | None = None,
    **strengths,
) -> Family:
    """A prior object from disk.

    Either a prior saved with ``prior.save(path)``, or a fitted Gaussian anchor model
    (``models/*``, the output of ``anchordiv build-prior`` / ``ad.save_model``), which becomes the
    broad distribution of a ``kind`` prior through :func:`broad_from_model`.  The model's card
    (encoder, τ, sources) and path are kept in ``prior.card``; its τ is the default of
    :func:`~anchordiv.infer`.  ``path`` may also name a shipped prior, short or full
    (``"wordnet-visual-art"``; see ``ad.shipped_priors()``).

    Parameters
    ----------
    path : str or Path
        A saved prior or model directory, or a shipped prior's name.
    kind : str, default "gaussian"
        The family to build from a saved model (gaussian or latent kinds; ignored for a saved
        prior, which knows its kind).
    targets : array_like, shape [n, d], optional
        Target anchors for the strengths chosen from data (``"auto"``).
    verify : bool, default True
        Check the arrays against the card's data hash and the card against its digest.
    sha256 : str, optional
        A pinned digest (``ad.bundle_digest(path)``; ``anchordiv priors`` prints the shipped
        ones'): a bundle with another one is refused.
    **strengths
        The kind's prior options (as in :func:`~anchordiv.adapt`, e.g. ``kappa0``, ``nu0``, ``rank``).

    Returns
    -------
    Family
        The prior object (e.g. :class:`NIWPrior`).

    Raises
    ------
    AnchorDivError
        ``path`` is not a saved bundle (or a malformed one), its digest differs from a pinned
        ``sha256``, ``kind="mixture"`` from a saved model (a mixture runs EM on the anchors
        themselves), invalid or unknown strengths, or strengths or ``targets`` given with a
        saved prior (which holds its own).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> rng = np.random.default_rng(0)
    >>> broad = rng.normal(size=(20, 4))
    >>> broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    >>> path = ad.save_model(ad.fit("gaussian", broad, tau=20.0),
    ...                      pathlib.Path(tempfile.mkdtemp()) / "broad")
    >>> prior = ad.load_prior(path, kappa0=5.0, nu0=10.0)
    >>> type(prior).__name__, prior.dim
    ('NIWPrior', 4)
    """
    path = resolve_prior(path)
    card = load_card(path)
    if card.get("type") == "prior":
        given = sorted(strengths) + (["targets"] if targets is not None else [])
        if given:  # they would be ignored: the saved prior holds its strengths
            raise AnchorDivError(
                f"{', '.join(given)}: {path} is a saved prior, which holds its own strengths; "
                f"load it without them (or build one from a saved model with them)"
            )
        arrays, card = read_bundle(path, verify=verify, sha256=sha256)
        with malformed(path, "prior"):
            if not isinstance(card.get("kind"), str):
                raise AnchorDivError(f"{path}: a saved prior's card needs a 'kind' (a family)")
            module = card.get("family_class_module")
            fam = family_of(card["kind"], module if isinstance(module, str) else None)
            meta = card["prior"]
            if not isinstance(meta, dict) or meta.get("family") != card["kind"]:
                raise AnchorDivError(f"{path}: the card's prior does not match its kind")
            prior = fam.from_arrays(arrays, meta)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check_loaded_prior(prior, card)
        return prior
    fam = resolve_family(kind)
    if fam.needs_anchors:
        raise AnchorDivError(f"kind: {fam.needs_anchors}")
    allowed = {*prior_options(fam), "prior"}
    unknown = sorted(set(strengths) - allowed)
    if unknown:
        raise AnchorDivError(
            f"{fam.kind}: unknown prior option(s) {', '.join(unknown)}; its options: "
            f"{', '.join(sorted(allowed))}"
        )
    broad = stand_in_anchors(load_model(path, verify=verify, sha256=sha256), card)
    t = None if targets is None else as_matrix("targets", targets, dim=broad.shape[1])
    prior = build_prior(fam, broad, t, **strengths)
    origin = json.dumps({"path": str(Path(path)), "card": card}, default=str)
    return dataclasses.replace(prior, origin=origin)  # type: ignore[type-var]


def check_loaded_prior(prior: Family, card: dict) -> None:
    """Refuse a loaded prior whose arrays could not be used (:meth:`Family.check_loaded`
    against the ``card``'s dimension)."""
    prior.check_loaded(card.get("dim"))


def stand_in_anchors(model, card: dict | None = None) -> np.ndarray:
    """:func:`broad_from_model` marked as a stand-in (provenance ``stand_in``: 2r points by
    construction, so :func:`~anchordiv.adaptation.api.check_anchors` does not read their
    count as swapped anchors), carrying the ``card``'s encoder and τ when given."""
    recorded = {}
    if card is not None:
        recorded = {"encoder": card.get("encoder"), "logit_scale": card.get("tau")}
    return with_provenance(
        broad_from_model(model), stand_in="moment points of a saved model", **recorded
    )


def broad_from_model(model) -> np.ndarray:
    """Anchors whose ML mean and covariance equal a saved Gaussian model's.

    The points μ ± √r·F[:, i] (Σ = F Fᵀ, F ``[d, r]`` without its zero columns — those whose
    squared norm is at most :data:`anchordiv._tolerance.SPECTRUM_RTOL` of the largest: a
    rank-deficient fit's would be one point twice, duplicates the anchor checks refuse).  The
    gaussian and latent families use
    only the broad mean and covariance, so these stand in exactly for the broad anchors a saved
    prior was fitted to (not for ``mixture``, which runs EM on the anchors).

    Parameters
    ----------
    model : Gaussian
        A fitted or loaded Gaussian anchor model.

    Returns
    -------
    numpy.ndarray, shape [2r, d]
        The stand-in anchors.

    Raises
    ------
    AnchorDivError
        ``model`` is not a Gaussian.

    Examples
    --------
    >>> from anchordiv.adaptation import broad_from_model
    >>> a = np.eye(4)
    >>> pts = broad_from_model(ad.fit("gaussian", a, tau=20.0))   # 4 points: a rank-3 fit
    >>> pts.shape, bool(np.allclose(pts.mean(0), a.mean(0)))
    ((6, 4), True)
    """
    if not isinstance(model, Gaussian):
        raise AnchorDivError(f"broad prior: expected a saved gaussian model, got {model.kind}")
    mean, factor = np.asarray(model.mean), np.asarray(model.factor)
    # a zero column (relative to the largest, as the spectrum's tolerance) would be two duplicates
    factor = factor[:, kept_spectrum(np.einsum("ij,ij->j", factor, factor))]
    step = np.sqrt(factor.shape[1]) * factor.T
    return np.concatenate([mean + step, mean - step]).astype(mean.dtype)
