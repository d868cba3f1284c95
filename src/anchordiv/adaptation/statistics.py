"""The broad- and target-anchor statistics a prior is built from, computed once: the memo keyed
by the broad array's digest (:func:`cached`, :func:`derived`, :func:`frozen`, :func:`checked`),
the broad moments and principal basis (``subspace=`` runs), and the held-out recipe's strength
search (:func:`gaussian_strengths`, docs/guides/adaptation-recipe.md: every fold × strength from
one eigendecomposition of the targets' scatter, :func:`fold_scores`).  Pure float64 functions.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import weakref
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.special

from .._tolerance import LEVERAGE_TOL, SPECTRUM_RTOL, first_max, kept_spectrum
from ..anchors.gaussian import moments
from ..anchors.linalg import canonical_signs
from ..errors import AnchorDivError, as_matrix, in_unit_interval, integer, positive
from ..threads import limited_blas

MAX_ENTRIES = 16
_CACHE: collections.OrderedDict = collections.OrderedDict()
#: id -> (weak reference, {"digest": ..., derived function: value}) of arrays frozen here
_FROZEN: dict[int, tuple[weakref.ref, dict]] = {}
#: the memo entry of a frozen array that passed the anchor checks (:func:`checked`)
CHECKED = "checked"


def _memo(a) -> dict | None:
    entry = _FROZEN.get(id(a))
    return entry[1] if entry is not None and entry[0]() is a else None


def _register(a: np.ndarray) -> np.ndarray:
    key, table = id(a), _FROZEN
    # the callback holds the table, not the global (None after teardown at interpreter exit)
    table[key] = (weakref.ref(a, lambda _, k=key: table.pop(k, None)), {})
    return a


def frozen(a) -> np.ndarray:
    """A read-only private copy of ``a`` (float arrays keep their dtype) whose digest and
    :func:`derived` values are remembered by identity for as long as it lives; ``a`` itself
    when it is such a copy already."""
    if isinstance(a, np.ndarray) and _memo(a) is not None:
        return a
    c = np.array(a, copy=True, subok=True)  # Embeddings keep their provenance (stand_in)
    c.flags.writeable = False
    return _register(c)


def digest(a: np.ndarray) -> str:
    """SHA-1 of the array's bytes (remembered for :func:`frozen` arrays)."""
    memo = _memo(a)
    if memo is not None and "digest" in memo:
        return memo["digest"]
    value = hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).hexdigest()
    if memo is not None:
        memo["digest"] = value
    return value


def checked(a) -> np.ndarray:
    """``a`` as a :func:`frozen` array remembered as anchors that passed the anchor checks
    (``adapt``'s :func:`~anchordiv.adaptation.api.check_anchors`: floating, finite, 2-D,
    enough distinct rows); the caller has run those checks on ``a``."""
    c = frozen(a)
    memo = _memo(c)
    assert memo is not None  # frozen arrays are registered
    memo[CHECKED] = True
    return c


def is_checked(a) -> bool:
    """Whether ``a`` is an array :func:`checked` returned (and so read-only since)."""
    memo = _memo(a)
    return memo is not None and CHECKED in memo


def as_anchors(name: str, x, *, dim: int | None = None, min_rows: int = 1) -> np.ndarray:
    """:func:`anchordiv.errors.as_matrix` of anchors ``x [n, d]``: for a :func:`checked` array
    only the shape (``dim``, ``min_rows``) is checked, since its values passed already."""
    return as_matrix(name, x, dim=dim, min_rows=min_rows, check_finite=not is_checked(x))


def derived(fn, a: np.ndarray):
    """``fn(a)``, remembered by identity when ``a`` is a :func:`frozen` array (or a result of
    :func:`cached`), else computed."""
    memo = _memo(a)
    if memo is None:
        return fn(a)
    if fn not in memo:
        memo[fn] = _freeze(fn(a))
    return memo[fn]


def _freeze(value):
    if isinstance(value, np.ndarray):
        value = value.view()
        value.flags.writeable = False
        return _register(value)
    if isinstance(value, tuple):
        return tuple(_freeze(v) for v in value)
    return value


def cached(fn, broad: np.ndarray, *args, **options):
    """``fn(broad, *args, **options)``, computed once per distinct broad array and options
    (least recently used of :data:`MAX_ENTRIES` evicted)."""
    a, opts = np.asarray(broad), tuple(sorted({**options, "_args": args}.items()))
    key = (fn.__module__, fn.__qualname__, digest(a), a.shape, a.dtype.str, opts)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = _freeze(fn(broad, *args, **options))
    _CACHE[key] = value
    if len(_CACHE) > MAX_ENTRIES:
        _CACHE.popitem(last=False)
    return value


