"""What the inference methods' options name, below the methods and their runners: the init
strategies, chain methods and guides by name, and the bounded tables of compiled runners
(:class:`Runners`; the library's :data:`NUTS_RUNNERS` and :data:`SVI_RUNNERS`).
:mod:`.methods` validates options against these; :mod:`.model`, :mod:`.sampling` and
:mod:`.variational` read them."""

from __future__ import annotations

import collections
from typing import Callable

from ..errors import integer

#: init strategies by name (``init_strategy=``); default ``"median"``
INIT_STRATEGIES = ("median", "mean", "feasible", "sample", "uniform")
#: how NUTS runs several chains
CHAIN_METHODS = ("sequential", "vectorized", "parallel")
#: SVI guides by name
GUIDES = ("delta", "normal", "lowrank")


class Runners:
    """Compiled NUTS chain runners and SVI step functions, kept by what they were compiled for
    (model, static keywords, settings, argument shapes); the least recently used is dropped
    first beyond ``max_size``.

    The library keeps one bounded table per method (:data:`NUTS_RUNNERS`, :data:`SVI_RUNNERS`);
    hold your own to keep a study's compiled programs apart, size or clear them::

        mine = ad.adaptation.Runners(max_size=2)
        post = ad.infer(prior, targets, ad.NUTS(runners=mine))
        len(mine), mine.clear()

    Parameters
    ----------
    max_size : int, default 8
        How many compiled runners to keep (≥ 1).

    Examples
    --------
    >>> from anchordiv.adaptation import Runners
    >>> r = Runners(max_size=2)
    >>> r.get("a", lambda: 1), r.get("a", lambda: 2), len(r)
    (1, 1, 1)
    >>> r
    Runners(1 of 2)
    """

    def __init__(self, max_size: int = 8):
        self.max_size = integer("max_size", max_size, low=1)
        self._table: collections.OrderedDict = collections.OrderedDict()

    def get(self, key, build: Callable):
        """The runner kept under ``key`` (marked most recently used), else ``build()`` kept
        under it; ``key`` None: ``build()``, not kept (an unhashable setting, e.g. a custom
        init strategy object)."""
        if key is None:
            return build()
        if key in self._table:
            self._table.move_to_end(key)
            return self._table[key]
        out = self._table[key] = build()
        while len(self._table) > self.max_size:
            self._table.popitem(last=False)
        return out

    def __contains__(self, key) -> bool:
        return key in self._table

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        """Drop every kept runner (their compiled programs are freed with them)."""
        self._table.clear()

    def __repr__(self) -> str:
        return f"Runners({len(self)} of {self.max_size})"


#: the default tables of compiled NUTS runners and SVI steps (``runners=None``)
NUTS_RUNNERS = Runners(8)
SVI_RUNNERS = Runners(8)


__all__ = ["CHAIN_METHODS", "GUIDES", "INIT_STRATEGIES", "NUTS_RUNNERS", "Runners", "SVI_RUNNERS"]
