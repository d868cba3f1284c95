"""Deliberate mistakes of a NumPyro + ArviZ user with the Python API and the ``anchordiv``
command (issue 51, "Done when": a re-run of the same kinds of mistakes finds 0 silent, 0 raw,
0 misleading).

Each :class:`Mistake` runs one wrong call (or one valid call a user may take for a mistake) and
is classified:

- **clear**: an :class:`anchordiv.AnchorDivError` (or, where a warning is the answer, an
  :class:`anchordiv.AnchorDivWarning`) whose message matches the case's regex, which names the
  cause; on the command line exit status 2 and one stderr line, no traceback;
- **correct**: the input is valid and the call works (``expect="ok"``);
- **raw**: any other exception, or a command-line traceback / exit status 1;
- **silent**: no error where there must be one;
- **misleading**: an error whose text does not name the cause (the regex does not match).

The test asserts every case is clear or correct. The command runs in-process (as
``tests/app/test_cli.py`` runs it); :func:`test_a_real_process_prints_no_traceback` runs a few
as real processes. The image-data mistakes live with the image tests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import anchordiv as ad
from anchordiv.adaptation.protocol import FAMILIES
from anchordiv.app.cli import main
from helpers import clustered_anchors, unit

D = 4
TAU = 5.0
HERE = Path(__file__).parent
USERFAM = HERE / "adaptation" / "userfam"


@dataclasses.dataclass
class Mistake:
    """One deliberate mistake: ``call(env)`` (Python) or ``argv(env)`` (the command), the regex
    its message must match, and what the right answer is: ``"error"``, ``"warning"`` (an
    :class:`AnchorDivWarning`) or ``"ok"`` (the input is valid)."""

    kind: str
    name: str
    match: str = ""
    call: Callable | None = None
    argv: Callable | None = None
    expect: str = "error"
    environ: dict = dataclasses.field(default_factory=dict)


CASES: list[Mistake] = []


def py(kind, name, match, call, expect="error"):
    CASES.append(Mistake(kind, name, match, call=call, expect=expect))


def cli(name, match, argv, expect="error", **environ):
    CASES.append(Mistake("cli", name, match, argv=argv, expect=expect, environ=environ))


# --------------------------------------------------------------------------- the user's family


sys.path.insert(0, str(HERE / "adaptation"))
from userfam import minimal_family  # noqa: E402

FAMILIES.pop(minimal_family.KIND, None)  # registered on import; the cases register their own
_mean_model = minimal_family.scaled_mean_model

#: The members of the guide's minimal family (no exact update): the class body a user writes.
MEMBERS = {
    "__annotations__": {"mu0": np.ndarray, "cov": np.ndarray, "kappa0": float},
    "kappa0": 10.0,
    "sites": ("mu", "Sigma"),
    **{
        name: vars(minimal_family.MinimalPrior)[name]
        for name in ("model", "from_anchors", "isotropic", "prior_kwargs", "to_model")
    },
}

_KINDS: list[str] = []


def define(kind, members=None, without=()):
    """The user's class: :data:`MEMBERS` with ``members`` replaced and ``without`` left out."""
    body = {k: v for k, v in {**MEMBERS, **(members or {})}.items() if k not in without}
    cls = type(kind.title().replace("-", ""), (ad.Family,), body)
    cls.__module__ = __name__
    return cls


def register(kind, members=None, without=(), **kw):
    """Register :func:`define`'s class under ``kind`` (removed again after the module)."""
    _KINDS.append(kind)
    return ad.family(kind, **kw)(define(kind, members, without))


def with_model(kind, model):
    return register(kind, {"model": staticmethod(model)})


def _sigma_model(sigma):
    def model(targets, *, mu0, cov, kappa0):
        mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, cov / kappa0))
        numpyro.deterministic("Sigma", sigma(cov))
        with numpyro.plate("anchors", targets.shape[0]):
            numpyro.sample("targets", dist.MultivariateNormal(mu, cov), obs=targets)

    return model


def _nan_model(targets, *, mu0, cov, kappa0):
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, cov / kappa0))
    numpyro.deterministic("Sigma", cov * jnp.nan)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, cov), obs=targets)


def _renamed_model(targets, *, mu0, cov, kappa0):
    mean = numpyro.sample("mean", dist.MultivariateNormal(mu0, cov / kappa0))
    numpyro.deterministic("Sigma", cov)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mean, cov), obs=targets)


def _unobserved_model(targets, *, mu0, cov, kappa0):
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, cov / kappa0))
    numpyro.deterministic("Sigma", cov)
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("obs", dist.MultivariateNormal(mu, cov), obs=targets)


NUTS = dict(method="nuts", num_warmup=5, num_samples=5, num_chains=1, progress=False)


def adapt_user(kind, **opts):
    def call(e):
        return ad.adapt(kind, e.broad, e.targets, tau=TAU, **(opts or NUTS))

    return call


def family_cases():
    k = "family"
    py(
        k,
        "not a Family subclass",
        r"not a subclass of anchordiv\.Family",
        lambda e: ad.family("u-plain")(object),
    )
    py(
        k,
        "decorator without a kind",
        r"kind must be a non-empty string.*class",
        lambda e: ad.family(define("u-nokind")),
    )
    py(
        k,
        "empty kind",
        r"kind must be a non-empty string",
        lambda e: ad.family("")(define("u-empty")),
    )
    for member in ("sites", "model", "to_model", "prior_kwargs", "isotropic", "from_anchors"):
        py(
            k,
            f"missing member {member}",
            rf"does not define {member}\b",
            lambda e, m=member: register(f"u-no-{m.replace('_', '-')}", without=(m,)),
        )
    py(
        k,
        "registering a built-in kind",
        r"gaussian.*replace=True",
        lambda e: ad.family("gaussian")(define("g2")),
    )

    def twice(e):
        register("u-twice")
        register("u-twice")  # the same module's class again (a module imported anew)

    py(k, "registering the same class again (correct: replaces)", "", twice, expect="ok")

    def taken(e):
        register("u-taken")
        cls = define("u-taken")
        cls.__qualname__ = "OtherPrior"
        _KINDS.append("u-taken")
        ad.family("u-taken")(cls)

    py(
        k,
        "registering another class under a taken kind",
        r"u-taken.*replaces.*UTaken",
        taken,
        expect="warning",
    )
    py(
        k,
        "sites not a tuple of names",
        r"does not define sites \(a tuple of site names, got 3\)",
        lambda e: register("u-sites-str", {"sites": 3}),
    )
    py(
        k,
        "non-PD Sigma (NUTS)",
        r"site 'Sigma'.*not positive definite",
        lambda e: (with_model("u-ones", _sigma_model(jnp.ones_like)), adapt_user("u-ones")(e)),
    )
    py(
        k,
        "non-PD Sigma (SVI)",
        r"site 'Sigma'.*not positive definite",
        lambda e: (
            with_model("u-neg", _sigma_model(lambda c: -c)),
            adapt_user("u-neg", method="svi", num_steps=5, progress=False)(e),
        ),
    )
    py(
        k,
        "Sigma of the wrong shape",
        r"Sigma \[3, 3\].*d = 4",
        lambda e: (
            with_model("u-short", _sigma_model(lambda c: c[1:, 1:])),
            adapt_user("u-short")(e),
        ),
    )
    py(
        k,
        "NaN in the model",
        r"non-finite value or log density at site\(s\) 'Sigma' at a prior draw",
        lambda e: (with_model("u-nan", _nan_model), adapt_user("u-nan")(e)),
    )
    py(
        k,
        "sites name a site the model lacks",
        r"must define the site\(s\) mu for kind 'u-renamed'",
        lambda e: (with_model("u-renamed", _renamed_model), adapt_user("u-renamed")(e)),
    )
    py(
        k,
        "model observes no 'targets' site",
        r"observes the site\(s\) 'obs'; the target anchors' site must be named 'targets'",
        lambda e: (with_model("u-obs", _unobserved_model), adapt_user("u-obs")(e)),
    )
    py(
        k,
        "to_model returns no anchor model",
        r"UDict\.to_model cannot build an anchor model from a prior draw",
        lambda e: (
            register("u-dict", {"to_model": classmethod(lambda c, p, t, dt, f: dict(p))}),
            adapt_user("u-dict")(e),
        ),
    )
    py(
        k,
        "prior_kwargs returns a list",
        r"prior_kwargs: the u-kwlist family's model keywords must be a dict.*got list",
        lambda e: (
            register("u-kwlist", {"prior_kwargs": lambda self: [self.mu0]}),
            adapt_user("u-kwlist")(e),
        ),
    )
    py(
        k,
        "from_anchors returns something else",
        r"UFa\.from_anchors: returned ndarray, not a UFa",
        lambda e: (
            register("u-fa", {"from_anchors": classmethod(lambda c, b, t=None: np.zeros(3))}),
            adapt_user("u-fa")(e),
        ),
    )
    py(
        k,
        "no exact update and no method=",
        r"method: the u-exactless prior has no closed-form update; use ad\.SVI\(\.\.\.\) or ad\.NUTS",
        lambda e: (
            register("u-exactless"),
            ad.adapt("u-exactless", e.broad, e.targets, tau=TAU),
        ),
    )
    py(
        k,
        "ad.Exact() on a family without an exact update",
        r"u-exact2 prior has no closed-form update",
        lambda e: ad.infer(
            _registered("u-exact2").from_anchors(e.broad), e.targets, ad.Exact(), tau=TAU
        ),
    )
    py(
        k,
        "subspace= with a family that is not Projectable",
        r"subspace: the u-sub family has no principal-subspace projection.*Projectable",
        lambda e: ad.infer(
            _registered("u-sub").from_anchors(e.broad),
            e.targets,
            ad.NUTS(subspace=2, num_warmup=5, num_samples=5, num_chains=1, progress=False),
            tau=TAU,
            broad=e.broad,
        ),
    )
    py(
        k,
        "prior built at another dimension than the targets",
        r"target_anchors: dimension mismatch: d=4, but the broad anchors have d=3",
        lambda e: ad.infer(
            _registered("u-dim").from_anchors(e.broad[:, :3]),
            e.targets,
            ad.NUTS(num_warmup=5, num_samples=5, num_chains=1, progress=False),
            tau=TAU,
        ),
    )
    py(
        k,
        "unknown kind",
        r"kind.*no-such-kind",
        lambda e: ad.adapt("no-such-kind", e.broad, e.targets, tau=TAU),
    )
    py(
        k,
        "the family's own guide example works (correct)",
        "",
        lambda e: ad.adapt("user-mean", e.broad, e.targets, tau=TAU),
        expect="ok",
    )


