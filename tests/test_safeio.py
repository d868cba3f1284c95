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
    plain = ["--sha256", ad.bundle_digest(tmp_path / "t.npy")]  # a plain array, pinned too
    assert main([*base, "-o", str(tmp_path / "a"), "--sha256", "1" * 64, *plain]) == 2
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
    print("REFUSED", str(err))
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


# ---- bounded in total (issue 45) -----------------------------------------------------------


def _rewrite(path: Path, arrays: dict, compression=zipfile.ZIP_STORED, **card) -> None:
    """Rewrite a bundle's arrays (and card fields) with its hashes recomputed: a consistent
    edit anyone can make."""
    import io as _io

    with zipfile.ZipFile(path / "arrays.npz", "w", compression) as z:
        for k, v in arrays.items():
            buf = _io.BytesIO()
            np.save(buf, v)
            z.writestr(f"{k}.npy", buf.getvalue())
    edit_card(path, data_hash=data_hash(arrays), array_specs=_safeio.array_specs(arrays), **card)


def test_the_inflate_budget_is_one_for_all_members(tmp_path):
    """16 deflated members of 8 MiB each (each under the old per-member bound): refused from
    the zip directory, as a whole, before any is inflated."""
    path = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / "m")
    arrays = {f"pad{i}": np.zeros(2**20) for i in range(16)}
    _rewrite(path, arrays, zipfile.ZIP_DEFLATED)
    assert (path / "arrays.npz").stat().st_size < 2**20
    with pytest.raises(ad.AnchorDivError, match=r"16 members inflate .* zip bomb"):
        ad.load_model(path)


def test_the_member_count_is_read_from_the_end_record_first(tmp_path):
    path = tmp_path / "many.npz"
    with zipfile.ZipFile(path, "w") as z:
        for i in range(_safeio.MAX_MEMBERS + 1):
            z.writestr(f"a{i}.npy", b"")
    with pytest.raises(ad.AnchorDivError, match=f"{_safeio.MAX_MEMBERS + 1} members"):
        _safeio.read_npz(path)


