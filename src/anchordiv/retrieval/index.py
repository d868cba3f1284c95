"""Index once, query many: a gallery index over cached key terms, faiss export and sharding.

A :class:`GalleryIndex` computes the MIPS keys ``k(y) = [v(y), h(y)]`` ``[G, m + 1]`` of every
gallery item once (optionally into a memory-mapped ``store=`` file); a query then costs its own
terms and one product, ``D(x→y) = max(c(x) − ⟨q(x), k(y)⟩, 0)`` (the empirical model: O(Q·N·d
+ Q·G·d), never O(Q·G·N)).  :meth:`GalleryIndex.to_faiss` exports the keys to a faiss index
(:class:`FaissIndex`); :func:`merge_results` combines per-shard top-k into the unsharded
result."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from ..progress import tqdm

from ..anchors.base import AnchorModel
from ..errors import AnchorDivError, integer
from ..provenance import NormTally, warn_not_unit
from . import divergence as dv
from . import sharding

#: Gallery rows per chunk when computing keys.
BUILD_CHUNK = 8192
FAISS_KINDS = ("flat", "ivf", "hnsw")


def mips_scores(q, c, keys, precision: str = "highest") -> jax.Array:
    """The divergences from MIPS queries and cached keys: the one matrix product.

    ``D [Q, G] = max(c[:, None] − q keysᵀ, 0)``, through
    :func:`anchordiv.retrieval.divergence.pairwise` with h = 0 (the h column is inside the keys).

    Parameters
    ----------
    q : jax.Array, shape [Q, m + 1]
        MIPS queries ``[u, −1]``.
    c : jax.Array, shape [Q]
        Query offsets.
    keys : jax.Array, shape [G, m + 1]
        Cached keys.
    precision : {"highest", "fast"}, default "highest"
        As in :func:`anchordiv.divergence`.

    Returns
    -------
    jax.Array, shape [Q, G]
        The divergences.
    """
    return dv.pairwise(q, c, keys, jnp.zeros(keys.shape[0], keys.dtype), precision)


def _merge_keys_impl(q, c, keys, n_valid, offset, best_d, best_i, precision):
    return dv.merge_top_k(mips_scores(q, c, keys, precision), n_valid, offset, best_d, best_i)


_merge_keys_jit = jax.jit(_merge_keys_impl, static_argnames="precision")


@functools.partial(jax.jit, static_argnames="precision")
def _scores_jit(q, c, keys, precision):
    return mips_scores(q, c, keys, precision)


class GalleryIndex:
    """Cached MIPS keys ``[G, m + 1]`` of a gallery under one anchor model.

    Query with :meth:`top_k`, :meth:`divergence`, :meth:`to_faiss`; results equal
    :func:`anchordiv.top_k` on the same gallery.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    gallery : array_like, shape [G, d]
        Any sliceable array-like (a ``np.load(..., mmap_mode="r")`` memmap streams).
    method : {"auto", "generic", "direct"}, default "auto"
        As in :func:`anchordiv.divergence`.
    precision : {"highest", "fast"}, default "highest"
        Precision of the query-time product with the keys (``"highest"``: exact float32;
        ``"fast"``: the device's default, cancellation-aware — see
        :mod:`anchordiv.retrieval.divergence`); the keys themselves are always computed exactly.
    chunk : int, optional
        Gallery rows embedded per step (default :data:`BUILD_CHUNK`).
    store : str or Path, optional
        A ``.npy`` path: keep the keys in a memory-mapped file instead of (device) memory.
    progress : bool, optional
        Show a progress bar while building (``None``: when there are more than 8 chunks).
    mesh : jax.sharding.Mesh, optional
        Also place the keys sharded by rows over the devices of the mesh axes ``axis``
        (``.sharded``); :meth:`top_k` then scans them on every device in parallel
        (:mod:`anchordiv.retrieval.sharding`).
    axis : str or tuple of str, optional
        The mesh axes (default all).

    Raises
    ------
    AnchorDivError
        As :func:`anchordiv.divergence`.

    Examples
    --------
    >>> model = ad.fit("gaussian", np.eye(4)[:3], tau=20.0)
    >>> index = ad.GalleryIndex(model, np.eye(4))
    >>> len(index), index.key_dim
    (4, 5)
    >>> idx, d = index.top_k(np.eye(4)[:2], k=1)
    >>> idx.ravel()
    array([0, 1])
    """

    def __init__(
        self,
        model: AnchorModel,
        gallery,
        *,
        method: str = "auto",
        precision: str = "highest",
        chunk: int | None = None,
        store: str | Path | None = None,
        progress: bool | None = None,
        mesh=None,
        axis=None,
    ):
        dv.checked_call(model, method, precision)
        self.model, self.method, self.precision = model, method, precision
        self.size, _ = dv.gallery_shape(model, gallery)
        chunk = BUILD_CHUNK if chunk is None else integer("chunk", chunk, low=1)
        chunk = min(chunk, dv.row_bucket(self.size))
        self.store = None if store is None else Path(store)
        self.keys = self._build(gallery, chunk, progress)
        self.mesh, self.sharded = mesh, None
        if mesh is not None:
            self._names, self._shards = sharding.mesh_axes(mesh, axis)

    def _build(self, gallery, chunk: int, progress: bool | None):
        parts, out, tally = [], None, NormTally()
        chunks = key_chunks(self.model, gallery, self.method, chunk, progress=progress, tally=tally)
        for start, keys in chunks:
            if self.store is None:
                parts.append(keys)
                continue
            if out is None:
                out = np.lib.format.open_memmap(
                    self.store, mode="w+", dtype=keys.dtype, shape=(self.size, keys.shape[1])
                )
            out[start : start + len(keys)] = np.asarray(keys)
        tally.warn("gallery")
        if out is not None:
            out.flush()
            return np.load(self.store, mmap_mode="r")
        return parts[0] if len(parts) == 1 else jnp.concatenate(parts)

    @classmethod
    def from_keys(
        cls, model: AnchorModel, keys, *, method: str = "auto", precision: str = "highest"
    ) -> "GalleryIndex":
        """An index over keys computed before, ``keys [G, m + 1]`` (an array or a memmap, e.g.
        the ``keys.npy`` of :func:`anchordiv.scale.dask.build_index`) for the same ``model``
        and ``method``."""
        self = cls.__new__(cls)
        dv.checked_call(model, method, precision)
        self.model, self.method, self.precision = model, method, precision
        self.keys, self.size = keys, int(keys.shape[0])
        self.store = Path(keys.filename) if isinstance(keys, np.memmap) else None
        self.mesh = self.sharded = None
        return self

    # ---- shapes --------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.size

    @property
    def key_dim(self) -> int:
        """m + 1: the width of the MIPS keys."""
        return int(self.keys.shape[1])

    def __repr__(self) -> str:
        where = f"store={str(self.store)!r}" if self.store else "in memory"
        return f"GalleryIndex({self.model.kind}, G={self.size}, keys[{self.key_dim}], {where})"

    # ---- queries -------------------------------------------------------------------------
    def _queries(self, queries, *, pad: bool = True):
        """Validated ``x [Q, d]``, MIPS queries ``q [Qb, m+1]`` and offsets ``c [Qb]``; rows are
        padded to a bucket (shared compiled code) unless ``pad=False`` (Qb = Q)."""
        x = dv.check_embeddings(self.model, "queries", queries)
        warn_not_unit("queries", x)
        terms = dv.padded_query_terms if pad else dv.jit_query_terms
        u, c = terms(self.model, x, self.method)
        return x, jnp.concatenate([u, -jnp.ones((u.shape[0], 1), u.dtype)], axis=1), c

    def top_k(self, queries, k: int, *, chunk: int | None = None, progress: bool | None = None):
        """The k closest cached items per query, streaming the keys in chunks.

        Parameters
        ----------
        queries : array_like, shape [Q, d]
            Query embeddings.
        k : int
            Items per query, a whole number 1 ≤ k ≤ G (anything else is an error).
        chunk : int, optional
            Key rows per step (memory O(Q·(k + chunk))).
        progress : bool, optional
            Show a progress bar (``None``: when there are more than 8 chunks).

        Returns
        -------
        indices : numpy.ndarray, shape [Q, k], int64
            Gallery rows, closest first.
        divergences : numpy.ndarray, shape [Q, k]
            Their divergences, ascending.

        Raises
        ------
        AnchorDivError
            As :func:`anchordiv.top_k`: bad queries or ``k``, or a query with fewer than k
            items of finite divergence (never ``-1`` or inf entries).
        """
        x, q, c = self._queries(queries)
        k = integer("k", k, low=1, high=self.size)
        chunk = dv.scan_chunk(chunk, len(x), self.size, self.key_dim)
        if self.mesh is not None:  # keys placed at the first query and when the padding changes
            chunk, padded = sharding.layout(self.size, chunk, self._shards)
            if self.sharded is None or self.sharded.shape[0] != padded:
                keys = self.keys
                self.sharded = sharding.place_rows(
                    lambda a, b: keys[a:b], self.size, self.key_dim, self.mesh, self._names, padded
                )
            where = (self.sharded, self.size, k, chunk, self.mesh, self._names)
            extra = (self.precision,)
            best_i, best_d = sharding.sharded_top_k(_merge_keys_impl, (q, c), *where, extra=extra)
            return dv.finished_top_k(best_i, best_d, len(x))

        def read(start, stop):
            rows = self.keys[start:stop]
            return rows if isinstance(rows, jax.Array) else np.asarray(rows)

        def score(block, n_valid, offset, best_d, best_i):
            return _merge_keys_jit(q, c, block, n_valid, offset, best_d, best_i, self.precision)

        best_i, best_d = dv.stream_top_k(q, c, k, self.size, chunk, read, score, progress=progress)
        return dv.finished_top_k(best_i, best_d, len(x))

    def divergence(self, queries) -> jax.Array:
        """The full matrix from the cached keys (they must fit in memory).

        Parameters
        ----------
        queries : array_like, shape [Q, d]
            Query embeddings.

        Returns
        -------
        jax.Array, shape [Q, G]
            D(query_i → gallery_j).
        """
        _, q, c = self._queries(queries, pad=False)
        keys = self.keys if isinstance(self.keys, jax.Array) else np.asarray(self.keys)
        return _scores_jit(q, c, keys, self.precision)

    def mips_queries(self, queries) -> tuple[np.ndarray, np.ndarray]:
        """``(q [Q, m+1] float32 [u, −1], c [Q])`` for an external inner-product index."""
        x, q, c = self._queries(queries)
        return np.ascontiguousarray(q[: len(x)], np.float32), np.asarray(c[: len(x)])

    def to_faiss(
        self,
        kind: str = "flat",
        *,
        nlist: int | None = None,
        nprobe: int = 16,
        hnsw_m: int = 32,
        ef_search: int = 128,
        train_size: int = 100_000,
        chunk: int = 65536,
        seed: int = 0,
        progress: bool | None = None,
    ):
        """A :class:`FaissIndex` of the keys: ``"flat"`` (exact inner products), ``"ivf"``
        (``nlist`` cells, default ≈ 4√G, ``nprobe`` searched — at most ``nlist``: a larger one
        is clamped to it —, trained on ``train_size`` sampled keys) or ``"hnsw"`` (``hnsw_m`` links, ``ef_search``).  Keys go to faiss as float32 in
        chunks of ``chunk`` rows.

        Graph and cell indexes find neighbours poorly under raw inner products of keys with
        very different norms, so the approximate kinds use the standard MIPS → nearest-neighbour
        reduction: keys ``[k, √(M² − ‖k‖²)]`` (M = the largest key norm), queries ``[q, 0]``,
        so the L2-nearest key is the largest inner product; their candidates are then re-scored
        exactly from the cached keys.  Before the reduction the ψ(y) column is centred and
        rescaled to the spread of the rest of the key (``(h − mean h) · s``, queries' last entry
        ``−1/s``, s = √tr Cov(v) / std(h)): inner products change by a per-query constant only,
        but ψ(y) no longer dominates the key norms — for softmax keys (std ψ ≈ 7 against unit
        ‖v‖) this raised HNSW recall@10 (efSearch 256, G = 50,000) from 0.58 to 0.94.

        Precision: faiss computes its own inner products (float32 on CPU; a GPU faiss index is
        float32 unless its ``useFloat16`` options are set), so this index's ``precision`` does
        not apply to them; the keys and queries it receives are computed with exact float32
        products, and the approximate kinds' re-scoring is a float32 numpy product."""
        faiss = require_faiss()
        chunk = integer("chunk", chunk, low=1)
        approx = kind != "flat"
        reduce = L2Reduction.fit(self.keys, chunk) if approx else None
        params = dict(nlist=nlist, nprobe=nprobe, hnsw_m=hnsw_m, ef_search=ef_search)
        index = new_faiss(faiss, kind, self.key_dim + approx, self.size, **params)

        def rows(sel):
            keys = self.keys[sel]
            return reduce(keys) if approx else np.ascontiguousarray(keys, np.float32)

        if not index.is_trained:
            index.train(rows(sample_rows(self.size, train_size, seed)))
        starts = range(0, self.size, chunk)
        show = len(starts) > 8 if progress is None else progress
        for start in tqdm(starts, desc=f"faiss {kind}", unit="chunk", disable=not show):
            index.add(rows(slice(start, start + chunk)))
        return FaissIndex(index, self, reduction=reduce)


