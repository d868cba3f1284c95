"""The library's one contact with ArviZ, on both of its API generations: 0.x's
``arviz.InferenceData`` and 1.x's ``xarray.DataTree`` (``arviz-base``/``-stats``/``-plots``).
Every ArviZ call of anchordiv goes through this module, which switches on :func:`major` here
and nowhere else; ``"posterior" in data``, ``data["posterior"]["mu"]``, ``.sizes`` and
``data.attrs`` read the same on both.

Examples
--------
>>> from anchordiv.checks import arviz as adz
>>> data = adz.from_groups({"posterior": {"x": np.zeros((2, 5))}}, attrs={"kind": "demo"})
>>> adz.groups(data), data["posterior"]["x"].shape, data.attrs["kind"]
(['posterior'], (2, 5), 'demo')
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import scipy.special

#: the netCDF engine files are written and read with (h5py underneath; a declared dependency)
ENGINE = "h5netcdf"
#: most panels a diagnose figure draws (ArviZ's default, 40, cuts the quantities short)
MAX_SUBPLOTS = 200


def _az():
    import arviz as az

    return az


@functools.cache
def major() -> int:
    """The installed ArviZ's major version (0 or 1)."""
    return int(_az().__version__.split(".")[0])


#: groups ArviZ 0.x's ``from_dict`` does not take (added to its result)
EXTRA_GROUPS = ("log_prior",)


def from_groups(groups: dict, *, dims: dict | None = None, attrs: dict | None = None):
    """The data object of the installed ArviZ (``arviz.InferenceData`` on 0.x, an
    ``xarray.DataTree`` on 1.x) from ``{group: {name: array [chain, draw, ...]}}`` (groups
    without sample dimensions, ``observed_data``, hold plain arrays).

    ``dims`` names the trailing dimensions of a variable (``{name: [dim, ...]}``, in every
    group); ``attrs`` go on the whole object and on the ``posterior`` group (what survives a
    netCDF round trip on both)."""
    az = _az()
    groups = {g: v for g, v in groups.items() if v is not None}
    if major() == 0:
        # from_dict knows its own groups only: the others (log_prior) are added after
        extra = {g: groups.pop(g) for g in list(groups) if g in EXTRA_GROUPS}
        data = az.from_dict(**groups, dims=dims)
        if extra:
            data.add_groups(extra, dims=dims)
    else:
        data = az.from_dict(groups, dims=dims)
    if attrs:
        data.attrs.update(attrs)
        if "posterior" in groups:
            data["posterior"].attrs.update(attrs)
    return data


def groups(data) -> list[str]:
    """The names of ``data``'s groups, in order."""
    return list(data.groups() if major() == 0 else data.children)


def replace_group(data, name: str, dataset) -> None:
    """Put the ``xarray.Dataset`` ``dataset`` in place of group ``name`` of ``data``."""
    if major() == 0:
        setattr(data, name, dataset)
    else:
        data[name] = dataset


def dataset(data, name: str):
    """Group ``name`` of ``data`` as an ``xarray.Dataset``."""
    g = data[name]
    return g if major() == 0 else g.to_dataset()


def to_netcdf(data, path) -> Path:
    """Write ``data`` to the netCDF file ``path`` (engine :data:`ENGINE`)."""
    data.to_netcdf(str(path), engine=ENGINE)
    return Path(path)


def from_netcdf(path):
    """Read a file written by :func:`to_netcdf` into memory (the file is closed after)."""
    if major() == 0:
        data = _az().from_netcdf(str(path), engine=ENGINE)
        data.load()
        return data
    import xarray as xr

    with xr.open_datatree(str(path), engine=ENGINE) as tree:
        return tree.load().copy()


def summary(data, *, var_names=None, kind: str = "all", round_to=None):
    """``az.summary`` in the installed ArviZ's own terms: a ``pandas.DataFrame``, one row per
    scalar (``name[i, j]``), with the columns ``az.summary`` gives there — 0.x: ``mean``,
    ``sd``, ``hdi_3%``, ``hdi_97%``, ``mcse_*``, ``ess_*``, ``r_hat``; 1.x: its default
    equal-tailed interval (``eti89_lb``/``eti89_ub`` at 1.3) in place of the HDI.  Both have
    ``mean``, ``sd``, ``ess_bulk``, ``ess_tail`` and ``r_hat``.  ``kind`` is ``"all"``,
    ``"stats"`` or ``"diagnostics"``; ``round_to`` a number of decimals, ``"none"`` or None
    (ArviZ's default)."""
    if major() and round_to is None:
        round_to = "auto"
    return _az().summary(data, var_names=var_names, kind=kind, round_to=round_to)


