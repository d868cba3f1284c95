"""Test configuration: float64 JAX so numpy float64 references are meaningful.

Library code keeps the dtype of its inputs, so tests that pass float32 arrays still exercise the
float32 production path.
"""

import functools
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))  # tests/helpers.py, tests/reference.py

# Tests time nothing; one BLAS thread avoids oversubscribing the 2 cores next to XLA's own pool
# (multi-threaded OpenBLAS under load made small solves 10-50x slower here).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# the CLI keeps JAX's compiled programs on disk; tests calling it in-process must not switch the
# whole test session to a persistent cache
os.environ.setdefault("ANCHORDIV_XLA_CACHE", "0")
# XLA compiles for the host's instruction set: AVX-512 and AVX2 code round differently, and a
# NUTS chain (chaotic in its rounding) then leaves the golden outputs (tests/adaptation/golden)
# after a few steps.  AVX2 is what every x86-64 machine here has; the cap makes the compiled
# arithmetic the same on all of them.
if "xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX2").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


#: node ids measured at >= 5 s alone (tests/slow_tier.txt): marked slow at collection
SLOW_TIER = {
    line.split()[1]
    for line in open(os.path.join(os.path.dirname(__file__), "slow_tier.txt"))
    if line.strip() and not line.startswith("#")
}


#: what marks a test as touching ArviZ (the ``arviz`` marker; `make test-arviz1` runs them
#: under ArviZ 1.x): these words in its test file, in a file or code it is parametrized with
#: (a notebook, a docs page, a README block) or in the module whose doctests it runs
ARVIZ_WORDS = re.compile(
    r"\barviz\b|\baz\.|\badz\.|inference_data|compare_priors|PriorComparison|diagnose|psis"
)


@functools.cache
def _file_touches_arviz(path: str) -> bool:
    return bool(ARVIZ_WORDS.search(open(path, encoding="utf-8").read()))


def _touches_arviz(item) -> bool:
    import importlib
    from pathlib import Path

    if _file_touches_arviz(str(item.path)):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name, value in params.items():
        if item.originalname == "test_examples_run" and name == "name":  # one module's doctests
            value = Path(importlib.import_module(value).__file__)
        if isinstance(value, Path) and value.is_file() and _file_touches_arviz(str(value)):
            return True
        if isinstance(value, str) and ARVIZ_WORDS.search(value):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.nodeid in SLOW_TIER:
            item.add_marker(pytest.mark.slow)
        if _touches_arviz(item):
            item.add_marker(pytest.mark.arviz)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _shake():
    """``$ANCHORDIV_SHAKE`` (``tests/shake.py``): every test of the run under that shake."""
    import shake

    with shake.shaken(shake.mode()):
        yield


@pytest.fixture(autouse=True)
def _forget_families_of_exec_code():
    """A docs page or README block that registers a family of its own (``@ad.family`` on a
    class defined in exec'd code, module ``__main__``) leaves the registry as it found it."""
    yield
    from anchordiv.adaptation.registry import FAMILIES

    for kind in [k for k, cls in FAMILIES.items() if cls.__module__ == "__main__"]:
        del FAMILIES[kind]
