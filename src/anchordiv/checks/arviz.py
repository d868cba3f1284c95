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

from ..errors import AnchorDivError

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
    _need(data, "loo", "log_likelihood")
    res = _az().loo(data, pointwise=True)
    if major() == 0:
        return np.asarray(res.loo_i), np.asarray(res.pareto_k), float(res.p_loo)
    return np.asarray(res.elpd_i), np.asarray(res.pareto_k), float(res.p)


def _has(data, group: str) -> bool:
    return group in groups(data)


def _need(data, what: str, *names: str) -> None:
    missing = [g for g in names if not _has(data, g)]
    if missing:
        raise AnchorDivError(
            f"{what}: the data has no {', '.join(missing)} group(s) (it has "
            f"{', '.join(groups(data)) or 'none'}); make it with ad.inference_data(post, "
            f"targets=targets) from a posterior whose model is known"
        )


def _sample_major(x) -> np.ndarray:
    """``[chain, draw, ...]`` values as ``[..., S]`` (the sample axis last, chains merged)."""
    a = np.asarray(x, np.float64)
    return np.moveaxis(a.reshape((-1,) + a.shape[2:]), 0, -1)


def loo_pit(data) -> np.ndarray:
    """PSIS-LOO probability integral transform of each target coordinate ``[n, d]``: the
    leave-one-out posterior predictive probability that coordinate j of a new anchor i falls
    below the observed one, under anchor i's PSIS-LOO weights.  ArviZ's ``loo_pit`` (0.x's
    ``az.loo_pit``, 1.x's ``arviz_stats.loo_pit``) with those weights given: ``log_likelihood``
    scores whole anchors, one weight per anchor, and both majors want one per coordinate of
    the observed ``targets [anchor, dim]`` (called on the data alone they stop on the shapes),
    so the anchor's weights are broadcast over its coordinates.  Values near uniform on
    [0, 1] say the predictive is calibrated.  ``data`` needs ``observed_data``,
    ``posterior_predictive`` and ``log_likelihood`` (``ad.inference_data(post,
    targets=...)``)."""
    _need(data, "loo_pit", "observed_data", "posterior_predictive", "log_likelihood")
    ll_da = dataset(data, "log_likelihood")["targets"]  # [chain, draw, anchor]
    chains, draws, n = ll_da.shape
    lw, k = psis_log_weights(-_sample_major(ll_da))  # [n, S], [n]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if major() == 0:
            y = np.asarray(dataset(data, "observed_data")["targets"], np.float64)  # [n, d]
            y_hat = _sample_major(dataset(data, "posterior_predictive")["targets"])  # [n, d, S]
            weights = np.broadcast_to(lw[:, None, :], y_hat.shape)
            return np.asarray(_az().loo_pit(y=y, y_hat=y_hat, log_weights=weights))
        import arviz_stats
        import xarray as xr

        pred = dataset(data, "posterior_predictive")["targets"]  # [chain, draw, anchor, dim]
        lw_da = xr.DataArray(
            np.moveaxis(lw, -1, 0).reshape(chains, draws, n), dims=ll_da.dims, coords=ll_da.coords
        )
        k_da = xr.DataArray(
            k,
            dims=ll_da.dims[2:],
            coords={c: ll_da.coords[c] for c in ll_da.dims[2:] if c in ll_da.coords},
        )
        weights = xr.Dataset({"targets": lw_da.broadcast_like(pred)})
        shape_k = xr.Dataset(
            {"targets": k_da.broadcast_like(pred.isel(chain=0, draw=0, drop=True))}
        )
        out = arviz_stats.loo_pit(data, var_names="targets", log_weights=weights, pareto_k=shape_k)
        return np.asarray(out["targets"].transpose(ll_da.dims[2], ...))


#: the per-anchor statistics of :func:`ppc_data` and their trailing dimensions
PPC_STATISTICS = {"norm": ["anchor"], "cosine_to_mean": ["anchor"]}
PPC_STATISTICS["projection"] = ["anchor", "direction"]


