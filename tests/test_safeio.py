"""Files from strangers and killed saves: loading never runs code a file names, saves are
atomic, reads are bounded, the digest covers the whole bundle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad
from anchordiv import _safeio
from anchordiv.app.cli import main
from anchordiv.io import data_hash
from helpers import edit_card, unit

SRC = str(Path(ad.__file__).resolve().parents[1])


def _posterior(tmp_path):
    rng = np.random.default_rng(0)
    broad = unit(rng, 12, 4)
    post = ad.adapt("gaussian", broad, broad[:3], tau=10.0, kappa0=2.0, nu0=8.0)
    return post.save(tmp_path / "post")


def _craft(path, marker: Path, **card):
    """A posterior naming ``os.system`` with a command that would create ``marker``, its hash
    and digest recomputed."""
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files if not k.startswith("family.")}
    arrays["family.command"] = np.asarray(f"touch {marker}")
    old = json.loads((path / "card.json").read_text())
    new = {**old, "family": "system", "family_module": "os", **card}
    new["data_hash"] = data_hash(arrays)
    new["array_specs"] = _safeio.array_specs(arrays)
    with open(path / "arrays.npz", "wb") as f:
        np.savez(f, **arrays)
    edit_card(path, **{k: v for k, v in new.items() if k != "digest"})


def test_a_crafted_posterior_runs_nothing_from_python_or_the_cli(tmp_path, capsys):
    marker = tmp_path / "ran"
    path = _posterior(tmp_path)
    _craft(path, marker)
    with pytest.raises(ad.AnchorDivError, match=r"'system' \(from 'os'\).*ad\.family"):
        ad.load_posterior(path)
    rng = np.random.default_rng(1)
    np.save(tmp_path / "q.npy", unit(rng, 3, 4))
    np.save(tmp_path / "g.npy", unit(rng, 6, 4))
    np.save(tmp_path / "r.npy", rng.random((3, 6)) < 0.5)
    q, g, r = (str(tmp_path / f) for f in ("q.npy", "g.npy", "r.npy"))
    commands = [
        ["search", str(path), q, g, "-k", "2", "-o", str(tmp_path / "s")],
        ["evaluate", str(path), "--queries", q, "--gallery", g, "--relevance", r, "-o",
         str(tmp_path / "e")],
        ["diagnose", str(path), "-o", str(tmp_path / "d"), "--num-draws", "4"],
    ]  # fmt: skip
    for argv in commands:
        assert main(argv) == 2, argv
        assert "'system' (from 'os')" in capsys.readouterr().err
    assert not marker.exists()
    # a completion naming any callable, and a card naming a class that is imported nowhere
    path = _posterior(tmp_path / "two")
    edit_card(path, completion="getpid", completion_module="os")
    with pytest.raises(ad.AnchorDivError, match="'getpid'"):
        ad.load_posterior(path)
    edit_card(path, completion=None, family="Evil", family_module="evil_module_not_here")
    with pytest.raises(ad.AnchorDivError, match="'Evil'"):
        ad.load_posterior(path)
    assert "evil_module_not_here" not in sys.modules


def test_a_crafted_prior_is_refused_by_adapt(tmp_path):
    prior = ad.NIWPrior.from_anchors(unit(np.random.default_rng(0), 12, 4), kappa0=2.0, nu0=8.0)
    path = prior.save(tmp_path / "prior")
    card = json.loads((path / "card.json").read_text())
    edit_card(path, kind="os:system", prior={**card["prior"], "family": "os:system"})
    np.save(tmp_path / "t.npy", unit(np.random.default_rng(1), 3, 4))
    argv = ["adapt", "gaussian", "--prior", str(path), str(tmp_path / "t.npy"), "-o", str(tmp_path / "m")]  # fmt: skip
    assert main(argv) == 2
    with pytest.raises(ad.AnchorDivError, match="unknown 'os:system'"):
        ad.load_prior(path)


def test_the_digest_covers_the_card_and_can_be_pinned(tmp_path, capsys):
    path = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / "m")
    digest = ad.bundle_digest(path)
    assert ad.load_model(path, sha256=digest).dim == 4
    assert ad.load_model(path, sha256="SHA256:" + digest.upper()).dim == 4
    with pytest.raises(ad.AnchorDivError, match="not the pinned"):
        ad.load_model(path, sha256="0" * 64)
    with pytest.raises(ad.AnchorDivError, match="64 hex digits"):
        ad.load_model(path, sha256="abc")
    card = json.loads((path / "card.json").read_text())
    (path / "card.json").write_text(json.dumps({**card, "encoder": "another"}))  # a card edit
    with pytest.raises(ad.AnchorDivError, match="does not match its digest"):
        ad.load_model(path)
    ad.load_model(path, verify=False)
    with pytest.raises(ad.AnchorDivError, match="digest"):
        ad.load_model(path, verify=False, sha256=digest)  # a pin verifies whatever verify says
    # the CLI pins too, and lists the shipped priors' digests
    assert main(["priors", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    name, row = next(iter(rows.items()))
    assert row["sha256"] == ad.bundle_digest(name)
    ad.load_prior(name, sha256=row["sha256"], kappa0=2.0, nu0=400.0)
    np.save(tmp_path / "t.npy", unit(np.random.default_rng(1), 3, 384))
    base = ["adapt", "gaussian", "--prior", row["path"], str(tmp_path / "t.npy"), "--tau", "20"]
    assert main([*base, "-o", str(tmp_path / "a"), "--sha256", "1" * 64]) == 2
    assert "not one pinned" in capsys.readouterr().err


def test_bundles_saved_before_the_digest_still_load(tmp_path):
    path = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / "m")
    card = json.loads((path / "card.json").read_text())
    del card["digest"], card["array_specs"]
    (path / "card.json").write_text(json.dumps(card))
    assert ad.load_model(path).dim == 4
    assert ad.load_model(path, sha256=ad.bundle_digest(path)).dim == 4


def test_a_shipped_name_and_a_local_folder_of_that_name_are_not_confused(tmp_path, monkeypatch):
    name = next(iter(ad.shipped_priors()))
    monkeypatch.chdir(tmp_path)
    ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / name)
    with pytest.raises(ad.AnchorDivError, match=f"'./{name}' for the folder"):
        ad.load_prior(name)
    assert ad.load_prior(f"./{name}", kappa0=2.0, nu0=8.0).dim == 4
    assert ad.load_prior(tmp_path / name, kappa0=2.0, nu0=8.0).dim == 4


def test_a_prior_card_without_kind_is_a_clear_error(tmp_path):
    prior = ad.NIWPrior.from_anchors(unit(np.random.default_rng(0), 12, 4), kappa0=2.0, nu0=8.0)
    path = prior.save(tmp_path / "p")
    card = json.loads((path / "card.json").read_text())
    del card["kind"]
    (path / "card.json").write_text(json.dumps({**card, "digest": _safeio.card_digest(card)}))
    with _no_resource_warning():
        with pytest.raises(ad.AnchorDivError, match="needs a 'kind'"):
            ad.load_prior(path)


class _no_resource_warning:
    def __enter__(self):
        import warnings

        self.catch = warnings.catch_warnings(record=True)
        self.caught = self.catch.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc):
        self.catch.__exit__(*exc)
        assert not [w for w in self.caught if issubclass(w.category, ResourceWarning)]


# ---- bounded reads -------------------------------------------------------------------------


def _zip_bomb(path: Path, inflated: int) -> None:
    """A bundle whose ``mean`` member is ``inflated`` bytes of zeros, deflated to ~1/1000."""
    path.mkdir()
    header = {"descr": "<f8", "fortran_order": False, "shape": (inflated // 8,)}
    import io as _io

    buf = _io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    chunk = bytes(2**20)
    with zipfile.ZipFile(path / "arrays.npz", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("mean.npy", "w", force_zip64=True) as f:
            f.write(buf.getvalue())
            for _ in range(inflated // len(chunk)):
                f.write(chunk)
    card = {"type": "anchor-model", "kind": "gaussian", "dim": 4, "data_hash": "0" * 64}
    (path / "card.json").write_text(json.dumps(card))


BOMB_CHILD = """
import resource, sys, time
import anchordiv as ad
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    ad.load_model(sys.argv[1])
    print("LOADED")