def _registered(kind):
    return FAMILIES[kind] if kind in FAMILIES else register(kind)


# --------------------------------------------------------------------------- methods and options


def method_cases():
    k = "method"
    for name, kw, match in [
        ("NUTS num_samples=0", {"num_samples": 0}, r"num_samples.*>= ?1.*0"),
        ("NUTS num_samples negative", {"num_samples": -5}, r"num_samples.*-5"),
        ("NUTS num_samples a string", {"num_samples": "100"}, r"num_samples.*integer.*'100'"),
        ("NUTS num_warmup negative", {"num_warmup": -1}, r"num_warmup.*-1"),
        ("NUTS num_chains 0", {"num_chains": 0}, r"num_chains.*0"),
        ("NUTS unknown init strategy", {"init_strategy": "bogus"}, r"init_strategy.*'bogus'"),
        ("NUTS target_accept_prob 1.5", {"target_accept_prob": 1.5}, r"target_accept_prob.*1\.5"),
        ("NUTS max_tree_depth 0", {"max_tree_depth": 0}, r"max_tree_depth.*0"),
        ("NUTS chain_method unknown", {"chain_method": "bogus"}, r"chain_method.*'bogus'"),
        ("NUTS subspace 0", {"subspace": 0}, r"subspace.*0"),
        ("NUTS seed a string", {"seed": "a"}, r"seed.*'a'"),
        ("NUTS model not callable", {"model": "mymodel"}, r"model.*(function|callable).*str"),
    ]:
        py(k, name, match, lambda e, kw=kw: e.adapt("gaussian", method=ad.NUTS(**kw)))
    for name, kw, match in [
        ("SVI unknown guide", {"guide": "bogus"}, r"guide.*'bogus'"),
        ("SVI num_steps 0", {"num_steps": 0}, r"num_steps.*0"),
        ("SVI negative learning rate", {"learning_rate": -1.0}, r"learning_rate.*-1"),
        ("SVI guide_rank 0", {"guide": "lowrank", "guide_rank": 0}, r"guide_rank.*0"),
        ("SVI num_particles 0", {"num_particles": 0}, r"num_particles.*0"),
        ("SVI unknown init strategy", {"init_strategy": "nope"}, r"init_strategy.*'nope'"),
        (
            "SVI num_samples 1 with a distribution guide (was refused after the fit)",
            {"guide": "normal", "num_samples": 1},
            r"num_samples: must be >= 2, got 1",
        ),
        ("SVI optimizer a string", {"optimizer": "adam"}, r"optimizer: .*got str"),
    ]:
        py(k, name, match, lambda e, kw=kw: e.adapt("gaussian", method=ad.SVI(**kw)))
    py(k, "method= a string", r"method.*'nuts'", lambda e: e.infer("nuts"))
    py(
        k,
        "method= the class, not an instance",
        r"method.*NUTS\(",
        lambda e: e.infer(ad.NUTS),
    )
    py(k, "method= a number", r"method.*42", lambda e: e.adapt("gaussian", method=42))
    py(
        k,
        "unknown option name",
        r"unknown option\(s\) kappa_0; allowed: .*kappa0",
        lambda e: e.adapt("gaussian", kappa_0=3.0),
    )
    py(k, "kappa0 negative", r"kappa0.*-1", lambda e: e.adapt("gaussian", kappa0=-1.0))
    py(k, "kappa0 zero", r"kappa0.*0", lambda e: e.adapt("gaussian", kappa0=0.0))
    py(k, "kappa0 a string", r"kappa0.*'abc'", lambda e: e.adapt("gaussian", kappa0="abc"))
    py(
        k,
        "nu0 <= d - 1",
        r"nu0: must be > d \+ 1 = 5.*got 2\.0",
        lambda e: e.adapt("gaussian", nu0=2.0),
    )
    py(k, "nu0 NaN", r"nu0.*nan", lambda e: e.adapt("gaussian", nu0=float("nan")))
    py(
        k,
        "NIWPrior kappa0 <= 0",
        r"kappa0.*0",
        lambda e: ad.NIWPrior(np.zeros(D), np.eye(D), 0.0, D + 5.0),
    )
    py(k, "strengths unknown", r"strengths.*'loo'", lambda e: e.adapt("gaussian", strengths="loo"))
    py(k, "mixture components 0", r"components.*0", lambda e: e.adapt("mixture", components=0))
    py(
        k,
        "spectral rank > d",
        r"rank: must be \[1, 4\], got 9",
        lambda e: e.adapt("spectral", rank=9),
    )
    py(
        k,
        "lkj concentration negative",
        r"concentration.*-2",
        lambda e: e.adapt(
            "lkj-gaussian",
            concentration=-2.0,
            method=ad.NUTS(num_warmup=5, num_samples=5, num_chains=1, progress=False),
        ),
    )
    py(k, "tau 0", r"tau.*0", lambda e: ad.fit("gaussian", e.targets, tau=0.0))
    py(k, "tau negative", r"tau.*-3", lambda e: ad.adapt("gaussian", e.broad, e.targets, tau=-3.0))
    py(k, "tau NaN", r"tau.*nan", lambda e: ad.fit("gaussian", e.targets, tau=float("nan")))
    py(k, "tau a string", r"tau.*'20'", lambda e: ad.fit("gaussian", e.targets, tau="20"))
    py(
        k,
        "tau missing for plain arrays",
        r"tau.*not given",
        lambda e: ad.fit("gaussian", e.targets),
    )
    py(k, "fit unknown kind", r"kind.*'gausian'", lambda e: ad.fit("gausian", e.targets, tau=TAU))
    py(
        k,
        "fit unknown option",
        r"gaussian: unknown option\(s\) bogus; allowed: reg",
        lambda e: ad.fit("gaussian", e.targets, tau=TAU, bogus=1),
    )
    py(
        k,
        "latent rank > d",
        r"rank.*10",
        lambda e: ad.fit("latent-gaussian", e.broad, tau=TAU, rank=10),
    )
    py(k, "mix p outside [0, 1]", r"p.*1\.5", lambda e: ad.mix(e.model, e.model, 1.5))
    py(k, "top_k k=0", r"k.*0", lambda e: ad.top_k(e.model, e.queries, e.gallery, 0))
    py(k, "top_k k a string", r"k.*'5'", lambda e: ad.top_k(e.model, e.queries, e.gallery, "5"))
    py(
        k,
        "a method object and method options together",
        r"num_samples: an option of the inference method; with method=ad\.NUTS",
        lambda e: e.adapt(
            "gaussian",
            method=ad.NUTS(num_warmup=5, num_samples=5, num_chains=1, progress=False),
            num_samples=10,
        ),
    )
    py(
        k,
        "an SVI option with the exact update",
        r"guide: runs with method='svi', not with method='exact'",
        lambda e: e.adapt("gaussian", guide="normal"),
    )
    py(
        k,
        "a NUTS option with method='svi'",
        r"num_warmup: runs with method='nuts', not with method='svi'",
        lambda e: e.adapt("gaussian", method="svi", num_warmup=10),
    )
    py(
        k,
        "subspace= with the exact update",
        r"subspace: runs with method='nuts' or 'svi', not with method='exact'",
        lambda e: e.adapt("gaussian", subspace=2),
    )
    py(
        k,
        "NUTS model_kwargs a string",
        r"model_kwargs: a dict or a callable.*got str",
        lambda e: e.adapt("gaussian", method=ad.NUTS(model=_mean_model, model_kwargs="abc")),
    )
    py(
        "family",
        "NUTS model without a targets site",
        r"observes the site\(s\) 'obs'; the target anchors' site must be named 'targets'",
        lambda e: ad.adapt(
            "gaussian",
            e.broad,
            e.targets,
            tau=TAU,
            method=ad.NUTS(
                model=_unobserved_model,
                model_kwargs={"mu0": np.zeros(D), "cov": np.eye(D), "kappa0": 1.0},
                num_warmup=5,
                num_samples=5,
                num_chains=1,
                progress=False,
            ),
        ),
    )
    py(
        "checks",
        "point summary of an unknown name",
        r"which: 'mean' or 'map', got 'median'",
        lambda e: e.post.point("median"),
    )
    py(
        "checks",
        "retrieval_uncertainty which unknown",
        r"which.*'median'",
        lambda e: ad.retrieval_uncertainty(
            e.post, e.queries, e.gallery, k=2, num_draws=3, which="median"
        ),
    )
    py(
        "checks",
        "inference_data seed a string",
        r"seed.*'a'",
        lambda e: ad.inference_data(e.post, num_draws=5, seed="a"),
    )
    py(
        "checks",
        "prior_sensitivity seed a string",
        r"seed.*'a'",
        lambda e: ad.prior_sensitivity(e.post, seed="a"),
    )
    py(
        "checks",
        "retrieval_uncertainty negative seed",
        r"seed.*-1",
        lambda e: ad.retrieval_uncertainty(e.post, e.queries, e.gallery, k=2, num_draws=3, seed=-1),
    )
    py(
        "checks",
        "compare_priors seed a float",
        r"seed.*1\.5",
        lambda e: ad.compare_priors({"a": e.broad}, e.targets, kind="gaussian", tau=TAU, seed=1.5),
    )
    py(
        "checks",
        "evaluate seed a string",
        r"seed.*'x'",
        lambda e: ad.evaluate(
            {"m": e.model},
            e.queries,
            e.gallery,
            e.relevance,
            n_boot=10,
            seed="x",
            baselines=("cosine",),
        ),
    )
    py(
        "checks",
        "adaptation_curve negative seed",
        r"seed.*-2",
        lambda e: ad.adaptation_curve(
            e.broad,
            e.targets,
            e.queries,
            e.gallery,
            e.relevance,
            tau=TAU,
            models=("cosine",),
            n_boot=10,
            seed=-2,
        ),
    )
    py(
        "checks",
        "sbc seed a string",
        r"seed.*'s'",
        lambda e: ad.sbc(lambda r: 0, lambda r, p: 0, lambda x: 0, {"m": lambda p: 0.0}, seed="s"),
    )
    py("checks", "posterior draws seed a string", r"seed.*'s'", lambda e: e.post.sample("s", 5))
    py(
        "checks",
        "prior_sensitivity delta 0",
        r"delta.*0",
        lambda e: ad.prior_sensitivity(e.post, delta=0.0),
    )
    py(
        "checks",
        "compare_priors unknown estimator",
        r"estimator.*'bogus'",
        lambda e: ad.compare_priors(
            {"a": e.broad}, e.targets, kind="gaussian", tau=TAU, estimator="bogus"
        ),
    )
    py(
        "checks",
        "compare_priors folds 1",
        r"folds.*1",
        lambda e: ad.compare_priors(
            {"a": e.broad}, e.targets, kind="gaussian", tau=TAU, folds=1, estimator="kfold"
        ),
    )
    py(
        "checks",
        "evaluate scorers a list",
        r"scorers",
        lambda e: ad.evaluate(
            [e.model], e.queries, e.gallery, e.relevance, n_boot=10, baselines=("cosine",)
        ),
    )
    py(
        "checks",
        "evaluate unknown baseline",
        r"baselines?.*'bm25'",
        lambda e: ad.evaluate(
            {"m": e.model}, e.queries, e.gallery, e.relevance, baselines=("bm25",), n_boot=10
        ),
    )
    py(
        "checks",
        "evaluate level 95",
        r"level.*95",
        lambda e: ad.evaluate(
            {"m": e.model},
            e.queries,
            e.gallery,
            e.relevance,
            level=95,
            n_boot=10,
            baselines=("cosine",),
        ),
    )
    py(
        "checks",
        "adaptation_curve unknown model",
        r"models?.*'bogus'",
        lambda e: ad.adaptation_curve(
            e.broad,
            e.targets,
            e.queries,
            e.gallery,
            e.relevance,
            tau=TAU,
            models=("bogus",),
            n_boot=10,
        ),
    )
    py(
        "checks",
        "adaptation_curve budget above the targets (was dropped silently)",
        r"budgets: 50 exceed the 6 target anchors and are left out; the curve has the full count 6 only",
        lambda e: ad.adaptation_curve(
            e.broad,
            e.targets,
            e.queries,
            e.gallery,
            e.relevance,
            tau=TAU,
            models=("cosine",),
            budgets=[50],
            n_boot=10,
            progress=False,
        ),
        expect="warning",
    )
    py(
        "files",
        "load_prior with an unknown kind",
        r"kind.*'nope'",
        lambda e: ad.load_prior(e.model_dir, kind="nope"),
    )
    py(
        "files",
        "load_prior with an unknown strength",
        r"gaussian: unknown prior option\(s\) bogus; its options: kappa0",
        lambda e: ad.load_prior(e.model_dir, bogus=1.0),
    )
    py(
        "files",
        "load_prior of a saved prior with strengths (were ignored)",
        r"kappa0: .*is a saved prior, which holds its own strengths",
        lambda e: ad.load_prior(e.prior_dir, kappa0=5.0),
    )
    py(
        "files",
        "load_prior of a posterior bundle",
        r"post: holds a 'posterior', not an anchor model \(load it with ad\.load_posterior\)",
        lambda e: ad.load_prior(e.post_dir),
    )
    py(
        "checks",
        "sbc quantity not a function",
        r"quantities: 'm' not a function",
        lambda e: ad.sbc(lambda r: 0, lambda r, p: 0, lambda x: 0, {"m": 3}),
    )
    py(
        k,
        "divergence unknown method",
        r"method.*'fast'",
        lambda e: ad.divergence(e.model, e.queries, e.gallery, method="fast"),
    )


