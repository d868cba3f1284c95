"""Real anchors, documents and encoders, all usable offline.

- :mod:`.wordnet` — WordNet 3.0 noun synsets, glosses, subtrees (broad anchors);
- :mod:`.imagenet` — the 1,000 ILSVRC-2012 classes, ImageNet-R subset and styles, prompts;
- :mod:`.clinical` — HPO terms, ICD-10-CM descriptions, pathology-specific anchor sets;
- :mod:`.layouts` — image datasets on disk (ImageNet, ImageNet-R, CUB-200, Sketchy, CheXpert, a
  folder per class) with labels and query/gallery splits;
- :mod:`.openi` — Open-i chest X-ray reports with MeSH labels (a retrieval dataset);
- :mod:`.encoders` — MiniLM and open_clip encoders behind one interface (:func:`get_encoder`);
- :mod:`.imageio` — image files read as 8-bit RGB by bit depth, hashed once, decoded in workers;
- :mod:`.cache` — the content-addressed embedding cache behind :func:`embed_texts` and, per
  image file, :func:`embed_images`.

Heavy dependencies (nltk, torch, open_clip) are imported only when used.
"""

from . import cache, clinical, encoders, imagenet, layouts, openi, wordnet
from .encoders import Encoder, check_images, embed_images, embed_texts, get_encoder, readable_images

__all__ = [
    "Encoder",
    "cache",
    "check_images",
    "clinical",
    "embed_images",
    "embed_texts",
    "encoders",
    "get_encoder",
    "imagenet",
    "layouts",
    "openi",
    "readable_images",
    "wordnet",
]
