"""Broad priors shipped in ``models/`` (:data:`PRIORS`: Gaussians of the default encoder, each
built by :func:`anchordiv.app.build.build_prior` from a :class:`~anchordiv.app.build.PriorSpec`
whose card names its vocabulary regions, exclusions and counts; ``anchordiv build-models``),
and the leave-finding-out Open-i report-sentence priors built at run time
(:func:`report_priors`; docs/guides/broad-priors.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..build import BuiltPrior, PriorSpec, build_prior, resolve_encoder
from ...data.vocab import Source, entries
from ...errors import AnchorDivError
from ...io import MODELS_ENV as MODELS_ENV  # noqa: F401  (the studies' name for it)
from ...io import load_card, load_model, models_dir

WORDNET_PRIOR = "wordnet-glosses-gaussian"
REPORT_PRIOR = "openi-sentences-gaussian"
CLINICAL_PRIOR = "clinical-text-gaussian"

#: WordNet roots of the visual-art / style region (the domain-matched prior of the style study)
VISUAL_ART_ROOTS = (
    "creation.n.02",
    "decoration.n.01",
    "visual_communication.n.01",
    "artistic_style.n.01",
    "artistic_movement.n.01",
    "needlework.n.01",
    "fine_arts.n.01",
)
#: HPO roots of the chest region: respiratory system, thoracic cavity, thorax morphology
CHEST_HPO_ROOTS = ("HP:0002086", "HP:0045027", "HP:0000765")
#: ImageNet-R styles WordNet lacks as a phrase -> the word looked up instead
STYLE_WORDS = {"plastic object": "plastic", "plush object": "plush"}


#: ``$ANCHORDIV_MODELS``, the installed package's priors, the checkout's ``models/``, ``./models``
default_models_dir = models_dir


def style_senses(styles=None) -> tuple[str, ...]:
    """Every WordNet noun sense of every ImageNet-R style word (:data:`STYLE_WORDS` maps the
    phrases WordNet lacks), sorted: the target synsets a style prior must exclude."""
    from ...data import imagenet, wordnet

    words = [STYLE_WORDS.get(s, s) for s in (styles or imagenet.IMAGENET_R_STYLES)]
    return tuple(sorted({n for w in words for n in wordnet.senses(w)}))


def finding_hpo_roots() -> tuple[str, ...]:
    """The HPO roots of every chest finding (:data:`anchordiv.data.clinical.FINDINGS`)."""
    from ...data.clinical import FINDINGS

    return tuple(h for f in FINDINGS.values() for h in f.hpo)


def _imagenet_wnids() -> tuple[str, ...]:
    from ...data import imagenet

    return tuple(imagenet.wnids())


#: name -> (its sources, read when asked (WordNet loads), default n, description): the priors
#: ``build-models`` ships
PRIORS: dict[str, tuple[Callable[[], list[Source]], int | None, str]] = {
    WORDNET_PRIOR: (
        lambda: [Source("wordnet", exclude=_imagenet_wnids())],
        5000,
        "WordNet 3.0 noun glosses outside the 1,000 ImageNet classes and their subtrees",
    ),
    CLINICAL_PRIOR: (
        lambda: [Source("hpo"), Source("icd10")],
        2000,
        "HPO 'name: definition' texts and ICD-10-CM descriptions",
    ),
    "wordnet-visual-art-gaussian": (
        lambda: [Source("wordnet", VISUAL_ART_ROOTS, style_senses())],
        2000,
        "WordNet glosses of the visual-art, decoration and artistic-style region, without any "
        "sense of an ImageNet-R style word",
    ),
    "wordnet-generic-gaussian": (
        lambda: [Source("wordnet", exclude=_imagenet_wnids() + style_senses())],
        2000,
        "WordNet noun glosses outside the ImageNet classes and every sense of an ImageNet-R "
        "style word (with subtrees)",
    ),
    "imagenet-names-gaussian": (
        lambda: [Source("imagenet")],
        None,
        "the 1,000 ImageNet class names (objects: a wrong-domain prior for style retrieval)",
    ),
    "hpo-respiratory-thorax-gaussian": (
        lambda: [Source("hpo", CHEST_HPO_ROOTS, finding_hpo_roots())],
        2000,
        "HPO terms of the respiratory system and thorax, without the chest findings' subtrees",
    ),
    "hpo-all-gaussian": (
        lambda: [Source("hpo", exclude=finding_hpo_roots())],
        2000,
        "all HPO terms without the chest findings' subtrees",
    ),
}


def prior_spec(name: str, n: int | None = None) -> PriorSpec:
    """The :class:`~anchordiv.app.build.PriorSpec` of a shipped prior.

    Parameters
    ----------
    name : str
        One of the shipped priors (``wordnet-glosses-gaussian``, ``clinical-text-gaussian``,
        ...).
    n : int, optional
        Number of anchors (default: its own).

    Returns
    -------
    PriorSpec
        The recipe ``anchordiv build-prior`` follows.

    Raises
    ------
    AnchorDivError
        An unknown name.

    Examples
    --------
    >>> from anchordiv.app.studies import prior_spec
    >>> spec = prior_spec("wordnet-glosses-gaussian")
    >>> spec.name, spec.n
    ('wordnet-glosses-gaussian', 5000)
    """
    if name not in PRIORS:
        raise AnchorDivError(f"prior: unknown {name!r}; choose one of {', '.join(PRIORS)}")
    sources, default, description = PRIORS[name]
    return PriorSpec(name, sources(), default if n is None else n, description=description)


def load_prior(name: str, models_dir=None, encoder_id: str | None = None):
    """A shipped prior's saved model by name, if it is there and matches the encoder.

    Parameters
    ----------
    name : str
        The prior's name (a directory of ``models_dir``).
    models_dir : str or Path, optional
        Default :func:`default_models_dir`.
    encoder_id : str, optional
        Return None when the prior was built with another encoder.

    Returns
    -------
    Gaussian or None
        The saved model, or None when it is not there or was built with another encoder.

    Examples
    --------
    >>> from anchordiv.app.studies import load_prior
    >>> load_prior("no-such-prior") is None
    True
    """
    path = Path(models_dir or default_models_dir()) / name
    if not (path / "card.json").is_file():
        path = path.with_name(f"{name}-gaussian")  # a short name
    if not (path / "card.json").is_file():
        return None
    if encoder_id is not None and load_card(path).get("encoder") != encoder_id:
        return None
    return load_model(path)


def report_prior_spec(finding: str, held_out: Sequence[str]) -> PriorSpec:
    """The leave-finding-out report-sentence prior of ``finding``: every sentence of the Open-i
    reports outside ``held_out`` (uids), minus the reports carrying ``finding`` and every
    sentence mentioning it (``Source("openi", exclude=(finding, *held_out))``), all of them."""
    held = tuple(sorted(set(held_out)))
    return PriorSpec(
        f"{REPORT_PRIOR}-without-{finding.replace(' ', '-')}",
        [Source("openi", exclude=(finding, *held))],
        None,
        description=f"Open-i report sentences outside the {len(held)} held-out "
        f"reports, without the reports carrying {finding} and every "
        f"sentence mentioning it",
    )


def report_priors(
    findings: Sequence[str],
    held_out: Sequence[str],
    *,
    encoder="minilm",
    embed: Callable | None = None,
    tau: float | None = None,
) -> dict[str, BuiltPrior]:
    """``{finding: BuiltPrior}``: :func:`report_prior_spec` of each finding, built by
    :func:`~anchordiv.app.build.build_prior` (a Gaussian; ``encoder`` / ``embed`` / ``tau`` as
    there).  The sentences of every report outside ``held_out`` are embedded once and each
    prior looks its sentences up (each is a subset of them), so k findings cost one encoding."""
    embed_fn, encoder_id, tau = resolve_encoder(encoder, embed, tau)
    union = [e.text for e in entries(Source("openi", exclude=tuple(sorted(set(held_out)))))]
    vectors = np.asarray(embed_fn(union))
    row = {t: i for i, t in enumerate(union)}

    def lookup(texts):
        return vectors[[row[t] for t in texts]]

    return {
        f: build_prior(report_prior_spec(f, held_out), encoder=encoder_id, embed=lookup, tau=tau)
        for f in findings
    }


def report_prior_points(
    reports,
    gallery_rows,
    findings: Sequence[str],
    *,
    embed: Callable,
    encoder_id: str,
    tau: float,
    max_reports: int | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """``{finding: moment points [2r, d]}`` of :func:`report_priors` for a clinical retrieval
    task whose gallery (queries included) is ``reports`` rows ``gallery_rows``: the broad
    anchors a transfer study adapts from (as the shipped priors', via ``stand_in_anchors``).
    ``max_reports``: a seeded subsample of the reports outside the gallery (the others are held
    out too; for quick runs), None: all of them."""
    from ...adaptation import stand_in_anchors
    from ._common import subsample

    rest = np.setdiff1d(np.arange(len(reports)), gallery_rows)
    keep = set(rest[subsample(len(rest), max_reports, seed)].tolist())
    held = [u for i, u in enumerate(reports.uids) if i not in keep]
    built = report_priors(findings, held, encoder=encoder_id, embed=embed, tau=tau)
    return {f: stand_in_anchors(b.model) for f, b in built.items()}