def key_chunks(
    model: AnchorModel,
    gallery,
    method: str,
    chunk: int,
    *,
    progress: bool | None = None,
    tally: NormTally | None = None,
):
    """The MIPS keys of consecutive blocks of a gallery.

    Each block is validated as read and computed on rows padded to ``chunk``, so every block
    shares one compiled function.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    gallery : array_like, shape [G, d]
        A sliceable gallery.
    method : {"auto", "generic", "direct"}
        Divergence path.
    chunk : int
        Rows per block.
    progress : bool, optional
        Show a progress bar.
    tally : NormTally, optional
        Counts the rows off unit norm as they are read.

    Yields
    ------
    start : int
        The block's first row.
    keys : numpy.ndarray, shape [n, m + 1]
        Its keys.
    """
    size, _ = dv.gallery_shape(model, gallery)
    read = dv.gallery_reader(model, gallery, tally)
    starts = range(0, size, chunk)
    show = len(starts) > 8 if progress is None else progress
    for start in tqdm(starts, desc="index", unit="chunk", disable=not show):
        block = read(start, min(start + chunk, size))
        yield start, dv.keys_jit(model, dv.pad_rows(block, chunk), method)[: len(block)]


def sample_rows(size: int, n: int, seed: int) -> np.ndarray:
    """Sorted row indices of a seeded uniform sample of ``min(n, size)`` rows (training).

    Parameters
    ----------
    size : int
        Rows available.
    n : int
        Rows wanted.
    seed : int
        Seed.

    Returns
    -------
    numpy.ndarray of int, shape [min(n, size)]
        Sorted indices.

    Examples
    --------
    >>> from anchordiv.retrieval.index import sample_rows
    >>> idx = sample_rows(10, 4, seed=0)
    >>> len(idx), bool((np.diff(idx) > 0).all())
    (4, True)
    """
    n = min(size, integer("train_size", n, low=1))
    return np.sort(np.random.default_rng(seed).choice(size, n, False))


