"""Broad priors shipped in ``models/``: Gaussians fitted to broad anchors of the default encoder.

* ``wordnet-glosses-gaussian``: a seeded subsample of WordNet noun glosses from
  :func:`~anchordiv.studies.wordnet_imagenet.broad_pool` (everything outside the 1,000
  ImageNet classes and their subtrees, so the WordNet → ImageNet study's items and classes are
  never broad anchors);
* ``clinical-text-gaussian``: a seeded subsample of general clinical text — HPO
  "name: definition" texts and ICD-10-CM descriptions (``data.clinical.hpo_anchors`` +
  ``icd10_anchors``).  It overlaps the sources of the pathology anchors (a broad prior is
  general knowledge), never the Open-i reports the study retrieves.

Built by ``anchordiv build-models`` (:func:`build_models`); each is an ``ad.save_model``
directory whose card names the encoder, the anchor source, the number of anchors and the seed.
The demo loads them (:func:`load_prior`) instead of re-encoding tens of thousands of texts.
Adaptation of the gaussian and latent kinds needs only the broad mean and covariance, which a
saved Gaussian holds exactly (see :func:`~anchordiv.studies.wordnet_imagenet.broad_from_model`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..anchors import fit
from ..errors import AnchorDivError
from ..io import load_card, load_model, save_model
from ._common import MINILM_TAU, Embed, subsample

WORDNET_PRIOR = "wordnet-glosses-gaussian"
CLINICAL_PRIOR = "clinical-text-gaussian"
MODELS_ENV = "ANCHORDIV_MODELS"


def default_models_dir() -> Path:
    """``$ANCHORDIV_MODELS``, else the repository's ``models/`` (beside ``src/``), else
    ``./models``."""
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV])
    repo = Path(__file__).resolve().parents[3] / "models"
    return repo if repo.is_dir() else Path("models")


def wordnet_broad_texts(n: int | None, seed: int = 0) -> list[str]:
    """Glosses of ``n`` seeded synsets of the broad pool (see module docstring)."""
    from ..data import imagenet, wordnet
    from .wordnet_imagenet import broad_pool

    pool = broad_pool(imagenet.wnids())
    return [wordnet.gloss(pool[i]) for i in subsample(len(pool), n, seed)]


def clinical_broad_texts(n: int | None, seed: int = 0) -> list[str]:
    """``n`` seeded texts from all HPO "name: definition" texts and ICD-10-CM descriptions."""
    from ..data import clinical

    texts = clinical.hpo_anchors() + clinical.icd10_anchors()
    return [texts[i] for i in subsample(len(texts), n, seed)]


SOURCES = {
    WORDNET_PRIOR: (wordnet_broad_texts, "WordNet 3.0 noun glosses outside the 1,000 ImageNet "
                                         "classes and their subtrees"),
    CLINICAL_PRIOR: (clinical_broad_texts, "HPO 'name: definition' texts and ICD-10-CM "
                                           "descriptions"),
}


def build_prior(name: str, embed: Embed, encoder_id: str, out_dir, *, n: int | None,
                seed: int = 0, tau: float = MINILM_TAU) -> Path:
    """Embed ``n`` broad anchors of source ``name``, fit a Gaussian, save it to
    ``out_dir/name``; returns the model directory."""
    if name not in SOURCES:
        raise AnchorDivError(f"prior: unknown {name!r}; choose one of {', '.join(SOURCES)}")
    texts_fn, source = SOURCES[name]
    texts = texts_fn(n, seed)
    anchors = np.asarray(embed(texts), np.float32)
    model = fit("gaussian", anchors, tau=tau)
    return save_model(model, Path(out_dir) / name, encoder=encoder_id, anchor_source=source,
                      n_anchors=len(texts), subsample_seed=seed, tau=tau,
                      built_by="anchordiv build-models")


def load_prior(name: str, models_dir=None, encoder_id: str | None = None):
    """The saved prior ``name`` from ``models_dir`` (default :func:`default_models_dir`), or
    None when it is not there or was built with an encoder other than ``encoder_id``."""
    path = Path(models_dir or default_models_dir()) / name
    if not (path / "card.json").is_file():
        return None
    if encoder_id is not None and load_card(path).get("encoder") != encoder_id:
        return None
    return load_model(path)
