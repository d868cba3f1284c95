"""Anchor models (one file each) and :func:`fit`, the single entry point that builds them."""

from __future__ import annotations

import inspect

from ..errors import AnchorDivError, as_matrix, check_spread
from ..provenance import resolve_tau, unit_norm
from .base import MODEL_CLASSES, AnchorModel  # noqa: F401
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
def fit(
    kind: str, anchors, *, tau: float | None = None, normalize: bool = False, **options
) -> AnchorModel:
    """Fit an anchor model of ``kind`` to anchor embeddings.

    Anchors must hold at least 2 distinct rows and at most ``MAX_DUPLICATE_FRACTION`` (50 %) exact
    duplicates; rows that are not unit-norm give an :class:`AnchorDivWarning` (``normalize=True``
    normalises them instead).

    Parameters
    ----------
    kind : {"softmax", "gaussian", "latent-gaussian", "latent-spherical", "mixture"}
        The anchor model (:data:`KINDS`).
    anchors : array_like, shape [n, d]
        Floating-point anchor embeddings with unit-norm rows.
    tau : float, optional
        The encoder's logit scale (inverse temperature; CLIP ≈ 100, MiniLM 20).  When omitted it
        is taken from the anchors' provenance (embeddings from ``data.embed_texts`` or
        ``ad.load_embeddings`` record their encoder's logit scale); without either it is an error.
    normalize : bool, default False
        Scale the anchor rows to unit norm.
    **options
        Per kind: softmax ``weights`` ([n], default uniform) and ``pad`` (True: pad the anchors
        to a size bucket so refits reuse compiled code); gaussian ``reg`` (relative ridge of
        the covariance, 0); latent-gaussian ``rank`` or ``variance`` (explained variance that
        fixes the rank, default 0.95); latent-spherical ``rank``/``variance``/``radius`` (1);
        mixture ``components`` (4), ``seed`` (0, k-means++ seeding of EM), ``reg`` (1e-3),
        ``max_iter`` (200).

    Returns
    -------
    AnchorModel
        A :class:`Softmax`, :class:`Gaussian`, :class:`LatentGaussian`, :class:`LatentSpherical`
        or :class:`GaussianMixture`.

    Raises
    ------
    AnchorDivError
        Unknown ``kind`` or option, anchors that are not a finite float matrix, too few distinct
        rows, or no ``tau`` to be found.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> anchors = rng.normal(size=(8, 4))
    >>> anchors /= np.linalg.norm(anchors, axis=1, keepdims=True)
    >>> ad.fit("gaussian", anchors, tau=20.0)
    Gaussian(mean[4], factor[4, 4], tau=20)
    >>> ad.fit("latent-gaussian", anchors, tau=20.0, rank=2)
    LatentGaussian(mean[4], basis[4, 2], tau=20)
    """
    if kind not in FITTERS:
        raise AnchorDivError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    fitter = FITTERS[kind]
    allowed = [p for p in inspect.signature(fitter).parameters if p not in ("anchors", "tau")]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise AnchorDivError(
            f"{kind}: unknown option(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    a = check_spread("anchors", as_matrix("anchors", anchors))
    tau = resolve_tau(tau, anchors=anchors)
    return fitter(unit_norm("anchors", a, normalize), tau=tau, **options)


__all__ = [
    "AnchorModel",
    "AnchorMixture",
    "Gaussian",
    "GaussianMixture",
    "KINDS",
    "LatentGaussian",
    "LatentSpherical",
    "Softmax",
    "fit",
    "mix",
]
