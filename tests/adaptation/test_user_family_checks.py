"""A user's own family gets the checks a built-in or a ``model=`` gets, before sampling (issue
51): its anchor model built from a prior draw at the targets' dimension, symmetric [d, d] sites
positive definite, every log density finite — each refusal an error naming the site."""

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import anchordiv as ad
from anchordiv.adaptation.protocol import FAMILIES

sys.path.insert(0, str(Path(__file__).parent))
from userfam import minimal_family  # noqa: E402

FAMILIES.pop(minimal_family.KIND, None)  # registered on import; this module registers its own

D = 4


def anchors(seed=0):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(40, D))
    t = rng.normal(size=(6, D)) + 0.3
    return broad, t / np.linalg.norm(t, axis=1, keepdims=True)


def variant(kind: str, sigma):
    """The minimal family with the model's recorded ``Sigma`` replaced by ``sigma(cov)``."""

    def model(targets, *, mu0, cov, kappa0):
        scale = numpyro.sample("scale", dist.LogNormal(0.0, 0.3))
        mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, scale * cov / kappa0))
        numpyro.deterministic("Sigma", sigma(cov))
        with numpyro.plate("anchors", targets.shape[0]):
            numpyro.sample("targets", dist.MultivariateNormal(mu, cov), obs=targets)

    cls = type(kind.title().replace("-", ""), (minimal_family.MinimalPrior,), {})
    cls.model = staticmethod(model)
    cls.__module__ = __name__
    return ad.family(kind)(cls)


@pytest.fixture
def register():
    made = []

    def make(kind, sigma):
        made.append(kind)
        return variant(kind, sigma)

    yield make
    for kind in made:
        FAMILIES.pop(kind, None)


NUTS = dict(method="nuts", num_warmup=5, num_samples=5, num_chains=1, progress=False)


def test_a_non_positive_definite_sigma_is_refused_before_sampling(register):
    register("user-rank-one", lambda cov: jnp.ones_like(cov))
    with pytest.raises(ad.AnchorDivError, match=r"site 'Sigma'.*not positive definite.*before"):
        ad.adapt("user-rank-one", *anchors(), tau=10.0, **NUTS)
    with pytest.raises(ad.AnchorDivError, match=r"site 'Sigma'.*not positive definite"):
        ad.adapt("user-rank-one", *anchors(), tau=10.0, method="svi", num_steps=5)


def test_a_sigma_of_the_wrong_dimension_is_refused_before_sampling(register):
    register("user-short", lambda cov: cov[1:, 1:])
    with pytest.raises(ad.AnchorDivError) as err:
        ad.adapt("user-short", *anchors(), tau=10.0, **NUTS)
    msg = str(err.value)
    assert "to_model" in msg and "Sigma [3, 3]" in msg and f"d = {D}" in msg
    assert "before sampling" in msg


def test_a_non_finite_site_is_refused_naming_it(register):
    register("user-nan", lambda cov: cov * jnp.nan)
    with pytest.raises(ad.AnchorDivError, match=r"non-finite .*'Sigma'"):
        ad.adapt("user-nan", *anchors(), tau=10.0, **NUTS)


@pytest.mark.slow  # NUTS compiles (test_user_family.py samples user families fast)
def test_a_sound_user_family_still_runs(register):
    register("user-sound", lambda cov: cov)
    post = ad.adapt("user-sound", *anchors(), tau=10.0, **NUTS)
    assert post.samples["mu"].shape == (1, 5, D)
