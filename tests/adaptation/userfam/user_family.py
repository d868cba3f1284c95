"""A family registered from a user's module, outside the package, after anchordiv was imported
(what issue 26 found broken: ``OPTIONS``/``QUANTITIES``/``DIMS`` were import-time snapshots).

It reuses the diagonal family's algebra under a kind of its own; ``register()`` adds it to the
registry and ``unregister()`` removes it again (tests restore the registry they found)."""

from __future__ import annotations

from anchordiv.adaptation.families.diagonal import DiagonalPrior
from anchordiv.adaptation.registry import FAMILIES, family

KIND = "user-diagonal"


def register() -> type:
    """Define and register the family (the class statement a user's module would hold)."""

    @family(KIND)
    class UserDiagonalPrior(DiagonalPrior):
        """The diagonal Normal–inverse-gamma prior, registered by a user under its own kind."""

    return UserDiagonalPrior


def unregister() -> None:
    FAMILIES.pop(KIND, None)
