"""Every image mode read as correctly scaled 8-bit RGB (against a reference per mode), a
16-bit PNG encoding like its 8-bit copy, and digests computed once."""

import numpy as np
import pytest
from PIL import Image

from anchordiv.data import imageio
from helpers import png_claiming

RNG = np.random.default_rng(0)
GREY = RNG.integers(0, 256, size=(6, 7), dtype=np.uint8)
RGB = RNG.integers(0, 256, size=(6, 7, 3), dtype=np.uint8)
OPAQUE = np.where(np.arange(7) < 4, 255, 0).astype(np.uint8)[None, :].repeat(6, 0)


def _rgb(grey):
    return np.repeat(np.asarray(grey)[..., None], 3, axis=2)


def _over_white(rgb):
    keep = OPAQUE[..., None] == 255
    return np.where(keep, rgb, 255).astype(np.uint8)


def _palette():
    colours = RNG.integers(0, 256, size=(4, 3), dtype=np.uint8)
    idx = RNG.integers(0, 4, size=(6, 7), dtype=np.uint8)
    im = Image.fromarray(idx).convert("P")
    im.putpalette(colours.ravel().tolist())
    return im, colours[idx]


def _cases():
    g16 = GREY.astype(np.uint16) * 257
    p, p_ref = _palette()
    pt = p.copy()
    pt.info["transparency"] = int(np.asarray(p)[0, 0])
    pt_ref = np.where((np.asarray(p) == np.asarray(p)[0, 0])[..., None], 255, p_ref)
    return {
        "L": (Image.fromarray(GREY), _rgb(GREY)),
        "I;16": (Image.fromarray(g16), _rgb(GREY)),
        "I;16B": (Image.frombytes("I;16B", (7, 6), g16.astype(">u2").tobytes()), _rgb(GREY)),
        "I": (Image.fromarray(g16.astype(np.int32)), _rgb(GREY)),
        "F": (Image.fromarray(GREY.astype(np.float32) / 255), _rgb(GREY)),
        "F wide": (Image.fromarray(GREY.astype(np.float32) * 4 + 10), None),
        "LA": (Image.fromarray(np.dstack([GREY, OPAQUE])), _over_white(_rgb(GREY))),
        "RGBA": (Image.fromarray(np.dstack([RGB, OPAQUE])), _over_white(RGB)),
        "P": (p, p_ref),
        "P transparent": (pt, pt_ref),
        "CMYK": (Image.fromarray(RGB).convert("CMYK"), RGB),
        "1": (Image.fromarray(GREY > 128).convert("1"), _rgb(np.where(GREY > 128, 255, 0))),
        "RGB": (Image.fromarray(RGB), RGB),
    }


@pytest.mark.parametrize("mode", list(_cases()))
def test_every_mode_reads_as_scaled_8bit_rgb(mode):
    im, ref = _cases()[mode]
    out = imageio.to_rgb8(im)
    assert out.mode == "RGB" and out.size == (7, 6)
    if ref is None:  # a float image outside [0, 1]: its own range spread over 0..255
        lo, hi = GREY.min(), GREY.max()
        ref = _rgb(np.rint((GREY.astype(float) - lo) * 255 / (hi - lo)))
    np.testing.assert_array_equal(np.asarray(out), ref)


def test_sixteen_bit_png_reads_and_encodes_like_its_8bit_copy(tmp_path, tiny_clip):
    from anchordiv import data

    import skimage.data

    cam = skimage.data.camera()[::4, ::4]
    Image.fromarray(cam.astype(np.uint16) * 257).save(tmp_path / "x16.png")
    Image.fromarray(cam).save(tmp_path / "x8.png")
    with Image.open(tmp_path / "x16.png") as im:
        assert im.mode.startswith("I")  # really 16 bits on disk
    a = np.asarray(imageio.read_image(tmp_path / "x16.png"))
    assert a.std() > 10, "not a blank image"
    np.testing.assert_array_equal(a, np.asarray(imageio.read_image(tmp_path / "x8.png")))
    _, _, enc = tiny_clip
    x, _ = data.embed_images(enc, [tmp_path / "x16.png", tmp_path / "x8.png"], cache=False)
    np.testing.assert_allclose(x[0], x[1], atol=1e-6)


def test_exif_orientation_is_applied(tmp_path):
    im = Image.fromarray(RGB)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to view
    im.save(tmp_path / "r.jpg", exif=exif, quality=100)
    assert imageio.read_image(tmp_path / "r.jpg").size == (6, 7)


def test_unreadable_files_are_all_named(tmp_path):
    good = tmp_path / "a.png"
    Image.fromarray(RGB).save(good)
    (tmp_path / "b.png").write_bytes(b"junk")
    digests, bad = imageio.file_digests(
        [good, tmp_path / "b.png", tmp_path / "missing.jpg"], cache=False
    )
    assert digests[0] and digests[1:] == [None, None]
    assert set(bad) == {str(tmp_path / "b.png"), str(tmp_path / "missing.jpg")}
    assert "not an image" in bad[str(tmp_path / "b.png")]


