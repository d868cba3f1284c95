"""A seeded mutation fuzzer of anchordiv's loaders: every malformed file must be an
``AnchorDivError`` (or load and work), never another exception.

Each target saves small valid files (every family's prior and posterior — exact, SVI and a
NUTS one —, every model kind, embeddings with their sidecar, InferenceData of three families,
a flat, IVF and HNSW faiss index), mutates a copy of one — byte flips, card values replaced
by values of the wrong type, arrays with another dtype, shape or values and the hashes
recomputed so the loaders' later checks are reached — loads it and uses it once.  Any other
exception is a finding: its input is kept under ``tests/fuzz_corpus/<target>/`` and replayed
by ``tests/test_fuzz.py``.

Run it from the checkout: ``python tests/fuzz.py --seconds 300`` (``--save`` keeps new
findings in the corpus; ``--cases 10000 --seconds 1e9`` runs a fixed number of cases;
``--heavy`` and ``--cli`` the fractions used heavily and replayed through the command line).
Each case is loaded and used as an adversarial test did: a posterior's ``point()`` and
``point("map")``, draws, ``repr``, its prior's ``isotropic()`` and ``ad.inference_data`` (a
fraction also with its log prior and ``ad.prior_sensitivity``); a prior's posterior the same
way (a prior without a closed form: its draws); a model scored (a NaN score is a finding too);
an index searched; an InferenceData's groups read; a fraction then runs the commands that read
the file (``search``, ``adapt --prior``, ``fit``, ``diagnose``), where a traceback, an exit
other than 0 or 2, or an exit 2 without one error line is a finding.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

from helpers import unit
import anchordiv as ad
from anchordiv.adaptation.registry import is_conjugate
from anchordiv.anchors import KINDS
from anchordiv.checks import arviz as adz
from anchordiv.io import data_hash

try:
    from anchordiv._safeio import array_specs, card_digest
except ImportError:  # a version without card digests: fuzzing it builds a corpus to replay
    array_specs = card_digest = None  # type: ignore[assignment]

CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"
D = 4


# ---- the valid seeds and their first uses --------------------------------------------------
#
# A seed function writes one valid file per variant under ``out`` and returns their paths (every
# family's prior and posterior, every model kind, every index type); each case mutates a copy of
# one of them.  A use function loads a case and uses it as a user would; ``heavy`` (a fraction
# of the fuzz's cases, every case of the corpus replay) adds ``ad.prior_sensitivity``.

#: the families fuzzed, with the method of their seed posterior (no closed form: a short SVI)
FAMILY_METHODS = {
    "gaussian": None,
    "latent-gaussian": None,
    "latent-spherical": None,
    "mixture": None,
    "diagonal-gaussian": None,
    "spectral": "svi",
    "factor-gaussian": "svi",
    "lkj-gaussian": "svi",
}
#: prior options of a seed where the defaults do not fit d = 4
FAMILY_OPTIONS = {"factor-gaussian": {"rank": 2}, "gaussian": {"kappa0": 2.0, "nu0": 8.0}}


def _posteriors() -> dict:
    """One small posterior per family (and a NUTS one of the gaussian kind)."""
    rng = np.random.default_rng(0)
    broad, targets = unit(rng, 12, D), unit(rng, 3, D)
    out = {}
    for kind, how in FAMILY_METHODS.items():
        svi = ad.SVI(num_steps=60, num_samples=8, guide="lowrank", progress=False)
        method = svi if how == "svi" else None  # a delta guide has no point("mean")
        options = FAMILY_OPTIONS.get(kind, {})
        extra = {} if method is None else {"method": method}
        out[kind] = ad.adapt(kind, broad, targets, tau=10.0, **extra, **options)
    nuts = ad.NUTS(num_warmup=30, num_samples=10, num_chains=1, progress=False)
    out["gaussian-nuts"] = ad.adapt(
        "gaussian", broad, targets, tau=10.0, method=nuts, **FAMILY_OPTIONS["gaussian"]
    )
    return out


_POSTERIORS: dict = {}


def posteriors() -> dict:
    """:func:`_posteriors`, built once per process."""
    if not _POSTERIORS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _POSTERIORS.update(_posteriors())
    return _POSTERIORS


def seed_prior(out: Path) -> list[Path]:
    return [p.prior.save(out / k) for k, p in posteriors().items() if k != "gaussian-nuts"]


def use_prior(path: Path, heavy: bool = False) -> None:
    prior = ad.load_prior(path)
    repr(prior)
    targets = unit(np.random.default_rng(1), 3, prior.dim)
    if not is_conjugate(prior):  # no closed form: its own draws and prior predictive
        prior.sample(0, 2)
        prior.prior_predictive(0, 2, 3)
        return
    for p in (prior, prior.isotropic()):
        _use_posterior(ad.infer(p, targets, tau=10.0), heavy)


def _use_posterior(post, heavy: bool = False) -> None:
    """The uses of a posterior the adversarial test made: both point summaries, draws, its
    repr, its prior's isotropic form, and an InferenceData (``heavy``: with its prior and log
    likelihood, and the prior's power-scaling sensitivity)."""
    repr(post)
    uses = [
        lambda: _score(post.point()),
        lambda: _score(post.point("map")),
        lambda: [_score(model) for model in post.sample(seed=0, n=2)],
        lambda: post.prior is not None and post.prior.isotropic(),
        lambda: ad.inference_data(post, num_draws=2, prior=False),
    ]
    if heavy:
        uses.append(lambda: ad.inference_data(post, num_draws=4))
        uses.append(lambda: post.prior is not None and ad.prior_sensitivity(post, num_draws=40))
    for use in uses:  # each use, whether or not another gave a clear error
        try:
            use()
        except ad.AnchorDivError:
            continue