except ad.AnchorDivError as err:
    print("REFUSED", str(err)[:200])
took = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("EXTRA_MB", (after - before) / 1024, "SECONDS", took)
"""


@pytest.mark.slow
def test_a_1gb_zip_bomb_is_refused_quickly_and_cheaply(tmp_path):
    """~1 MB on disk, 1 GiB inflated: refused from the zip directory, before inflating."""
    _zip_bomb(tmp_path / "bomb", 2**30)
    assert (tmp_path / "bomb" / "arrays.npz").stat().st_size < 8 * 2**20
    run = subprocess.run(
        [sys.executable, "-c", BOMB_CHILD, str(tmp_path / "bomb")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=120,
    )
    out = run.stdout.split()
    assert "REFUSED" in out and "zip bomb" in run.stdout, run.stdout + run.stderr
    assert float(out[out.index("EXTRA_MB") + 1]) < 600


def test_a_zip_bomb_is_refused_before_inflating(tmp_path):
    _zip_bomb(tmp_path / "bomb", 128 * 2**20)
    with pytest.raises(ad.AnchorDivError, match="zip bomb"):
        ad.load_model(tmp_path / "bomb")


def test_members_are_checked_before_reading(tmp_path):
    path = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / "m")
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    card = json.loads((path / "card.json").read_text())

    def rewrite(arrays, compression=zipfile.ZIP_STORED, header=None):
        with zipfile.ZipFile(path / "arrays.npz", "w", compression) as z:
            for k, v in arrays.items():
                import io as _io

                buf = _io.BytesIO()
                np.save(buf, v)
                data = buf.getvalue() if header is None else header + buf.getvalue()[128:]
                z.writestr(f"{k}.npy", data)

    rewrite({**arrays, "mean": arrays["mean"].astype(">f4")})  # declared shape/dtype vs card
    with pytest.raises(ad.AnchorDivError, match="the card says"):
        ad.load_model(path)
    rewrite(arrays, header=b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'shape': (")
    with pytest.raises(ad.AnchorDivError, match="not a readable .npy array"):
        ad.load_model(path)
    rewrite(arrays, compression=zipfile.ZIP_BZIP2)
    with pytest.raises(ad.AnchorDivError, match="compression method"):
        ad.load_model(path)
    rewrite(arrays)  # then flag its members as encrypted in the central directory
    data = bytearray((path / "arrays.npz").read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        data[at + 8] |= 0x1
        at = data.find(b"PK\x01\x02", at + 4)
    (path / "arrays.npz").write_bytes(bytes(data))
    with pytest.raises(ad.AnchorDivError, match="encrypted"):
        ad.load_model(path)
    # a big-endian bundle (hashed as written) loads, in the machine's byte order
    big = {k: v.astype(v.dtype.newbyteorder(">")) for k, v in arrays.items()}
    rewrite(big)
    card.pop("array_specs")
    card["data_hash"] = data_hash(big)
    card["digest"] = _safeio.card_digest(card)
    (path / "card.json").write_text(json.dumps(card))
    loaded = ad.load_model(path)
    assert np.array_equal(np.asarray(loaded.mean), arrays["mean"].astype(np.float32))


def test_json_is_bounded(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ad.AnchorDivError, match="nested"):
        _safeio.parse_json(deep, "card")
    with pytest.raises(ad.AnchorDivError, match="nested deeper"):
        _safeio.parse_json("[" * 70 + "]" * 70, "card")
    with pytest.raises(ad.AnchorDivError, match="bytes of JSON"):
        _safeio.parse_json(" " * (_safeio.MAX_JSON_BYTES + 1), "card")
    path = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / "m")
    (path / "card.json").write_text(deep)
    with pytest.raises(ad.AnchorDivError, match="nested"):
        ad.load_model(path)


def test_a_corrupt_faiss_index_is_a_clear_error(tmp_path):
    pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    model = ad.fit("gaussian", unit(rng, 10, 4), tau=10.0)
    path = ad.GalleryIndex(model, unit(rng, 20, 4)).to_faiss("flat").save(tmp_path / "ix")
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    data = arrays["faiss"].copy()
    data[12:20] = 0xFF  # ntotal of the flat index: a huge allocation if trusted
    arrays["faiss"] = data
    with open(path / "arrays.npz", "wb") as f:
        np.savez(f, **arrays)
    edit_card(path, data_hash=data_hash(arrays))
    with pytest.raises(ad.AnchorDivError, match="faiss index"):
        ad.FaissIndex.load(path)


# ---- atomic saves ----------------------------------------------------------------------------


def test_overwrite_replaces_a_link_and_never_writes_through_it(tmp_path):
    model = ad.fit("gaussian", np.eye(4), tau=20.0)
    target = ad.save_model(model, tmp_path / "target")
    before = (target / "card.json").read_text()
    (tmp_path / "link").symlink_to(target)
    ad.save_model(ad.fit("gaussian", np.eye(4), tau=30.0), tmp_path / "link", overwrite=True)
    assert not (tmp_path / "link").is_symlink()
    assert (target / "card.json").read_text() == before
    assert float(ad.load_model(tmp_path / "link").tau) == 30.0
    outside = tmp_path / "outside.npy"
    np.save(outside, np.zeros(3))
    (tmp_path / "e.npy").symlink_to(outside)
    ad.save_embeddings(tmp_path / "e.npy", np.eye(4), overwrite=True)
    assert np.array_equal(np.load(outside), np.zeros(3))
    assert not (tmp_path / "e.npy").is_symlink()


def test_stale_temporaries_are_cleaned_and_a_lone_aside_copy_restored(tmp_path):
    model = ad.fit("gaussian", np.eye(4), tau=20.0)
    path = ad.save_model(model, tmp_path / "m")
    dead = _dead_pid()
    # a kill between "old renamed aside" and "new renamed in" leaves only the aside copy
    aside = tmp_path / f".m.old-{dead}-abcd"
    os.rename(path, aside)
    (tmp_path / f".m.tmp-{dead}-ef01").mkdir()
    assert float(ad.load_model(path).tau) == 20.0  # read from the aside copy
    ad.save_model(ad.fit("gaussian", np.eye(4), tau=30.0), path, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    assert float(ad.load_model(path).tau) == 30.0


def test_cache_temporaries_of_killed_writers_are_cleaned(tmp_path):
    from anchordiv.data.cache import cached_embeddings, content_key

    key = content_key("toy", "text", ["a"])
    dead = _dead_pid()
    folder = tmp_path / "embeddings"
    folder.mkdir()
    leftovers = [folder / f"{key}.{dead}.tmp.npy", folder / f".{key}.npy.tmp-{dead}-0a0b"]
    for p in leftovers:
        p.write_bytes(b"partial")
    cached_embeddings("toy", "text", ["a"], lambda: np.ones((1, 2), np.float32), cache=tmp_path)
    assert not any(p.exists() for p in leftovers)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


#: A child saving with the real writers (``save_model``, ``save_embeddings``) in a loop; it
#: saves the two objects it alternates between to ``ref0``/``ref1`` first.
KILL_CHILD = """
import sys
import numpy as np
import anchordiv as ad
kind, path, refs = sys.argv[1], sys.argv[2], sys.argv[3]
rng = np.random.default_rng(0)
x = rng.normal(size=(6, 6))
objects = [ad.fit("gaussian", x / np.linalg.norm(x, axis=1, keepdims=True), tau=10.0 + i)
           for i in range(2)]
