"""The inference methods run themselves (``method.run(prior, targets, tau=, broad=)``), NUTS
and SVI over one skeleton whose hooks say what differs, and nothing outside the methods
module dispatches on a method's name."""

import ast
import warnings
from pathlib import Path

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from helpers import broad_and_targets
import anchordiv as ad
from anchordiv.adaptation.statistics import frozen
from anchordiv.adaptation.methods import METHODS, Method, ModelMethod

SRC = Path(ad.__file__).parent
D = 3


def anchors(seed=0, n=6):
    return broad_and_targets(seed, n_broad=40, n=n, d=D, spread=(1.5, 0.5))


def prior():
    broad, _ = anchors()
    return ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 4.0)


def test_one_table_of_methods_by_name():
    assert list(METHODS) == ["exact", "nuts", "svi"]
    for name, cls in METHODS.items():
        assert issubclass(cls, Method) and cls.name == name
    assert issubclass(ad.NUTS, ModelMethod) and issubclass(ad.SVI, ModelMethod)
    assert (ad.Exact.independent_draws, ad.NUTS.independent_draws, ad.SVI.independent_draws) == (
        True,
        False,
        True,
    )
    from anchordiv.checks import sbc

    assert sbc.METHODS is METHODS  # SBC takes the same names, no table of its own


def test_exact_run_is_infer_without_the_validation():
    """``run`` takes validated targets, a read-only (frozen) array included, and a resolved τ."""
    p = prior()
    _, t = anchors()
    via_infer = ad.infer(p, t, ad.Exact(), tau=5.0)
    direct = ad.Exact().run(p, frozen(t), tau=5.0)
    assert type(direct).__name__ == "ExactPosterior" and direct.method == "exact"
    assert direct.prior is p and direct.tau == 5.0
    for k, v in via_infer.params("mean").items():
        np.testing.assert_array_equal(direct.params("mean")[k], v)
    np.testing.assert_array_equal(
        p.update(t, tau=5.0).params("map")["Sigma"], direct.params("map")["Sigma"]
    )


def test_exact_refuses_a_prior_without_an_update():
    broad, t = anchors()
    spectral = ad.SpectralPrior.from_anchors(broad, rank=2)
    with pytest.raises(ad.AnchorDivError, match="no closed-form update; use ad.SVI"):
        ad.Exact().run(spectral, t, tau=5.0)


@pytest.mark.parametrize(
    "method, exact",
    [
        (ad.NUTS(), False),
        (ad.NUTS(subspace=2), True),
        (ad.SVI(guide="lowrank"), False),
        (ad.SVI(guide="delta"), True),  # its "mean" is the conjugate mean
        (ad.SVI(guide="delta", model=lambda targets: None), False),  # a user's model: none
    ],
)
def test_the_conjugate_update_runs_only_where_its_result_is_used(method, exact):
    p = prior()
    _, t = anchors()
    params, kwargs, _, fixed = method.inputs(p, t)
    assert (params is not None) is exact
    assert set(kwargs) >= {"mu0", "kappa0", "nu0", "psi0"} and isinstance(fixed, dict)


def test_the_skeleton_hooks_are_the_methods_differences():
    assert ad.NUTS().guide_name is None and not ad.NUTS().map_density
    assert ad.SVI(guide="normal").guide_name == "normal" and not ad.SVI(guide="normal").map_density
    assert ad.SVI().map_density  # a delta guide: the mode of the parameters' density


def test_a_subspace_run_needs_the_broad_anchors():
    _, t = anchors()
    with pytest.raises(ad.AnchorDivError, match="subspace: needs the broad anchors"):
        ad.NUTS(subspace=2, progress=False).run(prior(), t, tau=5.0)