def ppc_statistics(x, directions) -> dict[str, np.ndarray]:
    """Per-anchor ``norm``, ``cosine_to_mean`` (to the mean of the same set) and
    ``projection`` on ``directions [d, k]`` of anchors ``x [..., n, d]``."""
    x = np.asarray(x, np.float64)
    m = x.mean(-2, keepdims=True)
    cos = (x * m).sum(-1) / np.maximum(
        np.linalg.norm(x, axis=-1) * np.linalg.norm(m, axis=-1), 1e-300
    )
    return {"norm": np.linalg.norm(x, axis=-1), "cosine_to_mean": cos, "projection": x @ directions}


#: most values per draw a posterior site may hold to go into :func:`ppc_data`'s posterior
#: group (ArviZ reads that group only for the relative efficiency of the draws)
PPC_POSTERIOR_MAX_VALUES = 16


def ppc_data(data):
    """The posterior predictive checks on per-anchor statistics that can fail (``norm``,
    ``cosine_to_mean``, ``projection`` on the leading broad directions ``constant_data
    ["ppc_directions"]``) as a data object of the installed ArviZ: its ``observed_data``,
    ``posterior_predictive`` and (where ``data`` has one) ``prior_predictive`` hold the
    statistics of the targets and of the simulated ones, for ``plot_ppc``, ``az.plot_bpv`` /
    ``az.plot_ppc_tstat``.

    Where ``data`` has a ``log_likelihood`` group, ArviZ's own LOO-PIT runs on the result
    (0.x: ``az.loo_pit(stats, y="norm")``, ``az.plot_loo_pit``; 1.x:
    ``arviz_stats.loo_pit(stats)``, ``arviz_plots.plot_loo_pit``): a statistic of anchor i is
    left out with anchor i, so its ``log_likelihood`` entry is anchor i's (``log_likelihood
    ["targets"] [chain, draw, anchor]``, repeated over the statistic's trailing axes), and the
    ``posterior`` group holds the sites with at most :data:`PPC_POSTERIOR_MAX_VALUES` values
    per draw (else the total log-likelihood per draw), from which ArviZ estimates the draws'
    relative efficiency.  Those entries repeat one anchor's likelihood, so ELPD (``az.loo``)
    is read from ``data``, not from the result.

    ``data``'s own ``observed_data`` keeps the targets alone (what ``log_likelihood`` scores;
    :func:`loo_pit`); data written before 0.5.0, with the statistics in place, is returned as
    it is."""
    _need(data, "ppc_data", "observed_data", "posterior_predictive")
    observed = dataset(data, "observed_data")
    if "norm" in observed.data_vars:  # written before 0.5.0: the statistics are in place
        return data
    _need(data, "ppc_data", "constant_data")
    v = np.asarray(dataset(data, "constant_data")["ppc_directions"], np.float64)
    out = {"observed_data": ppc_statistics(observed["targets"], v)}
    for g in ("posterior_predictive", "prior_predictive"):
        if _has(data, g):
            out[g] = ppc_statistics(dataset(data, g)["targets"], v)
    dims = dict(PPC_STATISTICS)
    if _has(data, "log_likelihood"):
        ll = np.asarray(dataset(data, "log_likelihood")["targets"], np.float64)
        out["log_likelihood"] = {
            name: np.broadcast_to(ll.reshape(ll.shape + (1,) * (s.ndim - ll.ndim)), s.shape)
            for name, s in out["posterior_predictive"].items()
        }
        out["posterior"], posterior_dims = _efficiency_sites(data, ll)
        dims.update(posterior_dims)
    return from_groups(out, dims=dims, attrs=dict(data.attrs))


def _efficiency_sites(data, ll: np.ndarray) -> tuple[dict, dict]:
    """The posterior sites of ``data`` with at most :data:`PPC_POSTERIOR_MAX_VALUES` values
    per draw (else ``log_likelihood_total``, the sum of ``ll [chain, draw, anchor]`` over the
    anchors) and their trailing dims: what ArviZ's ``loo_pit`` estimates the relative
    efficiency of the draws from."""
    sites, dims = {}, {}
    for name, da in dataset(data, "posterior").data_vars.items():
        if int(np.prod(da.shape[2:], dtype=np.int64)) <= PPC_POSTERIOR_MAX_VALUES:
            sites[name] = np.asarray(da)
            dims[name] = list(da.dims[2:])
    if not sites:
        sites["log_likelihood_total"] = ll.sum(-1)
    return sites, dims


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