def loo(data) -> tuple[np.ndarray, np.ndarray, float]:
    """PSIS-LOO of the ``log_likelihood`` group: ``(elpd_i [n], pareto_k [n], p_loo)``."""
    res = _az().loo(data, pointwise=True)
    if major() == 0:
        return np.asarray(res.loo_i), np.asarray(res.pareto_k), float(res.p_loo)
    return np.asarray(res.elpd_i), np.asarray(res.pareto_k), float(res.p)


#: the fewest tail draws a generalised Pareto fit takes (below: 0.x gives k = inf, 1.x raises)
MIN_TAIL = 5


def tail_size(num_draws: int) -> int:
    """The draws in the tail PSIS fits its Pareto distribution to: ⌈min(S/5, 3√S)⌉."""
    return int(np.ceil(min(0.2 * num_draws, 3 * np.sqrt(num_draws))))


def psis_log_weights(log_ratios) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed, normalised log importance weights ``[n, S]`` and Pareto k ``[n]`` of
    the log importance ratios ``log_ratios [n, S]`` (each row a target)."""
    r = np.asarray(log_ratios, dtype=float)
    if tail_size(r.shape[-1]) < MIN_TAIL:  # too few draws to fit a Pareto tail: k = inf
        lw = r - scipy.special.logsumexp(r, axis=-1, keepdims=True)
        return lw, np.full(r.shape[:-1], np.inf)
    if major() == 0:
        lw, k = _az().psislw(r)
        return np.asarray(lw), np.asarray(k)
    import arviz_stats  # noqa: F401  (registers the .azstats accessor)
    import xarray as xr

    # arviz-stats smooths the ratios of its argument's negation (its argument is a log-likelihood)
    lw, k = xr.DataArray(-r, dims=["target", "sample"]).azstats.psislw(dim="sample")
    return np.asarray(lw.transpose("target", "sample")), np.asarray(k)


def psens(data, *, delta: float = 0.01) -> dict[str, np.ndarray]:
    """ArviZ's power-scaling prior sensitivity of every ``posterior`` variable (``psens`` on
    0.x, ``arviz_stats.psense`` on 1.x, both at α = 1/(1 + δ) and 1 + δ; Kallioinen et al.
    2023): ``{name: array}`` of the variable's shape beyond (chain, draw).  ``data`` needs a
    ``log_prior`` group."""
    if major() == 0:
        out = _az().psens(data, component="prior", delta=delta)
    else:
        import arviz_stats

        out = arviz_stats.psense(data, group="prior", alphas=(1 / (1 + delta), 1 + delta))
        out = out.to_dataset() if hasattr(out, "to_dataset") else out
    return {k: np.asarray(v) for k, v in out.data_vars.items()}


def ess(values) -> float:
    """Bulk effective sample size of ``values [chains, draws]``."""
    return float(np.asarray(_az().ess(np.asarray(values, np.float64))))


def _save(drawn, path) -> str:
    """Save what an ArviZ plot returned (axes, a PlotCollection) as a PNG; close its figure."""
    import matplotlib.pyplot as plt

    if major() == 0:
        fig = np.ravel(drawn)[0].figure if hasattr(drawn, "ravel") else drawn.figure
    else:
        fig = drawn.get_viz("figure")
    fig.savefig(str(path), dpi=80, bbox_inches="tight")
    plt.close(fig)
    return str(path)


def _quiet(fn, *args, **kwargs):
    az = _az()
    with az.rc_context({"plot.max_subplots": MAX_SUBPLOTS}), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ArviZ against newer matplotlib
        return fn(*args, **kwargs)


def plot_posterior(data, var_names, path) -> str:
    """Marginal densities of ``var_names`` (``plot_posterior`` on 0.x, ``plot_dist`` on 1.x),
    saved to the PNG ``path``."""
    az = _az()
    fn = az.plot_posterior if major() == 0 else az.plot_dist
    return _save(_quiet(fn, data, var_names=var_names), path)


def plot_trace(data, var_names, path) -> str:
    """Traces and densities of ``var_names``, one row per variable (``plot_trace(compact=True)``
    on 0.x, ``plot_trace_dist`` on 1.x), saved to the PNG ``path``."""
    az = _az()
    fn, kw = (az.plot_trace, {"compact": True}) if major() == 0 else (az.plot_trace_dist, {})
    return _save(_quiet(fn, data, var_names=var_names, **kw), path)


def plot_ppc(data, var_names, path, *, num_samples: int = 10) -> str:
    """Posterior predictive densities of ``var_names`` against the observed ones
    (``plot_ppc`` on 0.x, ``plot_ppc_dist`` on 1.x), saved to the PNG ``path``."""
    az = _az()
    fn, kw = (az.plot_ppc, "num_pp_samples") if major() == 0 else (az.plot_ppc_dist, "num_samples")
    return _save(_quiet(fn, data, var_names=var_names, **{kw: num_samples}), path)
