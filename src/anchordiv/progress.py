"""Progress bars readable in log files: :func:`tqdm` is tqdm's bar on a terminal, else one plain
line at most every ``ANCHORDIV_PROGRESS_INTERVAL`` seconds (default 10) and the final line."""

from __future__ import annotations

import os
import sys

from tqdm.std import tqdm as _terminal_bar


#: default seconds between two lines when stderr is not a terminal
DEFAULT_INTERVAL = 10.0


class LineBar(_terminal_bar):
    r"""A tqdm bar that prints whole lines (no ``\r``) at most every ``mininterval`` seconds.

    For logs and pipes, where a redrawn bar would leave control characters.

    Parameters
    ----------
    *args, **kwargs
        As for ``tqdm.tqdm``.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("mininterval", _interval())
        kwargs.setdefault("maxinterval", max(kwargs["mininterval"], 1.0))
        super().__init__(*args, **{"ascii": True, "dynamic_ncols": False, "ncols": 80, **kwargs})

    def display(self, msg=None, pos=None):
        if self.fp is None:
            return True
        if self.n == 0 and self.mininterval > 0 and not getattr(self, "_closing", False):
            return True  # no "0 %" line: the first one is due after the interval
        line = (msg if msg is not None else self.__str__()).strip()
        if line and line != getattr(self, "_last_line", None):
            self.fp.write(line + "\n")
            self.fp.flush()
            self._last_line = line
        return True

    def close(self):
        if not self.disable:
            self._closing = True
            self.display()  # the final line (tqdm's own close would redraw with \r)
            self.sp = None
        super().close()


def _interval() -> float:
    try:
        return max(float(os.environ.get("ANCHORDIV_PROGRESS_INTERVAL", DEFAULT_INTERVAL)), 0.0)
    except ValueError:
        return DEFAULT_INTERVAL


def interactive(stream=None) -> bool:
    """Whether a stream is a terminal that can redraw a bar in place.

    Parameters
    ----------
    stream : file-like, optional
        Default ``sys.stderr``.

    Returns
    -------
    bool
        True for a TTY.
    """
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def tqdm(*args, **kwargs):
    """A progress bar: ``tqdm.tqdm`` on a terminal, :class:`LineBar` otherwise.

    Parameters
    ----------
    *args, **kwargs
        As for ``tqdm.tqdm``.

    Returns
    -------
    tqdm.tqdm
        The bar (also an iterator over its iterable).
    """
    stream = kwargs.get("file")
    return (_terminal_bar if interactive(stream) else LineBar)(*args, **kwargs)