# --------------------------------------------------------------------------- data


def data_cases():
    k = "data"
    py(
        k,
        "anchors as a list of rows of different lengths",
        r"anchors: expected an array of embeddings \[n, d\], got a list numpy cannot make one",
        lambda e: ad.fit("gaussian", [list(e.broad[0]), list(e.broad[1][:3])], tau=TAU),
    )
    py(
        k,
        "targets of the wrong dimension",
        r"target.*3.*d ?= ?4|target.*d ?= ?4.*3",
        lambda e: ad.adapt("gaussian", e.broad, e.targets[:, :3], tau=TAU),
    )
    py(
        k,
        "broad of the wrong dimension",
        r"dimension mismatch: d=4, but the broad anchors have d=3",
        lambda e: ad.adapt("gaussian", e.broad[:, :3], e.targets, tau=TAU),
    )
    py(
        k,
        "queries of the wrong dimension",
        r"queries.*3.*d=4",
        lambda e: ad.divergence(e.model, e.queries[:, :3], e.gallery),
    )
    py(
        k,
        "gallery of the wrong dimension",
        r"gallery.*5.*d=4",
        lambda e: ad.divergence(e.model, e.queries, np.ones((3, 5))),
    )
    py(
        k,
        "top_k queries of the wrong dimension",
        r"queries.*3.*d=4",
        lambda e: ad.top_k(e.model, e.queries[:, :3], e.gallery, 2),
    )
    py(
        k,
        "GalleryIndex gallery of the wrong dimension",
        r"gallery.*3.*d=4",
        lambda e: ad.GalleryIndex(e.model, e.gallery[:, :3]),
    )
    py(
        k,
        "index search queries of the wrong dimension",
        r"queries.*3.*d=4",
        lambda e: ad.GalleryIndex(e.model, e.gallery).top_k(e.queries[:, :3], 2),
    )
    py(
        k,
        "posterior model queries of the wrong dimension",
        r"queries.*3.*d=4",
        lambda e: ad.retrieval_uncertainty(e.post, e.queries[:, :3], e.gallery, k=2, num_draws=3),
    )
    py(
        k,
        "1-D anchors (one vector)",
        r"anchors: a single anchor \(zero variance\)",
        lambda e: ad.fit("gaussian", e.targets[0], tau=TAU),
    )
    py(
        k,
        "empty anchors",
        r"anchors.*empty",
        lambda e: ad.fit("gaussian", np.zeros((0, D)), tau=TAU),
    )
    py(
        k,
        "empty targets",
        r"target.*empty",
        lambda e: ad.adapt("gaussian", e.broad, np.zeros((0, D)), tau=TAU),
    )
    py(
        k,
        "NaN row in anchors",
        r"anchors.*NaN.*row 2",
        lambda e: ad.fit("gaussian", _with(e.targets, 2, np.nan), tau=TAU),
    )
    py(
        k,
        "inf row in broad",
        r"broad.*(NaN|inf).*row 5",
        lambda e: ad.adapt("gaussian", _with(e.broad, 5, np.inf), e.targets, tau=TAU),
    )
    py(
        k,
        "NaN in queries",
        r"queries.*NaN",
        lambda e: ad.divergence(e.model, _with(e.queries, 0, np.nan), e.gallery),
    )
    py(
        k,
        "integer anchors",
        r"anchors.*dtype=int",
        lambda e: ad.fit("gaussian", np.arange(24).reshape(6, 4), tau=TAU),
    )
    py(
        k,
        "object anchors",
        r"anchors.*dtype=object",
        lambda e: ad.fit("gaussian", np.array([[1.0, "a"]] * 3, dtype=object), tau=TAU),
    )
    py(
        k,
        "string gallery",
        r"gallery.*dtype=<U",
        lambda e: ad.divergence(e.model, e.queries, np.array([["a"] * 4] * 3)),
    )
    py(
        k,
        "3-D anchors",
        r"anchors.*\[n, d\].*\[2, 3, 4\]",
        lambda e: ad.fit("gaussian", np.ones((2, 3, 4)), tau=TAU),
    )
    py(
        k,
        "boolean relevance as gallery",
        r"gallery.*bool",
        lambda e: ad.divergence(e.model, e.queries, e.relevance),
    )
    py(
        k,
        "identical anchors",
        r"identical",
        lambda e: ad.fit("gaussian", np.ones((5, D)) / 2, tau=TAU),
    )
    py(
        k,
        "one target for mixture",
        r"anchors: a single anchor \(zero variance\)",
        lambda e: ad.fit("mixture", e.targets[:1], tau=TAU, components=2),
    )
    py(
        k,
        "mixture with more components than anchors",
        r"anchors: too few anchors for 10 components: need at least 20, got 6",
        lambda e: ad.fit("mixture", e.targets, tau=TAU, components=10),
    )
    py(
        k,
        "gaussian n < d (correct, with a ridge)",
        "",
        lambda e: ad.fit("gaussian", e.targets[:3], tau=TAU),
        expect="ok",
    )
    py(
        k,
        "float32 anchors (correct)",
        "",
        lambda e: ad.fit("gaussian", e.targets.astype(np.float32), tau=TAU),
        expect="ok",
    )
    py(
        k,
        "non-unit queries warn",
        r"queries.*not unit-norm",
        lambda e: ad.divergence(e.model, 3 * e.queries, e.gallery),
        expect="warning",
    )
    py(
        k,
        "relevance of the wrong shape",
        r"relevance: expected shape \[Q, G\] = \[3, 12\], got \[3, 5\]",
        lambda e: ad.evaluate({"m": e.model}, e.queries, e.gallery, e.relevance[:, :5], n_boot=10),
    )
    py(
        k,
        "auprc of mismatched shapes",
        r"auprc: relevance \[3, 12\] and scores \[3, 5\] must have the same shape",
        lambda e: ad.auprc(e.relevance, np.zeros((3, 5))),
    )
    py(
        k,
        "relevance with no positives",
        r"auprc: 3 row\(s\) have no relevant item",
        lambda e: ad.auprc(np.zeros((3, 12), bool), np.zeros((3, 12))),
    )


