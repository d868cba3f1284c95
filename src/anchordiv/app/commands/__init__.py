"""Subcommands of the ``anchordiv`` CLI, one module each (see :mod:`anchordiv.app.cli`)."""