def test_a_family_model_observing_another_site_names_it():
    """A family whose likelihood is traced from its model must name the observed site
    ``targets``: an error naming the site (no KeyError), before anything compiles, and where
    the likelihood is used."""
    from types import SimpleNamespace

    from anchordiv.adaptation.model import Likelihood
    from anchordiv.adaptation.model import check_sites, problem

    def model(targets, *, mu0):
        mu = numpyro.sample("mu", dist.Normal(mu0, 1.0).to_event(1))
        with numpyro.plate("anchors", targets.shape[0]):
            numpyro.sample("x", dist.Normal(mu, 1.0).to_event(1), obs=targets)

    fam = SimpleNamespace(model=model, sites=("mu",), likelihood_type=Likelihood, kind="x-site")
    _, t = anchors()
    prob = problem(fam, {"mu0": np.zeros(D)}, t, ad.NUTS())
    with pytest.raises(ad.AnchorDivError, match=r"observes the site\(s\) 'x'.*named 'targets'"):
        check_sites(fam, prob)
    lik = Likelihood(fam, {"mu0": np.zeros(D)}, {}, D)
    with pytest.raises(ad.AnchorDivError, match=r"'x'.*named 'targets'"):
        lik.log_density({"mu": np.zeros((2, D))}, t)


@pytest.mark.slow
def test_each_model_method_runs_and_says_what_it_made(monkeypatch):
    broad, t = anchors()
    p = prior()
    made = count_posteriors(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuts = ad.NUTS(num_warmup=30, num_samples=20, num_chains=1, progress=False).run(
            p, frozen(t), tau=5.0, broad=broad
        )
        svi = ad.SVI(guide="normal", num_steps=50, num_samples=10, progress=False).run(
            p, frozen(t), tau=5.0
        )
    assert nuts.method == "nuts" and not nuts.independent_draws and nuts.guide is None
    assert "log_density" in nuts.stats
    assert svi.method == "svi" and svi.independent_draws and svi.variational
    assert svi.guide == "normal" and svi.elbo is not None
    assert made == ["SampledPosterior", "SampledPosterior"]  # one construction per run


def count_posteriors(monkeypatch) -> list[str]:
    """The type names of the posteriors constructed from now on (each runs ``__post_init__``,
    ``dataclasses.replace`` copies included)."""
    built: list[str] = []
    init = ad.Posterior.__post_init__

    def counting(self):
        built.append(type(self).__name__)
        init(self)

    monkeypatch.setattr(ad.Posterior, "__post_init__", counting)
    return built


def fake_chains(prob, o, counts, seed):
    """``nuts.run_cached`` without compiling a sampler: every draw of the gaussian kind's sites
    is ``μ = 0, Σ = I`` (in the run's dimension), the statistics zeros."""
    from anchordiv.adaptation.nuts import FIELDS

    shape, d = (counts["num_chains"], counts["num_samples"]), prob.targets.shape[1]
    samples = {"mu": np.zeros(shape + (d,)), "Sigma": np.broadcast_to(np.eye(d), shape + (d, d))}
    return samples, {f: np.zeros(shape, bool if f == "diverging" else float) for f in FIELDS}, None


@pytest.mark.parametrize("subspace, built", [(None, "SampledPosterior"), (2, "SubspacePosterior")])
def test_infer_nuts_constructs_one_posterior(subspace, built, monkeypatch):
    """The runner returns plain state (draws, statistics, info) and ``ad.infer`` builds the
    posterior once from it: no empty posterior filled, then copied (the chains faked: what is
    counted is the assembly, not the sampler; the slow test above runs the real one)."""
    from anchordiv.adaptation import nuts

    monkeypatch.setattr(nuts, "run_cached", fake_chains)
    broad, t = anchors()
    made = count_posteriors(monkeypatch)
    method = ad.NUTS(num_samples=5, num_chains=1, progress=False, subspace=subspace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.infer(prior(), t, method, tau=5.0, broad=broad)
    assert made == [built] and type(post).__name__ == built and post.subspace == subspace
    assert post.samples["mu"].shape[:2] == (1, 5) and post.stats["log_density"].shape == (1, 5)
    assert post.info["num_samples"] == 5 and post.info["divergences"] == 0
    assert post.point().mean.shape == (D,)


def test_infer_exact_constructs_one_posterior(monkeypatch):
    made = count_posteriors(monkeypatch)
    ad.infer(prior(), anchors()[1], ad.Exact(), tau=5.0)
    assert made == ["ExactPosterior"]


# ---- no dispatch on a method's name -----------------------------------------------------------

NAMES = {"exact", "nuts", "svi"}
#: where a method name may be compared: the methods themselves and the CLI's argument parsing
ALLOWED = {SRC / "adaptation" / "methods.py"}
ALLOWED_DIRS = (SRC / "app" / "commands",)
#: files where a name is something else that shares it: LOO's ``"exact"`` estimator
#: modules whose "exact" names an estimator (closed form vs importance weights), not a method
ESTIMATORS = {
    SRC / "checks" / "criticism.py": {"exact"},
    SRC / "checks" / "sensitivity.py": {"exact"},
}


def _docstrings(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def name_comparisons(path: Path, root: Path = SRC) -> list[str]:
    """``x == "nuts"``, ``"svi" != x``, ``x in ("exact", ...)`` and ``match`` cases of a method
    name in ``path`` (docstrings are not code), as ``file:line`` relative to ``root``."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    methods = NAMES - ESTIMATORS.get(path, set())
    found = []

    def names(node) -> set[str]:
        if isinstance(node, ast.Constant) and id(node) not in docs:
            return {node.value} & methods if isinstance(node.value, str) else set()
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(names(e) for e in node.elts)) if node.elts else set()
        return set()

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(names(o) for o in operands):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            if names(node.pattern.value):
                found.append(f"{path.relative_to(root)}:{node.pattern.lineno}")
    return found


def test_no_method_name_is_compared_outside_the_methods():
    """Code outside ``adaptation/methods.py`` and the CLI's parsing asks the posterior or the
    method object, never compares a name with ``"exact"``, ``"nuts"`` or ``"svi"``."""
    found = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path not in ALLOWED and not any(d in path.parents for d in ALLOWED_DIRS)
        for hit in name_comparisons(path)
    ]
    assert found == []


def test_the_name_check_finds_a_comparison(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""x == "svi" in a docstring is not code."""\nok = m == "svi"\n')
    assert name_comparisons(probe, root=tmp_path) == ["probe.py:2"]


def test_run_kwargs_add_the_familys_model_extras_that_the_model_names():
    """``Family.model_extras``: the gaussian kind's ψ₀ Cholesky factor and, for a delta guide,
    ``map_jacobian``; a user's model gets only those it names; a family without any adds none."""
    prior = ad.NIWPrior.from_anchors(np.eye(3), kappa0=2.0, nu0=6.0)
    kw, delta = prior.prior_kwargs(), ad.SVI(guide="delta")
    got = delta.run_kwargs(ad.NIWPrior, kw, None)
    assert got["map_jacobian"] is True
    np.testing.assert_allclose(got["psi0_tril"] @ got["psi0_tril"].T, kw["psi0"], rtol=1e-12)
    assert "map_jacobian" not in ad.NUTS().run_kwargs(ad.NIWPrior, kw, None)

    def mine(targets, *, mu0, kappa0, nu0, psi0):
        pass

    got = ad.SVI(guide="delta", model=mine).run_kwargs(ad.NIWPrior, kw, None)
    assert set(got) == {"mu0", "kappa0", "nu0", "psi0"}
    assert ad.DiagonalPrior.model_extras(kw, map_density=True) == {}


def test_run_kwargs_name_a_bad_model_kwargs():
    kw = ad.NIWPrior.from_anchors(np.eye(3), kappa0=2.0, nu0=6.0).prior_kwargs()
    with pytest.raises(ad.AnchorDivError, match=r"prior builder failed .*\[4, 3\].*ZeroDivision"):
        ad.NUTS(model_kwargs=lambda b: 1 / 0).run_kwargs(ad.NIWPrior, kw, np.ones((4, 3)))
    with pytest.raises(ad.AnchorDivError, match="a dict or a callable.*got list"):
        ad.NUTS(model_kwargs=[1]).run_kwargs(ad.NIWPrior, kw, None)
    built = ad.NUTS(model_kwargs=lambda b: {**kw, "kappa0": 9.0}).run_kwargs(ad.NIWPrior, kw, None)
    assert built["kappa0"] == 9.0 and "psi0_tril" in built