arrays = [np.full((400, 64), float(i), np.float32) for i in range(2)]
for i in range(2):
    if kind == "bundle":
        ad.save_model(objects[i], f"{refs}/ref{i}", overwrite=True)
print("ready", flush=True)
i = 0
while True:
    if kind == "bundle":
        ad.save_model(objects[i % 2], path, overwrite=True)
    else:
        ad.save_embeddings(path, arrays[i % 2], encoder=f"enc{i % 2}", logit_scale=10.0 + i % 2,
                           overwrite=True)
    i += 1
"""

#: The same loop through the same machinery (:mod:`anchordiv._safeio`) without importing the
#: rest of the package (no JAX: it starts in a fraction of a second).
LIGHT_CHILD = """
import sys, types
kind, path, package = sys.argv[1], sys.argv[2], sys.argv[3]
pkg = types.ModuleType("anchordiv")
pkg.__path__ = [package]
sys.modules["anchordiv"] = pkg
import numpy as np
from anchordiv import _safeio as s
print("ready", flush=True)
i = 0
while True:
    v = i % 2
    if kind == "bundle":
        arrays = {"a": np.full((300, 50 + v), float(v))}
        card = {"type": "test", "version": v, "data_hash": s.data_hash(arrays),
                "array_specs": s.array_specs(arrays)}
        card["digest"] = s.card_digest(card)
        with s.atomic_dir(path, overwrite=True) as tmp:
            s.write_npz(tmp / "arrays.npz", arrays)
            s.write_text(tmp / "card.json", s.dumps(card))
    else:
        text = s.dumps({"encoder": f"enc{v}", "logit_scale": 10.0 + v, "rows": 400, "dim": 64})
        arr = np.full((400, 64), float(v), np.float32)
        s.replace_files({path: lambda t: s.write_npy(t, arr),
                         path[:-4] + ".json": lambda t: s.write_text(t, text)}, overwrite=True)
    i += 1
