"""Retrieval: scoring a gallery with an anchor model.

:mod:`.divergence` derives the query/key terms, the one-GEMM pairwise form and streaming top-k
from the model's cumulant; :mod:`.index` keeps a gallery's keys (and the MIPS/faiss export);
:mod:`.baselines` has cosine and image–text inversion; :mod:`.metrics` AUPRC; :mod:`.sharding`
scans on the devices of a JAX mesh.  The function ``divergence`` is ``anchordiv.divergence``
(here the name is the module's).
"""

from .baselines import cosine, inversion
from .divergence import (
    bregman,
    key_terms,
    mips_keys,
    mips_offset,
    mips_queries,
    pairwise,
    query_terms,
    top_k,
)
from .index import FaissIndex, GalleryIndex, L2Reduction, merge_results, recall_at_k  # noqa: F401
from .metrics import LEVEL, auprc, prevalence  # noqa: F401

__all__ = [
    "FaissIndex",
    "GalleryIndex",
    "auprc",
    "bregman",
    "cosine",
    "inversion",
    "key_terms",
    "mips_keys",
    "mips_offset",
    "mips_queries",
    "pairwise",
    "prevalence",
    "query_terms",
    "recall_at_k",
    "top_k",
]
