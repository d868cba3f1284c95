"""JAX sharding inside one job: a gallery (or its cached keys) split across a device mesh.

``ad.top_k(..., mesh=mesh)`` and ``ad.GalleryIndex(..., mesh=mesh)`` place the gallery rows
sharded along the mesh axes ``axis`` (padded to ``devices × chunks × chunk`` rows); each device
scans its own rows with the single-device block scorer (same ``precision``) and the per-device
top-k ``[devices, Q, k]`` are merged, equal divergences ranking the lower global index first.
Multi-host: call ``jax.distributed.initialize`` first; rows are placed with
``jax.make_array_from_callback``, so each process reads only its devices' rows of a
memory-mapped ``.npy``.  Usage: ``docs/guides/scale-out.md``."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..errors import AnchorDivError


def mesh_axes(mesh, axis=None) -> tuple[tuple[str, ...], int]:
    """The axis names of a mesh to shard over and the number of shards.

    Parameters
    ----------
    mesh : jax.sharding.Mesh
        The mesh.
    axis : str or tuple of str, optional
        Names of ``mesh``'s axes (default all).

    Returns
    -------
    names : tuple of str
        The axes.
    shards : int
        The product of their sizes.

    Raises
    ------
    AnchorDivError
        An axis the mesh does not have.
    """
    if not isinstance(mesh, Mesh):
        raise AnchorDivError(f"mesh: expected a jax.sharding.Mesh, got {type(mesh).__name__}")
    names = (axis,) if isinstance(axis, str) else tuple(mesh.axis_names if axis is None else axis)
    unknown = [a for a in names if a not in mesh.axis_names]
    if unknown or not names:
        raise AnchorDivError(
            f"axis: {unknown or names} not among the mesh axes {tuple(mesh.axis_names)}"
        )
    return names, math.prod(mesh.shape[a] for a in names)


def layout(n_items: int, chunk: int, n_shards: int) -> tuple[int, int]:
    """Rows per scan step and the padded gallery size of a sharded scan.

    Parameters
    ----------
    n_items : int
        Gallery rows.
    chunk : int
        Requested rows per step.
    n_shards : int
        Devices.

    Returns
    -------
    chunk : int
        Rows per scan step (at most the rows a device holds).
    padded : int
        The gallery size padded to a multiple of ``n_shards × chunk``.

    Examples
    --------
    >>> from anchordiv.retrieval.sharding import layout
    >>> layout(1000, 256, 4)
    (250, 1000)
    """
    per_shard = -(-n_items // n_shards)
    chunk = max(1, min(chunk, per_shard))
    steps = -(-per_shard // chunk)
    return chunk, n_shards * steps * chunk


def place_rows(read, n_items: int, width: int, mesh, names, padded: int) -> jax.Array:
    """An array sharded by rows over mesh axes, each process reading only its own devices' rows.

    Rows past ``n_items`` repeat row 0; the dtype is row 0's.

    Parameters
    ----------
    read : callable
        ``read(start, stop) -> rows``.
    n_items : int
        Real rows.
    width : int
        Row width.
    mesh : jax.sharding.Mesh
        The mesh.
    names : tuple of str
        Mesh axes to shard over.
    padded : int
        Total rows (:func:`layout`).

    Returns
    -------
    jax.Array, shape [padded, width]
        The sharded rows.
    """
    dtype = np.asarray(read(0, 1)).dtype

    def rows(index):
        sl = index[0]
        start, stop = sl.start or 0, padded if sl.stop is None else sl.stop
        if start < n_items:
            real = np.asarray(read(start, min(stop, n_items)))
        else:
            real = np.empty((0, width), dtype)
        fill = stop - start - len(real)
        if fill:
            real = np.concatenate([real, np.repeat(np.asarray(read(0, 1)), fill, axis=0)])
        return real.astype(dtype, copy=False)

    sharding = NamedSharding(mesh, PartitionSpec(names, None))
    return jax.make_array_from_callback((padded, width), sharding, rows, dtype=dtype)


@functools.partial(jax.jit, static_argnames=("score", "extra", "k", "chunk", "mesh", "names"))
def _sharded_top_k(args, rows, n_items, *, score, extra, k, chunk, mesh, names):
    def local(args, rows, n_items):
        start = jax.lax.axis_index(names).astype(jnp.int32) * rows.shape[0]
        blocks = rows.reshape(-1, chunk, rows.shape[1])
        q = args[-2]  # every scorer's arguments end with the query terms (u or q, c)
        k_local = min(k, rows.shape[0])
        init = (
            jnp.full((q.shape[0], k_local), jnp.inf, q.dtype),
            jnp.full((q.shape[0], k_local), -1, jnp.int32),
        )

        def step(carry, xs):
            j, block = xs
            offset = start + j * chunk
            n_valid = jnp.clip(n_items - offset, 0, chunk)
            best_d, best_i = score(*args, block, n_valid, offset, *carry, *extra)
            return (best_d, best_i.astype(jnp.int32)), None

        steps = jnp.arange(len(blocks), dtype=jnp.int32)
        (best_d, best_i), _ = jax.lax.scan(step, init, (steps, blocks))
        return best_d[None], best_i[None]

    spec = PartitionSpec(names)
    best_d, best_i = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(PartitionSpec(), spec, PartitionSpec()),
        out_specs=(spec, spec),
        check_vma=False,
    )(args, rows, n_items)
    cand_d = jnp.moveaxis(best_d, 0, 1).reshape(best_d.shape[1], -1)  # device-major order
    cand_i = jnp.moveaxis(best_i, 0, 1).reshape(best_i.shape[1], -1)
    neg, pos = jax.lax.top_k(-cand_d, k)
    return jnp.take_along_axis(cand_i, pos, axis=1), -neg


def sharded_top_k(
    score, args, rows: jax.Array, n_items: int, k: int, chunk: int, mesh, names, extra=()
):
    """Top-k over rows placed by :func:`place_rows`, every device scanning its own rows.

    Parameters
    ----------
    score : callable
        ``score(*args, block, n_valid, offset, best_d, best_i, *extra)``, the single-device block
        scorer.
    args : tuple
        Replicated arguments, ending with the query terms ``(u, c)``.
    rows : jax.Array, shape [padded, w]
        The placed rows.
    n_items : int
        Real rows.
    k : int
        Items per query.
    chunk : int
        Rows per scan step.
    mesh : jax.sharding.Mesh
        The mesh.
    names : tuple of str
        Mesh axes.
    extra : tuple, default ()
        Static extra arguments of ``score``.

    Returns
    -------
    best_i : jax.Array, shape [Qb, k], int32
        Indices, like :func:`anchordiv.retrieval.divergence.stream_top_k`.
    best_d : jax.Array, shape [Qb, k]
        Divergences.
    """
    static = dict(score=score, extra=tuple(extra), k=k, chunk=chunk, mesh=mesh, names=names)
    return _sharded_top_k(args, rows, jnp.asarray(n_items, jnp.int32), **static)