def path_cases():
    k = "data"
    py(
        k,
        "a path where anchors are expected",
        r"anchors: expected an array of embeddings \[n, d\], got str 't\.npy' \(a path\? read it with ad\.load_embeddings\)",
        lambda e: ad.fit("gaussian", "t.npy", tau=TAU),
    )
    py(
        k,
        "a Posterior as queries",
        r"queries: expected an array of embeddings \[n, d\], got ExactPosterior",
        lambda e: ad.divergence(e.model, e.post, e.gallery),
    )
    py(
        k,
        "a list of lists as anchors (correct)",
        "",
        lambda e: ad.fit("gaussian", e.targets.tolist(), tau=TAU),
        expect="ok",
    )


def more_cases():
    k = "method"
    py(
        k,
        "top_k chunk 0",
        r"chunk: must be >= 1, got 0",
        lambda e: ad.top_k(e.model, e.queries, e.gallery, 2, chunk=0),
    )
    py(
        k,
        "divergence precision unknown",
        r"precision.*'low'",
        lambda e: ad.divergence(e.model, e.queries, e.gallery, precision="low"),
    )
    py(
        k,
        "GalleryIndex top_k k=0",
        r"k: must be \[1, 12\], got 0",
        lambda e: ad.GalleryIndex(e.model, e.gallery).top_k(e.queries, 0),
    )
    py(k, "resolve_tau of nothing", r"tau: not given", lambda e: ad.resolve_tau(None))
    py(
        k,
        "mix of a model and an array",
        r"(first|second).*(anchor model|AnchorModel)",
        lambda e: ad.mix(e.model, e.broad, 0.5),
    )
    py(
        k,
        "mix of models of different d",
        r"dimension|d=",
        lambda e: ad.mix(e.model, ad.fit("gaussian", e.broad[:, :3], tau=TAU), 0.5),
    )
    py(
        k,
        "fit with normalize and a zero row",
        r"row 6 is all zeros",
        lambda e: ad.fit(
            "gaussian", np.vstack([e.targets, np.zeros((1, D))]), tau=TAU, normalize=True
        ),
    )
    k = "checks"
    py(
        k,
        "prior_sensitivity alphas of one value (correct: the curve at alpha = 1)",
        "",
        lambda e: ad.prior_sensitivity(e.post, alphas=[1.0]),
        expect="ok",
    )
    py(
        k,
        "retrieval_uncertainty relevance of the wrong shape",
        r"relevance.*\[3, 12\]",
        lambda e: ad.retrieval_uncertainty(
            e.post, e.queries, e.gallery, k=2, num_draws=3, relevance=e.relevance[:, :4]
        ),
    )
    py(
        k,
        "retrieval_uncertainty k larger than the gallery",
        r"k: must be \[1, 12\], got 50",
        lambda e: ad.retrieval_uncertainty(e.post, e.queries, e.gallery, k=50, num_draws=3),
    )
    py(
        k,
        "compare_priors dict candidate without broad",
        r"priors: a dict candidate needs its broad anchors under 'broad'",
        lambda e: ad.compare_priors({"a": {"kappa0": 1.0}}, e.targets, kind="gaussian", tau=TAU),
    )
    py(
        k,
        "compare_priors targets of another d",
        r"target_anchors: dimension mismatch: d=3, but the broad anchors have d=4",
        lambda e: ad.compare_priors({"a": e.broad}, e.targets[:, :3], kind="gaussian", tau=TAU),
    )
    py(
        k,
        "evaluate anchors of another d",
        r"anchors.*3.*4",
        lambda e: ad.evaluate(
            {"m": e.model}, e.queries, e.gallery, e.relevance, anchors=e.targets[:, :3], n_boot=10
        ),
    )
    py(
        k,
        "point('map') of an exact posterior (correct)",
        "",
        lambda e: e.post.point("map"),
        expect="ok",
    )
    py(
        k,
        "plot_curve of a Curve object",
        r"summary: a list of row dicts \(Curve\.summary\(\)\), got Curve",
        lambda e: ad.plots.plot_curve(e.curve, e.tmp / "c.png"),
    )
    py(
        k,
        "plot_scores of an Evaluation object",
        r"summary: a list of row dicts \(Evaluation\.summary\(\)\), got Evaluation",
        lambda e: ad.plots.plot_scores(e.evaluation, e.tmp / "s.png"),
    )
    py(
        k,
        "elbo_plot of a Posterior",
        r"elbo: a non-empty 1-D array of the loss per step, got ExactPosterior",
        lambda e: ad.plots.elbo_plot(e.post, e.tmp / "e.png"),
    )
    py(
        k,
        "elbo_plot of an empty array (drew an empty plot)",
        r"elbo: a non-empty 1-D array .*got ndarray of shape \[0\]",
        lambda e: ad.plots.elbo_plot(np.zeros(0), e.tmp / "e2.png"),
    )
    py(k, "register_model of a non-callable", r"factory", lambda e: ad.register_model("u-model", 3))
    py(
        k,
        "register_model under a built-in name",
        r"'cosine'.*(already|registered|overwrite)",
        lambda e: ad.register_model("cosine", lambda b, t, tau: None),
    )
    py(
        k,
        "register_model with an unknown role",
        r"role: unknown",
        lambda e: ad.register_model("u-role", lambda b, t, tau: None, role="best"),
    )
    k = "files"
    py(
        k,
        "save_posterior of an anchor model",
        r"(post|Posterior).*Gaussian",
        lambda e: ad.save_posterior(e.model, e.tmp / "sp"),
    )
    py(
        k,
        "save_model of a Posterior",
        r"model.*(anchor model|AnchorModel).*Posterior",
        lambda e: ad.save_model(e.post, e.tmp / "sm"),
    )
    py(
        k,
        "post.save onto an existing bundle",
        r"already exists.*overwrite=True",
        lambda e: e.post.save(e.post_dir),
    )
    py(
        k,
        "save_embeddings with NaN (correct: refused where they are used)",
        "",
        lambda e: ad.save_embeddings(e.tmp / "nan.npy", _with(e.targets, 0, np.nan)),
        expect="ok",
    )
    py(
        k,
        "save_embeddings with a negative logit_scale (was written)",
        r"logit_scale: must be a finite positive number, got -1\.0",
        lambda e: ad.save_embeddings(e.tmp / "neg.npy", e.targets, encoder="x", logit_scale=-1.0),
    )
    py(
        k,
        "save_embeddings of integers",
        r"dtype=int",
        lambda e: ad.save_embeddings(e.tmp / "ints.npy", np.arange(12).reshape(3, 4)),
    )


def _with(x, row, value):
    y = np.array(x, np.float64, copy=True)
    y[row, 1] = value
    return y


# --------------------------------------------------------------------------- checks / ArviZ


