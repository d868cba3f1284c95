"""Image files read as 8-bit RGB by bit depth (:func:`to_rgb8`), hashed once
(:func:`file_digests`) and decoded in worker processes (:class:`ImageFiles`); details:
``docs/guides/images.md``."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
import time
import warnings
from multiprocessing import context as _mp_context
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import AnchorDivError, integer
from ..provenance import AnchorDivWarning

#: Version of :func:`to_rgb8`; part of every image embedding's cache key.
READER_VERSION = "rgb8-v1"

#: Fewer images than this are decoded in the main process: starting worker processes (each
#: forked from a server that imported torch) costs seconds.
MIN_WORKER_IMAGES = 256

#: A digest is reused only for a file last modified this long before it was recorded.
RACY_NS = 2_000_000_000

#: The environment variable that sets the pixel budget (:func:`pixel_budget`).
PIXELS_ENV = "ANCHORDIV_MAX_IMAGE_PIXELS"

#: A 16-bit image whose largest value is under this fraction of 65535 uses a small part of its
#: bit depth (a 12-bit scan stored in 16 bits: 1/16) and reads almost black: warned.
LOW_DEPTH_FRACTION = 1 / 16

#: Bytes of non-marker junk a JPEG's header may hold before its next marker: Pillow skips junk
#: a byte at a time, so a JPEG start followed by gigabytes of zeros (a sparse 3 GiB file) took
#: minutes to refuse; beyond this it is refused from its structure at once.
JPEG_JUNK_BYTES = 1 << 16

_GREY16 = ("I;16", "I;16B", "I;16L", "I;16N")
_WARNED: set[str] = set()  # the causes warned in this process (each once per run)
_PILLOW_LIMIT = threading.Lock()  # held while Pillow's limit is raised to a budget


def pixel_budget(max_pixels: int | None = None) -> int | None:
    """The largest width × height an image file may claim: ``max_pixels``, else the
    environment variable ``ANCHORDIV_MAX_IMAGE_PIXELS``, else Pillow's own decompression-bomb
    limit ``PIL.Image.MAX_IMAGE_PIXELS`` (89,478,485 px unless changed; None there: no budget).

    Raises
    ------
    AnchorDivError
        A budget (given or in the variable) that is not an integer ≥ 1.
    """
    if max_pixels is None and os.environ.get(PIXELS_ENV, "").strip():
        value = os.environ[PIXELS_ENV].strip()
        try:
            number = int(value)
        except ValueError:
            raise AnchorDivError(
                f"{PIXELS_ENV}: expected an integer number of pixels, got {value!r}"
            ) from None
        return integer(PIXELS_ENV, number, low=1)
    if max_pixels is not None:
        return integer("max_pixels", max_pixels, low=1)
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    return None if limit is None else int(limit)


def open_image(source, name, budget: int | None):
    """``PIL.Image.open(source)`` (the header only) of an image of at most ``budget`` pixels:
    a larger one, or one Pillow calls a decompression bomb, is an :class:`AnchorDivError`
    naming ``name`` and the budget, before anything is decoded."""
    from PIL import Image

    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as f:
                junk = jpeg_junk(f)
        except OSError:
            junk = None  # Pillow's open names it
        if junk:
            raise AnchorDivError(f"cannot read image {name}: {junk}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the budget decides
        try:
            limit = Image.MAX_IMAGE_PIXELS
            if budget is None or limit is None or budget <= limit:
                im = Image.open(source)
            else:  # Pillow refuses twice its own limit at open: raised to the budget for this one
                with _PILLOW_LIMIT:
                    Image.MAX_IMAGE_PIXELS = budget
                    try:
                        im = Image.open(source)
                    finally:
                        Image.MAX_IMAGE_PIXELS = limit
        except Image.DecompressionBombError as err:
            raise AnchorDivError(_over_budget(name, str(err), budget)) from None
    w, h = im.size
    if budget is not None and w * h > budget:
        im.close()
        raise AnchorDivError(_over_budget(name, f"{w} x {h} = {w * h:,} pixels", budget))
    return im


def jpeg_junk(f) -> str | None:
    """Why the file ``f`` (binary, seekable), which starts as a JPEG, is no JPEG Pillow should
    scan: more than :data:`JPEG_JUNK_BYTES` bytes that are no marker where its header expects
    one (a JPEG start marker followed by zeros); None for any other file, or a header that
    reaches its image data (what else is wrong Pillow says).  Reads the header's segments
    only (a few kilobytes)."""
    f.seek(0)
    if f.read(3) != b"\xff\xd8\xff":
        return None
    f.seek(2)
    for _ in range(100_000):  # segments of a header; never loops forever
        byte = f.read(1)
        if not byte:
            return None
        if byte != b"\xff":  # junk: find the next 0xFF within the allowance
            start = f.tell() - 1
            block = f.read(JPEG_JUNK_BYTES)
            at = block.find(b"\xff")
            if at < 0:
                if len(block) < JPEG_JUNK_BYTES:
                    return None  # the file ends: Pillow fails fast
                return (
                    f"not an image: a JPEG start marker, then no JPEG marker in the "
                    f"{JPEG_JUNK_BYTES:,} bytes from byte {start:,} (of "
                    f"{f.seek(0, os.SEEK_END):,}; a file of zeros or other data with a JPEG "
                    f"header?)"
                )
            f.seek(start + 1 + at)
            continue
        code = f.read(1)
        if not code:
            return None
        c = code[0]
        if c in (0x00, 0xFF, 0x01, 0xD8, 0xD9) or 0xD0 <= c <= 0xD7:
            if c == 0xFF:
                f.seek(-1, os.SEEK_CUR)
            continue  # no length
        if c == 0xDA:
            return None  # the start of scan: the header is whole
        size = f.read(2)
        if len(size) < 2:
            return None
        f.seek(int.from_bytes(size, "big") - 2, os.SEEK_CUR)
    return None


def _over_budget(name, what: str, budget: int | None) -> str:
    limit = f"{budget:,}" if budget is not None else "Pillow's"
    return (
        f"cannot read image {name}: {what}, over the pixel budget of {limit} pixels (a "
        f"decompression bomb, or a very large image: decoding it takes about 3–6 bytes a "
        f"pixel); raise the budget with max_pixels= or {PIXELS_ENV} if it is meant"
    )


def warn_once(cause: str, message: str) -> None:
    """An :class:`AnchorDivWarning` ``message``, once per process for each ``cause``."""
    if cause not in _WARNED:
        _WARNED.add(cause)
        warnings.warn(message, AnchorDivWarning, stacklevel=3)


def _grey16(im) -> np.ndarray | None:
    """The values ``[H, W]`` of a 16-bit grey image (None for another mode, an empty image or
    negative values)."""
    if im.mode not in _GREY16 and im.mode != "I":
        return None
    arr = np.asarray(im.convert("I") if im.mode == "I;16B" else im)
    return arr if arr.size and arr.min() >= 0 else None


def _low_bits(arr: np.ndarray) -> int | None:
    """The bits the 16-bit values ``arr`` use when their largest is under
    :data:`LOW_DEPTH_FRACTION` of 65535, else None."""
    top = int(arr.max())
    return max(top, 1).bit_length() if top < LOW_DEPTH_FRACTION * 65535 else None


def depth_used(im) -> int | None:
    """The bits a 16-bit image's values use (of 16) when its largest value is under
    :data:`LOW_DEPTH_FRACTION` of 65535 (read by its bit depth it is almost black), else
    None."""
    arr = _grey16(im)
    return None if arr is None else _low_bits(arr)


def low_depth_message(depths: dict, total: int) -> str:
    """The one warning of a run whose decoded images ``depths`` (``{path: bits used}``, of
    ``total`` decoded) use a small part of their 16 bits."""
    bits = max(depths.values())
    first = next(iter(depths))
    return (
        f"{len(depths)} of the {total} images decoded use at most {bits} of their 16 bits "
        f"(e.g. {first}: about {depths[first]} bits; {bits}-bit scans stored in 16 bits?) and "
        f"read almost black when scaled by their bit depth; rescale such files to their range "
        f"(e.g. multiply by 65535 / their maximum, or save them as 8-bit) before embedding"
    )


def check_depth(im, name) -> None:
    """Warn (once per process) when a 16-bit image's largest value is under
    :data:`LOW_DEPTH_FRACTION` of its range: read by its bit depth it is almost black
    (:func:`read_image` alone; :func:`~anchordiv.data.embed_images` counts such files and warns
    once per run)."""
    arr = _grey16(im)
    bits = None if arr is None else _low_bits(arr)
    if bits is not None:
        top, mean = int(arr.max()), float(arr.mean()) / 257.0
        warn_once(
            "low-depth",
            f"image {name}: a 16-bit image (mode {im.mode}) whose values reach only {top} of "
            f"65535 (about {bits} bits used: a {bits}-bit scan stored in 16 bits?) reads almost "
            f"black (mean {mean:.0f} of 255) when scaled by its bit depth; rescale such files "
            f"to their range (e.g. multiply by 65535 / their maximum, or save them as 8-bit) "
            f"before embedding (warned once; other such files are not named)",
        )


_ALPHA = ("LA", "La", "PA", "RGBA", "RGBa")


def _grey(arr: np.ndarray):
    from PIL import Image

    return Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), "L").convert("RGB")


def _minmax(arr: np.ndarray) -> np.ndarray:
    lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
    return np.zeros_like(arr) if hi <= lo else (arr - lo) * (255.0 / (hi - lo))


def to_rgb8(im):
    """A PIL image of any mode as 8-bit RGB, each mode scaled by its bit depth.

    Parameters
    ----------
    im : PIL.Image.Image
        The image (any mode Pillow decodes).

    Returns
    -------
    PIL.Image.Image
        Mode ``"RGB"``.

    Raises
    ------
    AnchorDivError
        A mode with no conversion to RGB.

    Examples
    --------
    >>> from PIL import Image
    >>> from anchordiv.data.imageio import to_rgb8
    >>> im = Image.fromarray(np.array([[0, 257 * 128, 65535]], np.uint16))
    >>> np.asarray(to_rgb8(im))[0, :, 0].tolist()
    [0, 128, 255]
    """
    from PIL import Image

    if im.mode in _GREY16:
        return _grey(np.asarray(im, dtype=np.float64) / 257.0)
    if im.mode.startswith("I;") or im.mode == "I":
        arr = np.asarray(im.convert("I") if im.mode != "I" else im, dtype=np.float64)
        fits = arr.size == 0 or (arr.min() >= 0 and arr.max() <= 65535)
        return _grey(arr / 257.0 if fits else _minmax(arr))
    if im.mode == "F":
        arr = np.nan_to_num(np.asarray(im, dtype=np.float64))
        unit = arr.size == 0 or (arr.min() >= 0 and arr.max() <= 1)
        return _grey(arr * 255.0 if unit else _minmax(arr))
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    if im.mode in _ALPHA:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    try:
        return im.convert("RGB")
    except (ValueError, OSError) as err:
        raise AnchorDivError(f"image mode {im.mode!r} has no conversion to RGB: {err}") from None


def read_image(path, max_pixels: int | None = None, depths: dict | None = None):
    """Open one image file as 8-bit RGB (:func:`to_rgb8`, EXIF orientation applied).

    A file claiming more than the pixel budget (:func:`pixel_budget` of ``max_pixels``) is
    refused before it is decoded; a 16-bit image that uses a small part of its bit depth is
    warned about (:func:`check_depth`), or, with ``depths`` (a dict), recorded there as
    ``{path: bits used}`` for the caller to count (no warning).

    Raises
    ------
    AnchorDivError
        The file is not an image Pillow reads, or is over the pixel budget.
    """
    from PIL import ImageOps, UnidentifiedImageError

    try:
        with open_image(path, path, pixel_budget(max_pixels)) as im:
            im.load()
            if depths is None:
                check_depth(im, path)
            elif (bits := depth_used(im)) is not None:
                depths[str(path)] = bits
            return to_rgb8(ImageOps.exif_transpose(im))
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as err:
        raise AnchorDivError(f"cannot read image {path}: {err}") from None


def _digest_and_check(path: str, budget: int | None = None) -> tuple[str | None, str | None]:
    """``(sha256 hex, None)`` for a file whose header is an image of at most ``budget`` pixels,
    ``(None, problem)`` else (the header is read first: a file it refuses is not hashed, so a
    huge file that is no image costs no read of its bytes)."""
    from PIL import UnidentifiedImageError

    try:
        with open_image(path, path, budget) as im:  # the header only
            w, h = im.size
            if w < 1 or h < 1:
                return None, f"empty image ({w}x{h})"
    except AnchorDivError as err:
        return None, str(err).removeprefix(f"cannot read image {path}: ")
    except UnidentifiedImageError:
        return None, "not an image file Pillow recognises"
    except OSError as err:
        if getattr(err, "filename", None) is not None or err.errno is not None:
            return None, f"{type(err).__name__}: {err}"
        return None, f"not an image Pillow reads: {err}"
    except (ValueError, SyntaxError) as err:
        return None, f"not an image Pillow reads: {err}"
    try:
        with open(path, "rb") as f:  # streamed: memory stays bounded whatever the file's size
            return hashlib.file_digest(f, "sha256").hexdigest(), None
    except OSError as err:
        return None, f"{type(err).__name__}: {err}"


def _index_path(folder: str, root: Path) -> Path:
    return root / "files" / (hashlib.sha256(folder.encode()).hexdigest()[:24] + ".json")


def _load_index(folder: str, root: Path, key: bytes | None = None) -> dict:
    """The file-digest records of ``folder``: only from an index carrying the cache's digest
    (:func:`.cache.verified`), only well-formed records (an edited or planted index is
    reported once and ignored: its files are hashed afresh)."""
    import warnings

    from .._safeio import read_json
    from ..errors import user_stacklevel
    from .cache import is_hex, verified

    path = _index_path(folder, root)
    if not path.is_file():
        return {}
    try:
        meta = read_json(path)
    except (OSError, ValueError):  # (AnchorDivError is a ValueError)
        meta = None
    files = meta.get("files") if isinstance(meta, dict) and meta.get("folder") == folder else None
    if not isinstance(files, dict) or not verified(key, meta):
        warnings.warn(
            f"file-digest index {path} is malformed, edited or not written by this cache: "
            f"ignored, the files of {folder} are hashed afresh",
            stacklevel=user_stacklevel(),
        )
        return {}

    def good(rec) -> bool:
        ints = isinstance(rec, list) and len(rec) == 6 and is_hex(rec[4], 64)
        return ints and all(type(rec[k]) is int for k in (0, 1, 2, 3, 5))

    return {name: rec for name, rec in files.items() if good(rec)}


def file_digests(
    paths: Sequence,
    *,
    workers: int = 0,
    cache: bool | str | Path = True,
    progress: bool | None = None,
    max_pixels: int | None = None,
) -> tuple[list[str | None], dict[str, str]]:
    """Each file's SHA-256, computed once, and the files that are not images or claim more
    pixels than the budget (:func:`pixel_budget` of ``max_pixels``; a file known from an
    earlier run is not re-checked)."""
    from .._safeio import atomic_file, write_text
    from ..progress import tqdm
    from .cache import cache_key, cache_root, sign

    root = None if not cache else cache_root(cache)
    key = cache_key(root, create=True) if root else None
    paths = [str(p) for p in paths]
    folder = [os.path.dirname(os.path.abspath(p)) for p in paths]
    digests: list[str | None] = [None] * len(paths)
    bad: dict[str, str] = {}
    indexes = {f: _load_index(f, root, key) if root else {} for f in dict.fromkeys(folder)}
    rank = {f: k for k, f in enumerate(indexes)}
    todo, stats = [], {}
    for i in sorted(range(len(paths)), key=lambda i: rank[folder[i]]):  # folder by folder
        try:
            st = os.stat(paths[i])
        except OSError as err:
            bad[paths[i]] = (
                f"a symlink to {os.readlink(paths[i])}, which does not exist"
                if os.path.islink(paths[i]) and not os.path.exists(paths[i])
                else f"{type(err).__name__}: {err}"
            )
            continue
        stats[i] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        rec = indexes[folder[i]].get(os.path.basename(paths[i]))
        known = isinstance(rec, list) and len(rec) == 6 and rec[:4] == stats[i]
        if known and rec[1] + RACY_NS < rec[5]:
            digests[i] = rec[4]
        else:
            todo.append(i)
    show = progress if progress is not None else len(todo) > 256
    check = functools.partial(_digest_and_check, budget=pixel_budget(max_pixels))
    results = map_files(check, [paths[i] for i in todo], workers)
    now = time.time_ns()
    bar = tqdm(
        zip(todo, results), total=len(todo), desc="hash images", unit="file", disable=not show
    )
    for i, (digest, problem) in bar:
        if problem:
            bad[paths[i]] = problem
            continue
        digests[i] = digest
        indexes[folder[i]][os.path.basename(paths[i])] = [*stats[i], digest, now]
    for f in {folder[i] for i in todo} if root else ():
        try:
            path = _index_path(f, root)
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_file(path) as tmp:
                index = {"folder": f, "files": indexes[f]}
                if key is not None:
                    index["digest"] = sign(key, index)
                write_text(tmp, json.dumps(index, separators=(",", ":")))
        except OSError:
            pass  # a read-only cache only costs a re-hash next time
    return digests, bad


def map_files(fn: Callable[[str], object], paths: list[str], workers: int):
    """``fn`` over ``paths`` in order: in this thread (``workers`` 0 or few paths), else in a
    pool of ``workers`` threads (reading a file and SHA-256 release the GIL, and threads start
    at once where processes would each import the stack)."""
    if workers <= 0 or len(paths) < 64:
        return map(fn, paths)
    from concurrent.futures import ThreadPoolExecutor

    def run():
        with ThreadPoolExecutor(workers) as pool:
            yield from pool.map(fn, paths)

    return run()


#: What the workers' server imports once, so each worker forks ready to decode and preprocess.
WORKER_PRELOAD = ("PIL.Image", "torch", "torchvision.transforms", "open_clip")


#: Environment variable naming the process whose workers' server must die with it.
PARENT_ENV = "ANCHORDIV_WORKERS_PARENT"


def die_with_parent(parent: int | None = None) -> None:
    """Make this process die (SIGKILL) when its parent does (Linux ``PR_SET_PDEATHSIG``, set
    through ``ctypes``), and exit now if the parent ``parent`` is already gone: no worker or
    workers' server outlives a killed run.  Elsewhere, nothing (torch's workers still poll
    their parent)."""
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent died before the signal was armed


def worker_init(_worker_id: int) -> None:
    """The ``DataLoader`` workers' ``worker_init_fn``: die with the process that forked them."""
    die_with_parent()


