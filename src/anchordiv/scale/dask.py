"""Beyond one machine: Dask schedules sharded gallery scans, index builds and study grids.

Needs ``pip install 'anchordiv[distributed]'``.  Galleries (:func:`blocks`) are ``.npy`` shards,
``.parquet`` files with an embedding column, or a ``dask.array`` ``[G, d]`` (global item
indices in shard order); :func:`top_k` scans blocks of at most ``block_rows`` rows with the
block scorer of :func:`anchordiv.top_k` and merges them with :func:`tree_merge`, returning what
:func:`anchordiv.top_k` returns.  Clusters: :func:`connect`, :func:`local_cluster`.  Fault
tolerance, precision and cost: ``docs/guides/scale-out.md``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import json
import os
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from ..progress import tqdm

from ..errors import AnchorDivError, integer
from ..retrieval.index import (
    BUILD_CHUNK,
    FaissIndex,
    GalleryIndex,
    L2Reduction,
    key_chunks,
    merge_results,
    sample_rows,
)

try:
    from distributed import WorkerPlugin
except ImportError:  # pragma: no cover - the extra is not installed; connect() says so
    WorkerPlugin = object

from ..retrieval import divergence as dv
from ..retrieval import index as index_module
from ..heap import reusing_heap

#: Rows per scan task (a shard larger than this is split into several tasks).
BLOCK_ROWS = 1 << 20

#: Environment of local-cluster workers: one compute thread each (XLA, BLAS, OpenMP), no GPU
#: memory preallocation (several workers may share one device).
WORKER_ENV = {
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
}


#: Dask configuration of local-cluster workers: no sampling profiler (4-6 % of a scan's CPU,
#: ``docs/guides/scale-out.md``); a dotted key, which the nanny merges shallowly.
WORKER_CONFIG = {"distributed.worker.profile.enabled": False}


def _require_dask():
    try:
        import distributed
    except ImportError:  # pragma: no cover - depends on the installation
        raise AnchorDivError(
            "dask.distributed is not installed: pip install 'anchordiv[distributed]'"
        ) from None
    return distributed


# ---- clusters ------------------------------------------------------------------------------


def local_cluster(
    workers: int | None = None, *, memory_limit: str | int = "auto", pin: bool = False
):
    """A ``distributed.LocalCluster`` on 127.0.0.1.

    Process workers with one thread each, started with the spawn method, no dashboard, compute
    threads limited by :data:`WORKER_ENV`, Dask's sampling profiler off (:data:`WORKER_CONFIG`).
    Close it (or use it as a context manager).

    Parameters
    ----------
    workers : int, optional
        Process workers (default: the CPU count).
    memory_limit : str or int, default "auto"
        Per worker.
    pin : bool, default False
        Worker i runs on core i mod (cores this process may use) (:class:`CorePin`) — for
        machines whose cores the workers have to themselves; on cores shared with other jobs an
        unpinned worker can move to the less busy one.

    Returns
    -------
    distributed.LocalCluster
        The cluster.
    """
    distributed = _require_dask()
    n = (os.cpu_count() or 1) if workers is None else integer("workers", workers, low=1)
    return distributed.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit=memory_limit,
        env=dict(WORKER_ENV),
        config=dict(WORKER_CONFIG),
        plugins={CorePin(sorted(os.sched_getaffinity(0)))} if pin else set(),
    )


class CorePin(WorkerPlugin):
    """Worker plugin: pin the worker named ``i`` to core ``cores[i mod len(cores)]`` as it starts.

    Before JAX creates its thread pools (XLA sizes them from the affinity mask: a pinned worker
    runs 15 threads, an unpinned one 19), so each worker computes on its own core, like one
    process under ``taskset -c i``.  A local cluster's worker names are 0, 1, ….

    Parameters
    ----------
    cores : sequence of int
        The cores to use.
    """

    name = "anchordiv-core-pin"

    def __init__(self, cores):
        self.cores = list(cores)

    def setup(self, worker=None):
        if isinstance(getattr(worker, "name", None), int) and self.cores:
            os.sched_setaffinity(0, {self.cores[worker.name % len(self.cores)]})


class JaxConfig(WorkerPlugin):
    """Worker plugin: set ``jax_enable_x64`` on every worker (present and future) to the client's value.

    So workers compute in the client's precision.

    Parameters
    ----------
    x64 : bool
        The client's ``jax_enable_x64``.
    """

    name = "anchordiv-jax-config"

    def __init__(self, x64: bool):
        self.x64 = bool(x64)

    def setup(self, worker=None):
        jax.config.update("jax_enable_x64", self.x64)


@contextlib.contextmanager
def connect(client=None, *, scheduler: str | None = None, workers: int | None = None):
    """A ``distributed.Client`` for the duration of a ``with`` block (a context manager).

    Whatever this opened is closed on exit.  Every client gets the :class:`JaxConfig` plugin.

    Parameters
    ----------
    client : distributed.Client, optional
        Used as is.
    scheduler : str, optional
        Else connect to this address (e.g. ``"tcp://10.0.0.5:8786"``).
    workers : int, optional
        Else the active default client, else a fresh :func:`local_cluster` of this many
        workers.

    Yields
    ------
    distributed.Client
        The client.
    """
    distributed = _require_dask()
    with contextlib.ExitStack() as stack:
        if client is None and scheduler is not None:
            client = stack.enter_context(distributed.Client(scheduler, timeout="30s"))
        if client is None and workers is None:
            with contextlib.suppress(ValueError):
                client = distributed.default_client()
        if client is None:
            cluster = stack.enter_context(local_cluster(workers))
            client = stack.enter_context(distributed.Client(cluster))
        client.register_plugin(JaxConfig(jax.config.jax_enable_x64))  # type: ignore[attr-defined]
        yield client


def wait(futures, *, progress: bool | None = None, desc: str = "tasks") -> None:
    """Wait for futures, with a progress bar on stderr as they finish.

    Parameters
    ----------
    futures : list of Future
        The futures.
    progress : bool, optional
        Show the bar (``None``: when there are more than 8).
    desc : str, default "tasks"
        The bar's label.

    Returns
    -------
    None
        When every future has finished.
    """
    distributed = _require_dask()
    show = len(futures) > 8 if progress is None else progress
    with tqdm(total=len(futures), desc=desc, unit="task", disable=not show) as bar:
        for _ in distributed.as_completed(futures):
            bar.update()


# ---- galleries -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Block:
    """Rows ``[start, stop)`` of one shard file; only this travels to the worker.

    Parameters
    ----------
    path : str
        A ``.npy`` (memory-mapped where the task runs) or a parquet file.
    start, stop : int
        Rows.
    column : str, optional
        Parquet: the embedding column.
    groups : tuple of int, default ()
        Parquet: the row groups holding the rows.
    """

    path: str
    start: int
    stop: int
    column: str | None = None
    groups: tuple[int, ...] = ()

    def __len__(self) -> int:
        return self.stop - self.start

    def rows(self):
        """The block's rows ``[stop − start, d]`` (a memmap view for ``.npy``)."""
        if self.column is None:
            return np.load(self.path, mmap_mode="r")[self.start : self.stop]
        import pyarrow.parquet as pq

        table = pq.ParquetFile(self.path).read_row_groups(list(self.groups), columns=[self.column])
        return _embedding_matrix(table.column(self.column), f"{self.path}:{self.column}")