def test_json_values_and_integers_are_bounded(tmp_path, capsys):
    with pytest.raises(ad.AnchorDivError, match="4400 digits"):
        _safeio.parse_json("[" + "7" * 4400 + "]", "card")
    with pytest.raises(ad.AnchorDivError, match="values, more than"):
        _safeio.parse_json("[" + "[]," * _safeio.MAX_JSON_ELEMENTS + "[]]", "card")
    assert _safeio.parse_json('{"a": NaN}', "card")["a"] != 0
    for text in ('{"a": NaN}', '{"a": -Infinity}', '{"a": 1e999}'):
        with pytest.raises(ad.AnchorDivError, match="finite"):
            _safeio.parse_json(text, "index.json", finite=True)
    # a 4,400-digit integer in a card: one line from the CLI, exit 2
    path = ad.save_model(ad.fit("gaussian", np.eye(4), tau=20.0), tmp_path / "m")
    text = (path / "card.json").read_text()
    (path / "card.json").write_text(text.replace('"dim": 4', '"dim": ' + "4" * 4400))
    with pytest.raises(ad.AnchorDivError, match="digits"):
        ad.load_model(path)
    np.save(tmp_path / "q.npy", np.eye(4)[:2])
    q = str(tmp_path / "q.npy")
    assert main(["search", str(path), q, q, "-k", "1", "-o", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "digits" in err and len(err.strip().splitlines()) == 1


def test_an_inference_data_reading_outside_itself_or_inflating_is_refused(tmp_path):
    import h5py

    from anchordiv.checks.uncertainty import NETCDF
    from anchordiv.io import write_bundle

    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 100)
    for name, make in {
        "external": lambda f: f.create_dataset(
            "v", (100,), dtype="u1", external=[(str(secret), 0, 100)]
        ),
        "link": lambda f: f.__setitem__("v", h5py.ExternalLink(str(secret), "/x")),
        "bomb": lambda f: f.create_dataset(
            "v", (2**27,), dtype="f8", chunks=(2**20,), compression="gzip", fillvalue=0.0
        ),
    }.items():
        with h5py.File(tmp_path / f"{name}.nc", "w") as f:
            make(f)
        data = np.frombuffer((tmp_path / f"{name}.nc").read_bytes(), np.uint8)
        path = write_bundle(tmp_path / name, {NETCDF: data}, {"type": "inference-data"})
        with pytest.raises(ad.AnchorDivError, match="outside the file|compression bomb"):
            ad.load_inference_data(path)


# ---- faiss: what a search will do, checked at load -----------------------------------------


def _faiss_bundle(tmp_path, kind="hnsw"):
    rng = np.random.default_rng(0)
    model = ad.fit("gaussian", unit(rng, 10, 4), tau=10.0)
    return ad.GalleryIndex(model, unit(rng, 20, 4)).to_faiss(kind)


def test_a_faiss_index_that_would_explode_at_search_is_refused_at_load(tmp_path):
    faiss = pytest.importorskip("faiss")
    fx = _faiss_bundle(tmp_path)
    path = fx.save(tmp_path / "ok")
    assert ad.FaissIndex.load(path).faiss.hnsw.efSearch == fx.faiss.hnsw.efSearch
    fx.faiss.hnsw.efSearch = 2**31 - 1  # saved as such: its card agrees
    path = fx.save(tmp_path / "ef")
    assert (path / "arrays.npz").stat().st_size < 64 * 2**10
    with pytest.raises(ad.AnchorDivError, match="efSearch must be in"):
        ad.FaissIndex.load(path)
    # the index bytes swapped under an unchanged card: the card's efSearch is not the index's
    fx.faiss.hnsw.efSearch = 4000
    path = fx.save(tmp_path / "swapped")
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    fx.faiss.hnsw.efSearch = 16
    _rewrite(path, {**arrays, "faiss": faiss.serialize_index(fx.faiss)})
    with pytest.raises(ad.AnchorDivError, match="the card says"):
        ad.FaissIndex.load(path)
    # an IVF probing more cells than it has
    ivf = _faiss_bundle(tmp_path, "ivf")
    ivf.faiss.nprobe = ivf.faiss.nlist + 1
    with pytest.raises(ad.AnchorDivError, match="nprobe in"):
        ad.FaissIndex.load(ivf.save(tmp_path / "ivf"))


def test_a_substituted_faiss_class_and_out_of_range_ids_are_refused(tmp_path):
    faiss = pytest.importorskip("faiss")
    fx = _faiss_bundle(tmp_path, "flat")
    path = fx.save(tmp_path / "ix")
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    keys = np.ascontiguousarray(arrays["keys"], np.float32)
    mapped = faiss.IndexIDMap(faiss.IndexFlatIP(keys.shape[1]))
    mapped.add_with_ids(keys, np.arange(len(keys), dtype=np.int64) + 10**9)
    _rewrite(path, {**arrays, "faiss": faiss.serialize_index(mapped)})
    with pytest.raises(ad.AnchorDivError, match="the card says 'IndexFlatIP'"):
        ad.FaissIndex.load(path)
    # ids outside the gallery, however the index got them, are an error at search
    bad = ad.FaissIndex(mapped, fx.gallery)
    with pytest.raises(ad.AnchorDivError, match="outside the gallery"):
        bad.search(unit(np.random.default_rng(1), 2, 4), 3)


def test_a_dask_index_folder_is_checked_in_full(tmp_path):
    faiss = pytest.importorskip("faiss")
    from anchordiv.scale.dask import load_index

    rng = np.random.default_rng(0)
    model = ad.fit("gaussian", unit(rng, 10, 4), tau=10.0)
    fx = ad.GalleryIndex(model, unit(rng, 40, 4)).to_faiss("ivf", nlist=4)
    out = tmp_path / "index"
    out.mkdir()
    faiss.write_index(fx.faiss, str(out / "ivf.index"))
    keys = np.asarray(fx.gallery.keys)
    np.save(out / "keys.npy", keys)
    red = fx.reduction
    meta = {"size": 40, "method": fx.gallery.method, "nprobe": 4, "shift": red.shift,
            "scale": red.scale, "max_norm": red.max_norm}  # fmt: skip
    (out / "index.json").write_text(json.dumps(meta))
    assert load_index(model, out).search(unit(rng, 2, 4), 3)[0].shape == (2, 3)
    (out / "index.json").write_text(json.dumps({**meta, "shift": float("inf")}))
    with pytest.raises(ad.AnchorDivError, match="finite"):
        load_index(model, out)
    (out / "index.json").write_text(json.dumps(meta))
    np.save(out / "keys.npy", keys[:30])  # a short keys.npy
    with pytest.raises(ad.AnchorDivError, match="size = 40"):
        load_index(model, out)
    np.save(out / "keys.npy", keys)
    (out / "index.json").write_text(json.dumps({**meta, "size": "40"}))
    with pytest.raises(ad.AnchorDivError, match="size = '40'"):
        load_index(model, out)


# ---- only the classes a family declares ----------------------------------------------------


def test_a_posterior_naming_a_non_family_dataclass_of_a_registered_module_is_refused(tmp_path):
    """A registered family's module also defines ``Job`` (a dataclass whose ``mean`` would run
    a command): a posterior naming it is refused, the command never runs."""
    import dataclasses

    sys.path.insert(0, str(Path(__file__).parent / "adaptation" / "userfam"))
    import user_family

    marker = tmp_path / "ran"

    @dataclasses.dataclass
    class Job:
        cmd: str

        def mean(self):  # pragma: no cover - must never run
            os.system(self.cmd)
            return {}

    Job.__module__ = user_family.__name__
    user_family.Job = Job
    user_family.register()
    try:
        from anchordiv.adaptation.posterior import exact_classes

        assert "MeanPosterior" in exact_classes() and "Job" not in exact_classes()
        path = _posterior(tmp_path)
        _craft(path, marker, family="Job", family_module=user_family.__name__)
        with pytest.raises(ad.AnchorDivError, match="'Job'"):
            ad.load_posterior(path)
    finally:
        user_family.unregister()
        del user_family.Job
        sys.path.pop(0)
    assert not marker.exists()


# ---- every loaded thing checked like its constructor ---------------------------------------


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("factor", "nan", "field factor holds NaN or inf"),
        ("mean", "inf", "field mean holds NaN or inf"),
        ("tau", np.inf, "field tau"),
        ("tau", 1e300, "field tau"),
        ("factor", "flat", r"field factor has shape \[16\]"),
        ("mean", "short", r"field (mean|factor) has shape"),
    ],
)
def test_a_loaded_model_is_finite_and_shaped_as_its_kind(tmp_path, field, value, match):
    path = ad.save_model(ad.fit("gaussian", unit(np.random.default_rng(0), 8, 4), tau=20.0),
                         tmp_path / "m")  # fmt: skip
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k].copy() for k in z.files}
    a = arrays[field]
    if value == "nan" or value == "inf":
        a.reshape(-1)[1] = np.nan if value == "nan" else np.inf
    elif value == "flat":
        a = a.reshape(-1)
    elif value == "short":
        a = a[:3]
    else:
        a = np.asarray(value, a.dtype)
    arrays[field] = a
    _rewrite(path, arrays, dim=None)
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.load_model(path)


