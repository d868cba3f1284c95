"""Mixture of two anchor distributions q_p = p·q₁ + (1 − p)·q₂ (docs/mathematics.md, "Mixtures of anchor distributions").

ψ_p(θ) = log(p e^{ψ₁(θ)} + (1 − p) e^{ψ₂(θ)}); its divergence is the generic Bregman form.
Both components must be ambient models (identity parameterisation): the latent spherical model
pulls its geometry back through a radial map of its own, so it cannot be mixed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..errors import AnchorDivError, in_unit_interval
from .base import AnchorModel, anchor_model


@anchor_model("mix")
class AnchorMixture(AnchorModel):
    """Mixture of two anchor models, ``p·first + (1 − p)·second`` (built by :func:`mix`).

    Parameters
    ----------
    first, second : AnchorModel
        The components (ambient models).
    p : jax.Array, shape []
        Mass on ``first``.

    Examples
    --------
    >>> a = np.eye(4)
    >>> m = ad.mix(ad.fit("gaussian", a, tau=20.0), ad.fit("gaussian", a[:2], tau=20.0), 0.5)
    >>> m.dim
    4
    """

    first: AnchorModel
    second: AnchorModel
    p: jax.Array
    axes = {"p": ""}

    def cumulant(self, theta):
        return jnp.logaddexp(
            jnp.log(self.p) + self.first.cumulant(theta),
            jnp.log1p(-self.p) + self.second.cumulant(theta),
        )

    @property
    def dim(self) -> int:
        return self.first.dim


def mix(first: AnchorModel, second: AnchorModel, p: float) -> AnchorMixture:
    """The anchor distribution ``p·first + (1 − p)·second``.

    ψ_p(θ) = log(p e^{ψ₁(θ)} + (1 − p) e^{ψ₂(θ)}) (docs/mathematics.md, "Mixtures of anchor distributions"); both models must be ambient
    (not latent-spherical).

    Parameters
    ----------
    first, second : AnchorModel
        The two anchor models (same dimension).
    p : float
        Mass on ``first``, in [0, 1].

    Returns
    -------
    AnchorMixture
        The mixed model.

    Raises
    ------
    AnchorDivError
        A component is not an anchor model or pulls its geometry back through its own map, or
        ``p`` is outside [0, 1].

    Examples
    --------
    >>> a = np.eye(4)
    >>> ad.mix(ad.fit("gaussian", a, tau=20.0), ad.fit("softmax", a, tau=20.0), 0.3).kind
    'mix'
    """
    for name, m in (("first", first), ("second", second)):
        if not isinstance(m, AnchorModel):
            raise AnchorDivError(f"mix: {name} must be an anchor model, got {type(m).__name__}")
        if type(m).parameterize is not AnchorModel.parameterize:
            raise AnchorDivError(
                f"mix: {name} is a {m.kind} model, whose geometry is pulled back through its own "
                f"map; only ambient models (softmax, gaussian, latent-gaussian, mixture, mix) mix"
            )
    if first.dim != second.dim:
        raise AnchorDivError(
            f"mix: dimension mismatch: first has d={first.dim}, second has d={second.dim}"
        )
    dtype = jnp.result_type(*jax.tree_util.tree_leaves(first))
    return AnchorMixture(first, second, jnp.asarray(in_unit_interval("p", p), dtype))
