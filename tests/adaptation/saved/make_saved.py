"""Write the saved posteriors ``test_posterior.py`` loads: one bundle per posterior type
(exact, NUTS, SVI, a subspace NUTS run) as saved by the code of the commit that ran this script,
and ``expected.npz``, what that code computed from each (point parameters, three draws).

Run from a checkout, with its ``src`` first on the path::

    PYTHONPATH=src python tests/adaptation/saved/make_saved.py
"""

import shutil
import warnings
from pathlib import Path

import numpy as np

import anchordiv as ad

HERE = Path(__file__).parent
D, TAU = 3, 10.0


def data():
    rng = np.random.default_rng(0)
    broad = rng.normal(size=(30, D)) * np.linspace(1.5, 0.5, D)
    targets = rng.normal(size=(5, D)) + 0.4
    return broad, targets / np.linalg.norm(targets, axis=1, keepdims=True)


def posteriors() -> dict:
    broad, t = data()
    quick = {"num_warmup": 30, "num_samples": 20, "num_chains": 1, "progress": False}
    fixed = {"kappa0": 3.0, "nu0": D + 4.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "exact": ad.adapt("gaussian", broad, t, tau=TAU, **fixed),
            "nuts": ad.adapt("gaussian", broad, t, tau=TAU, method="nuts", **fixed, **quick),
            "svi": ad.adapt(
                "gaussian",
                broad,
                t,
                tau=TAU,
                method="svi",
                guide="normal",
                num_steps=100,
                num_samples=10,
                progress=False,
                **fixed,
            ),
            "nuts-subspace": ad.adapt(
                "gaussian", broad, t, tau=TAU, method="nuts", subspace=2, **fixed, **quick
            ),
        }


def outputs(post) -> dict:
    """What a loaded posterior must reproduce bit-exactly."""
    out = {f"mean.{k}": v for k, v in post.params("mean").items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out.update({f"map.{k}": v for k, v in post.params("map").items()})
    out.update({f"draws.{k}": v for k, v in post.draws(0, 3).items()})
    return out


if __name__ == "__main__":
    expected = {}
    for name, post in posteriors().items():
        shutil.rmtree(HERE / name, ignore_errors=True)
        post.save(HERE / name)
        expected.update({f"{name}/{k}": v for k, v in outputs(post).items()})
    np.savez(HERE / "expected.npz", **expected)
