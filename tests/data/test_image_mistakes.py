"""The image mistakes a vision researcher makes, as one table (issue 51's "re-run of the same
kinds of mistakes": 58 image cases there; this is our own list of the same kinds).

Each case makes one mistake through ``anchordiv embed`` / ``anchordiv study --dataset`` or the
Python ``ad.data`` image API, and names the regex the message must match.  Every run is
classified (:func:`classify`):

- **clear**: an :class:`AnchorDivError` (or, on the command line, exit 2 with ONE
  ``error:`` line on stderr and no traceback), an anchordiv warning where a warning is right,
  or the skipped-file note of ``on_error='skip'`` — whose message matches the case's regex;
- **correct**: valid input (odd image modes, other layouts of the same data) that works;
- **raw**: another exception reaches the user (a numpy, Pillow, torch or Python error);
- **silent**: the mistake passes without a word (or a study reaches the model before saying
  what is wrong with the dataset);
- **misleading**: a clear-looking message that does not name the cause (the regex fails).

The test asserts every case is clear or correct.  A run that must stop before any image is
encoded replaces the encoder loading by :class:`ReachedModel`: reaching it is silent.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from PIL import Image

import image_trees as trees
from helpers import png_claiming, png_tree

from anchordiv.errors import AnchorDivError


class ReachedModel(Exception):
    """Raised where the encoder would load: the run got past every check of its inputs."""


@dataclasses.dataclass
class Case:
    kind: str
    run: Callable
    expect: str  # "error", "cli", "warning", "skip" or "correct"
    match: str = ""
    model: bool = False  # the run may load the (tiny) model
    slow: bool = False


class Env:
    """What a case runs with: a temporary folder, the tiny model and the command line."""

    def __init__(self, tmp: Path, tiny, capsys, monkeypatch):
        self.tmp, (self.config, self.ckpt), self.capsys, self.mp = tmp, tiny, capsys, monkeypatch
        self.spec = f"open_clip:{self.config}"

    def encoder(self):
        from anchordiv.data.encoders import get_encoder  # never the test's stand-in

        return get_encoder(self.spec, pretrained=self.ckpt)

    def cli(self, *argv):
        from anchordiv.app.cli import main

        self.capsys.readouterr()
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as stop:  # argparse's usage errors
            rc = stop.code
        out, err = self.capsys.readouterr()
        return ("cli", rc, out, err)

    def study(self, name, spec, *extra, out=None):
        out = out if out is not None else self.tmp / "out"
        return self.cli(
            "study", name, "--dataset", spec, "--encoder", self.spec, "--pretrained", self.ckpt,
            "--small", "--workers", "0", "-o", out, *extra,
        )  # fmt: skip

    def embed(self, folder, *extra, encoder=None):
        enc = ["--encoder", encoder or self.spec]
        if encoder is None:
            enc += ["--pretrained", self.ckpt]
        return self.cli("embed", folder, *enc, "--workers", "0", "-o", self.tmp / "e.npy", *extra)

    def images(self, paths, **kw):
        from anchordiv import data

        kw.setdefault("cache", self.tmp / "cache")
        return data.embed_images(self.encoder(), paths, **kw)


def classify(case: Case, env: Env) -> tuple[str, str]:
    """``(outcome, what was seen)`` of one run of ``case``."""
    pattern = re.compile(case.match, re.S) if case.match else None
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            value = case.run(env)
        except ReachedModel:
            if case.expect in ("error", "cli"):
                return "silent", "reached the model without a word"
            value = ("cli", 0, "", "")  # the checks before the model passed: warnings decide
        except AnchorDivError as err:
            text = str(err)
            if case.expect != "error":
                return "misleading", f"AnchorDivError: {text}"
            return ("clear" if pattern.search(text) else "misleading"), text
        except Exception as err:  # noqa: BLE001 - that is the point
            return "raw", f"{type(err).__name__}: {err}"
    notes = [str(w.message) for w in seen if issubclass(w.category, UserWarning)]
    if isinstance(value, tuple) and len(value) == 4 and isinstance(value[0], str):
        _, rc, _, err = value
        errors = [ln for ln in err.splitlines() if ": error:" in ln]
        if "Traceback" in err:
            return "raw", err[-300:]
        if case.expect == "cli":
            if rc == 0:
                return "silent", "exit 0"
            if rc != 2 or len(errors) != 1:
                return "raw", f"exit {rc}: {err[-300:]}"
            return ("clear" if pattern.search(errors[0]) else "misleading"), errors[0]
        if rc != 0:
            return "misleading", f"exit {rc}: {err[-300:]}"
    if case.expect in ("warning", "skip"):
        if value is False:  # the case's own check failed (a warning twice, a wrong result)
            return "misleading", " | ".join(notes)
        if any(pattern.search(n) for n in notes):
            return "clear", " | ".join(notes)
        return ("misleading" if notes else "silent"), " | ".join(notes) or "no warning"
    if case.expect == "correct":
        return ("correct" if value is not False else "silent"), " | ".join(notes)
    return "silent", f"no error ({' | '.join(notes) or 'no warning'})"


# ---- builders -------------------------------------------------------------------------------


def _if(env, **kw):
    return trees.imagefolder(env.tmp / "if", **kw)


def _rewrite_csv(path, edit):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    rows, fields = edit(rows)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rows)


def _cx(env, edit=None, csv_name="valid.csv"):
    base = trees.chexpert(env.tmp / "cx", n_train=8, n_valid=4)
    if edit:
        _rewrite_csv(base / csv_name, lambda rows: edit(rows, list(rows[0])))
    return base


def _flat(env, levels=0, rows=None, header="ImageId,PredictionString"):
    """A flat validation folder (and its LOC_val_solution.csv ``levels`` folders above it)."""
    tree = trees.imagenet(env.tmp / "sorted", per_class=2)
    flat = env.tmp / "kaggle" / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    flat.mkdir(parents=True)
    lines = [header]
    for k, p in enumerate(sorted(tree.rglob("*.JPEG"))):
        shutil.copy(p, flat / f"ILSVRC2012_val_{k:08d}.JPEG")
        lines.append(f"ILSVRC2012_val_{k:08d},{p.parent.name} 1 2 3 4")
    if rows is not None:
        lines = rows(lines)
    if levels is not None:
        (list([flat, *flat.parents])[levels] / "LOC_val_solution.csv").write_text(
            "\n".join(lines) + "\n"
        )
    return flat


def _cub(env, file=None, edit=None):
    root = trees.cub200(env.tmp / "cub", per_class=2)
    if file:
        path = root / "CUB_200_2011" / file
        path.write_text(edit(path.read_text()))
    return root


def _jpeg_bytes(mode="RGB", size=(24, 16), **save):
    import io

    buf = io.BytesIO()
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).convert(mode).save(
        buf, "JPEG", **save
    )
    return buf.getvalue()


def _broken_tree(env, *names_and_bytes):
    """An imagefolder of 3 x 2 images and broken files in red_fox (--small keeps them all)."""
    root = _if(env, per_class=2)
    out = []
    for name, data in names_and_bytes:
        p = root / "red_fox" / name
        p.write_bytes(data)
        out.append(p)
    return root, out


def _cut_jpeg():
    whole = _jpeg_bytes(size=(64, 64))
    return whole[: len(whole) // 2]


def _sparse(path, head: bytes, size: int):
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)  # sparse: no disk, zeros to read
    return path


JPEG_SOI = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"


def _one_file(env, name, make):
    """embed_images of a good file and ``make(path)``; returns True when both embed."""
    good = png_tree(env.tmp / "imgs", 1)[0]
    odd = make(env.tmp / "imgs" / name)
    x, kept = env.images([good, odd])
    return x.shape[0] == 2 and np.isfinite(x).all() and kept == [str(good), str(odd)]


def _twelve_bit(path, seed=0):
    scan = np.random.default_rng(seed).integers(0, 4096, size=(20, 24)).astype(np.uint16)
    Image.fromarray(scan).save(path)
    return path


def _xray_tree(env, n_low=3, n_full=2):
    folder = env.tmp / "xr"
    folder.mkdir()
    paths = [_twelve_bit(folder / f"low{i}.png", i) for i in range(n_low)]
    for i in range(n_full):
        full = np.random.default_rng(9 + i).integers(0, 65536, size=(20, 24)).astype(np.uint16)
        paths.append(folder / f"full{i}.png")
        Image.fromarray(full).save(paths[-1])
    return paths


def _tiny_config(env, **changes):
    cfg = json.loads(Path(env.config).read_text())
    cfg.update(changes)
    path = env.tmp / "other.json"
    path.write_text(json.dumps(cfg))
    return path


def _no_gpu(env):
    """This machine without a GPU, whatever it has (the mistake is asking for one)."""
    import torch

    env.mp.setattr(torch.cuda, "is_available", lambda: False)


def _hidden_folder(env):
    root = _if(env, per_class=3)
    trees.Images(7).save(root / ".ipynb_checkpoints" / "x.png")
    from anchordiv.data import layouts

    return len(layouts.load_dataset(f"imagefolder:{root}").class_ids) == 3


def _modes(env):
    """CMYK JPEG, palette with transparency, EXIF-rotated, 16-bit full range, float TIFF,
    48-bit RGB PNG, 1-bit, LA: each read and embedded, none warned about."""
    d = env.tmp / "modes"
    d.mkdir()
    rgb = np.random.default_rng(1).integers(0, 256, (16, 24, 3), dtype=np.uint8)
    Image.fromarray(rgb).convert("CMYK").save(d / "cmyk.jpg")
    p = Image.fromarray(rgb).convert("P")
    p.info["transparency"] = 0
    p.save(d / "palette.png", transparency=0)
    ex = Image.fromarray(rgb)
    exif = ex.getexif()
    exif[0x0112] = 6
    ex.save(d / "exif.jpg", exif=exif)
    g16 = (np.random.default_rng(2).integers(0, 65536, (16, 24))).astype(np.uint16)
    Image.fromarray(g16).save(d / "grey16.png")
    Image.fromarray(rgb[..., 0].astype(np.float32) / 255).save(d / "float.tif")
    Image.fromarray(rgb[..., 0] > 100).save(d / "bits.png")
    Image.fromarray(np.dstack([rgb[..., 0], rgb[..., 1]])).save(d / "la.png")
    paths = sorted(d.iterdir())
    from anchordiv.provenance import AnchorDivWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", AnchorDivWarning)
        x, kept = env.images(paths)
    return x.shape[0] == len(paths) and np.isfinite(x).all()


def _rgb48(env):
    import struct
    import zlib

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    def make(path):
        h, w = 6, 8
        arr = np.random.default_rng(3).integers(0, 65536, (h, w, 3)).astype(">u2")
        raw = b"".join(b"\0" + arr[y].tobytes() for y in range(h))
        ihdr = struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)
        body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
        return path

    return _one_file(env, "rgb48.png", make)


def _exif_rotation_applied(env):
    from anchordiv.data.imageio import read_image

    im = Image.fromarray(np.zeros((10, 30, 3), np.uint8))
    exif = im.getexif()
    exif[0x0112] = 6  # rotate 90°: a 30 x 10 photo shown 10 x 30
    im.save(env.tmp / "r.jpg", exif=exif)
    return read_image(env.tmp / "r.jpg").size == (10, 30)


def _same_file_twice(env):
    paths = png_tree(env.tmp / "imgs", 3)
    x, kept = env.images([*paths, paths[0]])
    return x.shape[0] == 4 and np.allclose(x[0], x[3])


def _uppercase_suffix(env):
    root = _if(env, per_class=3)
    src = root / "red_fox" / "img0.png"
    src.rename(root / "red_fox" / "IMG0.PNG")
    from anchordiv.data import layouts

    return len(layouts.load_dataset(f"imagefolder:{root}")) == 9


def _png_named_jpg(env):
    def make(path):
        Image.new("RGB", (6, 5), (10, 200, 30)).save(path, "PNG")
        return path

    return _one_file(env, "really_a_png.jpg", make)


def _chexpert_full_paths_under_small(env):
    """CheXpert-v1.0 CSV paths ("CheXpert-v1.0/train/...") under the -small folder: found."""

    def edit(rows, fields):
        for r in rows:
            r["Path"] = r["Path"].replace("CheXpert-v1.0-small/", "CheXpert-v1.0/")
        return rows, fields

    base = _cx(env, edit)
    from anchordiv.data import layouts

    return len(layouts.load_dataset(f"chexpert:{base}")) == 12


def _chexpert_integer_labels(env):
    def edit(rows, fields):
        for r in rows:
            r["Edema"] = {"1.0": "1", "0.0": "0", "-1.0": "-1"}.get(r["Edema"], r["Edema"])
        return rows, fields

    base = _cx(env, edit)
    from anchordiv.data import layouts

    ds = layouts.load_dataset(f"chexpert:{base}")
    return ds.pathology[:, ds.pathologies.index("Edema")].any()


def _kaggle_found(env):
    from anchordiv.data import layouts

    flat = _flat(env, levels=4)
    return np.bincount(layouts.load_dataset(f"imagenet:{flat}").label).tolist() == [2, 2, 2, 2]


def _loc_duplicate_same(env):
    from anchordiv.data import layouts

    flat = _flat(env, levels=0, rows=lambda lines: [*lines, lines[1]])
    return len(layouts.load_dataset(f"imagenet:{flat}")) == 8


def _cache_unwritable(env):
    paths = png_tree(env.tmp / "imgs", 3)
    env.images(paths, cache=env.tmp / "ro")  # a cache with its marker, then made read-only
    fresh = png_tree(env.tmp / "imgs2", 2, start=50)
    import anchordiv.data.cache as cache_mod

    def deny(*a, **k):
        raise PermissionError(13, "Permission denied")

    env.mp.setattr(cache_mod, "_write_entry", deny)
    x, kept = env.images([*paths, *fresh], cache=env.tmp / "ro")
    return x.shape[0] == 5


def _foreign_cache(env):
    folder = env.tmp / "Documents"
    folder.mkdir()
    (folder / "thesis.tex").write_text("\\documentclass{article}")
    (folder / "photos").mkdir()
    return env.images(png_tree(env.tmp / "imgs", 2), cache=folder)


def _workers_guard_script(env):
    import os
    import subprocess
    import sys

    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_imageio_tests", Path(__file__).with_name("test_imageio.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    SCRIPT = module.SCRIPT

    script = env.tmp / "noguard.py"
    script.write_text(SCRIPT)
    tests = str(Path(__file__).resolve().parents[1])
    run = subprocess.run(
        [sys.executable, str(script), str(env.tmp)],
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([tests, *sys.path])),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run.returncode == 0 and run.stdout.count("model loads") == 1


def _xray_workers(env, workers):
    import anchordiv.data.imageio as io

    env.mp.setattr(io, "MIN_WORKER_IMAGES", 1)
    paths = _xray_tree(env, n_low=6, n_full=2)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        env.images(paths, workers=workers, batch_size=2, cache=False)
    depth = [w for w in seen if "65535" in str(w.message) or "16 bits" in str(w.message)]
    for w in depth:
        warnings.warn(w.message, stacklevel=2)  # handed to classify
    return len(depth) == 1  # one warning per run, from this process


# ---- the table ------------------------------------------------------------------------------

E, CLI, W, SKIP, OK = "error", "cli", "warning", "skip", "correct"


def _study_after_edit(env, build, name="budget", *extra):
    return lambda e: e.study(name, build(e), *extra)


CASES: dict[str, Case] = {
    # -- the dataset root -----------------------------------------------------------------------
    "root missing": Case(
        "root",
        lambda e: e.study("budget", f"imagefolder:{e.tmp / 'nope'}"),
        CLI,
        r"imagefolder: dataset folder not found: .*nope",
    ),
    "root is a file": Case(
        "root",
        lambda e: e.study("budget", f"imagefolder:{png_tree(e.tmp / 'x', 1)[0]}"),
        CLI,
        r"img000\.png.*is a file, not a folder",
    ),
    "spec without layout": Case(
        "root",
        lambda e: e.study("budget", str(_if(e))),
        CLI,
        r"expected LAYOUT:ROOT",
    ),
    "unknown layout": Case(
        "root",
        lambda e: e.study("budget", f"image-folder:{_if(e)}"),
        CLI,
        r"unknown layout 'image-folder'; choose one of imagefolder",
    ),
    "root is one class": Case(
        "root",
        lambda e: e.study("budget", f"imagefolder:{_if(e) / 'red_fox'}"),
        CLI,
        r"looks like one class; the dataset is probably its parent",
    ),
    "root one level too high": Case(
        "root",
        lambda e: (
            _if(e),
            e.study("budget", f"imagefolder:{e.tmp}", out=e.tmp.parent / f"{e.tmp.name}-out"),
        )[1],
        W,
        r"holds no class folders; reading .*if",
    ),
    "root holds train and val": Case(
        "root",
        lambda e: (
            trees.imagefolder(e.tmp / "d" / "train", per_class=2),
            trees.imagefolder(e.tmp / "d" / "val", per_class=2),
            e.study("budget", f"imagefolder:{e.tmp / 'd'}"),
        )[2],
        CLI,
        r"several datasets.*train, val",
    ),
    "root empty": Case(
        "root",
        lambda e: ((e.tmp / "empty").mkdir(), e.study("budget", f"imagefolder:{e.tmp / 'empty'}"))[
            1
        ],
        CLI,
        r"has no class folders",
    ),
    "class images one level deeper": Case(
        "root",
        lambda e: (
            [
                trees.Images(k).save(e.tmp / "d" / c / "photos" / f"{k}.png")
                for k, c in enumerate("abc")
            ],
            e.study("budget", f"imagefolder:{e.tmp / 'd'}"),
        )[1],
        CLI,
        r"one level deeper",
    ),
    "imagenet layout on named folders": Case(
        "root",
        lambda e: e.study("budget", f"imagenet:{_if(e)}"),
        CLI,
        r"class folder 'red_fox' is not a WordNet id.*imagefolder:ROOT",
    ),
    # -- classes --------------------------------------------------------------------------------
    "empty class folder": Case(
        "classes",
        lambda e: ((_if(e) / "zebra").mkdir(), e.study("budget", f"imagefolder:{e.tmp / 'if'}"))[1],
        CLI,
        r"class folder .*zebra holds no images",
    ),
    "class of text files only": Case(
        "classes",
        lambda e: (
            (_if(e) / "notes").mkdir(),
            (e.tmp / "if" / "notes" / "a.txt").write_text("x"),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[2],
        CLI,
        r"class folder .*notes holds no images",
    ),
    "one class only": Case(
        "classes",
        lambda e: e.study("budget", f"imagefolder:{_if(e, classes=('red_fox',))}"),
        CLI,
        r"needs a dataset with 2 or more classes; layout imagefolder has 1",
    ),
    "one image per class": Case(
        "classes",
        lambda e: e.study("budget", f"imagefolder:{_if(e, per_class=1)}"),
        CLI,
        r"0 query and 3 gallery images.*each class needs 2 or more",
    ),
    "hidden folder is no class": Case("classes", _hidden_folder, OK),
    "dangling symlink in a class": Case(
        "classes",
        lambda e: (
            (_if(e) / "red_fox" / "moved.png").symlink_to(e.tmp / "gone.png"),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[1],
        CLI,
        r"moved\.png.*(dangling|points at nothing|gone\.png)",
    ),
    # -- files that are not images --------------------------------------------------------------
    "text renamed .jpg": Case(
        "files",
        lambda e: e.study(
            "budget", f"imagefolder:{_broken_tree(e, ('notes.jpg', b'meeting notes'))[0]}"
        ),
        CLI,
        r"1 of 7 image file\(s\) cannot be read.*notes\.jpg: not an image",
    ),
    "zero-byte png": Case(
        "files",
        lambda e: e.study("budget", f"imagefolder:{_broken_tree(e, ('empty.png', b''))[0]}"),
        CLI,
        r"1 of 7 .*empty\.png: (empty file|not an image)",
    ),
    "truncated jpeg": Case(
        "files",
        lambda e: e.study("budget", f"imagefolder:{_broken_tree(e, ('cut.jpg', _cut_jpeg()))[0]}"),
        CLI,
        r"1 of 7 .*cut\.jpg.*cut short",
    ),
    "truncated png": Case(
        "files",
        lambda e: (
            trees.Images(4).save(e.tmp / "whole.png"),
            e.study(
                "budget",
                f"imagefolder:{_broken_tree(e, ('cut.png', (e.tmp / 'whole.png').read_bytes()[:300]))[0]}",
            ),
        )[1],
        CLI,
        r"1 of 7 .*cut\.png.*(cut short|truncated|not an image)",
    ),
    "three broken files counted before encoding": Case(
        "files",
        lambda e: e.study(
            "budget",
            f"imagefolder:{_broken_tree(e, ('a.jpg', b'text'), ('b.png', b''), ('c.jpg', _cut_jpeg()))[0]}",
        ),
        CLI,
        r"3 of 9 image file\(s\) cannot be read.*a\.jpg.*b\.png.*c\.jpg",
    ),
    "html error page saved as jpg": Case(
        "files",
        lambda e: e.images(
            [
                *png_tree(e.tmp / "i", 2),
                _broken_tree(e, ("dl.jpg", b"<html><body>403 Forbidden</body></html>"))[1][0],
            ]
        ),
        E,
        r"1 of 3 image file\(s\) cannot be read.*dl\.jpg: not an image",
    ),
    "broken files skipped": Case(
        "files",
        lambda e: e.images(
            [
                *png_tree(e.tmp / "i", 2),
                _broken_tree(e, ("a.jpg", b"x"), ("b.png", b""))[1][0],
                e.tmp / "if" / "red_fox" / "b.png",
            ],
            on_error="skip",
        ),
        SKIP,
        r"skipped 2 unreadable image file\(s\): .*a\.jpg.*b\.png",
    ),
    "embed --on-error skip names the file": Case(
        "files",
        lambda e: e.embed(_broken_tree(e, ("a.jpg", b"x"))[0] / "red_fox", "--on-error", "skip"),
        SKIP,
        r"skipped 1 unreadable image file\(s\): .*a\.jpg",
        model=True,
    ),
    "every file broken, skip": Case(
        "files",
        lambda e: e.images(_broken_tree(e, ("a.jpg", b"x"), ("b.jpg", b"y"))[1], on_error="skip"),
        E,
        r"none of the 2 file\(s\) could be read",
    ),
    "on_error misspelt": Case(
        "files",
        lambda e: e.images(png_tree(e.tmp / "i", 2), on_error="ignore"),
        E,
        r"on_error: must be 'raise' or 'skip', got 'ignore'",
    ),
    "png named .jpg": Case("files", _png_named_jpg, OK),
    "upper-case suffix": Case("files", _uppercase_suffix, OK),
    "a folder in the list": Case(
        "files",
        lambda e: e.images([*png_tree(e.tmp / "i", 2), e.tmp / "i"]),
        E,
        r"1 of 3 image file\(s\) cannot be read .*i: IsADirectoryError",
    ),
    "a missing file in the list": Case(
        "files",
        lambda e: e.images([*png_tree(e.tmp / "i", 2), e.tmp / "i" / "nope.png"]),
        E,
        r"1 of 3 .*nope\.png: FileNotFoundError",
    ),
    # -- decompression bombs and huge files ----------------------------------------------------
    "png bomb": Case(
        "bombs",
        lambda e: e.images(
            [*png_tree(e.tmp / "i", 1), png_claiming(e.tmp / "bomb.png", 20000, 20000)]
        ),
        E,
        r"1 of 2 .*bomb\.png.*over the pixel budget",
    ),
    "png bomb skipped": Case(
        "bombs",
        lambda e: e.images(
            [*png_tree(e.tmp / "i", 1), png_claiming(e.tmp / "bomb.png", 20000, 20000)],
            on_error="skip",
        ),
        SKIP,
        r"skipped 1 unreadable .*bomb\.png.*pixel budget",
    ),
    "pixel budget not a number": Case(
        "bombs",
        lambda e: (
            e.mp.setenv("ANCHORDIV_MAX_IMAGE_PIXELS", "lots"),
            e.images(png_tree(e.tmp / "i", 1)),
        )[1],
        E,
        r"ANCHORDIV_MAX_IMAGE_PIXELS: expected an integer",
    ),
    "pixel budget zero": Case(
        "bombs",
        lambda e: (
            e.mp.setenv("ANCHORDIV_MAX_IMAGE_PIXELS", "0"),
            e.images(png_tree(e.tmp / "i", 1)),
        )[1],
        E,
        r"ANCHORDIV_MAX_IMAGE_PIXELS: must be >= 1",
    ),
    "sparse 3 GiB jpeg": Case(
        "bombs",
        lambda e: e.images(
            [*png_tree(e.tmp / "i", 1), _sparse(e.tmp / "huge.jpg", JPEG_SOI, 3 << 30)],
            on_error="skip",
        ),
        SKIP,
        r"skipped 1 unreadable .*huge\.jpg: .*(no JPEG|not an image)",
    ),
    "sparse 3 GiB png": Case(
        "bombs",
        lambda e: e.images(
            [*png_tree(e.tmp / "i", 1), _sparse(e.tmp / "huge.png", b"\x89PNG\r\n\x1a\n", 3 << 30)]
        ),
        E,
        r"1 of 2 .*huge\.png: not an image",
    ),
    # -- symlinks and files outside the root ---------------------------------------------------
    "symlinked file out of root": Case(
        "outside",
        lambda e: (
            (_if(e) / "red_fox" / "l.png").symlink_to(
                trees.Images(8).save(e.tmp / "else" / "s.png")
            ),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[1],
        CLI,
        r"1 of 19 image file\(s\) lie outside the dataset folder .*l\.png -> .*s\.png.*--allow-outside-root",
    ),
    "symlinked class out of root": Case(
        "outside",
        lambda e: (
            trees.imagefolder(e.tmp / "else", classes=("wolf",), per_class=2),
            (_if(e) / "wolf").symlink_to(e.tmp / "else" / "wolf", target_is_directory=True),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[2],
        CLI,
        r"2 of 20 image file\(s\) lie outside the dataset folder",
    ),
    "cub path climbing out": Case(
        "outside",
        lambda e: (
            trees.Images(8).save(e.tmp / "secret.png"),
            e.study(
                "budget",
                f"cub200:{_cub(e, 'images.txt', lambda t: t.replace(t.splitlines()[0], '1 ../../../secret.png'))}",
            ),
        )[1],
        CLI,
        r"cub200: 1 of 6 image file\(s\) lie outside",
    ),
    "chexpert absolute path": Case(
        "outside",
        lambda e: e.study(
            "clinical",
            f"chexpert:{_cx(e, lambda rows, f: ([dict(rows[0], Path=str(trees.Images(8).save(e.tmp / 's_frontal.png')))] + rows[1:], f))}",
        ),
        CLI,
        r"chexpert: 1 of 12 image file\(s\) lie outside.*s_frontal\.png",
    ),
    "class folder linked to another class": Case(
        "outside",
        lambda e: (
            (_if(e, per_class=3) / "fox_again").symlink_to(
                e.tmp / "if" / "red_fox", target_is_directory=True
            ),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[1],
        W,
        r"3 image\(s\) are filed, byte for byte, under two or more classes",
    ),
    # -- CSVs -----------------------------------------------------------------------------------
    "flat val, no csv": Case(
        "csv",
        lambda e: e.study("budget", f"imagenet:{_flat(e, levels=None)}"),
        CLI,
        r"no LOC_val_solution\.csv labels them: put Kaggle's LOC_val_solution\.csv in",
    ),
    "kaggle layout finds its csv": Case("csv", _kaggle_found, OK),
    "loc csv misses rows": Case(
        "csv",
        lambda e: e.study("budget", f"imagenet:{_flat(e, rows=lambda ls: ls[:-2])}"),
        CLI,
        r"2 image\(s\) of .*val have no row in .*LOC_val_solution\.csv",
    ),
    "loc csv wrong columns": Case(
        "csv",
        lambda e: e.study("budget", f"imagenet:{_flat(e, header='image,label')}"),
        CLI,
        r"LOC_val_solution\.csv.*(lacks|column).*ImageId.*PredictionString",
    ),
    "loc csv empty prediction": Case(
        "csv",
        lambda e: e.study(
            "budget", f"imagenet:{_flat(e, rows=lambda ls: [*ls[:-1], ls[-1].split(',')[0] + ','])}"
        ),
        CLI,
        r"LOC_val_solution\.csv.*(row|line) \d+.*(no wnid|empty|PredictionString)",
    ),
    "loc csv conflicting duplicate": Case(
        "csv",
        lambda e: e.study(
            "budget",
            f"imagenet:{_flat(e, rows=lambda ls: [*ls, ls[1].split(',')[0] + ',n01833805 1 2 3 4'])}",
        ),
        CLI,
        r"ILSVRC2012_val_00000000.*(twice|two rows|more than one).*n01443537.*n01833805",
    ),
    "loc csv same row twice": Case("csv", _loc_duplicate_same, OK),
    "loc csv unknown wnid": Case(
        "csv",
        lambda e: e.study(
            "budget",
            f"imagenet:{_flat(e, rows=lambda ls: [ls[0], *(r.replace('n01443537', 'n00000042') for r in ls[1:])])}",
        ),
        CLI,
        r"'n00000042': WordNet 3\.0 has no noun synset",
        slow=True,
    ),
    "cub listed image missing": Case(
        "csv",
        lambda e: e.study(
            "budget",
            f"cub200:{_cub(e, 'images.txt', lambda t: t.replace('_0000.jpg', '_9999.jpg', 1))}",
        ),
        CLI,
        r"cub200: 1 listed image\(s\) missing, e\.g\. .*_9999\.jpg",
    ),
    "cub classes.txt missing": Case(
        "csv",
        lambda e: (
            _cub(e),
            (e.tmp / "cub" / "CUB_200_2011" / "classes.txt").unlink(),
            e.study("budget", f"cub200:{e.tmp / 'cub'}"),
        )[2],
        CLI,
        r"cub200: missing file .*classes\.txt",
    ),
    "cub unknown class id": Case(
        "csv",
        lambda e: e.study(
            "budget", f"cub200:{_cub(e, 'image_class_labels.txt', lambda t: t.replace(' 3', ' 7'))}"
        ),
        CLI,
        r"class id\(s\) \['7'\] are not in classes\.txt",
    ),
    "cub duplicate image id": Case(
        "csv",
        lambda e: e.study(
            "budget",
            f"cub200:{_cub(e, 'images.txt', lambda t: t + t.splitlines()[2].replace('3 ', '1 ', 1) + chr(10))}",
        ),
        CLI,
        r"images\.txt.*image id 1 .*(twice|more than once|line)",
    ),
    "cub split value not 0/1": Case(
        "csv",
        lambda e: e.study(
            "budget", f"cub200:{_cub(e, 'train_test_split.txt', lambda t: t.replace('2 1', '2 2'))}"
        ),
        CLI,
        r"train_test_split\.txt.*'2'.*(0 or 1|1 or 0)",
    ),
    "cub short line": Case(
        "csv",
        lambda e: e.study(
            "budget", f"cub200:{_cub(e, 'image_class_labels.txt', lambda t: t.replace('2 1', '2'))}"
        ),
        CLI,
        r"image_class_labels\.txt line 2 has 1 field\(s\), not 2",
    ),
    "chexpert without csv": Case(
        "csv",
        lambda e: e.study("clinical", f"chexpert:{_if(e)}"),
        CLI,
        r"chexpert: missing file .*train\.csv \(and valid\.csv\)",
    ),
    "chexpert lacks a label column": Case(
        "csv",
        lambda e: e.study(
            "clinical",
            f"chexpert:{_cx(e, lambda rows, f: ([{k: v for k, v in r.items() if k != 'Edema'} for r in rows], [c for c in f if c != 'Edema']))}",
        ),
        CLI,
        r"valid\.csv lacks column\(s\) \['Edema'\]",
    ),
    "chexpert label 2": Case(
        "csv",
        lambda e: e.study(
            "clinical",
            f"chexpert:{_cx(e, lambda rows, f: ([dict(rows[0], Edema='2'), *rows[1:]], f))}",
        ),
        CLI,
        r"valid\.csv row 2: label '2' is not 1, 0, -1 or blank",
    ),
    "chexpert path not found": Case(
        "csv",
        lambda e: e.study(
            "clinical",
            f"chexpert:{_cx(e, lambda rows, f: ([dict(rows[0], Path='CheXpert-v1.0-small/valid/nobody/x.jpg'), *rows[1:]], f))}",
        ),
        CLI,
        r"image CheXpert-v1\.0-small/valid/nobody/x\.jpg not found",
    ),
    "chexpert no frontal images": Case(
        "csv",
        lambda e: e.study(
            "clinical",
            f"chexpert:{_cx(e, lambda rows, f: ([dict(r, **{'Frontal/Lateral': 'Lateral'}) for r in rows], [*f, 'Frontal/Lateral']), 'train.csv') and _cx_lateral(e)}",
        ),
        CLI,
        r"list no images of frontal view \(--views all reads every view\)",
    ),
    "chexpert same image twice": Case(
        "csv",
        lambda e: e.study("clinical", f"chexpert:{_cx(e, lambda rows, f: ([*rows, rows[0]], f))}"),
        CLI,
        r"valid\.csv row 6 lists .*patient00000.*valid\.csv row 2 lists too: an image listed twice "
        r"would be its own neighbour: keep one row per image",  # one CSV: no gallery to name
    ),
    "chexpert image in both csvs": Case(
        "csv",
        lambda e: e.study("clinical", f"chexpert:{_cx_both(e)}"),
        CLI,
        r"valid\.csv row 2 lists .*patient00000.*train\.csv row 10 lists too.*query in its own gallery",
    ),
    "chexpert csv of full release under small": Case("csv", _chexpert_full_paths_under_small, OK),
    "chexpert integer labels": Case("csv", _chexpert_integer_labels, OK),
    "clinical with no positive labels": Case(
        "csv",
        lambda e: e.study("clinical", f"chexpert:{_cx_negative(e)}"),
        CLI,
        r"no pathology with anchors has 2 or more positive query images.*Pleural Effusion 0/0",
    ),
    "clinical on an imagefolder": Case(
        "csv",
        lambda e: e.study("clinical", f"imagefolder:{_if(e)}"),
        CLI,
        r"needs pathology labels \(chexpert:ROOT\); layout imagefolder has none",
    ),
    "--uncertain on imagefolder": Case(
        "csv",
        lambda e: e.study("budget", f"imagefolder:{_if(e)}", "--uncertain", "ones"),
        CLI,
        r"--uncertain applies to the chexpert layout, not imagefolder",
    ),
    # -- the same photo in two classes ----------------------------------------------------------
    "same photo in two classes": Case(
        "duplicates",
        lambda e: (
            shutil.copy(
                _if(e, per_class=3) / "red_fox" / "img0.png", e.tmp / "if" / "tabby_cat" / "c.png"
            ),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[1],
        W,
        r"1 image\(s\) are filed, byte for byte, under two or more classes.*img0\.png",
    ),
    "same file twice in a list": Case("duplicates", _same_file_twice, OK, model=True),
    # -- output folders ---------------------------------------------------------------------------
    "report inside an imagefolder root": Case(
        "output",
        lambda e: e.study("budget", f"imagefolder:{_if(e)}", out=e.tmp / "if" / "results"),
        CLI,
        r"is inside the dataset folder .*write it elsewhere",
    ),
    "report inside an imagenet root": Case(
        "output",
        lambda e: e.study(
            "budget",
            f"imagenet:{trees.imagenet(e.tmp / 'val', per_class=2)}",
            out=e.tmp / "val" / "r",
        ),
        CLI,
        r"is inside the dataset folder",
    ),
    "old report inside the root": Case(
        "output",
        lambda e: (
            (_if(e, per_class=3) / "results").mkdir(),
            trees.Images(1).save(e.tmp / "if" / "results" / "budget.png"),
            (e.tmp / "if" / "results" / "report.md").write_text("# report"),
            e.study("budget", f"imagefolder:{e.tmp / 'if'}"),
        )[3],
        W,
        r"results is not read as a class: it holds report\.md",
    ),
    "output exists": Case(
        "output",
        lambda e: (
            (e.tmp / "out").mkdir(),
            (e.tmp / "out" / "x").write_text("x"),
            e.study("budget", f"imagefolder:{_if(e)}"),
        )[2],
        CLI,
        r"out: already exists .*--overwrite",
    ),
    # -- the cache --------------------------------------------------------------------------------
    "ANCHORDIV_CACHE is a file": Case(
        "cache",
        lambda e: (
            (e.tmp / "c").write_text("x"),
            e.mp.setenv("ANCHORDIV_CACHE", str(e.tmp / "c")),
            e.study("budget", f"imagefolder:{_if(e)}"),
        )[2],
        CLI,
        r"\$ANCHORDIV_CACHE: .*c is a file",
    ),
    "cache= a file": Case(
        "cache",
        lambda e: (
            (e.tmp / "c").write_text("x"),
            e.images(png_tree(e.tmp / "i", 1), cache=e.tmp / "c"),
        )[1],
        E,
        r"the cache = .*c is a file, not a directory",
    ),
    "cache read-only": Case(
        "cache", _cache_unwritable, W, r"is read-only .*new ones are not stored"
    ),
    "cache a foreign folder": Case(
        "cache",
        _foreign_cache,
        W,
        r"Documents is not an anchordiv cache \(it holds photos, thesis\.tex",
    ),
    # -- encoders ---------------------------------------------------------------------------------
    "unknown model name": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent,
            encoder="open_clip:ViT-B-33",
        ),
        CLI,
        r"open_clip has no model 'ViT-B-33'; closest: ViT-B-32",
    ),
    "config with preprocess_cfg": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent,
            "--pretrained",
            e.ckpt,
            encoder=f"open_clip:{_tiny_config(e, preprocess_cfg={'mean': [0.5] * 3})}",
        ),
        CLI,
        r"top-level preprocess_cfg",
    ),
    "config with an unknown key": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent,
            "--pretrained",
            e.ckpt,
            encoder=f"open_clip:{_tiny_config(e, image_size=64)}",
        ),
        CLI,
        r"has key\(s\) image_size that an open_clip model does not take",
    ),
    "config not found": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent, encoder=f"open_clip:{e.tmp / 'none.json'}"
        ),
        CLI,
        r"open_clip model config not found: .*none\.json",
    ),
    "checkpoint of another architecture": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent,
            "--pretrained",
            e.ckpt,
            encoder=f"open_clip:{_tiny_config(e, embed_dim=8)}",
        ),
        CLI,
        r"the weights in .*\.pt do not fit the architecture 'other'",
        model=True,
    ),
    "missing checkpoint": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent, "--pretrained", e.tmp / "model.pt", encoder=e.spec
        ),
        CLI,
        r"checkpoint file not found: .*model\.pt",
    ),
    "checkpoint is a folder": Case(
        "encoder",
        lambda e: e.embed(
            png_tree(e.tmp / "i", 2)[0].parent, "--pretrained", e.tmp, encoder=e.spec
        ),
        CLI,
        r"is a folder; pass the checkpoint file in it",
    ),
    "checkpoint is a text file": Case(
        "encoder",
        lambda e: (
            (e.tmp / "w.pt").write_text("weights"),
            e.embed(
                png_tree(e.tmp / "i", 2)[0].parent, "--pretrained", e.tmp / "w.pt", encoder=e.spec
            ),
        )[1],
        CLI,
        r"w\.pt is not a PyTorch checkpoint",
        model=True,
    ),
    "no weights": Case(
        "encoder",
        lambda e: e.embed(png_tree(e.tmp / "i", 2)[0].parent, encoder=e.spec),
        CLI,
        r"has no weights: pass --pretrained",
    ),
    "text encoder on images": Case(
        "encoder",
        lambda e: e.cli("embed", png_tree(e.tmp / "i", 2)[0].parent, "-o", e.tmp / "x.npy"),
        CLI,
        r"encoder .*MiniLM.* encodes text only",
        model=True,
    ),
    "unknown encoder spec": Case(
        "encoder",
        lambda e: e.embed(png_tree(e.tmp / "i", 2)[0].parent, encoder="clip"),
        CLI,
        r"encoder: unknown 'clip'; use 'minilm', 'open_clip:<model name>'",
    ),
    "chexzero without checkpoint": Case(
        "encoder",
        lambda e: e.embed(png_tree(e.tmp / "i", 2)[0].parent, encoder="chexzero"),
        CLI,
        r"chexzero: pass pretrained=",
    ),
    # -- options ----------------------------------------------------------------------------------
    "--device cuda without a GPU": Case(
        "options",
        lambda e: (_no_gpu(e), e.embed(png_tree(e.tmp / "i", 2)[0].parent, "--device", "cuda"))[1],
        CLI,
        r"device: 'cuda', but no CUDA device is available here",
    ),
    "--device misspelt": Case(
        "options",
        lambda e: e.embed(png_tree(e.tmp / "i", 2)[0].parent, "--device", "gpu"),
        CLI,
        r"device: 'gpu' is not a torch device",
    ),
    "--batch-size 0": Case(
        "options",
        lambda e: e.embed(png_tree(e.tmp / "i", 2)[0].parent, "--batch-size", "0"),
        CLI,
        r"--batch-size: .*expected a whole number >= 1, got '0'",
    ),
    "--batch-size negative": Case(
        "options",
        lambda e: e.study("budget", f"imagefolder:{_if(e)}", "--batch-size", "-4"),
        CLI,
        r"--batch-size: .*expected a whole number >= 1, got '-4'",
    ),
    "batch_size=0 in Python": Case(
        "options",
        lambda e: e.images(png_tree(e.tmp / "i", 3), batch_size=0),
        E,
        r"batch_size: must be >= 1, got 0",
    ),
    "batch_size=-2 in Python": Case(
        "options",
        lambda e: e.images(png_tree(e.tmp / "i", 3), batch_size=-2),
        E,
        r"batch_size: must be >= 1, got -2",
    ),
    "--workers negative": Case(
        "options",
        lambda e: e.embed(png_tree(e.tmp / "i", 2)[0].parent, "--workers", "-1"),
        CLI,
        r"--workers: .*expected a whole number >= 0, got '-1'",
    ),
    "--workers huge": Case(
        "options",
        lambda e: e.study("budget", f"imagefolder:{_if(e)}", "--workers", "100000"),
        CLI,
        r"--workers: 100000 .*(at most|CPU)",
    ),
    "workers=-1 in Python": Case(
        "options",
        lambda e: e.images(png_tree(e.tmp / "i", 3), workers=-1),
        E,
        r"workers: must be >= 0, got -1",
    ),
    "workers='2' in Python": Case(
        "options",
        lambda e: e.images(png_tree(e.tmp / "i", 3), workers="2"),
        E,
        r"workers: expected an integer, got '2'",
    ),
    "--on-error misspelt": Case(
        "options",
        lambda e: e.study("budget", f"imagefolder:{_if(e)}", "--on-error", "ignore"),
        CLI,
        r"--on-error: invalid choice: 'ignore'",
    ),
    "seed=-1 in Python": Case(
        "options",
        lambda e: __import__("anchordiv").data.layouts.load_dataset(
            f"imagefolder:{_if(e)}", seed=-1
        ),
        E,
        r"seed: must be >= 0, got -1",
    ),
    "script without a main guard, workers 2": Case(
        "options",
        _workers_guard_script,
        OK,
        slow=True,
    ),
    # -- Python API -------------------------------------------------------------------------------
    "a folder instead of a list": Case(
        "api",
        lambda e: e.images(png_tree(e.tmp / "i", 3)[0].parent),
        E,
        r"(paths|images): .*a single (path|folder).*(list|glob)",
    ),
    "a string path instead of a list": Case(
        "api",
        lambda e: e.images(str(png_tree(e.tmp / "i", 3)[0])),
        E,
        r"(paths|images): .*a single (path|string|file).*list",
    ),
    "empty list": Case("api", lambda e: e.images([]), E, r"images: is empty; nothing to encode"),
    "text encoder in embed_images": Case(
        "api",
        lambda e: __import__("anchordiv").data.embed_images(
            __import__("anchordiv").data.get_encoder("minilm"),
            png_tree(e.tmp / "i", 2),
            cache=False,
        ),
        E,
        r"encodes text only",
        model=True,
    ),
    "device cuda in get_encoder": Case(
        "api",
        lambda e: (
            _no_gpu(e),
            __import__("anchordiv").data.get_encoder(e.spec, pretrained=e.ckpt, device="cuda"),
        ),
        E,
        r"no CUDA device is available",
        model=True,
    ),
    "chexpert uncertain misspelt": Case(
        "api",
        lambda e: __import__("anchordiv").data.layouts.chexpert(_cx(e), uncertain="ignore"),
        E,
        r"uncertain must be 'zeros' or 'ones', got 'ignore'",
    ),
    # -- image modes and bit depth ----------------------------------------------------------------
    "cmyk, palette, exif, 16-bit, float tiff, 1-bit, LA": Case("modes", _modes, OK, model=True),
    "48-bit RGB png": Case("modes", _rgb48, OK, model=True),
    "exif orientation applied": Case("modes", _exif_rotation_applied, OK),
    "12-bit x-rays in 16-bit pngs": Case(
        "modes",
        lambda e: e.images(_xray_tree(e)),
        W,
        r"3 of (the )?5 images .*use at most 12 of their 16 bits",
        model=True,
    ),
    "12-bit x-rays, workers 0, one warning": Case(
        "modes",
        lambda e: _xray_workers(e, 0),
        W,
        r"6 of (the )?8 images .*12 of their 16 bits",
        model=True,
    ),
    "12-bit x-rays, workers 2, one warning": Case(
        "modes",
        lambda e: _xray_workers(e, 2),
        W,
        r"6 of (the )?8 images .*12 of their 16 bits",
        model=True,
        slow=True,
    ),
}


def _cx_lateral(env):
    """valid.csv made lateral too (train.csv already is)."""

    def edit(rows):
        return [dict(r, **{"Frontal/Lateral": "Lateral"}) for r in rows], [
            *rows[0],
            "Frontal/Lateral",
        ]

    base = env.tmp / "cx" / "CheXpert-v1.0-small"
    _rewrite_csv(base / "valid.csv", edit)
    return base


def _cx_both(env):
    base = _cx(env)
    with open(base / "valid.csv", newline="") as f:
        first = next(csv.DictReader(f))
    _rewrite_csv(base / "train.csv", lambda rows: ([*rows, first], list(rows[0])))
    return base


def _cx_negative(env):
    def zero(rows):
        return [
            {k: ("0.0" if k not in ("Path", "Sex", "Age") else v) for k, v in r.items()}
            for r in rows
        ], list(rows[0])

    base = _cx(env)
    for name in ("train.csv", "valid.csv"):
        _rewrite_csv(base / name, zero)
    return base


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return trees.save_tiny_clip(tmp_path_factory.mktemp("tiny_mistakes"))


@pytest.fixture
def env(tmp_path, tiny, capsys, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ANCHORDIV_MAX_IMAGE_PIXELS", raising=False)
    return Env(tmp_path, tiny, capsys, monkeypatch)


def _params():
    for name, case in CASES.items():
        marks = [pytest.mark.slow] if case.slow else []
        yield pytest.param(name, id=name.replace(" ", "-"), marks=marks)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", list(_params()))
def test_every_image_mistake_is_clear_or_correct(name, env, monkeypatch):
    case = CASES[name]
    if not case.model and case.kind != "encoder":
        import anchordiv.data

        def reached(*a, **k):
            raise ReachedModel

        monkeypatch.setattr(anchordiv.data, "get_encoder", reached)
    outcome, seen = classify(case, env)
    assert outcome in ("clear", "correct"), f"{name}: {outcome}: {seen}"


def test_the_table_is_wide():
    kinds = {}
    for case in CASES.values():
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
    assert len(CASES) >= 58 and len(kinds) >= 10, kinds


def test_the_classifier_tells_raw_silent_and_misleading_apart(env):
    def raises(err):
        def run(e):
            raise err

        return run

    assert classify(Case("t", raises(KeyError("ImageId")), E, "x"), env)[0] == "raw"
    assert classify(Case("t", raises(AnchorDivError("other cause")), E, "x"), env)[0] == (
        "misleading"
    )
    assert classify(Case("t", raises(AnchorDivError("a x b")), E, "x"), env)[0] == "clear"
    assert classify(Case("t", lambda e: None, E, "x"), env)[0] == "silent"
    assert classify(Case("t", raises(ReachedModel()), CLI, "x"), env)[0] == "silent"
    assert (
        classify(Case("t", lambda e: ("cli", 2, "", "a: error: x\na: error: x\n"), CLI, "x"), env)[
            0
        ]
        == "raw"
    )
    assert (
        classify(Case("t", lambda e: ("cli", 2, "", "Traceback (most recent"), CLI, "x"), env)[0]
        == "raw"
    )
    assert classify(Case("t", lambda e: ("cli", 2, "", "a: error: y\n"), CLI, "x"), env)[0] == (
        "misleading"
    )
    assert classify(Case("t", lambda e: ("cli", 0, "", ""), CLI, "x"), env)[0] == "silent"
    assert classify(Case("t", lambda e: False, OK), env)[0] == "silent"
    assert classify(Case("t", lambda e: warnings.warn("x here", stacklevel=1), W, "x"), env)[0] == (
        "clear"
    )
    assert classify(Case("t", lambda e: None, W, "x"), env)[0] == "silent"
