"""The ``anchordiv`` command.  Each subcommand lives in :mod:`anchordiv.app.commands` as a module
with ``register(subparsers)`` (adds its parser) and ``run(args)``; this file only assembles them."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from typing import NoReturn

from ..errors import AnchorDivError, OutputExistsError
from ..io import pinned_digests

#: Subcommand modules under anchordiv.app.commands, in the order --help lists them.
COMMANDS = (
    "embed fit search evaluate curve adapt diagnose demo study priors cache build_models "
    "build_prior"
).split()


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line, as every other user error of the
    command: ``anchordiv CMD: error: ...`` (exit status 2), no usage block before it."""

    #: the subcommands' parsers by name (set by :func:`build_parser`)
    commands: dict = {}

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> Parser:
    from .. import __version__

    parser = Parser(
        prog="anchordiv",
        description="Anchor divergences: task-specific semantic geometry on fixed contrastive "
        "embeddings. Fit an anchor model to text-anchor embeddings, then rank a "
        "gallery by the divergence it induces.",
    )
    parser.add_argument("--version", action="version", version=f"anchordiv {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f".commands.{name}", __package__)
        module.register(sub)
        sub.choices[name.replace("_", "-")].set_defaults(func=module.run)
    parser.commands = sub.choices
    return parser


def main(argv: list[str] | None = None) -> int:
    import_families(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)  # a usage error: one line, SystemExit(2)
    if extra:  # reported by the subcommand's parser: "anchordiv adapt: error: ..."
        command = getattr(args, "command", None)
        (parser.commands.get(command) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    original = warnings.formatwarning
    warnings.formatwarning = lambda message, *_, **__: (
        f"anchordiv {args.command}: warning: {message}\n"
    )
    try:
        check_environment(args)  # before any work: the cache, the device, --family
        from ..data.cache import use_compilation_cache

        use_compilation_cache()
        with pinned_digests(getattr(args, "sha256", None)):
            return int(args.func(args) or 0)
    except USER_ERRORS as err:
        print(f"anchordiv {args.command}: error: {user_message(err)}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = original


def check_environment(args) -> None:
    """What every command needs, checked before it reads or computes anything: the cache
    directory ``$ANCHORDIV_CACHE`` (a file there is an error naming the variable, not a "Not a
    directory" after the work), the torch ``--device`` (a CUDA device that is not there is said
    so) and ``--family`` (the family of a saved posterior or prior of the user's kind)."""
    import os
    from pathlib import Path

    from ..data.cache import CACHE_ENV

    value = os.environ.get(CACHE_ENV)
    if value:
        path = Path(value).expanduser()
        parent = next((p for p in (path, *path.parents) if p.exists()), None)
        if parent is not None and not parent.is_dir():
            where = "is a file" if parent == path else f"is inside the file {parent}"
            raise AnchorDivError(
                f"${CACHE_ENV}: {value} {where}; the embedding cache needs a folder (set "
                f"{CACHE_ENV} to a folder, or unset it for the default)"
            )
    device = getattr(args, "device", None)
    if device is not None and str(device) != "cpu":
        from ..data.encoders import check_device

        check_device(device)
    if getattr(args, "family", None) is not None:
        from .commands._options import load_family

        load_family(args.family)  # registers a kind of the user's own


def import_families(argv: list[str]) -> None:
    """Import ``--family MODULE:CLASS`` before the parser is built (errors: later)."""
    specs = [b for a, b in zip(argv, argv[1:]) if a == "--family"]
    specs += [a.split("=", 1)[1] for a in argv if a.startswith("--family=")]
    from .commands._io import import_object

    for spec in specs:
        try:
            import_object(spec, "--family")
        except Exception:  # noqa: BLE001 — anchordiv adapt reports it with the flag's name
            continue


#: Errors caused by the user's input or files: reported in one line, exit code 2, no traceback.
USER_ERRORS = (AnchorDivError, OSError, UnicodeDecodeError)


def user_message(err: BaseException) -> str:
    """One line for a user error (file errors name the file)."""
    if isinstance(err, OutputExistsError):
        return err.message("--overwrite")
    if isinstance(err, OSError) and getattr(err, "filename", None):
        return f"{err.strerror or err}: {err.filename}"
    if isinstance(err, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({err.reason} at byte {err.start})"
    return str(err)


if __name__ == "__main__":
    sys.exit(main())
