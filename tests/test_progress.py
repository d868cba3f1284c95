"""Progress output: a bar on a terminal, whole lines in a log (no carriage returns)."""

import io
import time

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
    assert len(lines) == 2 and lines[-1].startswith("SVI: 100%")   # first and final only


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