def clear() -> None:
    _CACHE.clear()


def scatter(targets: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``(n, t̄ [d], S [d, d])`` of ``targets [n, d]`` in float64, ``S = Σ (tᵢ − t̄)(tᵢ − t̄)ᵀ``;
    computed once per :func:`.statistics.frozen` target array (``adapt`` freezes its targets, so
    the recipe, the update and the evidence share one scatter)."""
    return derived(_scatter, np.asarray(targets))


def _scatter(targets: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    t = np.asarray(targets, np.float64)
    mean = t.mean(axis=0)
    c = t - mean
    return t.shape[0], mean, c.T @ c


def broad_moments(
    broad: np.ndarray, *, reg: float = 0.0, prior: str = "broad"
) -> tuple[np.ndarray, np.ndarray]:
    """``(μ [d], C [d, d])``: the broad anchors' mean and covariance plus the relative ridge
    ``reg · tr(C)/d · I`` (:func:`anchordiv.anchors.gaussian.moments`), or for
    ``prior="isotropic"`` the isotropic covariance ``tr(C)/d · I`` of the same trace.

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    reg : float, default 0.0
        Relative ridge.
    prior : {"broad", "isotropic"}, default "broad"
        The covariance or its isotropic control.

    Returns
    -------
    mu : numpy.ndarray, shape [d]
    cov : numpy.ndarray, shape [d, d]

    Examples
    --------
    >>> from anchordiv.adaptation.statistics import broad_moments
    >>> mu, cov = broad_moments(np.array([[0.0, 0.0], [2.0, 0.0]]), prior="isotropic")
    >>> mu, cov
    (array([1., 0.]), array([[0.5, 0. ],
           [0. , 0.5]]))
    """
    mu, cov = cached(moments, broad, reg) if reg else cached(moments, broad)
    if prior == "isotropic":
        return mu, np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    if prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    return mu, cov


def principal_basis(broad: np.ndarray) -> np.ndarray:
    """Eigenvectors of the broad covariance, leading first (float64).

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.

    Returns
    -------
    numpy.ndarray, shape [d, d]
        The basis V.

    Examples
    --------
    >>> from anchordiv.adaptation.statistics import principal_basis
    >>> broad = np.random.default_rng(0).normal(size=(50, 3)) * [3.0, 1.0, 0.1]
    >>> int(np.abs(principal_basis(broad)[:, 0]).argmax())
    0
    """
    _, cov = cached(moments, broad, 0.0)
    _, v = np.linalg.eigh(cov)
    return canonical_signs(np.ascontiguousarray(v[:, ::-1]))


def check_rank(r, d: int, n_broad: int, kind: str, latent_rank: int | None) -> int:
    """The subspace rank, validated.

    Parameters
    ----------
    r : int
        The requested rank.
    d : int
        Dimension.
    n_broad : int
        Broad anchors (the basis has at most their rank).
    kind : str
        The family.
    latent_rank : int, optional
        A latent kind's rank (the subspace must hold it).

    Returns
    -------
    int
        ``r``.

    Raises
    ------
    AnchorDivError
        ``r`` < 1, ``r`` ≥ d (use the full model), ``r`` > n_broad − 1, or ``r`` not above a
        latent kind's rank.
    """
    r = integer("subspace", r, low=1)
    if r >= d:
        raise AnchorDivError(
            f"subspace: r = {r} must be < d = {d} (r = d is the full model: leave subspace unset)"
        )
    if r > n_broad - 1:
        raise AnchorDivError(
            f"subspace: r = {r} is larger than the broad anchors allow: at most "
            f"n_broad − 1 = {n_broad - 1}"
        )
    if latent_rank is not None and latent_rank >= r:
        raise AnchorDivError(f"subspace: r = {r} must exceed the {kind} rank k = {latent_rank}")
    return r


def sandwich(u: np.ndarray, m):
    """``uᵀ m u`` for a batch of matrices.

    Parameters
    ----------
    u : numpy.ndarray, shape [d, r]
        The basis.
    m : array_like, shape [..., d, d]
        The matrices.

    Returns
    -------
    numpy.ndarray, shape [..., r, r]
        The projected matrices.

    Examples
    --------
    >>> from anchordiv.adaptation.statistics import sandwich
    >>> sandwich(np.eye(3)[:, :2], np.diag([1.0, 2.0, 3.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    return np.swapaxes(u, -1, -2) @ np.asarray(m, np.float64) @ u


#: candidate strengths (pseudo-anchors) of the held-out / evidence search, log-spaced
STRENGTH_GRID = tuple(float(v) for v in np.geomspace(0.3, 1000.0, 15))
#: left-out targets used by the held-out criteria (seeded subset beyond this many)
MAX_FOLDS = 20
#: fewest targets for which :func:`density_strength` holds targets out
MIN_LOO_TARGETS = 3
#: weak hyperprior of the strengths (empirical Bayes and the recipe's evidence bound): (centre in
#: pseudo-anchors, sd of the natural log)
EB_HYPERPRIOR = (10.0, 2.0)


def log_hyperprior(log_strength):
    """Weak hyperprior on a log strength: ``log s ~ N(log 10, 2²)`` (95 % of the mass between 0.2
    and 500 pseudo-anchors), :data:`EB_HYPERPRIOR`."""
    centre, sd = np.log(EB_HYPERPRIOR[0]), EB_HYPERPRIOR[1]
    return -0.5 * ((np.asarray(log_strength) - centre) / sd) ** 2 - np.log(sd * np.sqrt(2 * np.pi))


def folds(n: int, max_folds: int = MAX_FOLDS) -> np.ndarray:
    """Indices of the targets left out in turn: all ``n``, or a fixed seeded subset of
    ``max_folds`` (the criteria are means over folds, so a subset is an unbiased estimate)."""
    integer("max_folds", max_folds, low=1)
    if n <= max_folds:
        return np.arange(n)
    return np.sort(np.random.default_rng(n).choice(n, max_folds, replace=False))


def _cholesky(cov) -> np.ndarray:
    """Lower Cholesky factor of the prior covariance (PD, else an error); memoised by callers
    through :func:`derived`."""
    try:
        return np.linalg.cholesky(np.asarray(cov, np.float64))
    except np.linalg.LinAlgError:
        raise AnchorDivError(
            "cov: the prior covariance is not positive definite (add a ridge: reg > 0)"
        ) from None


def whitened(mu0, cov, targets) -> tuple[np.ndarray, float]:
    """``(Y [n, d], log det C)``: the targets in the prior's whitened coordinates,
    ``Y = (T − μ₀) L⁻ᵀ`` with ``C = L Lᵀ`` (``cov [d, d]`` PD, else an error naming it)."""
    chol = derived(_cholesky, cov)
    y = scipy.linalg.solve_triangular(chol, (np.asarray(targets, np.float64) - mu0).T, lower=True).T
    return y, 2.0 * float(np.log(np.diag(chol)).sum())


def spectrum(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(λ [k], V [d, k])``: the eigenpairs of the scatter ``xᵀx`` of the (centred) rows
    ``x [n, d]`` with λ > :data:`SPECTRUM_RTOL` · max λ — from the ``n × n`` Gram matrix when
    n ≤ d (``V = xᵀU Λ^{-1/2}``), from the ``d × d`` scatter otherwise: O(n·d·min(n, d))."""
    n, d = x.shape
    if n > d:
        return scatter_spectrum(x.T @ x)
    lam, u = np.linalg.eigh(x @ x.T)
    keep = kept_spectrum(lam)
    return lam[keep], (x.T @ u[:, keep]) / np.sqrt(lam[keep])


def scatter_spectrum(scatter: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`spectrum` from a ``d × d`` scatter matrix itself."""
    lam, v = np.linalg.eigh(scatter)
    keep = kept_spectrum(lam)
    return lam[keep], v[:, keep]


class Folds(NamedTuple):
    """What the density criteria need of the targets ``[n, d]`` in the prior's whitened
    coordinates: the count ``n``, the mean ``mean [d]``, the left-out targets' deviations from
    it ``w [F, d]``, and the scatter S about the mean — as its eigenpairs ``lam [k]``,
    ``v [d, k]`` (:func:`spectrum`), or for n > d as a symmetric tridiagonal ``tri = (diagonal
    [d], off-diagonal [d − 1])`` T = QᵀSQ with ``mean`` and ``w`` given in Q's basis
    (:func:`tridiagonal_folds`: a Householder reduction, a third of an eigendecomposition)."""

    n: int
    lam: np.ndarray | None
    v: np.ndarray | None
    mean: np.ndarray
    w: np.ndarray
    tri: tuple[np.ndarray, np.ndarray] | None = None


def centred_scatter(t: np.ndarray) -> np.ndarray:
    """``Σᵢ (tᵢ − t̄)(tᵢ − t̄)ᵀ`` ``[d, d]`` of ``t [n, d]`` (float64;
    :func:`anchordiv.adaptation.statistics.scatter`, shared with the exact update when ``t``
    is the frozen array ``adapt`` passes)."""
    return scatter(t)[2]


def whitened_folds(mu0, cov, t: np.ndarray, left_out, *, scatter=None) -> tuple[Folds, float]:
    """``(Folds, log det C)`` of ``t [n, d]`` (float64) in the prior's whitened coordinates
    (``C = L Lᵀ``, y = L⁻¹(t − μ₀)).  For n > d the whitened scatter is ``L⁻¹ S Lᵀ⁻¹`` of the
    raw one (``scatter``, computed when omitted; one LAPACK ``dsygst``, d³ flops) instead of
    whitening every row."""
    chol = derived(_cholesky, cov)
    solve = functools.partial(scipy.linalg.solve_triangular, chol, lower=True)
    n, d = t.shape
    tbar = t.mean(0)
    w = solve((t[np.asarray(left_out, int)] - tbar).T).T
    logdet_c = 2.0 * float(np.log(np.diag(chol)).sum())
    if n > d:  # L⁻¹ S L⁻ᵀ in one LAPACK call (dsygst; its lower triangle)
        raw = centred_scatter(t) if scatter is None else scatter
        sw, info = scipy.linalg.lapack.dsygst(raw, chol, itype=1, lower=1)
        if info != 0:
            raise AnchorDivError(f"recipe: whitening the scatter failed (LAPACK info {info})")
        # tridiagonal Folds (dsytrd on its lower triangle)
        c, diag, off, tau, info = scipy.linalg.lapack.dsytrd(
            sw, lower=1, lwork=tridiagonal_workspace(d)
        )
        if info != 0:
            raise AnchorDivError(f"recipe: tridiagonal reduction failed (LAPACK info {info})")
        rhs = np.column_stack([solve(tbar - mu0), w.T])  # [d, 1 + F]
        if len(diag) > 1:  # Qᵀ: Q = H(1) ... H(d−1), the reflectors of a QR of c[1:, :−1]
            lwork = max(1, rhs.shape[1]) * 64
            qt, _, info = scipy.linalg.lapack.dormqr(b"L", b"T", c[1:, :-1], tau, rhs[1:], lwork)
            if info != 0:
                raise AnchorDivError(f"recipe: applying the reduction failed (LAPACK info {info})")
            rhs = np.vstack([rhs[:1], qt])
        return Folds(n, None, None, rhs[:, 0], rhs[:, 1:].T, (diag, off)), logdet_c
    lam, v = spectrum(solve((t - tbar).T).T)
    return Folds(n, lam, v, solve(tbar - mu0), w), logdet_c


@functools.lru_cache(maxsize=16)
def tridiagonal_workspace(d: int) -> int:
    """LAPACK's optimal workspace of ``dsytrd`` at ``d`` (its block size times d): scipy's
    default, d, makes it fall back to the unblocked reduction (d = 384: 6.4 ms against 4.0)."""
    lwork, info = scipy.linalg.lapack.dsytrd_lwork(d, lower=1)
    return max(d, int(lwork)) if info == 0 else d


def y_folds(y: np.ndarray, left_out) -> Folds:
    """:class:`Folds` of rows ``y [n, d]`` already in the coordinates wanted."""
    ybar = y.mean(0)
    lam, v = spectrum(y - ybar)
    return Folds(len(y), lam, v, ybar, y[np.asarray(left_out, int)] - ybar)


def inverse_gram(
    lam: np.ndarray, pa: np.ndarray, pb: np.ndarray, ab: np.ndarray, s: np.ndarray
) -> np.ndarray:
    """``aᵀ (s I + V Λ Vᵀ)⁻¹ b`` for every strength ``s [S]`` (``[..., S]``), from the
    projections ``pa = Vᵀa``, ``pb = Vᵀb`` ``[..., k]`` and ``ab = aᵀb`` ``[...]``: the scatter's
    directions weigh ``1/(s + λ)``, the rest of the space ``1/s``."""
    inv = 1.0 / (s[:, None] + lam[None, :])  # [S, k]
    return (pa * pb) @ inv.T + (ab - (pa * pb).sum(-1))[..., None] / s


def shifted_grams(f: Folds, s: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(h_ww [F, S], h_wb [F, S], h_bb [S], log det(s I + S) [S])`` for every strength
    ``s [S]``: the Gram terms ``wᵢᵀ(sI + S)⁻¹wᵢ``, ``wᵢᵀ(sI + S)⁻¹ȳ``, ``ȳᵀ(sI + S)⁻¹ȳ`` of the
    :class:`Folds` — from the eigenpairs (:func:`inverse_gram`) or, for a tridiagonal
    scatter, one positive-definite tridiagonal factorisation per strength (``dpttrf``)."""
    w, ybar = f.w, f.mean
    d = len(ybar)
    if f.tri is None:
        assert f.lam is not None and f.v is not None
        pw, pb = w @ f.v, f.v.T @ ybar  # [F, k], [k]
        return (
            inverse_gram(f.lam, pw, pw, (w * w).sum(1), s),
            inverse_gram(f.lam, pw, pb[None], w @ ybar, s),
            inverse_gram(f.lam, pb, pb, ybar @ ybar, s),
            np.log(s[:, None] + f.lam[None]).sum(1) + (d - len(f.lam)) * np.log(s),
        )
    diag, off = f.tri
    rhs = np.column_stack([ybar, w.T])  # [d, 1 + F]
    h_ww, h_wb = np.empty((len(w), len(s))), np.empty((len(w), len(s)))
    h_bb, logdet = np.empty(len(s)), np.empty(len(s))
    for j, sj in enumerate(s):
        dj, ej, info = scipy.linalg.lapack.dpttrf(diag + sj, off)
        if info != 0:
            raise AnchorDivError(f"recipe: s I + S is not positive definite at s = {sj:g}")
        x, info = scipy.linalg.lapack.dpttrs(dj, ej, rhs)
        h_bb[j], h_wb[:, j] = ybar @ x[:, 0], ybar @ x[:, 1:]
        h_ww[:, j] = (w.T * x[:, 1:]).sum(0)
        logdet[j] = np.log(dj).sum()
    return h_ww, h_wb, h_bb, logdet


def loo_scores(y: np.ndarray, logdet_c: float, grid, left_out) -> np.ndarray:
    """``[len(grid)]`` mean exact LOO log predictive per left-out target (``left_out``
    indices of the whitened targets ``y [n, d]``, n ≥ 2, :func:`whitened`) under the NIW prior
    of each strength s (κ₀ = s, ν₀ = d + 1 + s), all folds × strengths at once
    (:func:`fold_scores`)."""
    return fold_scores(y_folds(y, left_out), logdet_c, grid)


def fold_scores(f: Folds, logdet_c: float, grid) -> np.ndarray:
    """:func:`loo_scores` from the whitened targets' :class:`Folds`.

    Fold i's predictive is the Student-t ``t_{s+m+2}(μₘ, Ψₘ(κₘ+1)/(κₘ(s+m+2)))`` (m = n − 1,
    κₘ = s + m).  In whitened coordinates ``Ψₘ = s I + S₋ᵢ + r δδᵀ`` with S₋ᵢ the others'
    scatter, δ their mean and r = s m/κₘ.  The scatter of the others is the full scatter S
    down-dated, ``S₋ᵢ = S − (n/m) wwᵀ`` (w = yᵢ − ȳ), so ``Ψₘ = (s I + S) + E D Eᵀ`` with
    E = [w, δ] and D = diag(−n/m, r): a rank-2 update of a matrix whose eigenvectors are S's
    for every s.  One eigendecomposition of S then gives every ``zᵀΨₘ⁻¹z`` (Woodbury) and
    ``log det Ψₘ`` (the determinant lemma) through 2 × 2 algebra: O(n·d·min(n, d)) in all,
    instead of one solve per fold and strength."""
    n, d = f.n, len(f.mean)
    m = n - 1
    s = np.asarray(grid, np.float64)  # [S]
    h_ww, h_wb, h_bb, logdet_shifted = shifted_grams(f, s)  # [F, S], [F, S], [S], [S]
    h_bb = h_bb[None]  # [1, S]
    kappa, df = s + m, s + m + 2.0
    r, c = s * m / kappa, n / m
    # E = [w, δ] with δ = ȳ − w/m; z = yᵢ − (m/κ)δ = (1 + 1/κ) w + (s/κ) ȳ
    m11, m12 = h_ww, h_wb - h_ww / m
    m22 = h_ww / m**2 - 2 * h_wb / m + h_bb
    a, b = 1 + 1 / kappa, s / kappa
    hz_w, hz_b = a * h_ww + b * h_wb, a * h_wb + b * h_bb  # [w, ȳ]ᵀ B⁻¹ z
    g1, g2 = hz_w, hz_b - hz_w / m  # Eᵀ B⁻¹ z
    zbz = a * hz_w + b * hz_b
    k11, k12, k21, k22 = 1 - c * m11, -c * m12, r * m12, 1 + r * m22  # I + D M
    det = k11 * k22 - k12 * k21
    dg1, dg2 = -c * g1, r * g2
    quad = zbz - (g1 * (k22 * dg1 - k12 * dg2) + g2 * (k11 * dg2 - k21 * dg1)) / det
    logdet_psi = logdet_shifted + np.log(det) + logdet_c
    scale = (kappa + 1) / (kappa * df)
    lp = (
        scipy.special.gammaln((df + d) / 2)
        - scipy.special.gammaln(df / 2)
        - 0.5 * d * np.log(df * np.pi)
        - 0.5 * (logdet_psi + d * np.log(scale))
        - 0.5 * (df + d) * np.log1p(quad / (scale * df))
    )
    return lp.mean(0)


def evidence_scores(y: np.ndarray, logdet_c: float, grid) -> np.ndarray:
    """``[len(grid)]`` closed-form log evidence ``log p(T)`` of the targets (whitened
    ``y [n, d]``, :func:`whitened`) under the NIW prior of each strength s (κ₀ = s,
    ν₀ = d + 1 + s, Ψ₀ = s·C) (:func:`fold_evidence`)."""
    return fold_evidence(y_folds(y, []), logdet_c, grid)


def fold_evidence(f: Folds, logdet_c: float, grid) -> np.ndarray:
    """:func:`evidence_scores` from the whitened targets' :class:`Folds`: in whitened
    coordinates ``Ψₙ = s I + S + r ȳȳᵀ`` (r = s n/(s + n)), a rank-1 update of the scatter's
    eigenbasis, as in :func:`fold_scores`."""
    n, d = f.n, len(f.mean)
    s = np.asarray(grid, np.float64)
    _, _, h_bb, logdet_shifted = shifted_grams(f._replace(w=f.w[:0]), s)
    nu0, nun = d + 1 + s, d + 1 + s + n
    logdet_psin = logdet_shifted + np.log1p(s * n / (s + n) * h_bb) + logdet_c
    return (
        -0.5 * n * d * np.log(np.pi)
        + scipy.special.multigammaln(nun / 2, d)
        - scipy.special.multigammaln(nu0 / 2, d)
        + 0.5 * nu0 * (d * np.log(s) + logdet_c)
        - 0.5 * nun * logdet_psin
        + 0.5 * d * (np.log(s) - np.log(s + n))
    )


@limited_blas
def loo_log_predictive(mu0, cov, targets, strength: float, *, max_folds: int = MAX_FOLDS) -> float:
    """Mean exact leave-one-out log predictive density per target under the NIW prior with
    ``E[Σ] = cov [d, d]``, mean ``mu0 [d]`` and both strengths ``strength`` (κ₀ = s,
    ν₀ = d + 1 + s).  Each fold is the closed-form Student-t posterior predictive of the left-out
    target given the others (:func:`fold_scores`); ``targets [n, d]``, n ≥ 2 (one target has no
    "others": use the evidence, :func:`density_strength`)."""
    t = as_anchors("targets", targets, dim=len(mu0), min_rows=2).astype(np.float64)
    s = positive("strength", strength)
    f, logdet_c = whitened_folds(mu0, cov, t, folds(len(t), max_folds))
    return float(fold_scores(f, logdet_c, [s])[0])


def density_strength(mu0, cov, targets, *, grid=STRENGTH_GRID, max_folds: int = MAX_FOLDS) -> float:
    """The strength (pseudo-anchors, κ₀ = ν₀ − d − 1 = s) the targets' *density* supports:
    the maximiser over ``grid`` of the exact LOO log predictive (:func:`loo_log_predictive`)
    for n ≥ :data:`MIN_LOO_TARGETS`; for one or two targets, of the closed-form evidence plus
    the weak hyperprior of :func:`log_hyperprior` (the
    evidence alone has a plateau, not a maximum, when few targets look like the prior).
    Held out rather than in-sample: LOO asks how well the prior predicts targets it has not
    seen, and it is the upper bound of the recipe's strength (:func:`gaussian_strengths`).

    Why not LOO at n = 2: its two folds each predict one target from the *other one alone*,
    and their maximiser swung between 3 and 98 pseudo-anchors over seeded pairs of the
    WordNet → ImageNet prompts; the low draws let one scatter direction dominate a d = 384
    geometry, and the default curve fell from 1 to 2 anchors (0.683 → 0.636, beyond its
    interval).  The evidence of the pair with the hyperprior chose 5–31 there, the curve no
    longer fell, and the style task's choices were unchanged
    (``benchmarks/results/bench_recipe-small-n.md``)."""
    grid = np.asarray([positive("grid", g) for g in grid])
    score = density_scores(mu0, cov, targets, grid=grid, max_folds=max_folds)
    return float(grid[first_max(score)])


def density_scores(
    mu0, cov, targets, *, grid=STRENGTH_GRID, max_folds: int = MAX_FOLDS, scatter=None
) -> np.ndarray:
    """``[len(grid)]`` scores :func:`density_strength` maximises: per strength, the mean exact
    LOO log predictive per target (n ≥ :data:`MIN_LOO_TARGETS`, :func:`fold_scores`), else the
    closed-form evidence plus twice the weak log hyperprior of the strength
    (:func:`fold_evidence`).  ``scatter``: the targets' :func:`centred_scatter`, where the
    caller has it already (n > d)."""
    t = as_anchors("targets", targets, dim=len(mu0)).astype(np.float64)
    grid = np.asarray(grid, np.float64)
    if len(t) < MIN_LOO_TARGETS:
        f, logdet_c = whitened_folds(mu0, cov, t, [], scatter=scatter)
        return fold_evidence(f, logdet_c, grid) + 2 * log_hyperprior(np.log(grid))
    f, logdet_c = whitened_folds(mu0, cov, t, folds(len(t), max_folds), scatter=scatter)
    return fold_scores(f, logdet_c, grid)


def target_novelty(targets, *, max_folds: int = MAX_FOLDS, scatter=None) -> float:
    """Mean over left-out targets of the fraction of the deviation ``t_i − mean(T₋ᵢ)`` that lies
    *outside* the span of the other targets' deviations (in [0, 1]).  1 when the targets share
    no direction (n ≤ 2 always: one other target spans nothing); → 0 once a new target adds
    no new direction.  It is the held-out measure of how much geometry the targets still lack,
    so of how much of the prior the posterior needs.  ``targets [n, d]``; ``scatter``: their
    :func:`centred_scatter` where the caller has it (n > d).

    With w = tᵢ − t̄ (the deviation is (n/m)·w, m = n − 1) the others' scatter is
    S − (n/m) wwᵀ, which loses a direction exactly when target i's leverage h = wᵀS⁺w is m/n
    (each target needed for the span, as for n ≤ d in general position).  That lost
    direction is u = S⁺w, so the part of w inside the others' span has squared length
    ``‖Pw‖² − h²/‖S⁺w‖²`` (P: the projection on S's range); otherwise all of ``‖Pw‖²``.
    S⁺w comes from one eigendecomposition of S (:func:`spectrum`), or for n > d from one
    Cholesky factorisation when S is well conditioned."""
    t = as_anchors("targets", targets).astype(np.float64)
    n, d = t.shape
    if n <= 2:
        return 1.0
    tbar = t.mean(0)
    w = t[folds(n, max_folds)] - tbar  # [F, d]
    total = (w * w).sum(1)
    q = inside = None
    if n > d:
        s_t = centred_scatter(t) if scatter is None else scatter
        q = _well_conditioned_solve(s_t, w)
        if q is not None:
            inside = total  # S has full rank: P = I
    if q is None:
        lam, v = spectrum(t - tbar) if n <= d else scatter_spectrum(s_t)
        a = w @ v
        q = (a / lam) @ v.T  # S⁺w
        inside = (a * a).sum(1)
    h = (w * q).sum(1)
    lost = 1.0 - n / (n - 1) * h <= LEVERAGE_TOL
    inside = inside - np.where(lost, h**2 / np.maximum((q * q).sum(1), 1e-300), 0.0)
    out = np.where(total <= 1e-300, 1.0, 1.0 - inside / np.maximum(total, 1e-300))
    return float(np.clip(np.mean(out), 0.0, 1.0))


def _well_conditioned_solve(s: np.ndarray, w: np.ndarray) -> np.ndarray | None:
    """``S⁻¹wᵀ`` rows ``[F, d]`` by Cholesky when S is PD with a condition number within
    :data:`SPECTRUM_RTOL` (else None: the caller takes the eigendecomposition)."""
    try:
        chol = scipy.linalg.cho_factor(s, lower=True)
    except np.linalg.LinAlgError:
        return None
    diag = np.diag(chol[0]) ** 2
    if diag.min() <= SPECTRUM_RTOL * 1e2 * diag.max():
        return None
    return scipy.linalg.cho_solve(chol, w.T).T


def novelty_strength(n: int, novelty: float) -> float:
    """The strength s at which the prior's share of the posterior scatter, ``s / (s + n)``,
    equals ``novelty`` (:func:`target_novelty`): ``s = n·ν / (1 − ν)``; ``inf`` at ν = 1."""
    integer("n", n, low=1)
    v = in_unit_interval("novelty", novelty)
    return float("inf") if v >= 1 else n * v / (1 - v)


@limited_blas
def gaussian_strengths(
    broad,
    targets,
    *,
    reg: float = 1e-3,
    grid=STRENGTH_GRID,
    max_folds: int = MAX_FOLDS,
    moments=None,
) -> dict:
    """The recipe's NIW strengths for ``broad [N, d]`` and ``targets [n, d]`` (module
    docstring): ``s = clip(min(density_strength, novelty_strength), min(grid), max(grid))``,
    returned as ``{"kappa0": s, "nu0": d + 1 + s, "strength": s, "density_strength",
    "novelty", "novelty_strength", "chosen_by"}``.  Pass ``kappa0``/``nu0`` to
    ``ad.adapt("gaussian", …)`` for the posterior *and* its ``prior="isotropic"`` control.
    ``moments``: the broad ``(mean [d], ridged covariance [d, d])`` where the caller has them
    (:func:`anchordiv.adaptation.statistics.broad_moments`)."""
    b = as_anchors("broad_anchors", broad, min_rows=2)
    t = as_anchors("target_anchors", targets, dim=b.shape[1])
    mu0, cov = (
        broad_moments(b, reg=positive("reg", reg, allow_zero=True)) if moments is None else moments
    )
    # shared by both criteria (and, for adapt's frozen targets, with the exact update)
    scatter = centred_scatter(targets) if len(t) > t.shape[1] else None
    grid = np.asarray([positive("grid", g) for g in grid])
    score = density_scores(mu0, cov, t, grid=grid, max_folds=max_folds, scatter=scatter)
    dens = float(grid[first_max(score)])
    nov = target_novelty(t, max_folds=max_folds, scatter=scatter)
    by_novelty = novelty_strength(len(t), nov)
    s = float(np.clip(min(dens, by_novelty), min(grid), max(grid)))
    return {
        "kappa0": s,
        "nu0": b.shape[1] + 1 + s,
        "strength": s,
        "density_strength": dens,
        "novelty": nov,
        "novelty_strength": by_novelty,
        "chosen_by": (
            "held-out novelty"
            if by_novelty < dens
            else "held-out density (LOO)"
            if len(t) >= MIN_LOO_TARGETS
            else "density (evidence + hyperprior)"
        ),
    }


def participation_ratio(eigvals) -> float:
    """Effective number of directions ``(Σλ)² / Σλ²`` of non-negative eigenvalues ``[d]``:
    k for k equal eigenvalues and zeros, between 1 and d otherwise."""
    w = np.clip(np.asarray(eigvals, np.float64), 0.0, None)
    if w.sum() <= 1e-300:
        raise AnchorDivError("eigvals: all zero: the anchors do not vary")
    return float(w.sum() ** 2 / (w**2).sum())


def stable_rank(eigvals) -> float:
    """``Σλ / max λ`` of non-negative eigenvalues ``[d]``: the number of directions as strong
    as the strongest one it takes to carry the total variance (≤ the participation ratio;
    insensitive to a long tail of weak directions, which the participation ratio counts)."""
    w = np.clip(np.asarray(eigvals, np.float64), 0.0, None)
    if w.max(initial=0.0) <= 1e-300:
        raise AnchorDivError("eigvals: all zero: the anchors do not vary")
    return float(w.sum() / w.max())
