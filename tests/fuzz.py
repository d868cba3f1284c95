"""A seeded mutation fuzzer of anchordiv's loaders: every malformed file must be an
``AnchorDivError`` (or load and work), never another exception.

Each target saves a small valid file (a prior, a posterior, a model, embeddings with their
sidecar, an InferenceData, a faiss index), mutates a copy — byte flips, card values replaced
by values of the wrong type, arrays with another dtype, shape or values and the hashes
recomputed so the loaders' later checks are reached — loads it and uses it once.  Any other
exception is a finding: its input is kept under ``tests/fuzz_corpus/<target>/`` and replayed
by ``tests/test_fuzz.py``.

Run it from the checkout: ``python tests/fuzz.py --seconds 300`` (``--save`` keeps new
findings in the corpus; ``--cases 10000 --seconds 1e9`` runs a fixed number of cases).  Each
case is loaded and used as an adversarial test did: a posterior's ``point()`` and
``point("map")``, draws, ``repr``, its prior's ``isotropic()`` and ``ad.inference_data``; a
prior's posterior the same way; a model scored (a NaN score is a finding too); an index
searched; an InferenceData's groups read.
"""

from __future__ import annotations

import argparse
import copy
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
from anchordiv.checks import arviz as adz
from anchordiv.io import data_hash

try:
    from anchordiv._safeio import array_specs, card_digest
except ImportError:  # a version without card digests: fuzzing it builds a corpus to replay
    array_specs = card_digest = None  # type: ignore[assignment]

CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"
D = 4


# ---- the valid seeds and their first uses --------------------------------------------------


def seed_prior(out: Path) -> Path:
    rng = np.random.default_rng(0)
    return ad.NIWPrior.from_anchors(unit(rng, 12, D), kappa0=2.0, nu0=8.0).save(out)


def use_prior(path: Path) -> None:
    prior = ad.load_prior(path)
    repr(prior)
    for p in (prior, prior.isotropic()):
        _use_posterior(ad.infer(p, unit(np.random.default_rng(1), 3, p.dim), tau=10.0))


def _use_posterior(post) -> None:
    """The uses of a posterior the adversarial test made: both point summaries, draws, its
    repr, its prior's isotropic form, and an InferenceData."""
    repr(post)
    _score(post.point())
    _score(post.point("map"))
    for model in post.sample(seed=0, n=2):
        _score(model)
    if post.prior is not None:
        post.prior.isotropic()
    ad.inference_data(post, num_draws=2, prior=False)


def seed_posterior(out: Path) -> Path:
    rng = np.random.default_rng(0)
    broad = unit(rng, 12, D)
    post = ad.adapt("gaussian", broad, broad[:3], tau=10.0, kappa0=2.0, nu0=8.0)
    return post.save(out)


def use_posterior(path: Path) -> None:
    _use_posterior(ad.load_posterior(path))


def seed_model(out: Path) -> Path:
    return ad.save_model(ad.fit("gaussian", unit(np.random.default_rng(0), 10, D), tau=10.0), out)


def use_model(path: Path) -> None:
    model = ad.load_model(path)
    repr(model)
    _score(model)


def seed_embeddings(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    x = unit(np.random.default_rng(0), 8, D).astype(np.float32)
    ad.save_embeddings(out / "x.npy", x, encoder="toy", logit_scale=10.0)
    return out


def use_embeddings(path: Path) -> None:
    x = ad.load_embeddings(path / "x.npy")
    repr(x)
    _score(ad.fit("gaussian", x))


def seed_idata(out: Path) -> Path:
    rng = np.random.default_rng(0)
    broad = unit(rng, 12, D)
    post = ad.adapt("gaussian", broad, broad[:3], tau=10.0, kappa0=2.0, nu0=8.0)
    return ad.save_inference_data(ad.inference_data(post, num_draws=4, prior=False), out)


def use_idata(path: Path) -> None:
    idata = ad.load_inference_data(path)
    repr(idata)
    for group in adz.groups(idata):
        adz.dataset(idata, group).load()


def seed_index(out: Path) -> Path:
    rng = np.random.default_rng(0)
    model = ad.fit("gaussian", unit(rng, 10, D), tau=10.0)
    return ad.GalleryIndex(model, unit(rng, 20, D)).to_faiss("flat").save(out)


def use_index(path: Path) -> None:
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


def cli_argv(target: str, case: Path, work: Path) -> list[str] | None:
    """The command line that reads ``case`` (writing under ``work``), or None for a target no
    command reads (an InferenceData)."""
    rng = np.random.default_rng(5)
    q, g = work / "q.npy", work / "g.npy"
    np.save(q, unit(rng, 2, D))
    np.save(g, unit(rng, 5, D))
    if target in ("load_model", "load_posterior", "index_load"):
        bundle = case / "model" if target == "index_load" else case
        return ["search", str(bundle), str(q), str(g), "-k", "2", "-o", str(work / "s")]
    if target == "load_prior":
        prior = ["--prior", str(case), "--tau", "10", "-o", str(work / "a")]
        return ["adapt", "gaussian", str(q), *prior]
    if target == "load_embeddings":
        return ["fit", "gaussian", str(case / "x.npy"), "--tau", "10", "-o", str(work / "f")]
    return None


def run_case(target: str, case: Path) -> tuple[str, str] | None:
    """None when the case loads and works or raises AnchorDivError; else (signature, text)."""
    use = TARGETS[target][1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            use(case)
    except ad.AnchorDivError:
        return None
    except (Exception, SilentNaN, SilentSubstitution) as err:  # noqa: BLE001 — a finding
        frames = [f for f in traceback.extract_tb(err.__traceback__) if "anchordiv" in f.filename]
        where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
        return f"{type(err).__name__}@{where}", "".join(traceback.format_exception(err))[-2000:]
    return None


def fuzz(
    seconds: float, seed: int, work: Path, save: bool = False, targets=None, cases=None
) -> dict:
    """Fuzz every target for ``seconds`` in all, or until ``cases`` cases (round robin);
    returns the counts."""
    rng = np.random.default_rng(seed)
    targets = list(targets or TARGETS)
    seeds = {t: TARGETS[t][0](work / "seed" / t) for t in targets}
    counts = {t: {"cases": 0, "raw": 0} for t in targets}
    found: dict[str, str] = {}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end and (cases is None or i < cases):
        t = targets[i % len(targets)]
        case = work / "case"
        shutil.rmtree(case, ignore_errors=True)
        shutil.copytree(seeds[t], case, symlinks=True)
        mutate(case, t, rng)
        counts[t]["cases"] += 1
        result = run_case(t, case)
        if result is not None:
            counts[t]["raw"] += 1
            sig, text = result
            if sig not in found:
                found[sig] = text
                print(f"[{t}] {sig}\n{text}", file=sys.stderr)
                if save:
                    dest = CORPUS / t / f"{len(list((CORPUS / t).glob('*'))):03d}"
                    shutil.copytree(case, dest)
        i += 1
    return {"counts": counts, "signatures": sorted(found)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--cases", type=int, help="stop after this many cases (all targets)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", action="store_true", help="keep new findings in the corpus")
    p.add_argument("--target", action="append", choices=sorted(TARGETS))
    args = p.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = fuzz(args.seconds, args.seed, Path(tmp), args.save, args.target, args.cases)
    print(json.dumps(out, indent=1))
    return 1 if out["signatures"] else 0


if __name__ == "__main__":
    sys.exit(main())