def _embedding_matrix(column, name: str) -> np.ndarray:
    """An arrow column of equal-length float lists ``-> [n, d]``."""
    import pyarrow as pa

    arr = column.combine_chunks()
    ragged = pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)
    if not (ragged or pa.types.is_fixed_size_list(arr.type)):
        raise AnchorDivError(f"{name}: expected a list-of-floats embedding column, got {arr.type}")
    if arr.null_count:
        raise AnchorDivError(f"{name}: {arr.null_count} missing embeddings")
    flat = np.asarray(arr.flatten())
    lengths = np.diff(np.asarray(arr.offsets)) if ragged else np.zeros(0)
    if len(arr) == 0 or len(flat) % len(arr) or np.any(lengths != len(flat) // len(arr)):
        raise AnchorDivError(f"{name}: embeddings of different lengths")
    return flat.reshape(len(arr), -1)


def _natural(path: str) -> list:
    """Sort key: digit runs compare as numbers (``img_emb_10`` after ``img_emb_9``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def shard_paths(shards) -> list[str]:
    """Shard files in gallery order.

    Each directory or glob is sorted naturally; a list keeps its order.

    Parameters
    ----------
    shards : str, Path or list
        A directory (its ``*.npy`` / ``*.parquet`` files, or those of its ``img_emb/``
        subdirectory), a glob pattern, one file, or a list of any of these.

    Returns
    -------
    list of str
        The files.

    Raises
    ------
    AnchorDivError
        No shard files found, or an argument that is not a path, glob or list of paths.
    """
    if isinstance(shards, (str, os.PathLike)):
        text = str(shards)
        if Path(text).is_dir():
            root = Path(text) / "img_emb" if (Path(text) / "img_emb").is_dir() else Path(text)
            found = [str(p) for p in root.iterdir() if p.suffix in (".npy", ".parquet")]
        elif glob.has_magic(text):
            found = glob.glob(text)
        else:
            found = [text] if Path(text).is_file() else []
        if not found:
            raise AnchorDivError(f"shards: no .npy or .parquet shard files at {text!r}")
        return sorted(found, key=_natural)
    if isinstance(shards, (list, tuple)) and shards:
        return [p for s in shards for p in shard_paths(s)]
    raise AnchorDivError(
        f"shards: expected a path, glob, list of paths or dask.array, got {type(shards).__name__}"
    )


def _file_blocks(path: str, block_rows: int, column: str) -> tuple[list[Block], int]:
    """``(blocks, d)`` of one shard file."""
    if path.endswith(".parquet"):
        return _parquet_blocks(path, block_rows, column)
    try:
        shape = np.load(path, mmap_mode="r").shape
    except (OSError, ValueError) as err:
        raise AnchorDivError(f"shards: cannot read {path} as .npy: {err}") from None
    if len(shape) != 2:
        raise AnchorDivError(f"shards: {path} has shape {list(shape)}; expected [n, d]")
    return [
        Block(path, s, min(s + block_rows, shape[0])) for s in range(0, shape[0], block_rows)
    ], int(shape[1])


def _parquet_blocks(path: str, block_rows: int, column: str) -> tuple[list[Block], int]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - depends on the installation
        raise AnchorDivError(
            "shards: reading parquet needs pyarrow (pip install pyarrow)"
        ) from None
    meta = pq.ParquetFile(path).metadata
    if column not in meta.schema.names and column not in meta.schema.to_arrow_schema().names:
        raise AnchorDivError(
            f"shards: {path} has no column {column!r} "
            f"(columns: {', '.join(meta.schema.to_arrow_schema().names)})"
        )
    blocks, groups, start, stop = [], [], 0, 0
    for g in range(meta.num_row_groups):
        groups.append(g)
        stop += meta.row_group(g).num_rows
        if stop - start >= block_rows or g == meta.num_row_groups - 1:
            blocks.append(Block(path, start, stop, column, tuple(groups)))
            groups, start = [], stop
    return blocks, int(Block(path, 0, 0, column, (0,)).rows().shape[1]) if blocks else 0


def blocks(model, shards, *, block_rows: int = BLOCK_ROWS, column: str = "embedding"):
    """The gallery as scan blocks.

    Validates every shard's width against ``model.dim``; the shards must fit ``model`` (a block
    is validated by the task that reads it).

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    shards : str, Path, list or dask.array
        Paths, a glob, a directory, parquet files (:func:`shard_paths`) or a ``dask.array
        [G, d]``.
    block_rows : int, default 2**20
        Rows per block (task).
    column : str, default "embedding"
        Parquet: the embedding column.

    Returns
    -------
    parts : list
        :class:`Block` or ``dask.delayed`` arrays ``[n_b, d]``.
    offsets : numpy.ndarray, shape [B]
        Each block's first global row.
    G : int
        Gallery rows.
    """
    block_rows = integer("block_rows", block_rows, low=1)
    if type(shards).__module__.startswith("dask.array"):
        return _dask_array_blocks(model, shards)
    parts = []
    for path in shard_paths(shards):
        found, d = _file_blocks(path, block_rows, column)
        if d != model.dim:
            raise AnchorDivError(f"shards: {path} has d={d}; the model expects d={model.dim}")
        parts += [b for b in found if len(b)]
    if not parts:
        raise AnchorDivError("shards: the gallery is empty")
    sizes = np.array([len(b) for b in parts], np.int64)
    return parts, np.concatenate([[0], np.cumsum(sizes)[:-1]]), int(sizes.sum())


def _dask_array_blocks(model, arr):
    dv.gallery_shape(model, arr)
    arr = arr.rechunk({1: -1})
    sizes = np.array(arr.chunks[0], np.int64)
    parts = list(arr.to_delayed()[:, 0])
    keep = sizes > 0
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return ([p for p, ok in zip(parts, keep) if ok], offsets[keep], int(sizes.sum()))


# ---- exact top-k ---------------------------------------------------------------------------


def _scan_block(
    model, terms, rows, k: int, chunk: int, method: str, offset: int, precision: str = "highest"
):
    """Top-k of one block: ``(indices [Qb, k_b] int64 global, divergences [Qb, k_b])``."""
    data = rows.rows() if isinstance(rows, Block) else rows
    u, c = (jnp.asarray(t) for t in terms)
    static = dict(chunk=chunk, method=method, precision=precision, progress=False)
    best_i, best_d = dv.scan_top_k(model, u, c, data, min(k, len(data)), **static)
    return np.asarray(best_i, np.int64) + offset, np.asarray(best_d)


def _merge_parts(*parts, k: int):
    """Tree-reduction step: merge ``(indices, divergences)`` parts in order, keep ``k``."""
    return merge_results(parts, min(k, sum(i.shape[1] for i, _ in parts)))


def tree_merge(client, futures, k: int, *, split_every: int, retries: int):
    """Merge per-block top-k futures on the cluster, ``split_every`` at a time per level.

    A reduction over the futures themselves, so every scan runs once (a second graph over the
    same delayed scans, such as ``Bag.reduction``, would run every scan twice).

    Parameters
    ----------
    client : distributed.Client
        The client.
    futures : list of Future
        Per-block ``(indices, divergences)``, in block order.
    k : int
        Items per query.
    split_every : int
        Fan-in per level.
    retries : int
        Re-runs of a task that raised.

    Returns
    -------
    indices : numpy.ndarray, shape [Q, k]
        The final indices.
    divergences : numpy.ndarray, shape [Q, k]
        Ascending.
    """
    split_every = integer("split_every", split_every, low=2)
    while len(futures) > 1:
        futures = [
            client.submit(
                _merge_parts, *futures[i : i + split_every], k=k, retries=retries, pure=False
            )
            for i in range(0, len(futures), split_every)
        ]
    return futures[0].result()


def top_k(
    model,
    queries,
    shards,
    k: int,
    *,
    client=None,
    chunk: int | None = None,
    method: str = "auto",
    precision: str = "highest",
    block_rows: int = BLOCK_ROWS,
    column: str = "embedding",
    split_every: int = 8,
    retries: int = 2,
    progress: bool | None = None,
):
    """Exact top-k of a sharded gallery on a Dask cluster.

    The result of :func:`anchordiv.top_k` over the concatenated shards.  Memory per worker:
    O(Q·(k + chunk)) plus the page cache of its memory-mapped rows.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    queries : array_like, shape [Q, d]
        Query embeddings.
    shards : str, Path, list or dask.array
        The gallery (:func:`blocks`: paths, glob, directory, parquet, ``dask.array [G, d]``).
    k : int
        Items per query.
    client : distributed.Client, optional
        See :func:`connect`.
    chunk : int, optional
        Gallery rows per jitted step inside a task (default as :func:`anchordiv.top_k` for the
        whole gallery).
    method : {"auto", "generic", "direct"}, default "auto"
        Divergence path.
    precision : {"highest", "fast"}, default "highest"
        Of the block products, as in :func:`anchordiv.top_k`.
    block_rows : int, default 2**20
        Rows per task.
    column : str, default "embedding"
        Parquet: the embedding column.
    split_every : int, default 8
        Fan-in of the tree reduction.
    retries : int, default 2
        Re-runs of a task that raised.
    progress : bool, optional
        Show a progress bar.

    Returns
    -------
    indices : numpy.ndarray, shape [Q, k], int64
        Global rows, closest first.
    divergences : numpy.ndarray, shape [Q, k]
        Ascending.
    """
    import dask

    x = dv.checked_call(model, method, precision, queries)
    parts, offsets, n_items = blocks(model, shards, block_rows=block_rows, column=column)
    k = integer("k", k, low=1, high=n_items)
    chunk = dv.scan_chunk(chunk, len(x), n_items, model.dim)
    # a task's rows are padded to whole chunks: no chunk longer than the longest block
    chunk = min(chunk, dv.row_bucket(int(np.diff(np.append(offsets, n_items)).max())))
    u, c = dv.padded_query_terms(model, x, method)
    shared_model = dask.delayed(model, pure=True)
    terms = dask.delayed((np.asarray(u), np.asarray(c)), pure=True)
    scans = [
        dask.delayed(_scan_block, pure=True)(
            shared_model, terms, part, k, chunk, method, int(offset), precision
        )
        for part, offset in zip(parts, offsets)
    ]
    retries = integer("retries", retries, low=0)
    with connect(client) as cl:
        futures = cl.compute(scans, retries=retries)
        wait(futures, progress=progress, desc="scan")
        best_i, best_d = tree_merge(cl, futures, k, split_every=split_every, retries=retries)
    return dv.finished_top_k(best_i, best_d, len(x))


# ---- index build at scale -----------------------------------------------------------------


@reusing_heap
def _block_keys(model, rows, path: str, offset: int, method: str, chunk: int) -> np.ndarray:
    """Write one block's MIPS keys into rows ``offset…`` of the ``.npy`` at ``path``; return
    their :meth:`L2Reduction.stats`."""
    data = rows.rows() if isinstance(rows, Block) else rows
    out = np.load(path, mmap_mode="r+")
    stats = 0.0
    for start, keys in key_chunks(
        model, data, method, min(chunk, dv.row_bucket(len(data))), progress=False
    ):
        keys = np.asarray(keys)
        out[offset + start : offset + start + len(keys)] = keys
        stats = stats + L2Reduction.stats(keys)
    out.flush()
    return stats


def _block_norm(reduction: L2Reduction, path: str, start: int, stop: int, chunk: int) -> float:
    keys = np.load(path, mmap_mode="r")
    return max(reduction.norm(keys[s : min(s + chunk, stop)]) for s in range(start, stop, chunk))


def _block_ivf(
    trained: str, path: str, start: int, stop: int, reduction: L2Reduction, chunk: int, out: str
) -> str:
    """Add keys ``[start, stop)`` (global ids) to a copy of the trained IVF; write it."""
    import faiss

    index, keys = faiss.read_index(trained), np.load(path, mmap_mode="r")
    for s in range(start, stop, chunk):
        e = min(s + chunk, stop)
        index.add_with_ids(reduction(keys[s:e]), np.arange(s, e, dtype=np.int64))
    faiss.write_index(index, out)
    return out


def _run_blocks(client, fn, calls, *, retries: int, progress, desc: str) -> list:
    """``fn(*call)`` for each call as one task each, results in order."""
    futures = [client.submit(fn, *call, pure=False, retries=retries) for call in calls]
    wait(futures, progress=progress, desc=desc)
    return client.gather(futures)


def build_index(
    model,
    shards,
    out_dir,
    *,
    nlist: int | None = None,
    nprobe: int = 16,
    train_size: int = 100_000,
    seed: int = 0,
    method: str = "auto",
    chunk: int = BUILD_CHUNK,
    block_rows: int = BLOCK_ROWS,
    column: str = "embedding",
    client=None,
    retries: int = 2,
    progress: bool | None = None,
) -> FaissIndex:
    """An IVF index of a sharded gallery, built by Dask tasks and merged on disk.

    Writes into ``out_dir``: ``keys.npy`` (the MIPS keys ``[G, m+1]``, each block's rows
    written by one task), ``trained.index`` (the IVF, trained once on ``train_size`` sampled
    keys), ``lists.ivfdata`` + ``ivf.index`` (every block added to a copy of the trained IVF
    by one task, the copies merged with faiss's ``merge_ondisk``) and ``index.json``.  Keys go
    through the same balanced MIPS → L2 reduction as :meth:`anchordiv.GalleryIndex.to_faiss`
    (statistics summed over blocks).

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    shards : str, Path, list or dask.array
        The gallery (:func:`blocks`).
    out_dir : str or Path
        Destination.
    nlist : int, optional
        IVF cells (default ≈ 4√G).
    nprobe : int, default 16
        Cells searched.
    train_size : int, default 100000
        Keys sampled to train the IVF.
    seed : int, default 0
        Sampling seed.
    method : {"auto", "generic", "direct"}, default "auto"
        Divergence path of the keys.
    chunk : int, default 8192
        Rows per key-building step.
    block_rows : int, default 2**20
        Rows per task.
    column : str, default "embedding"
        Parquet: the embedding column.
    client : distributed.Client, optional
        See :func:`connect`.
    retries : int, default 2
        Re-runs of a task that raised.
    progress : bool, optional
        Show progress bars.

    Returns
    -------
    FaissIndex
        :func:`load_index` of ``out_dir``: inverted lists and keys stay memory-mapped, candidates
        are re-scored exactly.
    """
    faiss = index_module.require_faiss()
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    parts, offsets, size = blocks(model, shards, block_rows=block_rows, column=column)
    chunk, retries = integer("chunk", chunk, low=1), integer("retries", retries, low=0)
    keys_path = str(out / "keys.npy")
    first = parts[0].rows()[:1] if isinstance(parts[0], Block) else parts[0]
    one_row = jax.ShapeDtypeStruct((1, model.dim), first.dtype)  # keys traced, not computed
    spec = jax.eval_shape(functools.partial(dv.mips_key_terms, method=method), model, one_row)
    np.lib.format.open_memmap(
        keys_path, mode="w+", dtype=spec.dtype, shape=(size, spec.shape[1])
    ).flush()
    spans = [(int(a), int(b)) for a, b in zip(offsets, np.append(offsets[1:], size))]
    run = functools.partial(_run_blocks, retries=retries, progress=progress)
    with connect(client) as cl:
        calls = [(model, p, keys_path, o, method, chunk) for p, (o, _) in zip(parts, spans)]
        reduction = L2Reduction.balance(sum(run(cl, _block_keys, calls, desc="keys")))
        calls = [(reduction, keys_path, a, b, chunk) for a, b in spans]
        reduction = reduction.with_norm(max(run(cl, _block_norm, calls, desc="norms")))
        trained = index_module.new_faiss(
            faiss, "ivf", spec.shape[1] + 1, size, nlist=nlist, nprobe=nprobe, hnsw_m=2, ef_search=1
        )
        trained.train(
            reduction(np.load(keys_path, mmap_mode="r")[sample_rows(size, train_size, seed)])
        )
        trained_path = str(out / "trained.index")
        faiss.write_index(trained, trained_path)
        calls = [
            (trained_path, keys_path, a, b, reduction, chunk, str(out / f"block_{i}.index"))
            for i, (a, b) in enumerate(spans)
        ]
        files = run(cl, _block_ivf, calls, desc="ivf")
    from faiss.contrib.ondisk import merge_ondisk  # the block IVFs -> ivf.index + lists.ivfdata

    merged = faiss.read_index(trained_path)
    merge_ondisk(merged, files, str(out / "lists.ivfdata"))
    faiss.write_index(merged, str(out / "ivf.index"))
    for f in files:
        os.remove(f)
    meta = {"size": size, "method": method, "nprobe": nprobe, **dataclasses.asdict(reduction)}
    (out / "index.json").write_text(json.dumps(meta, indent=2) + "\n")
    return load_index(model, out)


def load_index(model, out_dir, *, nprobe: int | None = None) -> FaissIndex:
    """The :class:`anchordiv.FaissIndex` written by :func:`build_index`.

    The IVF's inverted lists stay in the memory-mapped ``lists.ivfdata`` (faiss's on-disk lists,
    found beside ``ivf.index`` so the folder may move), the keys in the memory-mapped
    ``keys.npy`` for the exact re-scoring.  (``faiss.IO_FLAG_MMAP`` must not be added: with
    on-disk lists it crashes faiss 1.15.)

    Parameters
    ----------
    model : AnchorModel
        The anchor model the index was built with.
    out_dir : str or Path
        The index folder.
    nprobe : int, optional
        Overrides the saved one.

    Returns
    -------
    FaissIndex
        The index.
    """
    from .._safeio import malformed, read_json
    from ..provenance import load_npy

    faiss = index_module.require_faiss()
    out = Path(out_dir)
    meta = read_json(out / "index.json", finite=True)  # NaN/Infinity would reorder results
    keys = load_npy(out / "keys.npy", "keys")
    with malformed(out, "index folder"):
        if not isinstance(meta, dict):
            raise AnchorDivError(f"{out / 'index.json'}: not a JSON object")
        numbers = [float(meta[k]) for k in ("shift", "scale", "max_norm")]
        try:
            ivf = faiss.read_index(str(out / "ivf.index"), faiss.IO_FLAG_ONDISK_SAME_DIR)
        except RuntimeError as err:
            raise AnchorDivError(f"{out}: ivf.index does not read ({err})") from None
        size = meta["size"]
        if not (
            type(size) is int
            and keys.ndim == 2
            and keys.dtype.kind == "f"
            and size == len(keys) == ivf.ntotal
            and ivf.d == keys.shape[1] + 1
        ):
            raise AnchorDivError(
                f"{out}: index.json says size = {size!r}; keys.npy holds {list(keys.shape)} "
                f"({keys.dtype}) and ivf.index {ivf.ntotal} items of {ivf.d} columns"
            )
        nlist = int(getattr(ivf, "nlist", 1))
        saved = integer("index.json nprobe", meta["nprobe"], low=1, high=nlist)
        ivf.nprobe = saved if nprobe is None else min(integer("nprobe", nprobe, low=1), nlist)
        gallery = GalleryIndex.from_keys(model, keys, method=meta["method"])
        return FaissIndex(ivf, gallery, reduction=L2Reduction(*numbers))