def checks_cases():
    k = "checks"
    py(
        k,
        "prior_sensitivity of an InferenceData",
        r"prior_sensitivity: takes an adapted Posterior.*got ArviZ data",
        lambda e: ad.prior_sensitivity(e.idata),
    )
    py(
        k,
        "compare_priors of InferenceData",
        r"priors.*'a'.*(InferenceData|DataTree)",
        lambda e: ad.compare_priors({"a": e.idata}, e.targets, kind="gaussian", tau=TAU),
    )
    py(
        k,
        "compare_priors without a kind",
        r"compare_priors: the kind of candidate 'a' is not named; pass kind=",
        lambda e: ad.compare_priors({"a": e.broad, "b": e.broad[::-1]}, e.targets, tau=TAU),
    )
    py(
        k,
        "compare_priors of an empty dict",
        r"priors: a dict of name -> .* with at least one entry",
        lambda e: ad.compare_priors({}, e.targets, kind="gaussian", tau=TAU),
    )
    py(
        k,
        "compare_priors of a list",
        r"priors: a dict of name -> .* with at least one entry",
        lambda e: ad.compare_priors([e.broad], e.targets, kind="gaussian", tau=TAU),
    )
    py(
        k,
        "inference_data of an anchor model",
        r"inference_data: takes an adapted Posterior.*got Gaussian",
        lambda e: ad.inference_data(e.model),
    )
    py(
        k,
        "inference_data of an InferenceData",
        r"inference_data: takes an adapted Posterior.*got ArviZ data",
        lambda e: ad.inference_data(e.idata),
    )
    py(
        k,
        "inference_data num_draws 0",
        r"num_draws.*0",
        lambda e: ad.inference_data(e.post, num_draws=0),
    )
    py(
        k,
        "inference_data targets of the wrong dimension",
        r"targets.*3.*4",
        lambda e: ad.inference_data(e.post, num_draws=5, targets=e.targets[:, :3]),
    )
    py(
        k,
        "inference_data of a loaded posterior without targets (correct)",
        "",
        lambda e: ad.inference_data(ad.load_posterior(e.post_dir), num_draws=5),
        expect="ok",
    )
    py(
        k,
        "prior_sensitivity negative alphas",
        r"alpha: must be a finite positive number, got -1",
        lambda e: ad.prior_sensitivity(e.post, alphas=[-1.0, 1.0]),
    )
    py(
        k,
        "prior_sensitivity queries without gallery",
        r"queries and gallery: give both",
        lambda e: ad.prior_sensitivity(e.post, queries=e.queries),
    )
    py(
        k,
        "retrieval_uncertainty of an anchor model",
        r"retrieval_uncertainty: takes an adapted Posterior.*got Gaussian",
        lambda e: ad.retrieval_uncertainty(e.model, e.queries, e.gallery),
    )
    py(
        k,
        "retrieval_uncertainty interval 2",
        r"interval.*2",
        lambda e: ad.retrieval_uncertainty(
            e.post, e.queries, e.gallery, k=2, num_draws=3, interval=2.0
        ),
    )
    py(
        k,
        "loo on InferenceData without log_likelihood",
        r"loo: the data has no log_likelihood group",
        lambda e: adz().loo(_without(e.idata, "log_likelihood")),
    )
    py(
        k,
        "loo_pit on InferenceData without observed_data",
        r"loo_pit: the data has no observed_data group",
        lambda e: adz().loo_pit(_without(e.idata, "observed_data")),
    )
    py(
        k,
        "loo_predictive of a Posterior",
        r"prior: NIW parameters .*got ExactPosterior",
        lambda e: ad.checks.loo_predictive(e.post, e.targets),
    )
    py(
        k,
        "diagnose an InferenceData as broad",
        r"broad: expected an array of embeddings \[n, d\], got (InferenceData|DataTree)",
        lambda e: ad.checks.diagnose(e.idata, e.targets, kappa0=1.0, nu0=10.0),
    )
    py(
        k,
        "prior_influence of an array",
        r"prior_influence: takes an adapted Posterior",
        lambda e: ad.checks.prior_influence(e.broad, e.queries, e.gallery),
    )
    py(
        k,
        "save_inference_data of a dict",
        r"idata: .*(InferenceData|DataTree).*dict",
        lambda e: ad.save_inference_data({"a": 1}, e.tmp / "x"),
    )
    py(
        k,
        "save_inference_data of a Posterior",
        r"idata: expected ArviZ data.*got ExactPosterior \(a posterior: ad.save_posterior",
        lambda e: ad.save_inference_data(e.post, e.tmp / "y"),
    )
    py(
        k,
        "sbc without callables",
        r"prior_sampler: expected a function, got int",
        lambda e: ad.sbc(1, 2, 3, {"m": lambda p: 0.0}),
    )
    py(
        k,
        "register_checks of a kind string",
        r"register_checks: expected a family class, got str",
        lambda e: ad.checks.register_checks("gaussian", quantities=lambda *a: {}),
    )


def adz():
    from anchordiv.checks import arviz

    return arviz


def _without(idata, group):
    """A copy of ``idata`` without ``group`` (ArviZ 0.x InferenceData or 1.x DataTree)."""
    out = idata.copy()
    if hasattr(out, "children"):
        del out[group]
    else:
        delattr(out, group)
    return out


# --------------------------------------------------------------------------- files


def file_cases():
    k = "files"
    py(
        k,
        "load_model of a missing path",
        r"nope: no such file or directory",
        lambda e: ad.load_model(e.tmp / "nope"),
    )
    py(
        k,
        "load_posterior of a missing path",
        r"nope: no such file or directory",
        lambda e: ad.load_posterior(e.tmp / "nope"),
    )
    py(
        k,
        "load_prior of a missing path",
        r"nope: no such file or directory",
        lambda e: ad.load_prior(e.tmp / "nope"),
    )
    py(
        k,
        "load_inference_data of a missing path",
        r"nope\.nc: no such file or directory",
        lambda e: ad.load_inference_data(e.tmp / "nope.nc"),
    )
    py(
        k,
        "load_embeddings of a missing path",
        r"embeddings: no such file: .*nope\.npy",
        lambda e: ad.load_embeddings(e.tmp / "nope.npy"),
    )
    py(
        k,
        "load_posterior of a model bundle",
        r"model: holds a 'anchor-model', not a posterior \(load it with ad\.load_model\)",
        lambda e: ad.load_posterior(e.model_dir),
    )
    py(
        k,
        "load_model of a posterior bundle",
        r"post: holds a 'posterior', not an anchor model \(load it with ad\.load_posterior\)",
        lambda e: ad.load_model(e.post_dir),
    )
    py(
        k,
        "load_model of an embeddings file",
        r"t\.npy: a file, not a saved anchordiv bundle",
        lambda e: ad.load_model(e.files / "t.npy"),
    )
    py(
        k,
        "load_posterior of an embeddings file",
        r"t\.npy: a file, not a saved anchordiv bundle",
        lambda e: ad.load_posterior(e.files / "t.npy"),
    )
    py(
        k,
        "load_prior of an embeddings file",
        r"t\.npy: a file, not a saved anchordiv bundle",
        lambda e: ad.load_prior(e.files / "t.npy"),
    )
    py(
        k,
        "truncated arrays.npz",
        r"arrays\.npz: unreadable or truncated array archive",
        lambda e: ad.load_model(_damaged(e, "arrays.npz", truncate=True)),
    )
    py(
        k,
        "garbage card.json",
        r"card\.json: not valid JSON",
        lambda e: ad.load_model(_damaged(e, "card.json", garbage=b"{not json")),
    )
    py(
        k,
        "garbage .npz given as embeddings",
        r"embeddings: expected a \.npy file, got .*garbage\.npz",
        lambda e: ad.load_embeddings(_garbage(e, "garbage.npz")),
    )
    py(
        k,
        "truncated .npy given as embeddings",
        r"embeddings: .*trunc\.npy: not a readable \.npy array",
        lambda e: ad.load_embeddings(_truncated_npy(e)),
    )
    py(
        k,
        "load_inference_data of garbage",
        r"junk\.nc: a file, not a saved anchordiv bundle",
        lambda e: ad.load_inference_data(_garbage(e, "junk.nc")),
    )
    py(
        k,
        "load_embeddings of a directory",
        r"embeddings: .*files is a directory; expected a file",
        lambda e: ad.load_embeddings(e.files),
    )
    py(
        k,
        "load_inference_data of a directory",
        r"files: not a saved anchordiv bundle \(needs card\.json and arrays\.npz\)",
        lambda e: ad.load_inference_data(e.files),
    )
    py(
        k,
        "save_model onto a file",
        r"not a directory",
        lambda e: ad.save_model(e.model, e.files / "t.npy"),
    )
    py(
        k,
        "save_model onto an existing bundle",
        r"already exists.*overwrite=True",
        lambda e: ad.save_model(e.model, e.model_dir),
    )
    py(
        k,
        "save_inference_data onto a file",
        r"t\.npy: exists and is not a directory",
        lambda e: ad.save_inference_data(e.idata, e.files / "t.npy"),
    )
    py(
        k,
        "load_model with a wrong sha256",
        r"model: its digest is [0-9a-f]{64}, not the pinned 0{64}",
        lambda e: ad.load_model(e.model_dir, sha256="0" * 64),
    )


def _damaged(e, name, truncate=False, garbage=None):
    import shutil

    dst = e.tmp / f"damaged-{name}"
    if not dst.exists():
        shutil.copytree(e.model_dir, dst)
        f = dst / name
        if truncate:
            f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])
        else:
            f.write_bytes(garbage)
    return dst


def _garbage(e, name):
    f = e.tmp / name
    f.write_bytes(b"PK\x03\x04 this is not a zip archive")
    return f


def _truncated_npy(e):
    f = e.tmp / "trunc.npy"
    f.write_bytes((e.files / "t.npy").read_bytes()[:100])
    return f


# --------------------------------------------------------------------------- the command