def seed_posterior(out: Path) -> list[Path]:
    return [p.save(out / k) for k, p in posteriors().items()]


def use_posterior(path: Path, heavy: bool = False) -> None:
    _use_posterior(ad.load_posterior(path), heavy)


#: every kind of anchor model ``ad.fit`` makes
MODEL_KINDS = KINDS


def seed_model(out: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    anchors = unit(rng, 10, D)
    return [ad.save_model(ad.fit(k, anchors, tau=10.0), out / k) for k in MODEL_KINDS]


def use_model(path: Path, heavy: bool = False) -> None:
    model = ad.load_model(path)
    repr(model)
    _score(model)


def seed_embeddings(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    x = unit(np.random.default_rng(0), 8, D).astype(np.float32)
    ad.save_embeddings(out / "x.npy", x, encoder="toy", logit_scale=10.0)
    return [out]


def use_embeddings(path: Path, heavy: bool = False) -> None:
    x = ad.load_embeddings(path / "x.npy")
    repr(x)
    _score(ad.fit("gaussian", x))


def seed_idata(out: Path) -> list[Path]:
    made = []
    for kind in ("gaussian", "latent-gaussian", "mixture"):
        post = posteriors()[kind]
        made.append(ad.save_inference_data(ad.inference_data(post, num_draws=4), out / kind))
    return made


def use_idata(path: Path, heavy: bool = False) -> None:
    idata = ad.load_inference_data(path)
    repr(idata)
    for group in adz.groups(idata):
        adz.dataset(idata, group).load()


#: every faiss index type, with the options of its seed (an IVF of fewer than 16 cells: its
#: default nprobe is clamped to nlist)
INDEX_KINDS = {"flat": {}, "ivf": {"nlist": 4}, "hnsw": {"hnsw_m": 8, "ef_search": 16}}


def seed_index(out: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    model = ad.fit("gaussian", unit(rng, 10, D), tau=10.0)
    gallery = ad.GalleryIndex(model, unit(rng, 40, D))
    try:
        import faiss  # noqa: F401
    except ImportError:
        return []
    return [gallery.to_faiss(k, **o).save(out / k) for k, o in INDEX_KINDS.items()]


def use_index(path: Path, heavy: bool = False) -> None:
    index = ad.FaissIndex.load(path)
    repr(index)
    index.search(unit(np.random.default_rng(2), 2, index.gallery.model.dim), 3)


def _score(model) -> None:
    """Score with the model and refuse a silent NaN (a loaded model must score finitely)."""
    rng = np.random.default_rng(3)
    d = np.asarray(ad.divergence(model, unit(rng, 2, model.dim), unit(rng, 3, model.dim)))
    if not np.all(np.isfinite(d)):
        raise SilentNaN(f"{model.kind}: a loaded model scored {np.isnan(d).sum()} NaN")


class SilentNaN(Exception):
    """A loaded object that scores NaN or inf without an error: a finding like a raw error."""


#: target name: (seed function writing one valid file or a list of them under a folder, use
#: function loading a case — with a ``heavy`` flag where it has a heavier use)
TARGETS = {
    "load_prior": (seed_prior, use_prior),
    "load_posterior": (seed_posterior, use_posterior),
    "load_model": (seed_model, use_model),
    "load_embeddings": (seed_embeddings, use_embeddings),
    "load_inference_data": (seed_idata, use_idata),
    "index_load": (seed_index, use_index),
}


# ---- the embedding cache's files (issue 52; kept apart to ease merging) ----------------------


class SilentSubstitution(Exception):
    """Cached embeddings that differ from a fresh encoding without a note: a finding."""


class _ToyImages(ad.data.Encoder):
    """A deterministic 6-d image encoder: each file's unit vector is seeded by its bytes."""

    id, dim, logit_scale = "fuzz-img", 6, 10.0

    def encode_image(self, images, batch_size=32, progress=None):
        import hashlib

        out = []
        for p in images:
            seed = int.from_bytes(hashlib.sha256(Path(p).read_bytes()).digest()[:8], "little")
            out.append(np.random.default_rng(seed).normal(size=self.dim))
        return np.asarray(out, np.float32)


class _ToyText(ad.data.Encoder):
    id, dim, logit_scale = "fuzz-text", 4, 10.0

    def _text_batch(self, texts):
        return np.stack([np.random.default_rng(len(t)).normal(size=self.dim) for t in texts])


CACHE_TEXTS = ["alpha", "beta gamma"]


def seed_cache(out: Path) -> Path:
    """A cache (packs of two writes, a text entry, file digests) and the image tree it holds."""
    from PIL import Image

    tree = out / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(5):
        paths.append(tree / f"img{i}.png")
        Image.new("RGB", (5, 4), (40 * i, 7, 255 - 9 * i)).save(paths[-1])
    root = out / "cache"
    ad.data.embed_images(_ToyImages(), paths[:3], cache=root)
    ad.data.embed_images(_ToyImages(), paths, cache=root)
    ad.data.embed_texts(_ToyText(), CACHE_TEXTS, cache=root)
    (out / "strict").write_text("cached rows must equal fresh ones")
    return out


def use_cache(path: Path) -> None:
    """Embed through the cache (rows must be the fresh ones where no mutation was re-signed
    with the cache's key, else finite unit rows of the right shape), show it and prune it."""
    from anchordiv.data import cache

    root = path / "cache"
    paths = sorted((path / "tree").glob("*.png"))
    x, _ = ad.data.embed_images(_ToyImages(), paths, cache=root)
    t = ad.data.embed_texts(_ToyText(), CACHE_TEXTS, cache=root)
    fresh_x, _ = ad.data.embed_images(_ToyImages(), paths, cache=False)
    fresh_t = ad.data.embed_texts(_ToyText(), CACHE_TEXTS, cache=False)
    for got, fresh in ((x, fresh_x), (t, fresh_t)):
        norms = np.linalg.norm(np.asarray(got, np.float64), axis=1)
        if got.shape != fresh.shape or not np.all(np.abs(norms - 1) < 1e-3):
            raise SilentSubstitution(f"cached rows {got.shape}, norms {norms}")
        if (path / "strict").exists() and not np.allclose(got, fresh, atol=1e-5):
            raise SilentSubstitution("cached rows differ from a fresh encoding")
    cache.cache_summary(root)
    cache.prune(root, older_than_days=1e4, wait=0)
    cache.prune(root, everything=True, wait=0)


def mutate_cache(case: Path, rng) -> str:
    """Mutate one file of the cache: bytes, JSON values, the array, or a pack planted beside
    the others; half the time re-signed with the cache's key (the checks behind the digest
    reached: then only shape, finiteness and norm are required of the result)."""
    from anchordiv.data import cache

    root = case / "cache"
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != cache.LOCK)
    files = [p for p in files if "xla" not in p.parts]
    target = files[rng.integers(len(files))]
    key = cache.cache_key(root)
    resign = key is not None and rng.random() < 0.5
    op = rng.integers(4)
    if op == 0:
        flip_bytes(target, rng)
        return f"bytes {target.name}"
    manifest = target.with_suffix(".json")
    if op == 1 and target.suffix == ".json":
        meta = json.loads(target.read_text())
        if isinstance(meta, dict):
            meta = mutate_card(meta, rng)
            if resign and target.name not in (cache.MARKER, "space.json"):
                meta["digest"] = cache.sign(key, meta)
                (case / "strict").unlink(missing_ok=True)
        target.write_text(json.dumps(meta))
        return f"json {target.name}"
    packs = sorted(root.glob("images/*/pack-*.npy"))
    if op == 3 and packs:  # a pack planted beside the real ones
        src = packs[rng.integers(len(packs))]
        target = src.with_name("pack-1-1-0000beef.npy")
        manifest = target.with_suffix(".json")
        manifest.write_text(src.with_suffix(".json").read_text())
        arr = np.load(src)
        kind = rng.integers(4)
        arr = [
            np.full(arr.shape, 1 / np.sqrt(arr.shape[1]), np.float32),
            4000 * arr,
            np.full(arr.shape, np.nan, np.float32),
            np.random.default_rng(1).normal(size=(arr.shape[0], 24)).astype(np.float32),
        ][kind]
        if kind == 3:
            arr /= np.linalg.norm(arr, axis=1, keepdims=True)
    elif target.suffix == ".npy":
        arr = mutate_arrays({"x": np.load(target)}, rng).get("x", np.zeros(0))
    else:
        flip_bytes(target, rng)
        return f"bytes {target.name}"
    with open(target, "wb") as f:
        np.save(f, arr)
    if resign and manifest.is_file():
        meta = json.loads(manifest.read_text())
        a = np.asarray(arr)
        meta["sha256"] = __import__("hashlib").sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
        meta.update(shape=list(a.shape), dtype=a.dtype.str)
        if a.ndim == 2:
            meta.update(rows=a.shape[0], width=a.shape[1])
        meta["digest"] = cache.sign(key, meta)
        manifest.write_text(json.dumps(meta))
        (case / "strict").unlink(missing_ok=True)
    return f"array {target.name}"


TARGETS["image_cache"] = (seed_cache, use_cache)

# ---- mutations ---------------------------------------------------------------------------

WRONG = [
    None,
    True,
    0,
    -1,
    2**70,
    1e308,
    -0.5,
    float("nan"),
    "",
    "os",
    "system",
    [],
    [1, 2],
    {},
    {"a": 1},
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
]


def _paths(obj, prefix=()):
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            out += _paths(v, prefix + (i,))
    return out


def _set(obj, path, value, delete=False):
    for k in path[:-1]:
        obj = obj[k]
    if delete and isinstance(obj, dict):
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


def mutate_card(card: dict, rng) -> dict:
    card = copy.deepcopy(card)
    for _ in range(rng.integers(1, 3)):
        paths = [p for p in _paths(card) if p]
        path = paths[rng.integers(len(paths))]
        if path[-1] in ("digest",):
            continue
        value = WRONG[rng.integers(len(WRONG))]
        _set(card, path, copy.deepcopy(value), delete=rng.random() < 0.2)
    return card


def mutate_arrays(arrays: dict, rng) -> dict:
    arrays = dict(arrays)
    name = sorted(arrays)[rng.integers(len(arrays))]
    a = np.asarray(arrays[name])
    op = rng.integers(9)
    if op == 0:
        dtype = ["int32", "float16", ">f8", ">f4", "bool", "<U3", "complex64", "uint8"][
            rng.integers(8)
        ]
        try:
            a = a.astype(dtype)
        except (ValueError, TypeError):
            a = np.zeros(a.shape, dtype)
    elif op == 1:
        a = a.reshape(-1)
    elif op == 2 and a.ndim:
        a = a[: max(0, a.shape[0] - 1)]
    elif op == 3:
        a = np.concatenate([a.reshape(-1), a.reshape(-1)[:1]]) if a.size else np.zeros(2)
    elif op == 4:
        a = np.asarray(a.reshape(-1)[0] if a.size else 0.0)
    elif op == 5 and a.size and a.dtype.kind == "f":
        a = a.copy()
        a.reshape(-1)[rng.integers(a.size)] = [np.nan, np.inf, -np.inf, 0.0, 1e300][rng.integers(5)]
    elif op == 6:
        del arrays[name]
        return arrays
    elif op == 7:
        arrays[name + "_extra"] = a
        return arrays
    else:
        a = np.zeros((0,) + a.shape[1:], a.dtype) if a.ndim else np.zeros(0)
    arrays[name] = a
    return arrays


def write_consistent(bundle: Path, arrays: dict, card: dict) -> None:
    """Rewrite a bundle with hashes recomputed (what anyone can do)."""
    card = dict(card)
    card["data_hash"] = data_hash(arrays)
    if "array_specs" in card and array_specs is not None:
        card["array_specs"] = array_specs(arrays)
    if card_digest is not None:
        card["digest"] = card_digest(card)
    with open(bundle / "arrays.npz", "wb") as f:
        np.savez(f, **arrays)
    (bundle / "card.json").write_text(json.dumps(card))


def huge_integer(path: Path, rng) -> None:
    """Replace the first number of a JSON file by an integer of 4,400 digits (more than Python
    parses: its ValueError must become an AnchorDivError)."""
    text = path.read_text()
    at = next((i for i, c in enumerate(text) if c.isdigit()), None)
    if at is not None:
        path.write_text(text[:at] + "7" * 4400 + text[at + 1 :])


def flip_bytes(path: Path, rng) -> None:
    data = bytearray(path.read_bytes())
    if not data:
        return
    for _ in range(rng.integers(1, 5)):
        data[rng.integers(len(data))] = rng.integers(256)
    if rng.random() < 0.1:
        data = data[: rng.integers(len(data))]
    path.write_bytes(bytes(data))


def mutate(case: Path, target: str, rng) -> str:
    """Mutate the saved copy ``case`` in place; returns what was done."""
    if target == "image_cache":
        return mutate_cache(case, rng)
    if target == "load_embeddings":
        npy, side = case / "x.npy", case / "x.json"
        op = rng.integers(3)
        if op == 0:
            if rng.random() < 0.05:
                huge_integer(side, rng)
                return "huge integer"
            flip_bytes(npy if rng.random() < 0.5 else side, rng)
            return "bytes"
        if op == 1:
            meta = mutate_card(json.loads(side.read_text()), rng)
            side.write_text(json.dumps(meta))
            return "sidecar"
        arr = mutate_arrays({"x": np.load(npy)}, rng).get("x", np.zeros(0))
        with open(npy, "wb") as f:
            np.save(f, arr)
        return "array"
    bundle = case / "model" if target == "index_load" and rng.random() < 0.3 else case
    op = rng.integers(4)
    if op == 0:
        if rng.random() < 0.05:
            huge_integer(bundle / "card.json", rng)
            return "huge integer"
        flip_bytes(bundle / ("card.json" if rng.random() < 0.5 else "arrays.npz"), rng)
        return "bytes"
    with np.load(bundle / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    card = json.loads((bundle / "card.json").read_text())
    if rng.random() < 0.2:  # a bundle in the form saved before cards had digests
        card.pop("array_specs", None)
        card.pop("digest", None)
    if op == 1:
        write_consistent(bundle, arrays, mutate_card(card, rng))
        return "card"
    if op == 2:
        write_consistent(bundle, mutate_arrays(arrays, rng), card)
        return "arrays"
    write_consistent(bundle, mutate_arrays(arrays, rng), mutate_card(card, rng))
    return "both"


# ---- running -------------------------------------------------------------------------------


def _card_kind(case: Path) -> str:
    """The kind a (possibly mutated) saved prior's card names, else ``"gaussian"``."""
    try:
        kind = json.loads((case / "card.json").read_text()).get("kind")
    except Exception:  # noqa: BLE001 — a mutated card: any kind will do
        return "gaussian"
    return kind if isinstance(kind, str) and kind in FAMILY_METHODS else "gaussian"


def cli_argvs(target: str, case: Path, work: Path) -> list[list[str]]:
    """The command lines that read ``case`` (writing under ``work``); none for a target no
    command reads (an InferenceData)."""
    rng = np.random.default_rng(5)
    q, g = work / "q.npy", work / "g.npy"
    np.save(q, unit(rng, 2, D))
    np.save(g, unit(rng, 5, D))
    out = []
    if target in ("load_model", "load_posterior", "index_load"):
        bundle = case / "model" if target == "index_load" else case
        out.append(["search", str(bundle), str(q), str(g), "-k", "2", "-o", str(work / "s")])
    if target == "load_posterior":
        out.append(["diagnose", str(case), "--num-draws", "40", "-o", str(work / "d")])
    if target == "load_prior":
        prior = ["--prior", str(case), "--tau", "10", "-o", str(work / "a")]
        out.append(["adapt", _card_kind(case), str(q), *prior])
    if target == "load_embeddings":
        out.append(["fit", "gaussian", str(case / "x.npy"), "--tau", "10", "-o", str(work / "f")])
    return out


def cli_argv(target: str, case: Path, work: Path) -> list[str] | None:
    """The first of :func:`cli_argvs`, or None."""
    argvs = cli_argvs(target, case, work)
    return argvs[0] if argvs else None


def _signature(err: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if "anchordiv" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(err).__name__}@{where}"


def run_case(target: str, case: Path, heavy: bool = True) -> tuple[str, str] | None:
    """None when the case loads and works or raises AnchorDivError; else (signature, text)."""
    use = TARGETS[target][1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if "heavy" in inspect.signature(use).parameters:
                use(case, heavy)
            else:  # a target without a heavy use
                use(case)
    except ad.AnchorDivError:
        return None
    except (Exception, SilentNaN, SilentSubstitution) as err:  # noqa: BLE001 — a finding
        return _signature(err), "".join(traceback.format_exception(err))[-2000:]
    return None


def run_cli(target: str, case: Path, work: Path) -> tuple[str, str] | None:
    """None when every command of :func:`cli_argvs` on ``case`` exits 0, or 2 with one error
    line and no traceback; else (signature, text)."""
    import contextlib
    import io

    from anchordiv.app.cli import main as cli_main

    for argv in cli_argvs(target, case, work):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    code = cli_main(argv)
        except SystemExit as stop:
            code = stop.code
        except Exception as raw:  # noqa: BLE001 — a finding
            return f"cli {argv[0]}: {_signature(raw)}", "".join(traceback.format_exception(raw))
        text = err.getvalue()
        lines = [line for line in text.splitlines() if ": error: " in line]
        if code not in (0, 2) or "Traceback" in text or (code == 2 and len(lines) != 1):
            last = text.strip().splitlines()[-1:] or ["?"]
            return f"cli {argv[0]}: exit {code}: {last[0][:80]}", text[-2000:]
    return None


def fuzz(
    seconds: float,
    seed: int,
    work: Path,
    save: bool = False,
    targets=None,
    cases=None,
    heavy: float = 0.1,
    cli: float = 0.0,
    progress: Path | None = None,
) -> dict:
    """Fuzz every target for ``seconds`` in all, or until ``cases`` cases (round robin over
    the targets, a random seed variant of each); a fraction ``heavy`` of the cases is also used
    heavily (``prior_sensitivity``), a fraction ``cli`` also run through the command line;
    returns the counts (also written to ``progress`` every 25 cases, where given)."""
    rng = np.random.default_rng(seed)
    targets = list(targets or TARGETS)
    seeds = {}
    for t in targets:
        made = TARGETS[t][0](work / "seed" / t)
        seeds[t] = list(made) if isinstance(made, (list, tuple)) else [made]
    targets = [t for t in targets if seeds[t]]  # faiss not installed: no index seeds
    counts = {t: {"cases": 0, "raw": 0, "heavy": 0, "cli": 0, "cli_raw": 0} for t in targets}
    found: dict[str, str] = {}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end and (cases is None or i < cases):
        t = targets[i % len(targets)]
        case = work / "case"
        shutil.rmtree(case, ignore_errors=True)
        shutil.copytree(seeds[t][rng.integers(len(seeds[t]))], case, symlinks=True)
        mutate(case, t, rng)
        counts[t]["cases"] += 1
        use_heavily, use_cli = bool(rng.random() < heavy), bool(rng.random() < cli)
        counts[t]["heavy"] += use_heavily
        kept = work / "kept"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(case, kept, symlinks=True)  # the input, before any use wrote into it
        result = run_case(t, case, use_heavily)
        if result is not None:
            counts[t]["raw"] += 1
        elif use_cli:
            counts[t]["cli"] += 1
            cli_work = work / "cli"
            shutil.rmtree(cli_work, ignore_errors=True)
            cli_work.mkdir()
            shutil.copytree(kept, cli_work / "case", symlinks=True)
            result = run_cli(t, cli_work / "case", cli_work)
            counts[t]["cli_raw"] += result is not None
        if result is not None:
            sig, text = result
            if sig not in found:
                found[sig] = text
                print(f"[{t}] {sig}\n{text}", file=sys.stderr)
                if save:
                    dest = CORPUS / t / f"{len(list((CORPUS / t).glob('*'))):03d}"
                    shutil.copytree(kept, dest)
        i += 1
        if progress is not None and i % 25 == 0:
            done = {"cases": i, "counts": counts, "signatures": sorted(found)}
            progress.write_text(json.dumps(done, indent=1))
    return {"counts": counts, "signatures": sorted(found)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--cases", type=int, help="stop after this many cases (all targets)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", action="store_true", help="keep new findings in the corpus")
    p.add_argument("--target", action="append", choices=sorted(TARGETS))
    p.add_argument("--heavy", type=float, default=0.1, help="fraction used heavily")
    p.add_argument("--cli", type=float, default=0.0, help="fraction also run through the CLI")
    p.add_argument("--progress", type=Path, help="write the counts here every 25 cases")
    args = p.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = fuzz(
            args.seconds,
            args.seed,
            Path(tmp),
            args.save,
            args.target,
            args.cases,
            heavy=args.heavy,
            cli=args.cli,
            progress=args.progress,
        )
    print(json.dumps(out, indent=1))
    return 1 if out["signatures"] else 0


if __name__ == "__main__":
    sys.exit(main())
