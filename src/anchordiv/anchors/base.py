"""The one abstraction: an anchor model is a pytree that knows its cumulant ψ.

``ψ_q(θ) = log E_{a~q} exp(τ⟨a, θ⟩)`` (docs/mathematics.md, "Cumulant and divergence"); the divergence, top-k and MIPS export derive
from ψ in :mod:`anchordiv.retrieval.divergence`.  A model may add ``parameterize(θ)`` (the map
pulling its geometry back to ambient embeddings) and ``embed(θ)`` (a squared-Euclidean fast
path).  Models are frozen dataclasses registered as pytrees with every number (τ included) an
array leaf, so refitting never retraces jitted code."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, dataclass_transform

import jax
import jax.numpy as jnp
import numpy as np

#: kind name -> model class, filled by :func:`anchor_model`.
MODEL_CLASSES: dict[str, type[Any]] = {}


@dataclass_transform(frozen_default=True, eq_default=False)
def anchor_model(kind: str) -> Callable[[type[Any]], type[Any]]:
    """Class decorator: frozen dataclass + JAX pytree (all fields are leaves) + registry entry."""

    def wrap(cls: type[Any]) -> type[Any]:
        cls = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
        names = [f.name for f in dataclasses.fields(cls)]
        jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])
        cls.kind = kind
        MODEL_CLASSES[kind] = cls
        return cls

    return wrap


class AnchorModel:
    """Base class of every anchor model: a frozen JAX pytree that knows its cumulant ψ.

    ψ_q(θ) = log E_{a~q} exp(τ⟨a, θ⟩) (docs/mathematics.md, "Cumulant and divergence"); the divergence, the pairwise matrix and the
    MIPS keys of :mod:`anchordiv.retrieval` are derived from it.  Subclasses define ``cumulant``
    and carry a scalar array field ``tau``; they are built by :func:`fit` (or a class's
    ``from_*`` constructor) rather than by hand.

    Parameters
    ----------
    **fields : jax.Array
        The subclass's fields (every number, including ``tau``, is an array leaf).

    Examples
    --------
    >>> m = ad.fit("gaussian", np.eye(4), tau=20.0)
    >>> isinstance(m, ad.AnchorModel), m.kind, m.dim
    (True, 'gaussian', 4)
    >>> m.cumulant(np.zeros(4)).shape
    ()
    """

    kind: ClassVar[str] = "abstract"
    #: True when ``embed`` gives the squared-Euclidean fast path.
    quadratic: ClassVar[bool] = False
    #: each array field's axes, one letter per axis (``""`` a scalar; a letter is one length
    #: across the fields: ``d`` the dimension): what a loaded model is checked against
    axes: ClassVar[dict[str, str]] = {}

    # ---- the model ---------------------------------------------------------------------
    def cumulant(self, theta: jax.Array) -> jax.Array:
        """ψ(θ): ``theta [..., d] -> [...]``."""
        raise NotImplementedError

    def parameterize(self, theta: jax.Array) -> jax.Array:
        """Map an ambient embedding to the parameter at which ψ is evaluated. ``[..., d]``."""
        return theta

    def embed(self, theta: jax.Array) -> jax.Array:
        """Fast path: φ with ``D(x→y) = ‖φ(x) − φ(y)‖²``; ``[..., d] -> [..., m]``."""
        raise NotImplementedError(f"{self.kind} has no squared-Euclidean fast path")

    def check_embeddings(self, name: str, x: np.ndarray) -> None:
        """Eager validation hook for model-specific domain restrictions (default: none)."""

    # ---- shared conveniences ----------------------------------------------------------
    @property
    def dim(self) -> int:
        """Ambient dimension d."""
        raise NotImplementedError

    def gradient(self, theta: jax.Array) -> jax.Array:
        """∇ψ(θ) by autodiff: ``[..., d] -> [..., d]``."""
        flat = jnp.reshape(theta, (-1, theta.shape[-1]))
        g = jax.vmap(jax.grad(lambda t: self.cumulant(t)))(flat)
        return jnp.reshape(g, theta.shape)

    def replace(self, **changes):
        """A copy with some fields replaced (e.g. ``model.replace(tau=jnp.asarray(50.))``)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, AnchorModel):
                parts.append(f"{f.name}={v!r}")
            elif np.ndim(v) == 0:
                parts.append(f"{f.name}={float(v):.4g}")
            else:
                parts.append(f"{f.name}{list(np.shape(v))}")
        return f"{type(self).__name__}({', '.join(parts)})"


def jax_dtype(dtype) -> np.dtype:
    """``dtype`` as JAX holds it: float64 is float32 unless JAX's float64 mode is on.  Asking
    for it explicitly would only add JAX's "will be truncated" warning to the same result."""
    return jax.dtypes.canonicalize_dtype(np.dtype(dtype))


def as_tau(tau, dtype) -> jax.Array:
    """Validate τ (the encoder's logit scale, > 0) and make it a scalar array leaf."""
    from ..errors import positive

    return jnp.asarray(positive("tau", tau), dtype=jax_dtype(dtype))


def quad_norm(factor: jax.Array, theta: jax.Array) -> jax.Array:
    """``‖factorᵀ θ‖²`` = θᵀ Σ θ for Σ = factor factorᵀ. ``factor [d, r]``, ``theta [..., d]``."""
    z = theta @ factor
    return jnp.sum(z * z, axis=-1)


def psd_factor(cov: np.ndarray) -> np.ndarray:
    """A factor F with ``F Fᵀ = cov`` for a symmetric PSD matrix (eigen-based, tolerates
    singular covariances, e.g. fewer anchors than dimensions). ``[d, d] -> [d, d]``; the columns
    of directions absent at :data:`anchordiv._tolerance.SPECTRUM_RTOL` are exactly zero."""
    cov = 0.5 * (cov + cov.T)
    w, v = np.linalg.eigh(cov)
    from .._tolerance import kept_spectrum
    from .linalg import canonical_signs

    w = np.where(kept_spectrum(w), w, 0.0)  # rounding of an absent direction: exactly 0
    return canonical_signs(v) * np.sqrt(w)[None, :]
