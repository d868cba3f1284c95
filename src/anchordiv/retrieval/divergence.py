"""Divergences and retrieval derived once, generically, from an anchor model's cumulant ψ.

For a query x and gallery item y (after the model's map P):

    D(x→y) = ψ(y) − ψ(x) − ⟨∇ψ(x), y − x⟩ = h(y) − ⟨u(x), v(y)⟩ + c(x)

with query terms ``u = ∇ψ(x)``, ``c = ⟨∇ψ(x), x⟩ − ψ(x)`` and key terms ``v = y``, ``h = ψ(y)``
(docs/mathematics.md, "Retrieval needs one matrix product"); squared-Euclidean fast paths use
``u = 2φ(x), c = ‖φ(x)‖², v = φ(y), h = ‖φ(y)‖²``.  ``method``: ``"auto"``, ``"generic"`` (one
GEMM) or ``"direct"`` (the Bregman formula per pair, the slow reference); results are clamped
at 0.  ``precision`` (:data:`PRECISIONS`): ``"highest"`` (exact float32 products) or ``"fast"``
(the device's default product on block-centred operands; ``docs/guides/scale-out.md``).
Top-k streams the gallery in chunks; the MIPS form ``⟨[u(x), −1], [v(y), h(y)]⟩ = c(x) − D``
exports any geometry to an inner-product index."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from ..progress import tqdm

from ..anchors.base import AnchorModel
from ..errors import AnchorDivError, as_matrix, integer
from ..heap import reused_heap
from ..provenance import NormTally, warn_not_unit

METHODS = ("auto", "generic", "direct")
#: Choices of ``precision`` for the Q×G product (see the module docstring).
PRECISIONS = ("highest", "fast")


def use_fast_path(model: AnchorModel, method: str) -> bool:
    """Whether ``method`` (checked against :data:`METHODS`) takes the squared-Euclidean path."""
    if method not in METHODS:
        raise AnchorDivError(f"method: unknown {method!r}; choose one of {', '.join(METHODS)}")
    return method == "auto" and model.quadratic


def check_precision(precision) -> str:
    """``precision`` validated against :data:`PRECISIONS`.

    Parameters
    ----------
    precision : str
        ``"highest"`` or ``"fast"``.

    Returns
    -------
    str
        The same string.

    Raises
    ------
    AnchorDivError
        Another value.
    """
    if precision not in PRECISIONS:
        raise AnchorDivError(
            f"precision: unknown {precision!r}; choose 'highest' (exact float32 products, the "
            f"default) or 'fast' (the device's default products: TF32 on recent NVIDIA GPUs, "
            f"bf16 passes on TPU; cancellation-aware form)"
        )
    return precision


def exact_products(fn):
    """``fn`` traced with every matrix product at ``Precision.HIGHEST`` (exact float32 on
    every backend) unless it sets its own: wraps the implementations before ``jax.jit``."""

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        with jax.default_matmul_precision("highest"):
            return fn(*args, **kwargs)

    return traced


def query_terms(model: AnchorModel, x: jax.Array, method: str = "auto"):
    """Query terms of the one-GEMM form, ``u`` and ``c`` (module docstring).

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    x : jax.Array, shape [Q, d]
        Query embeddings.
    method : {"auto", "generic", "direct"}, default "auto"
        As in :func:`key_terms`.

    Returns
    -------
    u : jax.Array, shape [Q, m]
        Query vectors (∇ψ(x), or 2φ(x) on the fast path).
    c : jax.Array, shape [Q]
        Query offsets.
    """
    if use_fast_path(model, method):
        phi = model.embed(x)
        return 2.0 * phi, jnp.sum(phi * phi, axis=-1)
    p = model.parameterize(x)
    psi, g = jax.vmap(jax.value_and_grad(lambda t: model.cumulant(t)))(p)
    return g, jnp.sum(g * p, axis=-1) - psi


def key_terms(model: AnchorModel, y: jax.Array, method: str = "auto"):
    """Key terms of the one-GEMM form, ``v`` and ``h`` (module docstring).

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    y : jax.Array, shape [G, d]
        Gallery embeddings.
    method : {"auto", "generic", "direct"}, default "auto"
        ``"auto"`` uses the fast path's ``v = φ(y)``, ``h = ‖φ(y)‖²`` where the model has one.

    Returns
    -------
    v : jax.Array, shape [G, m]
        Key vectors.
    h : jax.Array, shape [G]
        Key offsets.
    """
    if use_fast_path(model, method):
        phi = model.embed(y)
        return phi, jnp.sum(phi * phi, axis=-1)
    p = model.parameterize(y)
    return p, model.cumulant(p)


def augmented(u, c, v, h):
    """The operands of ``"highest"``: offsets ride inside the product.

    Parameters
    ----------
    u : jax.Array, shape [Q, m]
        Query vectors.
    c : jax.Array, shape [Q]
        Query offsets.
    v : jax.Array, shape [G, m]
        Key vectors.
    h : jax.Array, shape [G]
        Key offsets.

    Returns
    -------
    left : jax.Array, shape [Q, m + 2]
        ``[−u, 1, c]``.
    right : jax.Array, shape [G, m + 2]
        ``[v, h, 1]``; ``left @ right.T`` is D before the clamp.
    """
    ones_q = jnp.ones((u.shape[0], 1), u.dtype)
    ones_g = jnp.ones((v.shape[0], 1), v.dtype)
    ua = jnp.concatenate([-u, ones_q, c[:, None].astype(u.dtype)], axis=1)
    va = jnp.concatenate([v, h[:, None].astype(v.dtype), ones_g], axis=1)
    return ua, va


def centred(u, c, v, h):
    """The operands of ``"fast"``: centred cross term and exact offsets.

    ``D = row[:, None] + col[None] − (u − ū)(v − v̄)ᵀ`` exactly (ū, v̄: column means; the
    offsets' matrix-vector products at ``Precision.HIGHEST``).

    Parameters
    ----------
    u : jax.Array, shape [Q, m]
        Query vectors.
    c : jax.Array, shape [Q]
        Query offsets.
    v : jax.Array, shape [G, m]
        Key vectors.
    h : jax.Array, shape [G]
        Key offsets.

    Returns
    -------
    u_centred : jax.Array, shape [Q, m]
        u − ū.
    v_centred : jax.Array, shape [G, m]
        v − v̄.
    row : jax.Array, shape [Q]
        Query offsets of the centred form.
    col : jax.Array, shape [G]
        Key offsets of the centred form.
    """
    hi = jax.lax.Precision.HIGHEST
    ubar, vbar = jnp.mean(u, axis=0), jnp.mean(v, axis=0)
    row = c.astype(u.dtype) - jnp.matmul(u, vbar, precision=hi)
    col = h.astype(v.dtype) - jnp.matmul(v, ubar, precision=hi) + jnp.dot(ubar, vbar, precision=hi)
    return u - ubar, v - vbar, row, col


def pairwise(u, c, v, h, precision: str = "highest") -> jax.Array:
    """The divergence matrix from query and key terms: the one matrix product.

    ``D [Q, G] = max(h[None] − u vᵀ + c[:, None], 0)``.  ``"highest"``: the offsets ride inside
    the product — ``[−u, 1, c] · [v, h, 1]ᵀ`` (:func:`augmented`) — so the only pass over the
    ``[Q, G]`` output besides the GEMM is the clamp.  ``"fast"``: the centred cross term at the
    device's default precision plus exact offsets (:func:`centred`).

    Parameters
    ----------
    u : jax.Array, shape [Q, m]
        Query vectors.
    c : jax.Array, shape [Q]
        Query offsets.
    v : jax.Array, shape [G, m]
        Key vectors.
    h : jax.Array, shape [G]
        Key offsets.
    precision : {"highest", "fast"}, default "highest"
        How the product is computed.

    Returns
    -------
    jax.Array, shape [Q, G]
        The clamped divergences.

    Examples
    --------
    >>> from anchordiv.retrieval import key_terms, pairwise, query_terms
    >>> model = ad.fit("gaussian", np.eye(3), tau=2.0)
    >>> u, c = query_terms(model, np.eye(3))
    >>> v, h = key_terms(model, np.eye(3))
    >>> bool(np.allclose(pairwise(u, c, v, h), ad.divergence(model, np.eye(3), np.eye(3))))
    True
    """
    if precision == "highest":
        ua, va = augmented(u, c, v, h)
        return jnp.maximum(jnp.matmul(ua, va.T, precision=jax.lax.Precision.HIGHEST), 0.0)
    uc, vc, row, col = centred(u, c, v, h)
    cross = jnp.matmul(uc, vc.T, precision=jax.lax.Precision.DEFAULT)
    return jnp.maximum(row[:, None] + col[None, :] - cross, 0.0)


def bregman(model: AnchorModel, x: jax.Array, y: jax.Array) -> jax.Array:
    """The Bregman formula for matched pairs, the reference path.

    D(x→y) = ψ(y) − ψ(x) − ⟨∇ψ(x), y − x⟩ after the model's map P.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    x, y : jax.Array, shape [..., d]
        Matched queries and gallery items.

    Returns
    -------
    jax.Array, shape [...]
        D(x→y) per pair (not clamped).

    Examples
    --------
    >>> from anchordiv.retrieval import bregman
    >>> model = ad.fit("gaussian", np.eye(3), tau=2.0)
    >>> float(bregman(model, np.eye(3)[0], np.eye(3)[0]))
    0.0
    """

    def one(a, b):
        pa, pb = model.parameterize(a), model.parameterize(b)
        psi_a, g = jax.value_and_grad(lambda t: model.cumulant(t))(pa)
        return model.cumulant(pb) - psi_a - jnp.dot(g, pb - pa)

    x, y = jnp.broadcast_arrays(x, y)
    flat = jax.vmap(one)(x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1]))
    return flat.reshape(x.shape[:-1])


@exact_products
def _divergence_impl(model, x, y, method, precision):
    if method == "direct":
        return jax.vmap(lambda a: bregman(model, a[None, :], y))(x)
    u, c = query_terms(model, x, method)
    v, h = key_terms(model, y, method)
    return pairwise(u, c, v, h, precision)


_divergence_jit = jax.jit(_divergence_impl, static_argnames=("method", "precision"))


def check_model(model) -> AnchorModel:
    if not isinstance(model, AnchorModel):
        raise AnchorDivError(
            f"model: expected an anchor model (from anchordiv.fit), got {type(model).__name__}"
        )
    return model


def check_embeddings(model: AnchorModel, name: str, x, *, min_rows: int = 1) -> np.ndarray:
    """Validated ``[n, d]`` embeddings for ``model`` (finite, right d, in the model's domain)."""
    arr = as_matrix(name, x, dim=model.dim, min_rows=min_rows)
    model.check_embeddings(name, arr)
    return arr


def checked_call(model, method: str, precision: str, queries=None):
    """``model``, ``method`` and ``precision`` checked; the queries validated and norm-checked."""
    check_model(model)
    use_fast_path(model, method)
    check_precision(precision)
    if queries is None:
        return None
    x = check_embeddings(model, "queries", queries)
    warn_not_unit("queries", x)
    return x


def divergence(
    model: AnchorModel, queries, gallery, *, method: str = "auto", precision: str = "highest"
) -> jax.Array:
    """Anchor divergence matrix ``D[i, j] = D(query_i → gallery_j)``; ascending = closer.

    D(x→y) = ψ(y) − ψ(x) − ⟨∇ψ(x), y − x⟩ for the model's cumulant ψ, computed as one matrix
    product (module docstring); clamped at 0.

    Parameters
    ----------
    model : AnchorModel
        The anchor model (from :func:`anchordiv.fit` or ``post.point()``).
    queries : array_like, shape [Q, d]
        Query embeddings (unit-norm rows).
    gallery : array_like, shape [G, d]
        Gallery embeddings (unit-norm rows).
    method : {"auto", "generic", "direct"}, default "auto"
        ``"auto"``: the model's squared-Euclidean fast path where it has one, else ``"generic"``
        (one GEMM, ∇ψ by autodiff); ``"direct"``: the Bregman formula per pair (slow reference).
    precision : {"highest", "fast"}, default "highest"
        ``"highest"``: exact float32 products; ``"fast"``: the device's default product in a
        cancellation-aware form (module docstring).

    Returns
    -------
    jax.Array, shape [Q, G]
        The divergences, in the dtype of the inputs.

    Raises
    ------
    AnchorDivError
        Non-finite or mis-shaped inputs, a dimension other than the model's, an unknown
        ``method`` or ``precision``.

    Examples
    --------
    >>> anchors = np.eye(4)[:3]
    >>> model = ad.fit("gaussian", anchors, tau=20.0)
    >>> D = ad.divergence(model, np.eye(4)[:2], np.eye(4))
    >>> D.shape
    (2, 4)
    >>> [int(i) for i in D.argmin(axis=1)]         # each query is closest to itself
    [0, 1]
    """
    checked_call(model, method, precision)
    x = check_embeddings(model, "queries", queries)
    y = check_embeddings(model, "gallery", gallery)
    warn_not_unit("queries", x)
    warn_not_unit("gallery", y)
    # numpy arguments go straight to the jitted call: its C++ path moves them to the device
    # without the extra copy of jnp.asarray (measured 0.19x of a cosine GEMM at G=20000, d=384)
    return _divergence_jit(model, x, y, method, precision)


# ---- streaming top-k ---------------------------------------------------------------------


def row_bucket(n: int) -> int:
    """Padded row count: next power of two up to 64, then a multiple of 2^(⌊log2 n⌋−3)
    (at most 12.5 % padding), so nearby sizes share compiled code."""
    if n <= 64:
        return 1 << max(0, (n - 1).bit_length())
    step = 1 << (n.bit_length() - 4)
    return -(-n // step) * step


def pad_rows(x, size: int):
    """Pad ``x [n, d]`` to ``[size, d]`` by repeating row 0 (stays in every model's domain).
    Works on numpy and JAX arrays alike (a JAX array stays on its device)."""
    if len(x) == size:
        return x
    xp = jnp if isinstance(x, jax.Array) else np
    return xp.concatenate([x, xp.repeat(x[:1], size - len(x), axis=0)])


@exact_products
def _query_terms_impl(model, x, method):
    return query_terms(model, x, method)


#: ``(model, x [Q, d], method) -> (u [Q, m], c [Q])``, jitted, exact products, not padded.
jit_query_terms = jax.jit(_query_terms_impl, static_argnames="method")


def padded_query_terms(model: AnchorModel, x: np.ndarray, method: str = "auto"):
    """Query terms of ``x [Q, d]`` computed on rows padded to :func:`row_bucket` (so nearby Q
    share compiled code): ``(u [Qb, m], c [Qb])``; rows past Q are padding."""
    return jit_query_terms(model, pad_rows(x, row_bucket(len(x))), method)


def merge_top_k(d, n_valid, offset, best_d, best_i):
    """Merge a scored block ``d [Q, chunk]`` (columns ≥ ``n_valid`` are padding; column j is
    item ``offset + j``) into the running ``best_d, best_i [Q, k]`` (ascending)."""
    cols = jnp.arange(d.shape[1])
    d = jnp.where(cols[None, :] < n_valid, d, jnp.inf)
    cand_d = jnp.concatenate([best_d, d], axis=1)
    cand_i = jnp.concatenate([best_i, jnp.broadcast_to(offset + cols, d.shape)], axis=1)
    neg, pos = jax.lax.top_k(-cand_d, best_d.shape[1])
    return -neg, jnp.take_along_axis(cand_i, pos, axis=1)


@exact_products
def _merge_impl(model, u, c, y, n_valid, offset, best_d, best_i, method, precision):
    """Score one gallery chunk ``y [chunk, d]`` and merge it into the running top-k."""
    v, h = key_terms(model, y, method)
    return merge_top_k(pairwise(u, c, v, h, precision), n_valid, offset, best_d, best_i)


_merge_jit = jax.jit(_merge_impl, static_argnames=("method", "precision"))


#: Float32 entries of one CPU scan step (scores plus rows): temporaries under glibc's 32 MB
#: heap limit, so no step faults in fresh pages (docs/guides/scale-out.md); half under x64.
STEP_ENTRIES = 1 << 22
#: The same on accelerators (not glibc's memory): larger steps amortise the dispatch.
DEVICE_STEP_ENTRIES = 1 << 24


def default_chunk(n_queries: int, n_gallery: int, budget: int | None = None, dim: int = 0) -> int:
    """Gallery chunk so that one block — ``[Q, chunk]`` scores plus ``[chunk, dim]`` gallery
    rows — holds at most about ``budget`` entries (default :data:`STEP_ENTRIES` on CPU,
    :data:`DEVICE_STEP_ENTRIES` on an accelerator backend, both halved under
    ``jax_enable_x64``): a power of two from the bucketed Q (so nearby Q and G share compiled
    code), at least 1024, at most 2^16 and at most :func:`row_bucket` of the gallery size."""
    if budget is None:
        budget = STEP_ENTRIES if jax.default_backend() == "cpu" else DEVICE_STEP_ENTRIES
        budget //= jax.dtypes.canonicalize_dtype(np.float64).itemsize // 4
    per_item = row_bucket(max(n_queries, 1)) + dim
    chunk = 1 << min(max(budget // per_item, 1024).bit_length() - 1, 16)
    return min(chunk, row_bucket(n_gallery))


def scan_chunk(chunk, n_queries: int, n_gallery: int, dim: int) -> int:
    """``chunk`` checked, or :func:`default_chunk` when None."""
    if chunk is None:
        return default_chunk(n_queries, n_gallery, dim=dim)
    return integer("chunk", chunk, low=1)


def stream_top_k(u, c, k: int, n_items: int, chunk: int, read, score, *, progress=None):
    """The streaming loop shared by :func:`top_k` and :class:`anchordiv.retrieval.index.GalleryIndex`.

    ``u [Qb, m], c [Qb]``: query terms; ``read(start, stop)`` returns the next block of
    ``stop − start`` rows (gallery rows or cached keys); ``score(block, n_valid, offset,
    best_d, best_i)`` merges a block padded to ``chunk`` rows.  Memory is O(Q·(k + chunk)).
    The loop runs inside :func:`anchordiv.heap.reused_heap` (its steps' buffers are reused
    even in a process with fixed malloc thresholds, e.g. a Dask worker) and waits for the last
    step there.
    Returns device arrays ``(best_i [Qb, k] int32, best_d [Qb, k])``."""
    best_d = jnp.full((u.shape[0], k), jnp.inf, u.dtype)
    best_i = jnp.full((u.shape[0], k), -1, jnp.int32)
    starts = range(0, n_items, chunk)
    show = len(starts) > 8 if progress is None else progress
    with reused_heap():
        for start in tqdm(starts, desc="top-k", unit="chunk", disable=not show):
            block = read(start, min(start + chunk, n_items))
            best_d, best_i = score(pad_rows(block, chunk), len(block), start, best_d, best_i)
        jax.block_until_ready(best_d)
    return best_i, best_d


def gallery_shape(model: AnchorModel, gallery) -> tuple[int, int]:
    """Validated ``(G, d)`` of an array-like gallery (a memmap is not read)."""
    shape = getattr(gallery, "shape", None) or np.shape(gallery)
    if len(shape) != 2:
        raise AnchorDivError(f"gallery: expected shape [G, d], got {list(shape)}")
    if int(shape[0]) == 0:
        raise AnchorDivError("gallery: is empty")
    if shape[1] != model.dim:
        raise AnchorDivError(
            f"gallery: dimension mismatch: last axis has {shape[1]} entries, "
            f"the model expects d={model.dim}"
        )
    return int(shape[0]), int(shape[1])


def gallery_reader(model: AnchorModel, gallery, tally: NormTally | None = None):
    """``read(start, stop)`` for :func:`stream_top_k`: rows of an array-like gallery, validated
    as they are read (the error names the row range), as a numpy array (the jitted scorer
    moves it to the device); each block is counted in ``tally`` (rows off unit norm) when
    given."""

    def read(start, stop):
        block = check_embeddings(model, f"gallery[{start}:{stop}]", np.asarray(gallery[start:stop]))
        if tally is not None:
            tally.add(block)
        return block

    return read


def finished_top_k(best_i, best_d, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n_queries`` rows of a scan's ``(best_i [Qb, k], best_d [Qb, k])`` as numpy
    ``(int64, float)`` arrays, every entry a gallery row and a finite divergence.

    The scan starts from ``(-1, inf)`` padding and an item whose divergence is inf or NaN
    (a row so far from unit norm that the products overflow) never ranks as a number, so a
    query with fewer than k items of finite divergence would keep padding or non-finite
    entries: that is an :class:`AnchorDivError` naming the queries, never a result whose
    ``-1`` silently indexes the last item."""
    idx = np.asarray(best_i[:n_queries], np.int64)
    div = np.asarray(best_d[:n_queries])
    short = ~np.isfinite(div).all(axis=1) | (idx < 0).any(axis=1)
    if short.any():
        q = int(np.argmax(short))
        finite = int(np.count_nonzero(np.isfinite(div[q]) & (idx[q] >= 0)))
        raise AnchorDivError(
            f"gallery: {int(short.sum())} of {n_queries} queries have fewer than k="
            f"{div.shape[1]} gallery items of finite divergence (query {q}: {finite}); the "
            f"others' divergences overflow to inf or NaN — gallery rows far from unit norm? "
            f"normalise them (x / ||x||), or pass a smaller k"
        )
    return idx, div


def top_k(
    model: AnchorModel,
    queries,
    gallery,
    k: int,
    *,
    chunk: int | None = None,
    method: str = "auto",
    precision: str = "highest",
    progress: bool | None = None,
    mesh=None,
    axis=None,
):
    """The k closest gallery items per query, streaming the gallery in chunks.

    Memory is O(Q·(k + chunk)); each chunk is validated as it is read.  To query one gallery many
    times, build an :class:`anchordiv.GalleryIndex` once instead.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    queries : array_like, shape [Q, d]
        Query embeddings.
    gallery : array_like, shape [G, d]
        Any array-like supporting slicing (e.g. a ``np.load(..., mmap_mode="r")`` memmap).
    k : int
        Items per query, a whole number 1 ≤ k ≤ G (no clamping: anything else is an error).
    chunk : int, optional
        Gallery rows per step (default: sized to the query batch and memory).
    method : {"auto", "generic", "direct"}, default "auto"
        As in :func:`divergence`.
    precision : {"highest", "fast"}, default "highest"
        As in :func:`divergence`.
    progress : bool, optional
        Show a progress bar; ``None`` shows one when there are more than 8 chunks.
    mesh : jax.sharding.Mesh, optional
        Shard the gallery rows over the devices of the mesh axes ``axis`` and scan them in
        parallel (:mod:`anchordiv.retrieval.sharding`).
    axis : str or tuple of str, optional
        The mesh axes to shard over (default all).

    Returns
    -------
    indices : numpy.ndarray, shape [Q, k], int64
        Gallery rows, closest first.
    divergences : numpy.ndarray, shape [Q, k]
        Their divergences, ascending.

    Raises
    ------
    AnchorDivError
        As :func:`divergence`; ``k`` not a whole number in [1, G]; a query with fewer than
        k gallery items of finite divergence (rows whose products overflow): the result never
        holds ``-1`` or inf entries.

    Warns
    -----
    AnchorDivWarning
        Query or gallery rows off unit norm (as :func:`divergence`).

    Examples
    --------
    >>> model = ad.fit("gaussian", np.eye(4)[:3], tau=20.0)
    >>> idx, d = ad.top_k(model, np.eye(4)[:2], np.eye(4), k=2)
    >>> idx[:, 0]
    array([0, 1])
    >>> bool((np.diff(d, axis=1) >= 0).all())
    True
    """
    x = checked_call(model, method, precision, queries)
    n_gallery, _ = gallery_shape(model, gallery)
    k = integer("k", k, low=1, high=n_gallery)
    chunk = scan_chunk(chunk, len(x), n_gallery, model.dim)
    u, c = padded_query_terms(model, x, method)
    tally = NormTally()
    if mesh is not None:  # the gallery rows sharded over the mesh
        from . import sharding

        names, n_shards = sharding.mesh_axes(mesh, axis)
        chunk, padded = sharding.layout(n_gallery, chunk, n_shards)
        read = gallery_reader(model, gallery, tally)
        rows = sharding.place_rows(read, n_gallery, model.dim, mesh, names, padded)
        where = (rows, n_gallery, k, chunk, mesh, names)
        static = (method, precision)
        best_i, best_d = sharding.sharded_top_k(_merge_impl, (model, u, c), *where, extra=static)
    else:
        scan = functools.partial(scan_top_k, method=method, precision=precision, tally=tally)
        best_i, best_d = scan(model, u, c, gallery, k, chunk=chunk, progress=progress)
    tally.warn("gallery")
    return finished_top_k(best_i, best_d, len(x))


def scan_top_k(
    model, u, c, gallery, k, *, chunk, method="auto", precision="highest", progress=None, tally=None
):
    """The top-k scan of :func:`top_k` for query terms already computed: ``u [Qb, m],
    c [Qb]`` (:func:`padded_query_terms`) against an array-like ``gallery [G, d]`` streamed in
    ``chunk`` rows by the jitted block scorer, counting the rows in ``tally`` when given.
    Returns device arrays ``(best_i [Qb, k] int32, best_d [Qb, k])`` with indices relative to
    the gallery's first row, padding (``-1``, inf) included (:func:`finished_top_k` checks
    them).  Used by :mod:`anchordiv.scale.dask` to scan one block of a sharded gallery."""
    n_gallery, read = gallery_shape(model, gallery)[0], gallery_reader(model, gallery, tally)

    def score(block, n_valid, offset, best_d, best_i):
        return _merge_jit(model, u, c, block, n_valid, offset, best_d, best_i, method, precision)

    return stream_top_k(u, c, k, n_gallery, chunk, read, score, progress=progress)


# ---- MIPS export -------------------------------------------------------------------------


def mips_queries(model: AnchorModel, queries, *, method: str = "auto") -> np.ndarray:
    """Query vectors ``[u(x), −1]`` for a maximum-inner-product index.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    queries : array_like, shape [Q, d]
        Query embeddings.
    method : {"auto", "generic", "direct"}, default "auto"
        As in :func:`anchordiv.divergence`.

    Returns
    -------
    numpy.ndarray, shape [Q, m + 1]
        The query vectors (see :func:`mips_keys`).
    """
    check_model(model)
    x = check_embeddings(model, "queries", queries)
    u = np.asarray(jit_query_terms(model, x, method)[0])
    return np.concatenate([u, -np.ones((len(u), 1), u.dtype)], axis=1)


@exact_products
def mips_key_terms(model, y, method):
    """MIPS keys ``[v(y), h(y)] [n, m + 1]`` of rows ``y [n, d]`` (traced; jitted as the build
    step of :class:`GalleryIndex`)."""
    v, h = key_terms(model, y, method)
    return jnp.concatenate([v, h[:, None]], axis=1)


keys_jit = jax.jit(mips_key_terms, static_argnames="method")


def mips_keys(model: AnchorModel, gallery, *, method: str = "auto") -> np.ndarray:
    """Key vectors for a maximum-inner-product index: ⟨query, key⟩ = c(x) − D(x→y).

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    gallery : array_like, shape [G, d]
        Gallery embeddings.
    method : {"auto", "generic", "direct"}, default "auto"
        As in :func:`anchordiv.divergence`.

    Returns
    -------
    numpy.ndarray, shape [G, m + 1]
        ``[v(y), h(y)]``.

    Examples
    --------
    >>> from anchordiv.retrieval import mips_keys, mips_offset, mips_queries
    >>> model = ad.fit("gaussian", np.eye(3), tau=2.0)
    >>> x = np.eye(3)
    >>> D = mips_offset(model, x)[:, None] - mips_queries(model, x) @ mips_keys(model, x).T
    >>> bool(np.allclose(np.maximum(D, 0), ad.divergence(model, x, x), atol=1e-5))
    True
    """
    check_model(model)
    y = check_embeddings(model, "gallery", gallery)
    return np.asarray(keys_jit(model, y, method))


def mips_offset(model: AnchorModel, queries, *, method: str = "auto") -> np.ndarray:
    """The per-query offset c(x) with D(x→y) = c(x) − ⟨mips_query(x), mips_key(y)⟩.

    Parameters
    ----------
    model : AnchorModel
        The anchor model.
    queries : array_like, shape [Q, d]
        Query embeddings.
    method : {"auto", "generic", "direct"}, default "auto"
        As in :func:`anchordiv.divergence`.

    Returns
    -------
    numpy.ndarray, shape [Q]
        c(x) (see :func:`mips_keys`).
    """
    check_model(model)
    x = check_embeddings(model, "queries", queries)
    return np.asarray(jit_query_terms(model, x, method)[1])
