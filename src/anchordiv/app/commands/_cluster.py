"""``--scheduler`` / ``--workers``: run a subcommand's work on a Dask cluster."""

from __future__ import annotations

import contextlib

from ._io import positive_int


def add_cluster_options(parser) -> None:
    """Add the mutually exclusive ``--scheduler ADDRESS`` and ``--workers N`` options."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler listens at ADDRESS "
        "(e.g. tcp://10.0.0.5:8786); needs anchordiv[distributed]",
    )
    group.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="run on a local Dask cluster of N process workers (one thread "
        "each, 127.0.0.1), started for this command",
    )


def cluster(args):
    """A ``distributed.Client`` with ``--scheduler`` or ``--workers`` (closed after), else None."""
    if args.scheduler is None and args.workers is None:
        return contextlib.nullcontext()
    from ...scale.dask import connect

    return connect(scheduler=args.scheduler, workers=args.workers)
