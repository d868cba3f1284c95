"""Scale-out beyond one process: Dask schedules sharded scans, index builds and study grids
(:mod:`.dask`).  Scans across the devices of one JAX mesh live with the scorer
(:mod:`anchordiv.retrieval.sharding`).  Import :mod:`anchordiv.scale.dask` explicitly: it needs
the ``distributed`` extra.
"""

#: The namespaces a user reaches here (:mod:`.dask` needs the ``distributed`` extra).
__all__ = ["dask"]


def __getattr__(name):
    """The submodules of ``__all__`` import on first use (``anchordiv.scale.dask``)."""
    if name in __all__:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
