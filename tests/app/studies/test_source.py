"""The driver's sources: the text analogues and a dataset's images answer the same protocol."""

import inspect

import pytest

from anchordiv.app.studies._source import Source, TextSource
from anchordiv.app.studies.images import ImageData
from anchordiv.app.studies.main_job import Context


def _methods(cls) -> dict:
    return {
        name: list(inspect.signature(f).parameters)
        for name, f in vars(cls).items()
        if callable(f) and not name.startswith("_")
    }


@pytest.mark.parametrize("impl", [TextSource, ImageData])
def test_every_source_has_the_protocols_methods_and_parameters(impl):
    protocol = _methods(Source)
    have = _methods(impl)
    assert protocol, "the protocol lists no method"
    for name, params in protocol.items():
        assert name in have, f"{impl.__name__} lacks {name}"
        assert have[name] == params, f"{impl.__name__}.{name}: {have[name]} != {params}"


def test_the_context_reads_text_unless_given_a_source():
    ctx = Context(None, None, None, None, 0, 20.0, "enc")
    assert isinstance(ctx.source, TextSource)
    assert ctx.source.curve_target() == "ImageNet"
    assert ctx.source.wordnet_text(ctx, None, "") == {} == ctx.source.budget_text(ctx, None, None)