@dataclasses.dataclass(frozen=True)
class L2Reduction:
    """The MIPS → L2 reduction of the approximate faiss kinds (:meth:`GalleryIndex.to_faiss`).

    Keys ``[v, h] [n, m+1] -> [v, (h − shift)·scale, √(M² − ‖·‖²)] [n, m+2]`` float32, with
    M = ``max_norm`` the largest balanced key norm.  Built from key statistics that add up over
    blocks (:meth:`stats`, :meth:`balance`), so the blocks of a sharded gallery can be summarised
    apart.

    Parameters
    ----------
    shift : float, default 0.0
        Subtracted from the ψ(y) column.
    scale : float, default 1.0
        Multiplies the shifted ψ(y) column.
    max_norm : float, default 0.0
        M, the largest balanced key norm.

    Examples
    --------
    >>> from anchordiv.retrieval import L2Reduction
    >>> keys = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 4.0]])
    >>> L2Reduction.fit(keys, chunk=2)(keys).shape
    (2, 4)
    """

    shift: float = 0.0
    scale: float = 1.0
    max_norm: float = 0.0

    @staticmethod
    def stats(keys) -> np.ndarray:
        """``[n, Σh, Σh², Σ‖v‖², Σv…]`` of keys ``[n, m+1]`` (add them over blocks)."""
        k = np.asarray(keys, np.float64)
        v, h = k[:, :-1], k[:, -1]
        return np.concatenate([[len(k), h.sum(), (h**2).sum(), (v**2).sum()], v.sum(0)])

    @classmethod
    def balance(cls, stats) -> "L2Reduction":
        """``shift = mean h``, ``scale = √tr Cov(v) / std h`` from summed :meth:`stats`
        (``max_norm`` still 0: set it with :meth:`with_norm`)."""
        n, sum_h, sum_h2, sum_v2 = stats[:4]
        mean_h = sum_h / n
        std_h = np.sqrt(max(sum_h2 / n - mean_h**2, 0.0))
        spread_v = np.sqrt(max(sum_v2 / n - float(np.sum((stats[4:] / n) ** 2)), 0.0))
        return cls(float(mean_h), float(spread_v / std_h if std_h > 0 and spread_v > 0 else 1.0))

    @classmethod
    def fit(cls, keys, chunk: int) -> "L2Reduction":
        """Balance and largest norm of ``keys [G, m+1]``, streamed in ``chunk`` rows."""
        starts = range(0, len(keys), chunk)
        reduction = cls.balance(sum(cls.stats(keys[s : s + chunk]) for s in starts))
        return reduction.with_norm(max(reduction.norm(keys[s : s + chunk]) for s in starts))

    def balanced(self, keys) -> np.ndarray:
        k = np.array(keys, np.float64)  # a copy: keys may be a read-only memmap
        k[:, -1] = (k[:, -1] - self.shift) * self.scale
        return k

    def norm(self, keys) -> float:
        """The largest balanced key norm in ``keys``."""
        return float(np.linalg.norm(self.balanced(keys), axis=1).max())

    def with_norm(self, max_norm: float) -> "L2Reduction":
        return dataclasses.replace(self, max_norm=float(max_norm))

    def __call__(self, keys) -> np.ndarray:
        k = self.balanced(keys)  # then append √(M² − ‖k‖²)
        extra = np.sqrt(np.maximum(self.max_norm**2 - np.sum(k * k, axis=1), 0.0))
        return np.ascontiguousarray(np.concatenate([k, extra[:, None]], axis=1), np.float32)


