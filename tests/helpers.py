"""Shared test data: random unit embeddings and one fitted model of every kind."""

from __future__ import annotations

import numpy as np

import anchordiv as ad


def normed(x):
    """The rows of ``x`` scaled to unit norm."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def unit(rng, n, d, dtype=np.float64):
    """``n`` random unit vectors in d dimensions ``[n, d]`` (normal draws of ``rng``, normed)."""
    return normed(rng.normal(size=(n, d))).astype(dtype)


def broad_and_targets(seed=0, n_broad=40, n=6, d=3, spread=(1.5, 0.5), shift=0.3):
    """``(broad [n_broad, d], targets [n, d])`` of one seed: broad anchors with a decaying spread
    per axis (``np.linspace(*spread, d)``, an array of d scales, or None for none) and unit
    target anchors shifted off the origin by ``shift`` before norming (draws in that order)."""
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(n_broad, d))
    if spread is not None:
        broad = broad * (np.linspace(*spread, d) if len(spread) == 2 else np.asarray(spread))
    targets = rng.normal(size=(n, d))
    return broad, normed(targets + shift if shift else targets)


def clustered_anchors(rng, n, d, dtype=np.float64):
    """Unit anchors concentrated around a few directions (like text anchors of one topic)."""
    centres = unit(rng, 3, d)
    a = centres[rng.integers(3, size=n)] + 0.4 * rng.normal(size=(n, d)) / np.sqrt(d)
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(dtype)


def hashed_words(texts, d=64):
    """A deterministic unit-norm text embedding: hashed word counts (no model needed)."""
    out = np.zeros((len(texts), d))
    for i, t in enumerate(texts):
        for w in t.replace(",", " ").replace(":", " ").split():
            out[i, sum(map(ord, w.lower())) * 7919 % d] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


#: kind -> fit options used by the table-driven tests
OPTIONS = {
    "softmax": {},
    "gaussian": {},
    "latent-gaussian": {"rank": 3},
    "latent-spherical": {"rank": 3},
    "mixture": {"components": 2, "seed": 0},
}
ALL_KINDS = list(OPTIONS) + ["mix"]


def make_model(kind, anchors, tau=5.0):
    if kind == "mix":
        half = len(anchors) // 2
        return ad.mix(
            ad.fit("softmax", anchors[:half], tau=tau),
            ad.fit("gaussian", anchors[half:], tau=tau),
            0.3,
        )
    return ad.fit(kind, anchors, tau=tau, **OPTIONS[kind])


#: the jitted scorers of anchordiv.retrieval (their XLA compilations are what must not repeat)
SCORERS = (
    "_divergence_impl",
    "_query_terms_impl",
    "_merge_impl",
    "_key_terms_impl",
    "mips_key_terms",
    "_merge_keys_impl",
    "_scores_jit",
)


class compilations:
    """Context manager counting XLA compilations (``jax.log_compiles`` records) of functions
    whose names are in ``names`` (all when None): ``with compilations() as c: ...; c.count``."""

    def __init__(self, names=SCORERS):
        self.names, self.count = names, 0

    def __enter__(self):
        import logging

        import jax

        outer = self

        class Count(logging.Handler):
            def emit(self, record):
                msg = record.getMessage()
                if "Finished XLA compilation" in msg and (
                    outer.names is None or any(f"jit({n})" in msg for n in outer.names)
                ):
                    outer.count += 1

        self._logger, self._handler = logging.getLogger("jax"), Count()
        self._level = self._logger.level
        self._logger.addHandler(self._handler)
        self._logger.setLevel(logging.DEBUG)
        self._log = jax.log_compiles(True)
        self._log.__enter__()
        return self

    def __exit__(self, *exc):
        self._log.__exit__(*exc)
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._level)
        return False


BUDGETS = [1, 2, 4, 8, 16]
#: synthetic curve (tests of anchordiv.evaluation.dominance and the main job's table): budgets,
#: mean AUPRC per budget (NaN: undefined, as a target-only Gaussian from one anchor)
MEANS = {
    "target": [np.nan, 0.2, 0.4, 0.6, 0.8],
    "posterior": [0.5, 0.6, 0.62, 0.7, 0.81],
    "control": [0.3, 0.35, 0.45, 0.58, 0.8],
    "cosine": [0.3] * 5,
}
ROLES = {
    "target": ("target", "gaussian"),
    "posterior": ("posterior", "gaussian"),
    "control": ("isotropic", "gaussian"),
    "cosine": ("baseline", None),
}


def synthetic_curve(means=MEANS, noise=0.01, n_subsets=3, n_queries=200, seed=0):
    """A curve whose per-query AUPRC are ``means`` plus a query effect shared by every model
    (paired) and a little independent noise."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(scale=0.1, size=(n_subsets, n_queries))
    per_query = {}
    for name, ms in means.items():
        for b, m in zip(BUDGETS, ms):
            per_query[(name, b)] = (
                np.full((n_subsets, n_queries), np.nan)
                if np.isnan(m)
                else m + shared + noise * rng.normal(size=shared.shape)
            )
    from anchordiv.evaluation.curves import Curve, CurveModel

    models = {n: CurveModel(lambda b, t, tau: "cosine", *ROLES[n]) for n in means}
    return Curve(models, BUDGETS, per_query, [], 0.1, n_boot=300)


def edit_card(path, **changes):
    """Change fields of a saved bundle's card and recompute its digest (a consistent edit, as
    anyone can make one: what the loaders' own checks must catch)."""
    import json
    from pathlib import Path

    from anchordiv._safeio import card_digest

    card_path = Path(path) / "card.json"
    card = {**json.loads(card_path.read_text()), **changes}
    card["digest"] = card_digest(card)
    card_path.write_text(json.dumps(card))


def niw_problem(d=3, n=12, seed=0):
    """A NIW posterior-parameter object ``NIW [d]`` and ``targets [n, d]`` drawn near it."""
    from anchordiv.adaptation.families.gaussian import NIW

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    cov = a @ a.T / d + 0.5 * np.eye(d)
    targets = rng.multivariate_normal(np.arange(d) * 0.5, np.eye(d) * 0.3, size=n)
    return NIW.from_scale(rng.normal(size=d), cov, 2.0, d + 4.0), targets


def blas_scope_entries(monkeypatch) -> list:
    """The ``limits`` of every BLAS thread scope entered from now on (one thread, so every entry
    is ``1``), recorded by a spy on the thread controller."""
    from anchordiv import threads

    monkeypatch.setenv(threads.THREADS_ENV, "1")
    entered: list = []
    controller = threads._controller()
    limit = controller.limit

    def spy(*a, **k):
        entered.append(k.get("limits"))
        return limit(*a, **k)

    monkeypatch.setattr(controller, "limit", spy)
    monkeypatch.setattr(threads, "_controller", lambda: controller)
    return entered


def png_tree(folder, n, start=0):
    """``n`` small distinct PNG files ``img{i:03d}.png`` (i from ``start``) in ``folder``
    (created), their paths in order: one image tree for the cache tests."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(start, start + n):
        paths.append(folder / f"img{i:03d}.png")
        Image.new("RGB", (5, 4), (i, 2 * i % 256, 7)).save(paths[-1])
    return paths


def png_claiming(path, width, height):
    """A PNG whose header claims ``width`` × ``height`` 8-bit grey pixels, with one tiny IDAT
    (a few hundred bytes: what a decompression bomb's header looks like to Pillow's open)."""
    import struct
    import zlib

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path
