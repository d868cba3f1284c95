"""Scale-out beyond one process: Dask schedules sharded scans, index builds and study grids
(:mod:`.dask`).  Scans across the devices of one JAX mesh live with the scorer
(:mod:`anchordiv.retrieval.sharding`).  Import :mod:`anchordiv.scale.dask` explicitly: it needs
the ``distributed`` extra.
"""
