"""The compiled NUTS runner: its progress moves per transition, not per compiled chunk, so a
log (stderr a file) gets lines while a long chunk runs."""

import sys

import jax
import numpyro
import pytest
import numpyro.distributions as dist
from numpyro.infer import NUTS

from anchordiv.adaptation import chains


def model():
    numpyro.sample("x", dist.Normal(0.0, 1.0))


def run_logged(tmp_path, monkeypatch, chain_method: str, num_chains: int) -> list[str]:
    monkeypatch.setenv("ANCHORDIV_PROGRESS_INTERVAL", "0")  # every update is a line
    monkeypatch.setattr(chains, "CHUNK", 1000)  # one compiled chunk per phase
    path = tmp_path / "log"
    with open(path, "w") as log:
        monkeypatch.setattr(sys, "stderr", log)
        runner = chains.Chains(NUTS(model), 10, 10, num_chains, chain_method)
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