def _guard_forkserver() -> None:
    """In the workers' server (which imports this module first): die with the run."""
    import sys

    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit() and sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules:
        die_with_parent(int(parent))


@contextlib.contextmanager
def _main_script_hidden():
    """While a worker process starts: this process's ``__main__`` looks like an interactive
    session's (no ``__file__``, no ``__spec__``), so ``multiprocessing`` does not re-run the
    caller's script in the worker (a script without an ``if __name__ == "__main__":`` guard
    would load its model again there and fail starting workers of its own)."""
    import sys

    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class ScriptFreeSpawnProcess(_mp_context.SpawnProcess):
    """A ``spawn`` process started without importing the caller's script
    (:func:`_main_script_hidden`); what the loader's workers run (its worker loop,
    :class:`ImageFiles`, the model's transforms) lives in importable modules."""

    def start(self) -> None:
        with _main_script_hidden():
            super().start()


class _ScriptFreeSpawnContext(_mp_context.SpawnContext):
    Process = ScriptFreeSpawnProcess


if os.name == "posix":

    class ScriptFreeForkServerProcess(_mp_context.ForkServerProcess):
        """A ``forkserver`` process started without importing the caller's script."""

        def start(self) -> None:
            with _main_script_hidden():
                super().start()

    class _ScriptFreeForkServerContext(_mp_context.ForkServerContext):
        Process = ScriptFreeForkServerProcess


