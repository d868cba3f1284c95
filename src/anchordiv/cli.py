"""The ``anchordiv`` command.  Each subcommand lives in :mod:`anchordiv.commands` as a module
with ``register(subparsers)`` (adds its parser and sets ``func``); this file only assembles them."""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import AnchorDivError

#: Subcommand modules under anchordiv.commands, in the order --help lists them.
COMMANDS = ["embed", "fit", "search", "evaluate", "curve", "adapt", "demo", "study", "build_models",
            "build_prior"]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="anchordiv",
        description="Anchor divergences: task-specific semantic geometry on fixed contrastive "
                    "embeddings. Fit an anchor model to text-anchor embeddings, then rank a "
                    "gallery by the divergence it induces.")
    parser.add_argument("--version", action="version", version=f"anchordiv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except AnchorDivError as err:
        print(f"anchordiv {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
