"""Save and load posteriors as bundles (``arrays.npz`` + ``card.json``, the ``save_model``
format): :meth:`~.posterior.Posterior.save` and :func:`load_posterior` (the arrays and the card
are :meth:`~.posterior.Posterior.to_arrays`)."""

from .posterior import load_posterior, save_posterior

__all__ = ["load_posterior", "save_posterior"]