def test_an_edited_sidecar_is_refused_and_sidecars_can_be_pinned(tmp_path, capsys):
    from anchordiv.io import pinned_digests

    x = unit(np.random.default_rng(0), 6, 4)
    path = ad.save_embeddings(tmp_path / "t.npy", x, encoder="toy", logit_scale=10.0)
    digest = ad.bundle_digest(path)
    prior = ad.NIWPrior.from_anchors(unit(np.random.default_rng(1), 12, 4), kappa0=2.0, nu0=8.0)
    prior_path = prior.save(tmp_path / "p")
    pin = ad.bundle_digest(prior_path)
    with pinned_digests([pin, digest]):
        assert ad.load_embeddings(path).provenance["logit_scale"] == 10.0
    with pinned_digests([pin]), pytest.raises(ad.AnchorDivError, match="not one pinned"):
        ad.load_embeddings(path)
    side = json.loads((tmp_path / "t.json").read_text())
    (tmp_path / "t.json").write_text(json.dumps({**side, "logit_scale": 1000.0}))
    with pytest.raises(ad.AnchorDivError, match="does not match its digest"):
        ad.load_embeddings(path)
    # recomputing the digest is not enough under a pin; nor is it against the array's hash
    (tmp_path / "t.json").write_text(
        json.dumps({**side, "logit_scale": 1000.0, "digest": _safeio.card_digest(
            {**side, "logit_scale": 1000.0})})
    )  # fmt: skip
    base = ["adapt", "gaussian", str(path), "--prior", str(prior_path)]
    assert main([*base, "-o", str(tmp_path / "a"), "--sha256", pin, "--sha256", digest]) == 2
    assert "not one pinned" in capsys.readouterr().err
    np.save(tmp_path / "t.npy", x[::-1])  # another array under an intact sidecar
    (tmp_path / "t.json").write_text(json.dumps(side))
    with pytest.raises(ad.AnchorDivError, match="not the one its sidecar"):
        ad.load_embeddings(path)


# ---- two writers -----------------------------------------------------------------------------


