"""The ``anchordiv`` command.  Each subcommand lives in :mod:`anchordiv.app.commands` as a module
with ``register(subparsers)`` (adds its parser) and ``run(args)``; this file only assembles them."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from ..errors import AnchorDivError, OutputExistsError
from ..io import pinned_digests

#: Subcommand modules under anchordiv.app.commands, in the order --help lists them.
COMMANDS = (
    "embed fit search evaluate curve adapt diagnose demo study priors cache build_models "
    "build_prior"
).split()


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
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
    return parser


def main(argv: list[str] | None = None) -> int:
    import_families(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from ..data.cache import use_compilation_cache

    use_compilation_cache()
    original = warnings.formatwarning
    warnings.formatwarning = lambda message, *_, **__: (
        f"anchordiv {args.command}: warning: {message}\n"
    )
    try:
        with pinned_digests(getattr(args, "sha256", None)):
            return int(args.func(args) or 0)
    except USER_ERRORS as err:
        print(f"anchordiv {args.command}: error: {user_message(err)}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = original


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