def worker_context():
    """The multiprocessing context of the loader's workers: ``fork`` while no multithreaded
    runtime (JAX) is loaded in this process, else ``forkserver`` (a forked copy of a process
    running JAX's threads can deadlock) whose server imports this module, torch and open_clip
    once (:data:`WORKER_PRELOAD`), not the caller's script — nor do the workers
    (:class:`ScriptFreeForkServerProcess`): a script without an ``if __name__ ==
    "__main__":`` guard works."""
    import multiprocessing as mp
    import sys

    if os.name != "posix":
        return _ScriptFreeSpawnContext()
    if "jax" not in sys.modules:
        return mp.get_context("fork")
    ctx = _ScriptFreeForkServerContext()
    ctx.set_forkserver_preload([__name__, *WORKER_PRELOAD])
    os.environ[PARENT_ENV] = str(os.getpid())  # the server dies with this process
    return ctx


def start_workers(workers: int, images: int) -> None:
    """Start the workers' server now (it imports torch and open_clip in the background while
    this process loads the model), when ``images`` will be decoded by ``workers`` > 0."""
    if workers > 0 and images >= MIN_WORKER_IMAGES:
        ctx = worker_context()
        if ctx.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()


def prefetch(iterable, depth: int = 2):
    """Iterate ``iterable`` in a background thread, ``depth`` items ahead: decoding and
    preprocessing (PIL and torch release the GIL) overlap the model's forward pass when there
    are no worker processes."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(depth)
    done = object()
    stop = threading.Event()

    def fill():
        try:
            for item in iterable:
                if stop.is_set():
                    return
                q.put(item)
            q.put(done)
        except BaseException as err:  # handed to the consumer
            q.put(err)

    threading.Thread(target=fill, daemon=True).start()
    try:
        while (item := q.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


class ImageFiles:
    """Decoded, preprocessed images for a ``torch.utils.data.DataLoader``: item ``i`` is
    ``(i, tensor, "", bits)``, or ``(i, zeros, problem, 0)`` when the file does not decode (the
    batch goes on; the caller names every failed file at the end); ``bits`` is the number of
    bits a 16-bit image uses when that is a small part of them (:func:`depth_used`), else 0 —
    counted by the caller, so a run warns once, from its own process, whatever its workers.

    Parameters
    ----------
    paths : sequence of str
        The files.
    preprocess : callable
        PIL RGB image -> tensor (the model's transform).
    shape : tuple of int
        The tensor shape, for the zeros of a failed file.
    """

    def __init__(
        self,
        paths: Sequence[str],
        preprocess: Callable,
        shape: tuple[int, ...],
        max_pixels: int | None = None,
    ):
        self.paths, self.preprocess, self.shape = list(paths), preprocess, tuple(shape)
        self.max_pixels = pixel_budget(max_pixels)  # read here: workers see the caller's

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        import torch

        depths: dict[str, int] = {}
        try:
            image = read_image(self.paths[i], self.max_pixels, depths)
            return i, self.preprocess(image), "", sum(depths.values())
        except AnchorDivError as err:
            return i, torch.zeros(self.shape), str(err), 0
        except Exception as err:  # a transform failing on an odd image: name the file
            return i, torch.zeros(self.shape), f"cannot preprocess {self.paths[i]}: {err}", 0


def bad_files_error(bad: dict[str, str], total: int) -> AnchorDivError:
    """One error naming every unreadable file (and the option that skips them)."""
    listed = "; ".join(f"{p}: {why}" for p, why in list(bad.items())[:20])
    more = f"; and {len(bad) - 20} more" if len(bad) > 20 else ""
    return AnchorDivError(
        f"{len(bad)} of {total} image file(s) cannot be read ({listed}{more}); fix or remove "
        f"them, or skip them with on_error='skip' (--on-error skip)"
    )


_guard_forkserver()