def test_two_writers_of_embeddings_serialise_in_the_deterministic_interleaving(
    tmp_path, monkeypatch
):
    """Writer A pauses right after its array lands; writer B runs meanwhile.  B waits for A's
    lock instead of mixing pairs, and the pair read after is one writer's, whole."""
    import threading

    path = tmp_path / "x.npy"
    arrays = {w: np.full((5, 4), float(i), np.float32) for i, w in enumerate("AB")}
    paused, resume, b_done = threading.Event(), threading.Event(), threading.Event()
    real_replace = os.replace

    def replace(src, dst, *a, **kw):
        real_replace(src, dst, *a, **kw)
        if threading.current_thread().name == "A" and str(dst) == str(path):
            paused.set()
            resume.wait(10)

    monkeypatch.setattr(_safeio.os, "replace", replace)
    errors = []

    def write(w):
        try:
            ad.save_embeddings(path, arrays[w], encoder=w, logit_scale=10.0, overwrite=True)
        except Exception as err:  # noqa: BLE001 - recorded: a writer may only fail cleanly
            errors.append(err)
        if w == "B":
            b_done.set()

    a = threading.Thread(target=write, args=("A",), name="A")
    a.start()
    assert paused.wait(10)
    b = threading.Thread(target=write, args=("B",), name="B")
    b.start()
    assert not b_done.wait(0.5)  # B waits for A's lock
    resume.set()
    a.join(10)
    b.join(10)
    assert all(isinstance(e, ad.AnchorDivError) for e in errors), errors
    x = ad.load_embeddings(path)
    w = x.provenance["encoder"]
    assert w == "B" and np.array_equal(np.asarray(x), arrays[w])


def test_concurrent_writers_raise_no_raw_errors(tmp_path):
    import threading

    model = ad.fit("gaussian", np.eye(4), tau=20.0)
    errors = []

    def loop(i):
        try:
            for _ in range(8):
                ad.save_model(model, tmp_path / "m", overwrite=True, writer=i)
                ad.save_embeddings(tmp_path / "e.npy", np.full((3, 4), float(i)),
                                   encoder=str(i), overwrite=True)  # fmt: skip
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    x = ad.load_embeddings(tmp_path / "e.npy")
    assert np.all(np.asarray(x) == float(x.provenance["encoder"]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json", "e.npy", "m"]


# ---- recovery that matches only its own names ----------------------------------------------


def test_recovery_reads_only_its_own_asides(tmp_path):
    model = ad.fit("gaussian", np.eye(4), tau=20.0)
    dead = _dead_pid()
    sibling = ad.save_model(model, tmp_path / "run.old-2")
    aside = tmp_path / f".run.old-2.old-{dead}-abcd1234"  # the sibling's own aside
    os.rename(sibling, aside)
    with pytest.raises(ad.AnchorDivError, match="run: no such file or directory"):
        ad.load_model(tmp_path / "run")
    ad.save_model(model, tmp_path / "run")
    assert aside.is_dir()  # the write to "run" left the sibling's aside alone
    assert float(ad.load_model(tmp_path / "run.old-2").tau) == 20.0  # and it is restored there


def test_a_planted_or_outdated_journal_never_shadows_the_files(tmp_path):
    path = ad.save_embeddings(tmp_path / "x.npy", np.eye(4), encoder="real", logit_scale=10.0)
    planted = tmp_path / ".x.npy.swap"
    planted.mkdir()
    np.save(planted / "x.npy", np.zeros((2, 4)))
    (planted / "x.json").write_text(json.dumps({"encoder": "planted", "rows": 2, "dim": 4}))
    assert ad.load_embeddings(path).provenance["encoder"] == "real"
    # a journal a killed save left, then both files replaced by another tool
    _safeio.remove(planted)
    ad.save_embeddings(path, np.eye(4), encoder="old", logit_scale=10.0, overwrite=True)
    journal = tmp_path / ".x.npy.swap"
    journal.mkdir()
    for name in ("x.npy", "x.json"):
        os.link(tmp_path / name, journal / name)
    ids = {n: _safeio._identity(tmp_path / n) for n in ("x.npy", "x.json")}
    (journal / _safeio.RECORD).write_text(json.dumps({"before": ids, "after": ids}))
    assert ad.load_embeddings(path).provenance["encoder"] == "old"  # the journal applies
    os.unlink(tmp_path / "x.npy")
    np.save(tmp_path / "x.npy", np.eye(4)[::-1])
    (tmp_path / "x.json").unlink()
    (tmp_path / "x.json").write_text(json.dumps({"encoder": "newer", "rows": 4, "dim": 4}))
    x = ad.load_embeddings(path)
    assert x.provenance["encoder"] == "newer" and np.array_equal(x, np.eye(4)[::-1])


def test_stale_asides_are_cleaned_by_age_as_well_as_pid(tmp_path):
    model = ad.fit("gaussian", np.eye(4), tau=20.0)
    ad.save_model(model, tmp_path / "m")
    old = time.time() - 2 * _safeio.STALE_SECONDS
    leftovers = [tmp_path / ".m.tmp-1-00ff00ff", tmp_path / ".m.old-1-00ff00fe"]
    for p in leftovers:
        p.mkdir()
        os.utime(p, (old, old))
    fresh = tmp_path / ".m.tmp-1-0abc0abc"  # PID 1 runs: a recent one is kept
    fresh.mkdir()
    ad.save_model(model, tmp_path / "m", overwrite=True)
    assert not any(p.exists() for p in leftovers) and fresh.exists()
