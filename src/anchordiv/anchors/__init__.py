"""Anchor models (one file each) and :func:`fit`, the single entry point that builds them."""

from __future__ import annotations

import inspect

from ..errors import AnchorDivError, as_matrix, check_spread
from ..provenance import resolve_tau, unit_norm
from .base import MODEL_CLASSES, AnchorModel
from .empirical import Softmax, fit_softmax
from .gaussian import Gaussian, fit_gaussian
from .latent import LatentGaussian, LatentSpherical, fit_latent_gaussian, fit_latent_spherical
from .mixing import AnchorMixture, mix
from .mixture import GaussianMixture, fit_mixture
from ..threads import limited_blas

#: kind -> fitting function ``f(anchors, *, tau, **options) -> AnchorModel``.
FITTERS = {
    "softmax": fit_softmax,
    "gaussian": fit_gaussian,
    "latent-gaussian": fit_latent_gaussian,
    "latent-spherical": fit_latent_spherical,
    "mixture": fit_mixture,
}
#: The anchor-model kinds :func:`fit` accepts ("softmax", "gaussian", ...), in registry order.
KINDS = tuple(FITTERS)


@limited_blas
def fit(kind: str, anchors, *, tau: float | None = None, normalize: bool = False,
        **options) -> AnchorModel:
    """Fit an anchor model of ``kind`` to ``anchors [n, d]`` (float, unit-norm rows).

    ``tau`` is the encoder's logit scale (inverse temperature; CLIP ≈ 100, MiniLM 20).  When
    omitted it is taken from the anchors' provenance (embeddings from ``data.embed_texts`` or
    ``ad.load_embeddings`` record their encoder's logit scale); without either it is an error.
    Anchors must hold at least 2 distinct rows, at most ``MAX_DUPLICATE_FRACTION`` (50 %) exact
    duplicates; rows that are not unit-norm give a warning, ``normalize=True`` normalises them.
    Options per kind: softmax ``weights``; gaussian ``reg``; latent-gaussian ``rank`` or
    ``variance`` (default 0.95); latent-spherical ``rank``/``variance``/``radius``; mixture
    ``components`` (4), ``seed``, ``reg`` (1e-3), ``max_iter``.
    """
    if kind not in FITTERS:
        raise AnchorDivError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    fitter = FITTERS[kind]
    allowed = [p for p in inspect.signature(fitter).parameters if p not in ("anchors", "tau")]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise AnchorDivError(
            f"{kind}: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    a = check_spread("anchors", as_matrix("anchors", anchors))
    tau = resolve_tau(tau, anchors=anchors)
    return fitter(unit_norm("anchors", a, normalize), tau=tau, **options)


__all__ = ["AnchorModel", "AnchorMixture", "FITTERS", "Gaussian", "GaussianMixture", "KINDS",
           "LatentGaussian", "LatentSpherical", "MODEL_CLASSES", "Softmax", "fit", "mix"]
