"""The guide's worked example of a Projectable family of one's own (docs/guides/adaptation.md,
"Making a family Projectable") runs and prints what the guide shows, and its ``subspace=`` run
works where a full one does: ``ad.inference_data`` (issue 51: a raw error at d = 384 before),
a clear refusal from ``ad.prior_sensitivity``; a subspace run whose traced model cannot score
its lifted draws in full d leaves ``log_likelihood`` out with the reason."""

import contextlib
import io
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.protocol import FAMILIES
from anchordiv.checks import arviz as adz

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "adaptation.md"
BLOCK = re.compile(r"```python\n(.*?)```(?:\s*<!-- output -->\s*```text\n(.*?)```)?", re.S)


def guide_blocks() -> list[tuple[str, str | None]]:
    return BLOCK.findall(GUIDE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example():
    """The guide's names: its anchors, the fixed-covariance family, its exact posterior, and
    the Projectable example run (what it printed)."""
    blocks = guide_blocks()
    setup = blocks[0][0].split("prior = ad.NIWPrior")[0]  # the anchors of the page
    family = next(code for code, _ in blocks if "class FixedCovariancePrior" in code)
    sub, shown = next((c, o) for c, o in blocks if "class ProjectableFixedCovariance" in c)
    ns: dict = {"__name__": "__main__"}
    before = set(FAMILIES)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(setup + family, ns)
            exec('post = ad.adapt("fixed-covariance", broad, targets, tau=20.0, kappa0=4.0)', ns)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(sub, ns)
        yield ns, out.getvalue(), shown
    finally:
        for kind in set(FAMILIES) - before:
            FAMILIES.pop(kind, None)


def test_the_guides_projectable_family_runs_and_prints_what_the_guide_shows(example):
    ns, printed, shown = example
    assert printed == shown
    assert isinstance(ns["sub"], ad.adaptation.SubspacePosterior)


def test_inference_data_of_the_subspace_run_has_every_group(example):
    ns, _, _ = example
    idata = ns["idata"]
    assert {"posterior", "log_likelihood", "observed_data", "posterior_predictive"} <= set(
        adz.groups(idata)
    )
    assert idata["log_likelihood"]["targets"].shape == (1, 20, len(ns["targets"]))
    assert np.all(np.isfinite(idata["log_likelihood"]["targets"].values))
    assert idata.attrs["subspace"] == 3


def test_prior_sensitivity_of_a_subspace_run_is_a_clear_refusal(example):
    ns, _, _ = example
    with pytest.raises(ad.AnchorDivError, match="prior_sensitivity: .*subspace=3 run"):
        ad.prior_sensitivity(ns["sub"], num_draws=10)


@pytest.mark.slow  # a second SVI fit / the diagnose figures
def test_a_traced_model_that_cannot_score_lifted_draws_leaves_log_likelihood_out(example):
    """The model's own site ``offset`` is sampled in r dimensions: the family's traced
    full-d model cannot take it, so the group is left out and the attribute says why."""
    import numpyro
    import numpyro.distributions as dist

    ns, _, _ = example
    base = ns["ProjectableFixedCovariance"]

    def offset_model(targets, *, mu0, cov, kappa0):
        shift = numpyro.sample("offset", dist.Normal(0.0, 0.1).expand(mu0.shape).to_event(1))
        mu = numpyro.sample("mu", dist.MultivariateNormal(mu0 + shift, cov / kappa0))
        numpyro.deterministic("Sigma", cov)
        with numpyro.plate("anchors", targets.shape[0]):
            numpyro.sample("targets", dist.MultivariateNormal(mu, cov), obs=targets)

    cls = type("OffsetFamily", (base,), {"model": staticmethod(offset_model)})
    cls.__module__ = __name__
    ad.family("fixed-covariance-offset")(cls)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sub = ad.adapt(
                "fixed-covariance-offset",
                ns["broad"],
                ns["targets"],
                tau=20.0,
                method="svi",
                guide="normal",
                num_steps=50,
                subspace=3,
                progress=False,
            )
            idata = ad.inference_data(sub, num_draws=10)
    finally:
        FAMILIES.pop("fixed-covariance-offset", None)
    assert "log_likelihood" not in adz.groups(idata) and "observed_data" in adz.groups(idata)
    assert idata.attrs["log_likelihood_model"].startswith("none: the fixed-covariance-offset")
    assert "subspace=3" in idata.attrs["log_likelihood_model"]


@pytest.mark.slow  # a second SVI fit / the diagnose figures
def test_diagnose_reads_the_saved_subspace_run(example, tmp_path):
    """``anchordiv diagnose`` on the saved subspace run of the user's family: the ArviZ data,
    summary and figures written; prior sensitivity reported n/a with the reason."""
    from anchordiv.app.cli import main

    ns, _, _ = example
    ns["sub"].save(tmp_path / "sub")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["diagnose", str(tmp_path / "sub"), "-o", str(tmp_path / "d"), "--json"])
    assert code == 0
    assert (tmp_path / "d" / "summary.csv").exists() and (tmp_path / "d" / "idata").exists()
