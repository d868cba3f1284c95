"""Build a broad prior from real vocabularies: select anchors, embed (cached), fit, save with a
card that records sources, counts, seed, encoder, τ and hashes, from which
:meth:`PriorSpec.from_card` rebuilds the same anchors (docs/guides/broad-priors.md)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..anchors import AnchorModel, fit
from ..errors import AnchorDivError
from ..io import load_card, load_model, save_model

BUILT_BY = "anchordiv.app.build.build_prior"


@dataclasses.dataclass(frozen=True)
class PriorSpec:
    """What a prior is built from: ``name``, ``sources`` (:class:`~anchordiv.data.vocab.Source`),
    ``n`` anchors drawn by ``seed`` (None: all), the anchor-model ``kind`` fitted to them and a
    one-line ``description`` for the card."""

    name: str
    sources: tuple
    n: int | None = 2000
    seed: int = 0
    kind: str = "gaussian"
    description: str = ""

    def __post_init__(self):
        object.__setattr__(self, "sources", tuple(self.sources))

    @classmethod
    def from_card(cls, card: dict) -> "PriorSpec":
        """The spec a saved prior was built from (its card's ``prior`` entry)."""
        from ..data.vocab import Source

        if "prior" not in card:
            raise AnchorDivError("card: has no 'prior' entry (not built by anchordiv.app.build)")
        p = card["prior"]
        srcs = [Source(s["kind"], tuple(s["roots"]), tuple(s["exclude"])) for s in p["sources"]]
        return cls(p["name"], srcs, p["n"], p["seed"], p["kind"], p["description"])


@dataclasses.dataclass
class BuiltPrior:
    """Result of :func:`build_prior`: the fitted ``model``, its ``card``, the anchor ``ids`` and
    ``texts`` and their embeddings ``anchors [n, d]``; ``path`` where it was saved (or None)."""

    model: AnchorModel
    card: dict
    ids: list[str]
    texts: list[str]
    anchors: np.ndarray
    path: Path | None = None


def texts_sha256(texts: Sequence[str]) -> str:
    """SHA-256 over the texts, length-prefixed, in order."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(f"{len(b)}:".encode() + b)
    return h.hexdigest()


def _card(
    spec: PriorSpec, pool, drawn, encoder_id: str, tau: float, texts, fit_options: dict
) -> dict:
    sources = [
        {**s.describe(), "pool": c, "drawn": k} for s, c, k in zip(spec.sources, pool, drawn)
    ]
    return {
        "prior": {**dataclasses.asdict(spec), "sources": sources},
        "anchor_source": spec.description
        or "; ".join(f"{s['kind']}: {', '.join(s['roots']) or 'all'}" for s in sources),
        "n_anchors": len(texts),
        "subsample_seed": spec.seed,
        "encoder": encoder_id,
        "tau": tau,
        "fit_options": fit_options,
        "texts_sha256": texts_sha256(texts),
        "built_by": BUILT_BY,
    }


def resolve_encoder(encoder, embed: Callable | None, tau: float | None):
    """``(embed(texts) -> [n, d], encoder id, tau)`` from an encoder name / object, or from an
    explicit ``embed`` function (then ``encoder`` must be its id string and ``tau`` given)."""
    if embed is not None:
        if not isinstance(encoder, str) or tau is None:
            raise AnchorDivError(
                "embed: with a custom embed function pass encoder=<its id string> and tau"
            )
        return embed, encoder, float(tau)
    from ..data.encoders import Encoder, embed_texts, get_encoder

    enc = encoder if isinstance(encoder, Encoder) else get_encoder(str(encoder))
    tau = float(enc.logit_scale if tau is None else tau)
    return (lambda texts: embed_texts(enc, texts)), enc.id, tau


def build_prior(
    spec: PriorSpec,
    *,
    encoder="minilm",
    embed: Callable | None = None,
    tau: float | None = None,
    out=None,
    fit_options: dict | None = None,
    overwrite: bool = False,
) -> BuiltPrior:
    """Select ``spec``'s anchors (:func:`anchordiv.data.vocab.select`), embed them with
    ``encoder`` (a name for :func:`~anchordiv.data.get_encoder`, or an Encoder; cached), fit
    ``spec.kind`` with the encoder's τ (or ``tau``) and, with ``out``, save model + card there.

    ``embed``: an explicit ``embed(texts) -> [n, d]`` (tests, other pipelines); then ``encoder``
    is the id string recorded in the card and ``tau`` is required.  An existing non-empty
    ``out`` is refused (before anything is embedded) unless ``overwrite=True``."""
    from ..data.vocab import select
    from ..errors import check_output

    if out is not None:
        check_output(out, overwrite)
    if not spec.sources:
        raise AnchorDivError(f"prior {spec.name!r}: no sources")
    chosen, pool, drawn = select(spec.sources, spec.n, spec.seed)
    embed_fn, encoder_id, tau = resolve_encoder(encoder, embed, tau)
    texts = [e.text for e in chosen]
    anchors = np.asarray(embed_fn(texts), np.float32)
    model = fit(spec.kind, anchors, tau=tau, **(fit_options or {}))
    card = _card(spec, pool, drawn, encoder_id, tau, texts, dict(fit_options or {}))
    path = save_model(model, out, overwrite=overwrite, **card) if out is not None else None
    return BuiltPrior(
        model, load_card(path) if path else card, [e.id for e in chosen], texts, anchors, path
    )


def load_prior(path) -> tuple[AnchorModel, PriorSpec, dict]:
    """``(model, spec, card)`` of a prior saved by :func:`build_prior`."""
    card = load_card(path)
    return load_model(path), PriorSpec.from_card(card), card