def cli_cases():
    a = lambda e, kind, *extra: [  # noqa: E731
        "adapt",
        kind,
        f"{e.files}/b.npy",
        f"{e.files}/t.npy",
        "-o",
        f"{e.out}/m",
        "--tau",
        "5",
        *extra,
    ]
    fam = f"{USERFAM}/minimal_family.py:MinimalPrior"
    # a required option missing
    cli(
        "fit without -o",
        r"fit: error: the following arguments are required: -o",
        lambda e: ["fit", "gaussian", f"{e.files}/t.npy"],
    )
    cli(
        "search without -o",
        r"search: error: .*required: -o",
        lambda e: ["search", str(e.model_dir), f"{e.files}/q.npy", f"{e.files}/g.npy"],
    )
    cli(
        "adapt without -o",
        r"adapt: error: .*required: -o",
        lambda e: ["adapt", "gaussian", f"{e.files}/b.npy", f"{e.files}/t.npy"],
    )
    cli(
        "adapt without targets",
        r"adapt: error: .*(TARGET|BROAD)",
        lambda e: ["adapt", "gaussian", f"{e.files}/b.npy", "-o", f"{e.out}/m"],
    )
    cli(
        "diagnose without -o",
        r"diagnose: error: .*required: -o",
        lambda e: ["diagnose", str(e.post_dir)],
    )
    cli(
        "evaluate without --gallery",
        r"evaluate: error: .*required: --gallery",
        lambda e: ["evaluate", str(e.model_dir), "--relevance", "r.npy", "-o", f"{e.out}/v"],
    )
    cli(
        "curve without relevance",
        r"curve: error: .*required: relevance",
        lambda e: ["curve", "b.npy", "t.npy", "g.npy", "-o", f"{e.out}/c"],
    )
    cli(
        "embed without -o",
        r"embed: error: .*required: -o",
        lambda e: ["embed", f"{e.files}/texts.txt"],
    )
    cli(
        "build-prior without -o",
        r"build-prior: error: .*required: -o",
        lambda e: ["build-prior", "--text", str(e.files)],
    )
    cli("study without a name", r"study: error: .*required", lambda e: ["study"])
    cli("cache without an action", r"cache: error: .*required", lambda e: ["cache"])
    cli("unknown subcommand", r"invalid choice: 'fitt'", lambda e: ["fitt"])
    # wrong types
    cli("--seed abc", r"argument --seed: .*'abc'", lambda e: a(e, "mixture", "--seed", "abc"))
    cli(
        "--tau -1",
        r"tau: must be a finite positive number, got -1",
        lambda e: ["fit", "gaussian", f"{e.files}/t.npy", "-o", f"{e.out}/m", "--tau", "-1"],
    )
    cli(
        "-k abc",
        r"argument -k: .*'abc'",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "-k",
            "abc",
        ],
    )
    cli(
        "--num-draws 0",
        r"argument --num-draws: .*'0'",
        lambda e: ["diagnose", str(e.post_dir), "-o", f"{e.out}/d", "--num-draws", "0"],
    )
    cli(
        "--components 0",
        r"--components.*'?0",
        lambda e: [
            "fit",
            "mixture",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--components",
            "0",
        ],
    )
    cli(
        "--chunk 0",
        r"argument --chunk: .*'0'",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--chunk",
            "0",
        ],
    )
    cli(
        "--n-boot 0",
        r"--n-boot.*'?0",
        lambda e: [
            "evaluate",
            str(e.model_dir),
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/rel.npy",
            "-o",
            f"{e.out}/v",
            "--n-boot",
            "0",
        ],
    )
    cli(
        "--budgets -1",
        r"--budgets.*-1",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
            "--budgets",
            "-1",
        ],
    )
    cli(
        "--budgets abc",
        r"--budgets.*abc",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
            "--budgets",
            "abc",
        ],
    )
    cli(
        "--batch-size 0",
        r"argument --batch-size: .*'0'",
        lambda e: ["embed", f"{e.files}/texts.txt", "-o", f"{e.out}/e", "--batch-size", "0"],
    )
    cli(
        "--num-steps abc",
        r"argument --num-steps: .*'abc'",
        lambda e: a(e, "gaussian", "--method", "svi", "--num-steps", "abc"),
    )
    cli(
        "--learning-rate -0.1",
        r"learning_rate: must be a finite positive number, got -0\.1",
        lambda e: a(e, "gaussian", "--method", "svi", "--learning-rate", "-0.1"),
    )
    cli(
        "--subspace 0",
        r"--subspace.*'?0",
        lambda e: a(e, "gaussian", "--method", "nuts", "--subspace", "0"),
    )
    cli(
        "--fraction 2",
        r"--fraction.*2",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
            "--fraction",
            "2",
        ],
    )
    # prior options
    cli(
        "--prior-option tau0=abc",
        r"--prior-option tau0",
        lambda e: a(e, "gaussian", "--prior-option", "tau0=abc"),
    )
    cli(
        "--prior-option without =",
        r"--prior-option.*NAME=VALUE|--prior-option.*'kappa0'",
        lambda e: a(e, "gaussian", "--prior-option", "kappa0"),
    )
    cli(
        "--prior-option kappa0=abc",
        r"--prior-option kappa0: .*'abc'",
        lambda e: a(e, "gaussian", "--prior-option", "kappa0=abc"),
    )
    cli("--kappa0 -1", r"kappa0.*-1", lambda e: a(e, "gaussian", "--kappa0", "-1"))
    cli("--kappa0 0", r"kappa0.*0", lambda e: a(e, "gaussian", "--kappa0", "0"))
    cli("--nu0 2 (<= d - 1)", r"nu0.*(> ?d|2)", lambda e: a(e, "gaussian", "--nu0", "2"))
    cli("--nu0 abc", r"--nu0.*'abc'", lambda e: a(e, "gaussian", "--nu0", "abc"))
    cli("--strengths loo", r"--strengths.*'loo'", lambda e: a(e, "gaussian", "--strengths", "loo"))
    cli(
        "--concentration for gaussian",
        r"gaussian: unknown option\(s\) concentration",
        lambda e: a(e, "gaussian", "--concentration", "2"),
    )
    cli(
        "--model-kwargs bad JSON",
        r"--model-kwargs",
        lambda e: a(
            e,
            "gaussian",
            "--method",
            "nuts",
            "--model",
            f"{USERFAM}/minimal_family.py:scaled_mean_model",
            "--model-kwargs",
            "{bad",
        ),
    )
    # contradictory combinations
    cli(
        "--guide with --method exact",
        r"--guide: applies to --method svi, not to --method exact",
        lambda e: a(e, "gaussian", "--guide", "normal"),
    )
    cli(
        "--num-samples with --method exact",
        r"--num-samples: applies to --method nuts or --method svi",
        lambda e: a(e, "gaussian", "--num-samples", "10"),
    )
    cli(
        "--method exact with a family without an exact update",
        r"--method exact \(the default\): the user-minimal family has no closed-form update",
        lambda e: a(e, "user-minimal", "--family", fam, "--method", "exact"),
    )
    cli(
        "no --method with a family without an exact update",
        r"--method exact \(the default\): the user-minimal family has no closed-form update; pass --method svi",
        lambda e: a(e, "user-minimal", "--family", fam),
    )
    cli(
        "--method svi without --guide for a family without a posterior mean",
        r"--summary mean.*delta.*--guide normal",
        lambda e: a(e, "user-minimal", "--family", fam, "--method", "svi", "--num-steps", "3"),
    )
    cli(
        "--subspace with a family that is not Projectable",
        r"--subspace: the user-minimal family has no principal-subspace projection",
        lambda e: a(e, "user-minimal", "--family", fam, "--method", "nuts", "--subspace", "2"),
    )
    cli(
        "--device cuda without a GPU",
        r"device: 'cuda', but no CUDA device is available",
        lambda e: ["embed", f"{e.files}/texts.txt", "-o", f"{e.out}/e", "--device", "cuda"],
    )
    cli(
        "--scheduler with --workers",
        r"not allowed with",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--workers",
            "2",
            "--scheduler",
            "tcp://x:1",
        ],
    )
    cli(
        "--summary map for a point model",
        r"--summary: applies to a saved posterior; .*model is a point model",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--summary",
            "map",
        ],
    )
    cli(
        "--prior DIR with two positionals",
        r"anchors: expected TARGET \(the broad side is --prior DIR\), got 2 path\(s\)",
        lambda e: [
            "adapt",
            "gaussian",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            "--prior",
            str(e.model_dir),
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
        ],
    )
    # unknown kinds and families
    cli(
        "fit an unknown kind",
        r"invalid choice: 'gausian'",
        lambda e: ["fit", "gausian", f"{e.files}/t.npy", "-o", f"{e.out}/m", "--tau", "5"],
    )
    cli(
        "adapt an unknown kind",
        r"kind: unknown 'gausian'; adaptation supports gaussian",
        lambda e: a(e, "gausian"),
    )
    cli(
        "--family a missing module",
        r"--family.*no_such_module",
        lambda e: a(e, "x", "--family", "no_such_module:Prior"),
    )
    cli(
        "--family a missing file",
        r"--family.*nowhere\.py",
        lambda e: a(e, "x", "--family", f"{e.files}/nowhere.py:Prior"),
    )
    cli(
        "--family a missing class",
        r"--family.*Missing",
        lambda e: a(e, "user-minimal", "--family", f"{USERFAM}/minimal_family.py:Missing"),
    )
    cli(
        "--family without a class",
        r"--family: expected module:Class or file\.py:Class, got .*minimal_family\.py'",
        lambda e: a(e, "user-minimal", "--family", f"{USERFAM}/minimal_family.py"),
    )
    cli(
        "--family a file with a syntax error",
        r"--family.*broken\.py.*(syntax|Syntax)",
        lambda e: a(e, "x", "--family", f"{e.files}/broken.py:Prior"),
    )
    cli(
        "--family not a Family",
        r"--family: .*:scaled_mean_model is a function, not a Family subclass",
        lambda e: a(e, "x", "--family", f"{USERFAM}/minimal_family.py:scaled_mean_model"),
    )
    cli(
        "--family on search with a posterior (correct)",
        "",
        lambda e: [
            "search",
            str(e.post_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--family",
            fam,
        ],
        expect="ok",
    )
    # outputs
    cli(
        "-o is a file (directory output)",
        r"not a directory",
        lambda e: ["fit", "gaussian", f"{e.files}/t.npy", "-o", f"{e.files}/b.npy", "--tau", "5"],
    )
    cli(
        "-o exists",
        r"already exists.*--overwrite",
        lambda e: ["fit", "gaussian", f"{e.files}/t.npy", "-o", str(e.model_dir), "--tau", "5"],
    )
    cli(
        "-o under a file",
        r"is a file, not a folder",
        lambda e: ["fit", "gaussian", f"{e.files}/t.npy", "-o", f"{e.files}/b.npy/m", "--tau", "5"],
    )
    cli(
        "-o unwritable",
        r"No such file or directory: /proc/anchordiv-out",
        lambda e: [
            "fit",
            "gaussian",
            f"{e.files}/t.npy",
            "-o",
            "/proc/anchordiv-out/m",
            "--tau",
            "5",
        ],
    )
    cli(
        "--posterior-out is a file",
        r"b\.npy: exists and is not a directory; the output is a directory",
        lambda e: a(e, "gaussian", "--posterior-out", f"{e.files}/b.npy"),
    )
    # data on the command line
    cli(
        "search queries of the wrong dimension",
        r"queries.*3.*d=4",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q3.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
        ],
    )
    cli(
        "search gallery of the wrong dimension",
        r"gallery.*3.*d=4",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/q3.npy",
            "-o",
            f"{e.out}/r",
        ],
    )
    cli(
        "adapt targets of the wrong dimension",
        r"target.*3.*4",
        lambda e: [
            "adapt",
            "gaussian",
            f"{e.files}/b.npy",
            f"{e.files}/q3.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
        ],
    )
    cli(
        "fit integer anchors",
        r"dtype=int",
        lambda e: ["fit", "gaussian", f"{e.files}/int.npy", "-o", f"{e.out}/m", "--tau", "5"],
    )
    cli(
        "fit NaN anchors",
        r"anchors: contains NaN or inf in 1 row\(s\) \(first: row 1\)",
        lambda e: ["fit", "gaussian", f"{e.files}/nan.npy", "-o", f"{e.out}/m", "--tau", "5"],
    )
    cli(
        "fit object .npy",
        r"obj\.npy",
        lambda e: ["fit", "gaussian", f"{e.files}/obj.npy", "-o", f"{e.out}/m", "--tau", "5"],
    )
    cli(
        "fit empty anchors",
        r"anchors: is empty \(shape \[0, 4\]\)",
        lambda e: ["fit", "gaussian", f"{e.files}/empty.npy", "-o", f"{e.out}/m", "--tau", "5"],
    )
    cli(
        "evaluate relevance of the wrong shape",
        r"relevance: expected a \[3, 12\] relevance matrix .*got \[6, 4\]",
        lambda e: [
            "evaluate",
            str(e.model_dir),
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/v",
        ],
    )
    cli(
        "diagnose a model bundle",
        r"model: holds a 'anchor-model', not a posterior",
        lambda e: ["diagnose", str(e.model_dir), "-o", f"{e.out}/d"],
    )
    cli(
        "diagnose a missing path",
        r"posterior: no such model or posterior directory: .*nope",
        lambda e: ["diagnose", f"{e.files}/nope", "-o", f"{e.out}/d"],
    )
    cli(
        "search a missing model",
        r"model: no such model or posterior directory: .*nope",
        lambda e: [
            "search",
            f"{e.files}/nope",
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
        ],
    )
    cli(
        "search a truncated queries .npy",
        r"trunc\.npy",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/trunc.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
        ],
    )
    cli(
        "search a directory as queries",
        r"queries: .*files is a directory; expected a file",
        lambda e: [
            "search",
            str(e.model_dir),
            str(e.files),
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
        ],
    )
    cli(
        "ANCHORDIV_CACHE pointing at a file",
        r"ANCHORDIV_CACHE",
        lambda e: ["fit", "gaussian", f"{e.files}/t.npy", "-o", f"{e.out}/m", "--tau", "5"],
        ANCHORDIV_CACHE="{files}/b.npy",
    )
    cli(
        "diagnose --queries without --gallery",
        r"--queries and --gallery: give both",
        lambda e: [
            "diagnose",
            str(e.post_dir),
            "-o",
            f"{e.out}/d",
            "--queries",
            f"{e.files}/q.npy",
        ],
    )
    cli(
        "search -k larger than the gallery",
        r"k: must be \[1, 12\], got 100",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "-k",
            "100",
        ],
    )
    cli(
        "curve --models bogus",
        r"model 'bogus': unknown; registered: softmax",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
            "--models",
            "bogus",
        ],
    )
    cli(
        "fit --rank 0",
        r"rank.*0",
        lambda e: [
            "fit",
            "latent-gaussian",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--rank",
            "0",
        ],
    )
    cli(
        "--num-chains 0",
        r"--num-chains.*'?0",
        lambda e: a(e, "gaussian", "--method", "nuts", "--num-chains", "0"),
    )
    cli(
        "cache prune --older-than abc",
        r"--older-than.*abc",
        lambda e: ["cache", "prune", "--older-than", "abc"],
    )
    cli(
        "build-prior --all bogus",
        r"--all.*'bogus'",
        lambda e: ["build-prior", "-o", f"{e.out}/p", "--all", "bogus"],
    )
    cli(
        "--family on fit",
        r"unrecognized arguments: --family",
        lambda e: [
            "fit",
            "gaussian",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--family",
            "x:Y",
        ],
    )
    cli(
        "embed a missing input",
        r"no such file",
        lambda e: ["embed", f"{e.files}/missing.txt", "-o", f"{e.out}/e"],
    )
    cli(
        "adapt --tau 0",
        r"tau.*0",
        lambda e: [
            "adapt",
            "gaussian",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "0",
        ],
    )
    cli(
        "--prior-option kappa0=-1",
        r"kappa0.*-1",
        lambda e: a(e, "gaussian", "--prior-option", "kappa0=-1"),
    )
    cli(
        "--prior-option nu0=2",
        r"nu0.*(> ?d|2)",
        lambda e: a(e, "gaussian", "--prior-option", "nu0=2"),
    )
    cli(
        "--model not a function",
        r"--model: .*:KIND is a str, not a NumPyro model function",
        lambda e: a(
            e, "gaussian", "--method", "nuts", "--model", f"{USERFAM}/minimal_family.py:KIND"
        ),
    )
    cli(
        "--posterior-out the same as -o (wrote -o, then refused)",
        r"output .*out/m: the same place as, or inside, the output",
        lambda e: a(e, "gaussian", "--posterior-out", f"{e.out}/m"),
    )
    cli(
        "evaluate without any model or baseline",
        r"nothing to evaluate: give MODEL directories, or baselines with --baselines",
        lambda e: [
            "evaluate",
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/rel.npy",
            "-o",
            f"{e.out}/v",
            "--baselines",
            "",
        ],
    )
    cli(
        "evaluate relevance with NaN (was refused by auprc after scoring)",
        r"relevance: must be binary \(0/1 or bool\); entry \[0, 0\] is nan",
        lambda e: [
            "evaluate",
            str(e.model_dir),
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/relnan.npy",
            "-o",
            f"{e.out}/v",
            "--baselines",
            "cosine",
        ],
    )
    cli(
        "adapt lkj-gaussian --guide delta --summary mean",
        r"--summary mean \(the default\): .*delta.*no closed-form posterior mean",
        lambda e: a(e, "lkj-gaussian", "--method", "svi", "--guide", "delta", "--num-steps", "3"),
    )
    cli(
        "search a posterior --summary median",
        r"--summary.*'median'",
        lambda e: [
            "search",
            str(e.post_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--summary",
            "median",
        ],
    )
    cli(
        "diagnose --relevance without --queries",
        r"--queries and --gallery: give both",
        lambda e: [
            "diagnose",
            str(e.post_dir),
            "-o",
            f"{e.out}/d",
            "--relevance",
            f"{e.files}/rel.npy",
        ],
    )
    cli(
        "search --table xml",
        r"--table.*'xml'",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--table",
            "xml",
        ],
    )
    cli(
        "search --query-texts of the wrong length (refused after the search)",
        r"query texts: 2 lines for 3 query rows",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--query-texts",
            f"{e.files}/texts.txt",
        ],
    )
    cli(
        "search --sha256 of another bundle",
        r"digest",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--sha256",
            "a" * 64,
        ],
    )
    cli(
        "fit --variance 2",
        r"variance.*2",
        lambda e: [
            "fit",
            "latent-gaussian",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--variance",
            "2",
        ],
    )
    cli(
        "fit --reg -1",
        r"reg.*-1",
        lambda e: [
            "fit",
            "gaussian",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--reg",
            "-1",
        ],
    )
    cli(
        "fit --normalize with a zero row",
        r"(zero|norm)",
        lambda e: [
            "fit",
            "gaussian",
            f"{e.files}/zero.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--normalize",
        ],
    )
    cli(
        "evaluate --draws 0",
        r"--draws.*0",
        lambda e: [
            "evaluate",
            str(e.post_dir),
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/rel.npy",
            "-o",
            f"{e.out}/v",
            "--draws",
            "0",
            "--baselines",
            "cosine",
        ],
    )
    cli(
        "evaluate --n-boot with --interval t",
        r"--n-boot.*bootstrap",
        lambda e: [
            "evaluate",
            str(e.model_dir),
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/rel.npy",
            "-o",
            f"{e.out}/v",
            "--interval",
            "t",
            "--n-boot",
            "10",
        ],
    )
    cli(
        "evaluate --query-index of the wrong length (was blamed on the relevance)",
        r"--query-index: 5 entries for 3 query rows",
        lambda e: [
            "evaluate",
            str(e.model_dir),
            "--gallery",
            f"{e.files}/g.npy",
            "--queries",
            f"{e.files}/q.npy",
            "--relevance",
            f"{e.files}/rel.npy",
            "-o",
            f"{e.out}/v",
            "--query-index",
            f"{e.files}/idx.npy",
            "--baselines",
            "cosine",
        ],
    )
    cli(
        "curve --subsets 0",
        r"--subsets.*0",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
            "--subsets",
            "0",
        ],
    )
    cli(
        "curve --model SPEC naming no model",
        r"model 'nocolon': unknown; registered: softmax",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
            "--model",
            "nocolon",
        ],
    )
    cli(
        "curve relevance of the wrong shape",
        r"relevance",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/t.npy",
            f"{e.files}/g.npy",
            f"{e.files}/t.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
        ],
    )
    cli(
        "curve targets of another dimension (was blamed on broad, with the wrong d)",
        r"target: dimension mismatch: d=3, but the broad anchors and the gallery have d=4",
        lambda e: [
            "curve",
            f"{e.files}/b.npy",
            f"{e.files}/q3.npy",
            f"{e.files}/g.npy",
            f"{e.files}/rel12.npy",
            "--tau",
            "5",
            "-o",
            f"{e.out}/c",
        ],
    )
    cli(
        "demo --models a missing folder (ran the whole demo without its priors)",
        r"--models: no such folder: bogus \(a folder of fitted broad priors",
        lambda e: ["demo", "-o", f"{e.out}/d", "--models", "bogus"],
    )
    cli(
        "adapt --model-kwargs a missing module",
        r"--model-kwargs",
        lambda e: a(
            e,
            "gaussian",
            "--method",
            "nuts",
            "--model",
            f"{USERFAM}/minimal_family.py:scaled_mean_model",
            "--model-kwargs",
            "no_such_mod:KW",
        ),
    )
    cli(
        "adapt --learning-rate 0",
        r"learning_rate.*0",
        lambda e: a(e, "gaussian", "--method", "svi", "--learning-rate", "0"),
    )
    cli(
        "adapt --guide-rank with --guide normal",
        r"--guide-rank",
        lambda e: a(e, "gaussian", "--method", "svi", "--guide", "normal", "--guide-rank", "2"),
    )
    cli(
        "diagnose --num-draws 1",
        r"--num-draws.*1|num_draws: must be >= 2",
        lambda e: ["diagnose", str(e.post_dir), "-o", f"{e.out}/d", "--num-draws", "1"],
    )
    cli(
        "diagnose -k 0",
        r"-k.*0",
        lambda e: ["diagnose", str(e.post_dir), "-o", f"{e.out}/d", "-k", "0"],
    )
    cli(
        "diagnose --stability-draws 0",
        r"--stability-draws.*0",
        lambda e: ["diagnose", str(e.post_dir), "-o", f"{e.out}/d", "--stability-draws", "0"],
    )
    cli(
        "diagnose queries of another d",
        r"queries.*3.*d=4",
        lambda e: [
            "diagnose",
            str(e.post_dir),
            "-o",
            f"{e.out}/d",
            "--queries",
            f"{e.files}/q3.npy",
            "--gallery",
            f"{e.files}/g.npy",
        ],
    )
    cli(
        "search --workers 0",
        r"--workers.*0",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--workers",
            "0",
        ],
    )
    cli(
        "embed --on-error bogus",
        r"--on-error.*'bogus'",
        lambda e: ["embed", f"{e.files}/texts.txt", "-o", f"{e.out}/e", "--on-error", "bogus"],
    )
    cli(
        "cache show --older-than 3 (was ignored)",
        r"--older-than: applies to `anchordiv cache prune`, not to show",
        lambda e: ["cache", "show", "--older-than", "3"],
        ANCHORDIV_CACHE="{files}/cachedir",
    )
    cli(
        "cache prune without what to prune",
        r"(--all|--older-than|--encoder)",
        lambda e: ["cache", "prune", "--dry-run"],
        ANCHORDIV_CACHE="{files}/cachedir",
    )
    cli(
        "cache prune --older-than -1 (was taken)",
        r"--older-than: must be a finite non-negative number, got -1\.0",
        lambda e: ["cache", "prune", "--older-than", "-1", "--dry-run"],
        ANCHORDIV_CACHE="{files}/cachedir",
    )
    cli("priors with an argument", r"unrecognized arguments: extra", lambda e: ["priors", "extra"])
    cli(
        "fit --rank for gaussian",
        r"gaussian: unknown option\(s\) rank; allowed: reg",
        lambda e: [
            "fit",
            "gaussian",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--rank",
            "2",
        ],
    )
    cli(
        "fit --components for gaussian",
        r"gaussian: unknown option\(s\) components; allowed: reg",
        lambda e: [
            "fit",
            "gaussian",
            f"{e.files}/t.npy",
            "-o",
            f"{e.out}/m",
            "--tau",
            "5",
            "--components",
            "2",
        ],
    )
    cli(
        "--sha256 not hex",
        r"sha256: expected 64 hex digits, got 'xyz'",
        lambda e: [
            "search",
            str(e.model_dir),
            f"{e.files}/q.npy",
            f"{e.files}/g.npy",
            "-o",
            f"{e.out}/r",
            "--sha256",
            "xyz",
        ],
    )


