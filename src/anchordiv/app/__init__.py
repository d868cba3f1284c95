"""The application layer: the ``anchordiv`` command line (:mod:`.cli`, :mod:`.commands`), the
studies (:mod:`.studies`), their reports (:mod:`.report`) and prior building (:mod:`.build`)."""

#: The namespaces a user reaches here (:mod:`.build`: broad priors and their cards).
__all__ = ["build"]


def __getattr__(name):
    """The submodules of ``__all__`` import on first use (``anchordiv.app.build``)."""
    if name in __all__:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