def test_hashing_a_huge_file_streams_it(tmp_path):
    """Issue 52: a 3 GiB file in a class folder was read whole to be hashed (1.5 GB of memory).
    A sparse 64 MiB file (a valid PNG header, then zeros) is hashed with a bounded buffer:
    Python's peak allocation stays far below its size, and the digest is that of its bytes.
    A file whose header is no image is not hashed at all (issue 51: nothing to key)."""
    import hashlib
    import io
    import tracemalloc

    from anchordiv.data.imageio import _digest_and_check

    big = tmp_path / "huge.png"
    size = 64 * 2**20
    buf = io.BytesIO()
    Image.fromarray(RGB).save(buf, "PNG")
    head = buf.getvalue()
    with open(big, "wb") as f:
        f.write(head)
        f.truncate(size)  # sparse: instant to create, zeros to read
    tracemalloc.start()
    try:
        digest, problem = _digest_and_check(str(big))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB while hashing {size / 2**20:.0f} MiB"
    h = hashlib.sha256(head)
    zeros = bytes(2**20)
    for _ in range(size // 2**20 - 1):
        h.update(zeros)
    h.update(bytes(2**20 - len(head)))
    assert digest == h.hexdigest() and problem is None  # the header is an image's: hashed
    with open(big, "r+b") as f:
        f.write(b"\x89PNG\r\n\x1a\n\0\0\0\0")  # no IHDR: no image
    digest, problem = _digest_and_check(str(big))
    assert digest is None and problem


def test_worker_processes_start_without_the_callers_script():
    """While a worker starts, __main__ has no __file__ / __spec__ (multiprocessing then does not
    re-run the caller's script in it); both come back afterwards."""
    import sys

    main = sys.modules["__main__"]
    before = (getattr(main, "__file__", None), getattr(main, "__spec__", None))
    with imageio._main_script_hidden():
        assert getattr(main, "__file__", None) is None and main.__spec__ is None
    assert (getattr(main, "__file__", None), getattr(main, "__spec__", None)) == before
    ctx = imageio.worker_context()
    if ctx.get_start_method() != "fork":
        assert ctx.Process.__name__.startswith("ScriptFree")


SCRIPT = """
import sys
from pathlib import Path
import image_trees as trees
import anchordiv as ad
import anchordiv.data.imageio as io

print("model loads", flush=True)
io.MIN_WORKER_IMAGES = 1
folder = Path(sys.argv[1])
root = trees.imagefolder(folder / "images", per_class=4)
config, ckpt = trees.save_tiny_clip(folder)
enc = ad.data.get_encoder(f"open_clip:{config}", pretrained=ckpt)
paths = sorted(str(p) for p in root.rglob("*.png"))
x, kept = ad.data.embed_images(enc, paths, cache=False, workers=2, batch_size=4)
print("embedded", x.shape, flush=True)
"""


@pytest.mark.slow
def test_a_script_without_a_main_guard_runs_workers(tmp_path):
    """A script passing workers > 0 without ``if __name__ == "__main__":`` (JAX loaded, so the
    workers come from a forkserver): the model loads once and the images embed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "noguard.py"
    script.write_text(SCRIPT)
    tests = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tests, *sys.path]))
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.count("model loads") == 1 and "embedded (12, 16)" in run.stdout


# ---- decompression bombs and the pixel budget (issue 52) -----------------------------------


def _tiff_claiming(path, width, height):
    """A 100-odd-byte little-endian TIFF whose IFD claims ``width`` × ``height`` pixels."""
    import struct

    entries = [
        (256, 4, 1, width),
        (257, 4, 1, height),
        (258, 3, 1, 8),
        (259, 3, 1, 1),
        (262, 3, 1, 1),
        (273, 4, 1, 8),
        (278, 4, 1, 1),
        (279, 4, 1, 1),
    ]
    ifd = struct.pack("<H", len(entries))
    ifd += b"".join(struct.pack("<HHII", *e) for e in entries) + struct.pack("<I", 0)
    path.write_bytes(b"II*\0" + struct.pack("<I", 8) + ifd)
    return path


@pytest.mark.parametrize(
    "make, name, pixels",
    [(png_claiming, "bomb.png", (20000, 20000)), (_tiff_claiming, "bomb.tif", (100000, 100000))],
)
def test_a_decompression_bomb_is_an_unreadable_file_not_a_raw_error(make, name, pixels, tmp_path):
    """A 400 Mpx PNG or a TIFF claiming 10¹⁰ px raised Pillow's raw DecompressionBombError
    even under on_error='skip'; now it is a file that cannot be read, named with the budget."""
    from anchordiv.data.encoders import check_images

    good = tmp_path / "good.png"
    Image.fromarray(RGB).save(good)
    bomb = make(tmp_path / name, *pixels)
    assert bomb.stat().st_size < 1000
    with pytest.warns(UserWarning, match="skipped 1 unreadable"):
        kept, _, bad = check_images([good, bomb], on_error="skip", cache=False)
    assert kept == [str(good)] and "pixel budget" in bad[str(bomb)]
    with pytest.raises(imageio.AnchorDivError, match="1 of 2 image file.*pixel budget"):
        check_images([good, bomb], cache=False)
    with pytest.raises(imageio.AnchorDivError, match="over the pixel budget"):
        imageio.read_image(bomb)


def test_the_pixel_budget_is_settable_and_refuses_before_decoding(tmp_path, monkeypatch):
    """A 144 Mpx PNG (under Pillow's own error, over its limit) decoded at +750 MB: it is
    refused before decoding unless the budget allows it (a parameter or the variable)."""
    big = png_claiming(tmp_path / "big.png", 12000, 12000)
    with pytest.raises(imageio.AnchorDivError, match="144,000,000 pixels, over the pixel budget"):
        imageio.read_image(big)
    _, bad = imageio.file_digests([big], cache=False)
    assert "pixel budget" in bad[str(big)]
    small = tmp_path / "small.png"
    Image.fromarray(RGB).save(small)
    with pytest.raises(imageio.AnchorDivError, match="over the pixel budget of 10 pixels"):
        imageio.read_image(small, max_pixels=10)
    monkeypatch.setenv(imageio.PIXELS_ENV, "10")
    assert imageio.file_digests([small], cache=False)[1]  # the variable's budget refuses it
    assert imageio.pixel_budget(200_000_000) == 200_000_000  # a parameter wins over it
    monkeypatch.setenv(imageio.PIXELS_ENV, "200000000")
    assert imageio.file_digests([big], cache=False)[1] == {}  # within budget: a valid header
    assert Image.MAX_IMAGE_PIXELS == 89_478_485  # Pillow's own limit only raised for that read
    monkeypatch.setenv(imageio.PIXELS_ENV, "lots")
    with pytest.raises(
        imageio.AnchorDivError, match="ANCHORDIV_MAX_IMAGE_PIXELS: expected an integer"
    ):
        imageio.pixel_budget()


def test_a_16_bit_image_using_few_of_its_bits_is_warned_once(tmp_path, monkeypatch):
    """Issue 51: a 12-bit X-ray in a 16-bit PNG read almost black (mean 8 of 255) silently."""
    monkeypatch.setattr(imageio, "_WARNED", set())
    scan = (RNG.integers(0, 4096, size=(6, 7))).astype(np.uint16)
    paths = []
    for i in range(2):
        paths.append(tmp_path / f"xray{i}.png")
        Image.fromarray(scan).save(paths[-1])
    with pytest.warns(imageio.AnchorDivWarning, match="reach only .* of 65535.*rescale") as seen:
        imageio.read_image(paths[0])
        imageio.read_image(paths[1])
    assert len([w for w in seen if "65535" in str(w.message)]) == 1  # once per run
    full = tmp_path / "full.png"
    Image.fromarray(GREY.astype(np.uint16) * 257).save(full)
    monkeypatch.setattr(imageio, "_WARNED", set())
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", imageio.AnchorDivWarning)
        imageio.read_image(full)  # a full-range 16-bit image: no warning


def test_a_jpeg_header_followed_by_junk_is_refused_from_its_structure(tmp_path):
    """Issue 51: a JPEG start marker followed by gigabytes of zeros took minutes in Pillow's
    byte-by-byte marker scan.  ``jpeg_junk`` names such a file from a bounded read; every real
    JPEG (baseline, progressive, EXIF, ICC profile, CMYK, a little junk between segments) passes
    it and reads as before."""
    import io

    from PIL import ImageCms

    def jpeg(**save):
        buf = io.BytesIO()
        Image.fromarray(RGB).convert(save.pop("mode", "RGB")).save(buf, "JPEG", **save)
        return buf.getvalue()

    exif = Image.Exif()
    exif[0x0112] = 6
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    plain = jpeg()
    variants = {
        "plain": plain,
        "progressive": jpeg(progressive=True, optimize=True),
        "exif": jpeg(exif=exif.tobytes()),
        "icc": jpeg(icc_profile=icc),
        "cmyk": jpeg(mode="CMYK"),
        "junk": plain[:20] + b"\0" * 100 + plain[20:],  # Pillow skips a little junk
    }
    for name, data in variants.items():
        path = tmp_path / f"{name}.jpg"
        path.write_bytes(data)
        with open(path, "rb") as f:
            assert imageio.jpeg_junk(f) is None, name
        assert imageio.read_image(path).size == ((6, 7) if name == "exif" else (7, 6)), name
    zeros = tmp_path / "zeros.jpg"
    with open(zeros, "wb") as f:
        f.write(plain[:20])
        f.truncate(64 << 20)  # sparse
    with open(zeros, "rb") as f:
        assert "no JPEG marker in the 65,536 bytes from byte 20" in imageio.jpeg_junk(f)
    with pytest.raises(imageio.AnchorDivError, match="cannot read image .*zeros.jpg: not an image"):
        imageio.read_image(zeros)
    assert "no JPEG marker" in imageio.file_digests([zeros], cache=False)[1][str(zeros)]
