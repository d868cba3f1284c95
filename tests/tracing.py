"""Trace one call through ``src/anchordiv`` the way a reader follows it (``sys.setprofile``).

``trace(fn)`` runs ``fn()`` once and records every Python call whose code lives under
``src/anchordiv``: which file and function it entered and from which file.  The counts the
internals page quotes are read from it:

- ``files``: the files of ``src/anchordiv`` the call executes code in;
- ``cross``: calls from one of those files into another (a call within one file is not counted);
- ``calls``: every anchordiv call, cross-module or not;
- ``entered(path, name)``: whether the call ran the function ``name`` of ``path``;
- ``entries``: for each file, how many times control came into it from another file and, before
  returning, called on into a third file (an entry that only checks or looks up and returns is a
  leaf, not counted) -- the "module entered" count of the issue-46 budget.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anchordiv

SRC = Path(anchordiv.__file__).resolve().parent


@dataclass
class Trace:
    """The anchordiv calls of one traced call."""

    edges: Counter = field(default_factory=Counter)  # (caller file | None, callee file, name) -> n
    entries: Counter = field(default_factory=Counter)  # file -> entries that call on into a third

    @property
    def files(self) -> set[str]:
        return {callee for _, callee, _ in self.edges}

    @property
    def cross(self) -> int:
        return sum(
            n for (caller, callee, _), n in self.edges.items() if caller and caller != callee
        )

    @property
    def calls(self) -> int:
        return sum(self.edges.values())

    def entered(self, path: str, name: str) -> bool:
        return any(callee == path and fn == name for _, callee, fn in self.edges)


def _rel(filename: str) -> str | None:
    try:
        return Path(filename).resolve().relative_to(SRC).as_posix()
    except ValueError:
        return None


def trace(fn) -> Trace:
    """Run ``fn()`` under ``sys.setprofile`` and return its :class:`Trace`."""
    out = Trace()
    rel_of: dict[str, str | None] = {}

    def rel(filename):
        if filename not in rel_of:
            rel_of[filename] = _rel(filename)
        return rel_of[filename]

    # one record per active Python frame: [file, caller file, entry?, files it called on into]
    stack: list[list] = []

    def profile(frame, event, arg):
        if event == "return":
            if stack:
                file, caller, entry, onward = stack.pop()
                if entry and onward - {caller, file}:
                    out.entries[file] += 1
            return
        if event != "call":
            return
        callee = rel(frame.f_code.co_filename)
        if callee is not None and callee.endswith("__init__.py"):
            callee = None
        back = frame.f_back
        while back is not None and back.f_code.co_filename.startswith("<"):
            back = back.f_back  # a generated dataclass __init__ is its caller's call
        caller = rel(back.f_code.co_filename) if back is not None else None
        if callee is None:
            stack.append([None, None, False, set()])
            return
        out.edges[(caller, callee, frame.f_code.co_name)] += 1
        if caller is not None and caller != callee:
            for rec in reversed(stack):  # the active entry of the caller's module
                if rec[0] == caller and rec[2]:
                    rec[3].add(callee)
                    break
        stack.append([callee, caller, caller != callee, set()])

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return out
