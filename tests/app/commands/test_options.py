"""``--family MODULE:CLASS``: one flag on every command that reads a prior, a posterior or a
kind, whose import errors are one-line CLI errors (exit code 2) naming the flag."""

import re
from pathlib import Path

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


def test_search_takes_family_and_names_it_for_an_unregistered_kind(tmp_path, capsys, monkeypatch):
    """A posterior of a user's kind: ``search`` and ``evaluate`` without ``--family`` (the kind
    not registered in this process) name the flag to pass (was "import mypkg.hsfam first");
    with it they score (issue 51)."""
    import numpy as np

    from anchordiv.adaptation.registry import FAMILIES
    from helpers import clustered_anchors, unit

    userfam = Path(__file__).parents[2] / "adaptation"
    monkeypatch.syspath_prepend(str(userfam))  # cli_family.py imports userfam.user_family
    from userfam.user_family import KIND

    rng = np.random.default_rng(0)
    for name, x in (("b", unit(rng, 40, 4)), ("t", clustered_anchors(rng, 6, 4))):
        np.save(tmp_path / f"{name}.npy", x)
    np.save(tmp_path / "g.npy", unit(rng, 12, 4))
    np.save(tmp_path / "rel.npy", np.arange(12) % 3)
    family = ["--family", f"{userfam / 'userfam' / 'cli_family.py'}:FixedCovariancePrior"]
    t = str(tmp_path)
    before = FAMILIES.get(KIND)
    adapt = ["adapt", KIND, f"{t}/b.npy", f"{t}/t.npy", "-o", f"{t}/m", "--tau", "5"]
    search = ["search", f"{t}/p", f"{t}/t.npy", f"{t}/g.npy", "-o", f"{t}/r", "-k", "3"]
    evaluate = ["evaluate", f"{t}/p", "--gallery", f"{t}/g.npy", "--relevance", f"{t}/rel.npy"]
    evaluate += ["-o", f"{t}/v", "--baselines", ""]
    try:
        assert main([*adapt, *family, "--posterior-out", f"{t}/p"]) == 0
        for argv in (search, evaluate):
            FAMILIES.pop(KIND)  # a new process: the kind of the user's own is not known
            capsys.readouterr()
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1, err
            assert f"kind: unknown '{KIND}', the kind of the posterior" in err
            assert "pass --family userfam.user_family:Class" in err  # where the class lives
            assert main([*argv, *family]) == 0
        assert np.load(f"{t}/r.indices.npy").shape == (6, 3)
    finally:
        FAMILIES.pop(KIND, None)
        if before is not None:
            FAMILIES[KIND] = before


def test_a_family_from_a_file_is_named_as_a_file():
    """A posterior whose family came from ``--family file.py:Class`` records no importable
    module: the error shows the file form of the flag."""
    from anchordiv.app.commands._options import check_family_known
    from anchordiv.errors import AnchorDivError

    card = {"type": "posterior", "kind": "nowhere-kind", "family_class_module": "anchordiv_user_1"}
    with pytest.raises(AnchorDivError, match=r"pass --family path/to/file\.py:Class"):
        check_family_known(card, "p", "model")
    check_family_known({**card, "kind": "gaussian"}, "p", "model")  # registered: nothing to say
    check_family_known({"type": "anchor-model"}, "p", "model")