family_cases()
method_cases()
data_cases()
path_cases()
more_cases()
checks_cases()
file_cases()
cli_cases()


# --------------------------------------------------------------------------- the harness


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mistakes")
    rng = np.random.default_rng(0)
    broad, targets = unit(rng, 40, D), clustered_anchors(rng, 6, D)
    queries, gallery = unit(rng, 3, D), unit(rng, 12, D)
    relevance = rng.random((3, 12)) < 0.4
    relevance[:, 0] = True
    files = tmp / "files"
    files.mkdir()
    for name, arr in {
        "b": broad,
        "t": targets,
        "q": queries,
        "g": gallery,
        "rel": relevance,
        "q3": queries[:, :3],
        "int": np.arange(24).reshape(6, 4),
        "nan": _with(targets, 1, np.nan),
        "empty": np.zeros((0, D)),
        "relnan": np.where(relevance, np.nan, 0.0),
        "zero": np.vstack([targets, np.zeros((1, D))]),
        "idx": np.arange(5),
        "rel12": rng.random((12, 12)) < 0.3,
    }.items():
        np.save(files / f"{name}.npy", arr)
    np.save(files / "obj.npy", np.array([[1.0, "a"]] * 3, dtype=object), allow_pickle=True)
    (files / "trunc.npy").write_bytes((files / "t.npy").read_bytes()[:100])
    (files / "texts.txt").write_text("a cat\na dog\n")
    (files / "broken.py").write_text("def oops(:\n")
    model = ad.fit("gaussian", targets, tau=TAU)
    model_dir = ad.save_model(model, tmp / "model")
    post = ad.adapt("gaussian", broad, targets, tau=TAU)
    post_dir = ad.save_posterior(post, tmp / "post")
    prior_dir = ad.NIWPrior(np.zeros(D), np.eye(D), 1.0, D + 5.0).save(tmp / "prior")
    idata = ad.inference_data(post, num_draws=10)
    evaluation = ad.evaluate({"m": model}, queries, gallery, relevance, n_boot=10, baselines=())
    curve = ad.adaptation_curve(
        broad,
        targets,
        queries,
        gallery,
        relevance,
        tau=TAU,
        models=("cosine",),
        n_boot=10,
        progress=False,
    )
    from userfam import user_family

    if user_family.KIND not in FAMILIES:
        user_family.register()
        _KINDS.append(user_family.KIND)
    e = SimpleNamespace(
        tmp=tmp,
        files=files,
        out=tmp / "out",
        broad=broad,
        targets=targets,
        queries=queries,
        gallery=gallery,
        relevance=relevance,
        model=model,
        model_dir=model_dir,
        post=post,
        post_dir=post_dir,
        prior_dir=prior_dir,
        idata=idata,
        evaluation=evaluation,
        curve=curve,
        adapt=lambda kind, **kw: ad.adapt(kind, broad, targets, tau=TAU, **kw),
        infer=lambda method: ad.infer(
            ad.NIWPrior(np.zeros(D), np.eye(D), 1.0, D + 5.0), targets, method, tau=TAU
        ),
    )
    yield e
    for kind in _KINDS:
        FAMILIES.pop(kind, None)
    FAMILIES.pop("user-minimal", None)


