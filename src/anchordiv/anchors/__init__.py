"""Anchor models (one file each) and :func:`fit`, the single entry point that builds them."""

from __future__ import annotations

import inspect

from ..errors import AnchorDivError
from .base import MODEL_CLASSES, AnchorModel
from .empirical import Softmax, fit_softmax
from .gaussian import Gaussian, fit_gaussian
from .latent import LatentGaussian, LatentSpherical, fit_latent_gaussian, fit_latent_spherical
from .mix import AnchorMixture, mix
from .mixture import GaussianMixture, fit_mixture

#: kind -> fitting function ``f(anchors, *, tau, **options) -> AnchorModel``.
FITTERS = {
    "softmax": fit_softmax,
    "gaussian": fit_gaussian,
    "latent-gaussian": fit_latent_gaussian,
    "latent-spherical": fit_latent_spherical,
    "mixture": fit_mixture,
}
KINDS = tuple(FITTERS)


def fit(kind: str, anchors, *, tau: float = 100.0, **options) -> AnchorModel:
    """Fit an anchor model of ``kind`` to ``anchors [n, d]``.

    ``tau`` is the encoder's logit scale (inverse temperature; CLIP ≈ 100, MiniLM 20).
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
    return fitter(anchors, tau=tau, **options)


__all__ = ["AnchorModel", "AnchorMixture", "FITTERS", "Gaussian", "GaussianMixture", "KINDS",
           "LatentGaussian", "LatentSpherical", "MODEL_CLASSES", "Softmax", "fit", "mix"]
