"""``--family MODULE:CLASS``: one flag on every command that reads a prior, a posterior or a
kind, whose import errors are one-line CLI errors (exit code 2) naming the flag."""

import re

import pytest

from anchordiv.app.cli import build_parser, main

#: commands that read a prior, a posterior or a kind, with arguments that parse
COMMANDS = {
    "adapt": ["adapt", "gaussian", "b.npy", "t.npy", "-o", "out"],
    "diagnose": ["diagnose", "post", "-o", "out"],
    "evaluate": ["evaluate", "m", "--gallery", "g.npy", "--relevance", "r.npy", "-o", "out"],
    "curve": ["curve", "b.npy", "t.npy", "i.npy", "r.npy", "-o", "out"],
}

BROKEN = {
    "syntax.py": "import anchordiv as ad\nclass Oops(ad.Family)\n    pass\n",
    "abstract.py": '''
import numpy as np
import anchordiv as ad


@ad.family("options-incomplete")
class Incomplete(ad.Family):
    """No to_model."""

    mu0: np.ndarray
    sites = ("mu",)
    model = staticmethod(lambda targets, **kw: None)

    @classmethod
    def from_anchors(cls, broad, targets=None):
        return cls(broad.mean(0))

    def isotropic(self):
        return self

    def prior_kwargs(self):
        return {"mu0": self.mu0}
''',
    "raises.py": "raise RuntimeError('the module fails')\n",
    "notfamily.py": "class Plain:\n    pass\n",
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_that_reads_a_kind_takes_family(command):
    args = build_parser().parse_args([*COMMANDS[command], "--family", "mod:Cls"])
    assert args.family == "mod:Cls"


@pytest.mark.parametrize(
    ("file", "attr", "match"),
    [
        ("syntax.py", "Oops", r"--family: .*syntax\.py, line 2: syntax error"),
        ("abstract.py", "Incomplete", "Incomplete does not define to_model"),
        ("raises.py", "X", "raised RuntimeError: the module fails"),
        ("notfamily.py", "Plain", "is a type, not a Family subclass"),
        ("missing.py", "X", "no such file: missing.py"),
    ],
)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_broken_family_file_is_a_clean_error(
    command, file, attr, match, tmp_path, monkeypatch, capsys
):
    """Relative to the current directory; the error before any input is read (exit code 2)."""
    monkeypatch.chdir(tmp_path)
    for name, text in BROKEN.items():
        (tmp_path / name).write_text(text)
    assert main([*COMMANDS[command], "--family", f"{file}:{attr}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"anchordiv {command}: error: --family: ")
    assert len(err.strip().splitlines()) == 1
    assert re.search(match, err), err
