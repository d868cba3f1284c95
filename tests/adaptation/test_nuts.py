"""The compiled NUTS runner: its progress moves per transition, not per compiled chunk, so a
log (stderr a file) gets lines while a long chunk runs."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from helpers import compilations
from numpyro.infer import NUTS

import anchordiv as ad
from anchordiv.adaptation import nuts


def model():
    numpyro.sample("x", dist.Normal(0.0, 1.0))


def run_logged(tmp_path, monkeypatch, chain_method: str, num_chains: int) -> list[str]:
    monkeypatch.setenv("ANCHORDIV_PROGRESS_INTERVAL", "0")  # every update is a line
    monkeypatch.setattr(nuts, "CHUNK", 1000)  # one compiled chunk per phase
    path = tmp_path / "log"
    with open(path, "w") as log:
        monkeypatch.setattr(sys, "stderr", log)
        runner = nuts.Chains(NUTS(model), 10, 10, num_chains, chain_method)
        samples, _ = runner.run(jax.random.PRNGKey(0), (), {}, progress=True)
        monkeypatch.undo()
    assert samples["x"].shape == (num_chains, 10)
    text = path.read_text()
    assert "\r" not in text
    return text.splitlines()


def test_a_log_gets_lines_inside_a_chunk(tmp_path, monkeypatch):
    lines = run_logged(tmp_path, monkeypatch, "sequential", 1)
    # two chunks (warm-up, draws) of 10 transitions: a line per transition, not per chunk
    assert len(lines) >= 15, lines
    assert all(line.startswith("NUTS:") for line in lines)
    assert lines[-1].startswith("NUTS: 100%") and "20/20" in lines[-1]


@pytest.mark.slow  # a second compile of the runner (~3 s alone)
def test_vectorized_chains_count_every_chain(tmp_path, monkeypatch):
    lines = run_logged(tmp_path, monkeypatch, "vectorized", 2)
    assert len(lines) >= 15 and "40/40" in lines[-1], lines


TAU = 5.0


def data(d=3, nb=200, n=10):
    rng = np.random.default_rng(0)
    return rng.normal(size=(nb, d)), rng.normal(size=(n, d)) * 0.5 + 0.3


def scaled_model(targets, *, mu0, psi0, **_):
    """A user's model with a parameter of its own (``log_scale``)."""
    d = targets.shape[1]
    log_scale = numpyro.sample("log_scale", dist.Normal(0.0, 1.0))
    sigma = numpyro.deterministic("Sigma", jnp.exp(log_scale) * psi0 / jnp.trace(psi0) * d)
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma))
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, sigma), obs=targets)


def test_options_reach_nuts_and_user_sites_are_kept():
    broad, t = data()
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        method="nuts",
        model=scaled_model,
        kappa0=2.0,
        nu0=8.0,
        num_warmup=100,
        num_samples=100,
        num_chains=2,
        dense_mass=True,
        target_accept_prob=0.9,
        init_strategy="feasible",
        chain_method="vectorized",
        progress=False,
    )
    assert set(post.samples) >= {"log_scale", "mu", "Sigma"}
    assert post.samples["log_scale"].shape == (2, 100)
    assert post.info["dense_mass"] and post.info["target_accept_prob"] == 0.9
    assert post.raw.sampler.model is scaled_model  # the MCMC object for advanced use
    assert post.info["chain_method"] == "vectorized"
    idata = ad.inference_data(post, num_draws=50)  # the user's own parameter reaches ArviZ
    assert idata["posterior"]["log_scale"].shape == (2, 50)
    import arviz as az

    assert "log_scale" in az.summary(idata, var_names=["log_scale"]).index


@pytest.mark.slow  # ~14 s: full-d NUTS at d = 32
def test_default_model_runs_at_full_d_32_in_float32():
    rng = np.random.default_rng(1)
    d = 32
    broad = rng.normal(size=(400, d)).astype(np.float32) * 0.05
    t = (rng.normal(size=(10, d)) * 0.05).astype(np.float32)
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        method="nuts",
        num_warmup=20,
        num_samples=10,
        num_chains=1,
        max_tree_depth=5,
        progress=False,
        kappa0=5.0,
        nu0=d + 20.0,
    )
    assert np.all(np.isfinite(post.samples["Sigma"]))
    assert post.info["divergences"] <= 2


def stuck_model(targets, **_):
    d = targets.shape[1]
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
    numpyro.deterministic("Sigma", jnp.eye(d))
    numpyro.sample("impossible", dist.Normal(mu.sum(), 1.0), obs=jnp.inf)


def test_a_model_that_cannot_initialise_fails_fast_and_clearly():
    broad, t = data()
    with pytest.raises(ad.AnchorDivError, match=r"cannot be initialised.*impossible.*subspace="):
        ad.adapt("gaussian", broad, t, tau=TAU, method="nuts", model=stuck_model, progress=False)


@pytest.mark.parametrize(
    "opts,match",
    [
        ({"chain_method": "threads"}, "chain_method"),
        ({"init_strategy": "zeros"}, "init_strategy"),
        ({"target_accept_prob": 1.5}, "target_accept_prob"),
    ],
)
def test_bad_nuts_options(opts, match):
    broad, t = data()
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.adapt("gaussian", broad, t, tau=TAU, method="nuts", **opts)


def _compiles(fn) -> int:
    """XLA compilations while ``fn`` runs (``jax.log_compiles`` records)."""
    with compilations(names=None) as c:
        fn()
    return c.count


def test_refits_of_the_same_shape_reuse_one_compiled_sampler():
    from anchordiv.adaptation.methods import NUTS_RUNNERS as _SAMPLERS
    from anchordiv.adaptation.nuts import cache_size

    broad, _ = data()
    rng = np.random.default_rng(5)

    def fit(seed):
        return ad.adapt(
            "gaussian",
            broad,
            rng.normal(size=(10, 3)) * 0.5,
            tau=TAU,
            method="nuts",
            kappa0=2.0 + seed,
            nu0=8.0,
            num_warmup=50,
            num_samples=50,
            seed=seed,
            progress=False,
        )

    first = fit(0)
    size = cache_size(first.raw)
    held = len(_SAMPLERS)
    assert _compiles(lambda: [fit(s) for s in (1, 2, 3)]) == 0
    again = fit(4)
    assert again.raw is first.raw and cache_size(again.raw) == size and len(_SAMPLERS) == held
    assert not np.allclose(again.samples["mu"], first.samples["mu"])


@pytest.mark.slow
def test_five_hundred_nuts_fits_in_one_process():
    broad, _ = data()
    rng = np.random.default_rng(6)
    for i in range(500):
        post = ad.adapt(
            "gaussian",
            broad,
            rng.normal(size=(10, 3)) * 0.5,
            tau=TAU,
            method="nuts",
            kappa0=2.0,
            nu0=8.0,
            num_warmup=30,
            num_samples=30,
            num_chains=1,
            seed=i,
            progress=False,
        )
        assert np.all(np.isfinite(post.samples["mu"]))