def require_faiss():
    """The ``faiss`` module, or an :class:`AnchorDivError` saying how to install it."""
    try:
        import faiss
    except ImportError:  # pragma: no cover - depends on the installation
        raise AnchorDivError("faiss is not installed: pip install 'anchordiv[faiss]'") from None
    return faiss


def new_faiss(faiss, kind: str, dim: int, size: int, *, nlist, nprobe, hnsw_m, ef_search):
    """An empty faiss ``kind`` index of width ``dim``: inner product if flat, else L2."""
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "ivf":
        nlist = max(1, int(4 * np.sqrt(size))) if nlist is None else integer("nlist", nlist, low=1)
        if nlist > size:
            raise AnchorDivError(
                f"nlist: {nlist} cells for a gallery of {size} items; need nlist <= G"
            )
        index = faiss.IndexIVFFlat(faiss.IndexFlatL2(dim), dim, nlist, faiss.METRIC_L2)
        # more cells probed than there are is all of them: clamped, so what is saved loads
        index.nprobe = min(integer("nprobe", nprobe, low=1), nlist)
        return index
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, integer("hnsw_m", hnsw_m, low=2), faiss.METRIC_L2)
        index.hnsw.efSearch = integer("ef_search", ef_search, low=1)
        return index
    raise AnchorDivError(
        f"kind: unknown faiss index {kind!r}; choose one of {', '.join(FAISS_KINDS)}"
    )


