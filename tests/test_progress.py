"""Progress output: a bar on a terminal, whole lines in a log (no carriage returns)."""

import io
import time

from helpers import normed
from anchordiv import progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_piped_progress_is_whole_lines(monkeypatch):
    monkeypatch.setenv("ANCHORDIV_PROGRESS_INTERVAL", "0")
    log = io.StringIO()
    for _ in progress.tqdm(range(4), desc="curve", unit="cell", file=log):
        time.sleep(0.01)
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("curve:   0%") and lines[-1].startswith("curve: 100%")
    assert all(line.startswith("curve:") for line in lines) and "4/4" in lines[-1]


def test_lines_are_periodic(monkeypatch):
    monkeypatch.setenv("ANCHORDIV_PROGRESS_INTERVAL", "3600")
    log = io.StringIO()
    with progress.tqdm(total=1000, desc="SVI", unit="step", file=log) as bar:
        for _ in range(1000):
            bar.update()
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and lines[-1].startswith("SVI: 100%")  # final only: no 0 % line


def test_a_quick_top_k_in_a_pipe_leaves_one_line(monkeypatch, capsys):
    """Issue 27: two lines (0 % and 100 %) per ``top_k`` call in a piped log."""
    import numpy as np

    import anchordiv as ad

    monkeypatch.delenv("ANCHORDIV_PROGRESS_INTERVAL", raising=False)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4))
    x = normed(x)
    model = ad.fit("gaussian", x, tau=5.0)
    capsys.readouterr()
    for _ in range(3):
        ad.top_k(model, x[:2], x, 3, chunk=4, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and all("100%" in line for line in lines), lines


def test_terminal_gets_the_ordinary_bar():
    tty = _Terminal()
    assert progress.interactive(tty) and not progress.interactive(io.StringIO())
    bar = progress.tqdm(range(2), file=tty)
    assert not isinstance(bar, progress.LineBar)
    list(bar)
    assert "\r" in tty.getvalue()


def test_disabled_bar_prints_nothing():
    log = io.StringIO()
    list(progress.tqdm(range(3), file=log, disable=True))
    assert log.getvalue() == ""