"""


def _kill_loop(tmp_path, kind: str, kills: int, seed: int, light: bool) -> int:
    """Start a child saving ``kind`` in a loop, SIGKILL it at a random moment, and check that
    the path loads as one of the two objects, exactly; ``kills`` times.  Returns how many
    kills came after a first complete save."""
    from anchordiv.io import read_bundle

    rng = np.random.default_rng(seed)
    path = tmp_path / ("m" if kind == "bundle" else "e.npy")
    env = {**os.environ, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu"}
    third = str(Path(SRC) / "anchordiv") if light else str(tmp_path)
    done = 0
    for _ in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-c", LIGHT_CHILD if light else KILL_CHILD, kind, str(path), third],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout.readline().strip() == "ready"
        time.sleep(float(rng.uniform(0.02, 0.4)))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        if kind == "bundle":
            if not (path.exists() or list(tmp_path.glob(".m.old-*"))):
                continue  # killed before the first save finished
            if light:
                arrays, card = read_bundle(path)
                v = card["version"]
                assert np.array_equal(arrays["a"], np.full((300, 50 + v), float(v)))
            else:
                m = ad.load_model(path)
                ref = ad.load_model(tmp_path / f"ref{int(round(float(m.tau))) - 10}")
                assert np.array_equal(np.asarray(m.mean), np.asarray(ref.mean))
                assert np.array_equal(np.asarray(m.factor), np.asarray(ref.factor))
        else:
            if not (path.exists() or (tmp_path / ".e.npy.swap").exists()):
                continue
            x = ad.load_embeddings(path)
            v = int(x[0, 0])
            assert np.array_equal(np.asarray(x), np.full((400, 64), float(v), np.float32))
            assert x.provenance == {"encoder": f"enc{v}", "logit_scale": 10.0 + v}
        done += 1
    return done


@pytest.mark.parametrize("kind", ["bundle", "embeddings"])
def test_a_killed_save_leaves_the_old_or_the_new_copy(tmp_path, kind):
    assert _kill_loop(tmp_path, kind, kills=6, seed=0, light=True) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bundle", "embeddings"])
def test_twenty_killed_saves_leave_the_old_or_the_new_copy(tmp_path, kind):
    """The real writers, killed 20 times at random moments (after the package's import)."""
    assert _kill_loop(tmp_path, kind, kills=20, seed=1, light=False) >= 15