#: The faiss classes a saved index may hold (what :func:`new_faiss` builds), each with whether
#: its candidates are re-scored (the approximate kinds' L2 reduction).
FAISS_CLASSES = {"IndexFlatIP": False, "IndexIVFFlat": True, "IndexHNSWFlat": True}
#: A loaded HNSW index's ``efSearch`` may be at most this or the gallery size, whichever is
#: larger (each query's candidate lists grow with it: 2³¹ − 1 would take gigabytes).
MAX_EF_SEARCH = 4096


def search_params(index) -> dict[str, int]:
    """The search-time parameters of a faiss index of :data:`FAISS_CLASSES` (what a card
    records and a load checks): HNSW's ``ef_search``, IVF's ``nprobe`` and ``nlist``."""
    name = type(index).__name__
    if name == "IndexHNSWFlat":
        return {"ef_search": int(index.hnsw.efSearch)}
    if name == "IndexIVFFlat":
        return {"nprobe": int(index.nprobe), "nlist": int(index.nlist)}
    return {}


class FaissIndex:
    """A faiss index over a :class:`GalleryIndex`'s MIPS keys (made by :meth:`GalleryIndex.to_faiss`).

    Search with :meth:`search`; grow with :meth:`add`.

    Parameters
    ----------
    faiss_index : faiss.Index
        The raw faiss index (``.faiss``: for sharding, GPU transfer, ``faiss.write_index``).
    gallery : GalleryIndex
        The index whose keys it holds.
    reduction : L2Reduction, optional
        The MIPS → L2 reduction of the approximate kinds; when given, candidates are re-scored
        exactly from the cached keys (``rescore``), since their faiss distances are L2 distances
        of reduced keys.

    Examples
    --------
    >>> model = ad.fit("gaussian", np.eye(4)[:3], tau=20.0)
    >>> fx = ad.GalleryIndex(model, np.eye(4)).to_faiss("flat")   # needs faiss
    >>> idx, d = fx.search(np.eye(4)[:2], k=1)
    >>> idx.ravel()
    array([0, 1])
    """

    def __init__(
        self, faiss_index, gallery: GalleryIndex, *, reduction: "L2Reduction | None" = None
    ):
        self.faiss = faiss_index
        self.gallery = gallery
        self.reduction = reduction  # the approximate kinds' MIPS → L2 reduction
        self.rescore = reduction is not None
        self.query_scale = reduction.scale if reduction is not None else 1.0

    def search(self, queries, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k closest items per query by the faiss index.

        D = max(c(x) − ⟨q(x), k(y)⟩, 0).

        Parameters
        ----------
        queries : array_like, shape [Q, d]
            Query embeddings.
        k : int
            Items per query, 1 ≤ k ≤ G.

        Returns
        -------
        indices : numpy.ndarray, shape [Q, k], int64
            Gallery rows, closest first; an approximate index may return fewer than k items for a
            query: index −1, D = inf.
        divergences : numpy.ndarray, shape [Q, k]
            Their divergences, ascending.
        """
        k = integer("k", k, low=1, high=self.gallery.size)
        q, c = self.gallery.mips_queries(queries)
        qf = q  # q: float32; the approximate kinds search [q, 0] with ψ scaled as the keys'
        if self.rescore:
            qf = np.concatenate([q, np.zeros((len(q), 1), q.dtype)], 1)
            qf[:, -2] /= self.query_scale
        scores, idx = self.faiss.search(qf, k)
        if idx.size and (idx.min() < -1 or idx.max() >= self.gallery.size):
            raise AnchorDivError(
                f"faiss index: returned ids in [{idx.min()}, {idx.max()}], outside the gallery's "
                f"{self.gallery.size} rows (a corrupt index)"
            )
        if not self.rescore:
            div = np.maximum(c[:, None] - scores.astype(c.dtype), 0.0)
        else:
            keys = np.asarray(self.gallery.keys[np.maximum(idx, 0).ravel()]).reshape(*idx.shape, -1)
            div = np.maximum(c[:, None] - np.einsum("qm,qkm->qk", q.astype(keys.dtype), keys), 0.0)
        div = np.where(idx < 0, np.inf, div)
        order = np.argsort(div, axis=1, kind="stable")
        idx = np.take_along_axis(idx, order, axis=1).astype(np.int64)
        return idx, np.take_along_axis(div, order, axis=1)

    def __len__(self) -> int:
        return int(self.faiss.ntotal)

    def __repr__(self) -> str:
        return (
            f"FaissIndex({type(self.faiss).__name__}, {self.gallery.model.kind}, "
            f"G={len(self)}, rescore={self.rescore})"
        )

    # ---- growing the index ---------------------------------------------------------------
    def add(self, items) -> "FaissIndex":
        """Append gallery items ``[n, d]`` (their indices continue after the current ones).
        Their keys join the cached keys in memory.  For the approximate kinds the reduction
        keeps the original key-norm bound M, so an added key longer than M is searched with a
        clipped augmentation (candidates are still re-scored exactly)."""
        g = self.gallery
        keys = np.asarray(GalleryIndex(g.model, items, method=g.method).keys)
        # the approximate kinds: reduced with the original shift, scale and norm bound M
        self.faiss.add(self.reduction(keys) if self.rescore else np.ascontiguousarray(keys, "f4"))
        g.keys = np.concatenate([np.asarray(g.keys), keys.astype(np.asarray(g.keys).dtype)])
        g.size, g.store = len(g.keys), None
        return self

    # ---- persistence -----------------------------------------------------------------------
    def save(self, path, *, overwrite: bool = False, **card) -> Path:
        """Save to the directory ``path``: the faiss index (serialized) and the cached keys in
        ``arrays.npz``, the anchor model in ``path/model`` and a card (kind, sizes, reduction);
        ``card`` keywords are added to the card.  An existing non-empty ``path`` is refused
        unless ``overwrite=True``."""
        from .._safeio import atomic_dir
        from ..io import bundle_digest, save_model, write_bundle_files

        faiss = require_faiss()
        path = Path(path)
        arrays = {
            "faiss": np.asarray(faiss.serialize_index(self.faiss)),
            "keys": np.asarray(self.gallery.keys),
        }
        red = self.reduction or L2Reduction()
        meta = {
            "type": "faiss-index",
            "faiss_class": type(self.faiss).__name__,
            **search_params(self.faiss),
            "size": len(self),
            "key_dim": self.gallery.key_dim,
            "rescore": self.rescore,
            "query_scale": red.scale,
            "shift": red.shift,
            "max_norm": red.max_norm,
            "method": self.gallery.method,
            "kind": self.gallery.model.kind,
            "model_dim": self.gallery.model.dim,
        }
        with atomic_dir(path, overwrite) as tmp:
            save_model(self.gallery.model, tmp / "model")
            meta["model_digest"] = bundle_digest(tmp / "model")
            write_bundle_files(tmp, arrays, {**meta, **card})
        return path

    @classmethod
    def load(cls, path, *, verify: bool = True, sha256: str | None = None) -> "FaissIndex":
        """Load an index saved by :meth:`save`; the card's sizes are checked against the
        arrays, the faiss index and the model.  The serialized faiss index is first
        deserialized in a child process of bounded memory and time
        (:func:`~anchordiv._safeio.check_faiss_bytes`), so a corrupt one is a clear
        :class:`AnchorDivError`; ``sha256`` pins the bundle's digest (``ad.bundle_digest``)."""
        from .._safeio import bundle_dir, check_faiss_bytes, malformed
        from ..io import check_card_dim, expect_type, load_model, pinned_digests, read_bundle

        faiss = require_faiss()
        arrays, card = read_bundle(path, verify=verify, sha256=sha256)
        expect_type(path, card, "faiss-index", "a faiss index")
        with pinned_digests(()):  # a pin names the index; its model is covered by its checks
            model = load_model(
                bundle_dir(path) / "model", verify=verify, sha256=card.get("model_digest")
            )
        with malformed(path, "faiss index"):
            check_card_dim(path, {"dim": card.get("model_dim")}, model.dim)
            keys, data = arrays["keys"], arrays["faiss"]
            if keys.ndim != 2 or keys.dtype.kind != "f" or data.ndim != 1 or data.dtype != np.uint8:
                raise AnchorDivError(f"{path}: keys [n, m] floats and index bytes expected")
            check_faiss_bytes(data, f"{path}")
            try:
                index = faiss.deserialize_index(data)
            except RuntimeError as err:
                raise AnchorDivError(
                    f"{path}: the faiss index does not deserialize ({err})"
                ) from None
            name = type(index).__name__
            if name != card.get("faiss_class") or name not in FAISS_CLASSES:
                raise AnchorDivError(
                    f"{path}: the faiss index is a {name}, the card says "
                    f"{card.get('faiss_class')!r} (one of {', '.join(FAISS_CLASSES)})"
                )
            if FAISS_CLASSES[name] != card.get("rescore"):
                raise AnchorDivError(f"{path}: a {name} with rescore = {card.get('rescore')!r}")
            params = search_params(index)
            ef, nprobe = params.get("ef_search", 1), params.get("nprobe", 1)
            ef_max = max(MAX_EF_SEARCH, index.ntotal)
            if not (1 <= ef <= ef_max and 1 <= nprobe <= params.get("nlist", 1)):
                raise AnchorDivError(
                    f"{path}: the faiss index searches with {params}; efSearch must be in [1, "
                    f"{ef_max}] and nprobe in [1, nlist]"
                )
            declared = {k: card[k] for k in params if k in card}
            if any(params[k] != v for k, v in declared.items()):
                raise AnchorDivError(
                    f"{path}: the faiss index searches with {params}, the card says {declared}"
                )
            rescore = card["rescore"]
            numbers = [card[k] for k in ("shift", "query_scale", "max_norm")] if rescore else []
            if not isinstance(rescore, bool) or not all(
                isinstance(x, (int, float)) and np.isfinite(x) for x in numbers
            ):
                raise AnchorDivError(f"{path}: the card's reduction is malformed")
            if not (
                card["size"] == len(keys) == index.ntotal
                and card["key_dim"] == keys.shape[1]
                and index.d == keys.shape[1] + rescore
            ):
                raise AnchorDivError(
                    f"{path}: card says {card['size']} items x {card['key_dim']} "
                    f"key columns; arrays hold {list(keys.shape)} keys and the "
                    f"faiss index {index.ntotal} items of {index.d} columns"
                )
            gallery = GalleryIndex.from_keys(model, keys, method=card["method"])
            probe = GalleryIndex(model, np.eye(model.dim)[:1], method=card["method"])
            if probe.key_dim != keys.shape[1]:
                raise AnchorDivError(
                    f"{path}: {keys.shape[1]} key columns; the model's keys have {probe.key_dim}"
                )
            red = L2Reduction(*(float(x) for x in numbers)) if rescore else None
            return cls(index, gallery, reduction=red)


def merge_results(parts, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Combine per-shard top-k results into the global top-k.

    Parameters
    ----------
    parts : iterable of (numpy.ndarray, numpy.ndarray)
        ``(indices [Q, k_s], divergences [Q, k_s])`` per shard, indices already global (shard
        offset added).
    k : int
        Items per query to keep.

    Returns
    -------
    indices : numpy.ndarray, shape [Q, k], int64
        Global rows, closest first; equal divergences keep the order of ``parts`` (stable).
    divergences : numpy.ndarray, shape [Q, k]
        Ascending.

    Examples
    --------
    >>> from anchordiv.retrieval import merge_results
    >>> a = (np.array([[0, 1]]), np.array([[0.1, 0.5]]))
    >>> b = (np.array([[7, 8]]), np.array([[0.2, 0.9]]))
    >>> merge_results([a, b], k=3)[0]
    array([[0, 7, 1]])
    """
    parts = list(parts)
    if not parts:
        raise AnchorDivError("parts: no shard results to merge")
    idx = np.concatenate([np.asarray(i, np.int64) for i, _ in parts], axis=1)
    div = np.concatenate([np.asarray(d) for _, d in parts], axis=1)
    k = integer("k", k, low=1, high=idx.shape[1])
    order = np.argsort(div, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(div, order, axis=1)


def recall_at_k(found, exact) -> float:
    """Mean fraction of the exact top-k present in the found items.

    Parameters
    ----------
    found : array_like of int, shape [Q, k']
        Indices an approximate search returned.
    exact : array_like of int, shape [Q, k]
        The exact top-k.

    Returns
    -------
    float
        Recall@k in [0, 1].

    Raises
    ------
    AnchorDivError
        ``found`` and ``exact`` differ in their number of rows.

    Examples
    --------
    >>> from anchordiv.retrieval import recall_at_k
    >>> recall_at_k(np.array([[0, 2]]), np.array([[0, 1]]))
    0.5
    """
    found, exact = np.asarray(found), np.asarray(exact)
    if len(found) != len(exact):
        raise AnchorDivError(f"found: {len(found)} rows, exact: {len(exact)} rows; must match")
    hits = [len(np.intersect1d(f, e)) / exact.shape[1] for f, e in zip(found, exact)]
    return float(np.mean(hits))
