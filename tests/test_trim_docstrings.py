"""tools/trim_docstrings.py: private docstrings become their summary, nothing else changes, and a
second run is a no-op."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import trim_docstrings as trim  # noqa: E402

SOURCE = '''"""Module docstring.

Kept whole."""


def helper(x):
    """Double ``x``, a long summary that runs on past the first line of this docstring so that
    it continues here.

    Parameters
    ----------
    x : float
        A number.
    """
    return 2 * x  # a comment stays


class Public:
    """A public class.

    Parameters
    ----------
    none
    """

    def method(self):
        """Kept: a public class's method.

        More.
        """

    def _private(self):
        r"""Raw \\alpha summary::

            block
        """


def example():
    """Has an example.

    >>> 1 + 1
    2
    """
'''


def test_trims_only_non_public_docstrings():
    public = {("m", "Public"), ("m", "Public.method")}
    out = trim.trim_source(SOURCE, "m", public)
    assert '    """Double ``x``, a long summary that runs on past the first line of this' in out
    assert 'it continues here."""\n    return 2 * x  # a comment stays' in out
    assert "Parameters\n    ----------\n    none" in out  # Public kept
    assert '"""Kept: a public class\'s method.\n\n        More.' in out
    assert 'r"""Raw \\alpha summary."""' in out  # a '::' intro without its block ends in '.'
    assert ">>> 1 + 1" in out and "Kept whole." in out
    assert trim.trim_source(out, "m", public) == out  # idempotent
    assert SOURCE.count("\n") - out.count("\n") == 9


def test_public_set_covers_the_package_all():
    public = trim.public_set("anchordiv")
    assert ("anchordiv.retrieval.divergence", "top_k") in public
    assert ("anchordiv.anchors.base", "AnchorModel.embed") in public  # a public class's method
    assert ("anchordiv.data.wordnet", "parse_data_line") not in public  # module members: not
