"""Deprecation shims: module paths and top-level names that moved keep working for one release,
with a :class:`DeprecationWarning` naming the new place (CHANGELOG.md lists every move).

Old module paths are answered by :class:`MovedModules` (a ``sys.meta_path`` finder binding the
old name to the new module object); old top-level names by :data:`MOVED_NAMES`, forwarded by the
package's ``__getattr__``.  Not shimmed: old module paths that are now functions of the same
parent (``anchordiv.adapt``, ``anchordiv.evaluate``, ...)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

REMOVAL = "0.5.0"

#: the modules of ``anchordiv.adaptation.priors`` -> where they are since 0.4.0
PRIOR_MODULES = {
    "niw": "families.gaussian",
    "bingham": "families.latent_gaussian",
    "posterior_bingham": "families.latent_spherical",
    "dirichlet_niw": "families.mixture",
    "spectral": "families.spectral",
    "structured": "families.structured",
    "distributions": "distributions",
    "cache": "statistics",
}

#: the adaptation modules merged after 0.5 (one module per concept) -> where they are
ADAPTATION_MODULES = {
    **dict.fromkeys(["pipeline", "inference"], "api"),
    **dict.fromkeys(["family", "hooks"], "protocol"),
    "capabilities": "registry",
    **dict.fromkeys(["runners", "likelihood"], "model"),
    **dict.fromkeys(["validation", "sanity"], "methods"),
    **dict.fromkeys(["sampling", "chains"], "nuts"),
    **dict.fromkeys(["subspace", "cache", "recipe"], "statistics"),
    **{
        f"families.gaussian_{m}": "families.gaussian"
        for m in ("bartlett", "subspace", "likelihood", "evidence")
    },
    "points": "posterior",
    "variational": "svi",
}

#: old module path -> new module path; a submodule follows its package unless named earlier
MOVED_MODULES = {
    **{
        f"{package}.{old}": f"anchordiv.adaptation.{new}"
        for package in ("anchordiv.priors", "anchordiv.adaptation.priors")
        for old, new in PRIOR_MODULES.items()
    },
    **{
        f"anchordiv.adaptation.{old}": f"anchordiv.adaptation.{new}"
        for old, new in ADAPTATION_MODULES.items()
    },
    "anchordiv.adaptation.priors": "anchordiv.adaptation.families",
    "anchordiv.adaptation.mixture_gibbs": "anchordiv.adaptation.families.mixture",
    "anchordiv.adaptation.density": "anchordiv.adaptation.model",
    "anchordiv.adaptation.quantities": "anchordiv.checks.families",
    "anchordiv.build": "anchordiv.app.build",
    "anchordiv.cli": "anchordiv.app.cli",
    "anchordiv.commands": "anchordiv.app.commands",
    "anchordiv.report": "anchordiv.app.report",
    "anchordiv.studies": "anchordiv.app.studies",
    "anchordiv.criticism": "anchordiv.checks.criticism",
    "anchordiv.diagnostics": "anchordiv.checks.diagnostics",
    "anchordiv.uncertainty": "anchordiv.checks.uncertainty",
    "anchordiv.curves": "anchordiv.evaluation.curves",
    "anchordiv.baselines": "anchordiv.retrieval.baselines",
    "anchordiv.index": "anchordiv.retrieval.index",
    "anchordiv.metrics": "anchordiv.retrieval.metrics",
    "anchordiv.sharding": "anchordiv.retrieval.sharding",
    "anchordiv.distributed": "anchordiv.scale.dask",
    "anchordiv.priors": "anchordiv.adaptation.families",
    "anchordiv.scale.heap": "anchordiv.heap",
}

#: old top-level name -> the subpackage that exports it now
MOVED_NAMES = {
    **dict.fromkeys(
        "Softmax GaussianMixture AnchorMixture LatentGaussian LatentSpherical KINDS".split(),
        "anchordiv.anchors",
    ),
    **dict.fromkeys(
        "bregman mips_keys mips_offset mips_queries prevalence merge_results recall_at_k".split(),
        "anchordiv.retrieval",
    ),
    "Evaluation": "anchordiv.evaluation",
    "PriorComparison": "anchordiv.checks",
}


def warn(old: str, new: str, stacklevel: int = 3) -> None:
    warnings.warn(
        f"{old} is deprecated and will be removed in anchordiv {REMOVAL}; use {new} "
        f"(see CHANGELOG.md)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def new_path(fullname: str) -> str | None:
    """The current path of an old module path, or None when it never moved."""
    for old, new in MOVED_MODULES.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_path(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def exec_module(self, module):
        old = module.__name__
        new = new_path(old)
        assert new is not None
        warn(f"the module {old}", new)  # import frames are skipped: the importer
        # the import system returns what sys.modules holds under the old name after this call
        sys.modules[old] = importlib.import_module(new)


def moved_name(name: str):
    """The object of a moved top-level name (with the warning), or AttributeError."""
    if name not in MOVED_NAMES:
        raise AttributeError(f"module 'anchordiv' has no attribute {name!r}")
    module = MOVED_NAMES[name]
    warn(f"anchordiv.{name}", f"{module}.{name}", stacklevel=4)  # via ad.__getattr__
    return getattr(importlib.import_module(module), name)


def posterior_inference_data(self, *args, **kwargs):
    """Deprecated since 0.4.0 (removed in 0.5.0): forwards to ``ad.inference_data(post, ...)``."""
    warn("Posterior.inference_data(...)", "ad.inference_data(post, ...)")
    return importlib.import_module("anchordiv.checks.uncertainty").inference_data(
        self, *args, **kwargs
    )


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (before the path finder, which would load a
    second copy of an aliased submodule) and give ``Posterior`` its old ``inference_data``."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
    posterior = importlib.import_module("anchordiv.adaptation.posterior").Posterior
    posterior.inference_data = posterior_inference_data