def run_cli(argv) -> tuple[int, str]:
    """``(exit status, stderr)`` of an in-process ``anchordiv`` call (usage errors included)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as stop:
            rc = stop.code
    return rc, err.getvalue()


def classify(case: Mistake, env) -> tuple[str, str]:
    """``(class, message)`` of one run of ``case``."""
    if case.argv is not None:
        import shutil

        shutil.rmtree(env.out, ignore_errors=True)
        env.out.mkdir()
        saved = {var: os.environ.get(var) for var in case.environ}
        os.environ.update({k: v.format(files=env.files) for k, v in case.environ.items()})
        try:
            rc, err = run_cli(case.argv(env))
        except Exception as exc:  # noqa: BLE001 — what a user would see as a traceback
            return "raw", f"{type(exc).__name__}: {exc}"
        finally:
            for var, value in saved.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value
        lines = err.strip().splitlines()
        if rc == 0:
            return ("correct" if case.expect == "ok" else "silent"), err
        if rc != 2 or "Traceback" in err or len(lines) != 1:
            return "raw", f"exit {rc}: {err}"
        return ("clear" if re.search(case.match, err) else "misleading"), err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            case.call(env)
        except ad.AnchorDivError as exc:
            msg = str(exc)
            if case.expect == "ok":
                return "misleading", msg
            one_line = "\n" not in msg.strip()
            return ("clear" if re.search(case.match, msg) and one_line else "misleading"), msg
        except Exception as exc:  # noqa: BLE001
            return "raw", f"{type(exc).__name__}: {exc}"
    ours = [str(w.message) for w in caught if issubclass(w.category, ad.AnchorDivWarning)]
    if case.expect == "warning":
        hit = any(re.search(case.match, m) for m in ours)
        return ("clear" if hit else "silent"), "; ".join(ours)
    return ("correct" if case.expect == "ok" else "silent"), "; ".join(ours)


def test_the_corpus_is_the_size_the_issue_asks():
    assert len(CASES) >= 98
    assert len({(c.kind, c.name) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_every_mistake_is_clear_or_correct(case, env):
    verdict, message = classify(case, env)
    want = "correct" if case.expect == "ok" else "clear"
    assert verdict == want, f"{verdict}: {message}"


@pytest.mark.parametrize(
    "argv",
    [
        ["adapt", "gaussian", "B", "T", "-o", "OUT/m", "--tau", "5", "--prior-option", "tau0=abc"],
        ["search", "MODEL", "Q3", "G", "-o", "OUT/r"],
    ],
)
def test_a_real_process_prints_no_traceback(env, argv):
    """The installed entry point, as a separate process: one line, exit status 2."""
    subs = {
        "B": f"{env.files}/b.npy",
        "T": f"{env.files}/t.npy",
        "MODEL": str(env.model_dir),
        "Q3": f"{env.files}/q3.npy",
        "G": f"{env.files}/g.npy",
    }
    argv = [subs.get(a, a.replace("OUT", str(env.tmp / "proc"))) for a in argv]
    src = str(Path(ad.__file__).parents[1])
    run = subprocess.run(
        [sys.executable, "-m", "anchordiv.app.cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src},
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
