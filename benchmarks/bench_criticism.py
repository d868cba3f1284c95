"""Model criticism at the encoder's dimension: ``inference_data`` with the log-likelihood groups,
``az.loo`` and ``az.compare`` (broad prior vs its isotropic control) for exact posteriors of
every kind at d = 384 (synthetic text-like anchors, ``common.synthetic_anchors``).

Timed once per kind (wall seconds): ``adapt``, ``inference_data`` (default draw count, i.e.
200 — fewer, cost-scaled, for the Gibbs-sampled latent kinds — with ``targets``), ``loo``
(az.loo on it), ``compare`` (az.compare of the two priors' InferenceData).  Also reports the
draws, the worst Pareto k and the number of anchors with k > 0.7.

``--part compare`` (issue 18): ``ad.compare_priors`` on strong-broad / isotropic / weak-broad /
empirical-Bayes Gaussian priors and a NUTS subspace=16 fit of the strong prior, against a
brute-force exact LOO (scipy multivariate Student-t, refit per held-out target) and against the
old estimator (``az.loo`` on the exact posterior's draws); then a mixture comparison through
K-fold refits.  Reports the estimator chosen per candidate, both ELPDs, the worst Pareto k of
the old estimator and the wall time.

    .venv/bin/python benchmarks/bench_criticism.py                    # d = 384, n = 50
    .venv/bin/python benchmarks/bench_criticism.py --quick            # d = 64
``--part kfold``: K-fold against exact LOO for NIW candidates (anisotropic Gaussian broad
anchors, n = 20 targets, d = 64, 128, 512; the default held-out strengths and fixed κ₀ = 5,
ν₀ = d + 10): the exact LOO, ``compare_priors(estimator="kfold")`` with K = 10 and K = n
(closed-form fold predictive), and the Monte-Carlo predictive ``log mean_s p(t | θ_s)`` on the
same 10 folds over the default draws (200; 128 at d = 512) and 2000 at d ≤ 128, with its
largest Pareto k.

    .venv/bin/python benchmarks/bench_criticism.py                    # d = 384, n = 50
    .venv/bin/python benchmarks/bench_criticism.py --quick            # d = 64
    .venv/bin/python benchmarks/bench_criticism.py --part compare --tag compare
    .venv/bin/python benchmarks/bench_criticism.py --part kfold --tag kfold

``--part audit`` (issue 43): the audit's pair at d = 128 (n = 20 anisotropic targets, 10
folds, ``estimator="auto"``): a Gaussian prior (κ₀ = 5) against a one-component mixture prior
(κ₀ = 50), both ν₀ = d + 10 — the same NIW model, so the truth is brute-force K-fold by exact
refits (scipy's multivariate Student-t of each fold's NIW update, from each candidate's own
prior).  ``--part families``: families × d = 8, 32, 128 against brute-force K-fold: every
candidate scored by ``compare_priors(estimator="kfold")`` and its estimator, MCSE and
reliability, beside the exact refits where the family's predictive has a closed form.

    .venv/bin/python benchmarks/bench_criticism.py --part audit --tag audit
    .venv/bin/python benchmarks/bench_criticism.py --part families --tag families
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import numpy as np
import scipy.stats

import anchordiv as ad
from common import parser, synthetic_anchors, table, write_results

KINDS = {"gaussian": {}, "latent-gaussian": {}, "latent-spherical": {}, "mixture": {}}
#: sampled posteriors at full d: NUTS in the broad top-16 subspace, lifted to d (issue 9)
NUTS = {
    "method": "nuts",
    "subspace": 16,
    "num_warmup": 300,
    "num_samples": 300,
    "num_chains": 2,
    "progress": False,
}
RUNS = [(k, k, o) for k, o in KINDS.items()] + [
    ("gaussian, NUTS subspace=16", "gaussian", NUTS),
    ("latent-gaussian rank 8, NUTS subspace=16", "latent-gaussian", {"rank": 8, **NUTS}),
]
EXACT_ONLY = ("method", "subspace", "num_warmup", "num_samples", "num_chains", "progress")


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def reference_loo(broad, targets, kappa0, nu0, prior="broad", reg=1e-3) -> float:
    """Brute-force exact LOO of the NIW model: refit on T₋ᵢ, score tᵢ with scipy's
    multivariate Student-t."""
    d = broad.shape[1]
    mu0 = broad.mean(0)
    cov = np.cov(broad.T, bias=True)
    cov += reg * np.trace(cov) / d * np.eye(d)
    if prior == "isotropic":
        cov = np.trace(cov) / d * np.eye(d)
    psi0, total = (nu0 - d - 1) * cov, 0.0
    for i in range(len(targets)):
        rest = np.delete(targets, i, axis=0)
        n, tbar = len(rest), rest.mean(0)
        kn, vn = kappa0 + n, nu0 + n
        psin = (
            psi0
            + (rest - tbar).T @ (rest - tbar)
            + kappa0 * n / kn * np.outer(tbar - mu0, tbar - mu0)
        )
        df = vn - d + 1
        total += scipy.stats.multivariate_t(
            (kappa0 * mu0 + n * tbar) / kn, psin * (kn + 1) / (kn * df), df=df
        ).logpdf(targets[i])
    return total


def compare_part(broad, targets, d, save):
    strong, weak = {"kappa0": 50.0, "nu0": d + 100.0}, {"kappa0": 0.1, "nu0": d + 2.0}
    cands = {
        "strong-broad": {"broad": broad, **strong},
        "isotropic": {"broad": broad, "prior": "isotropic", **strong},
        "weak-broad": {"broad": broad, **weak},
        "empirical-Bayes": {"broad": broad},
        "strong-broad, NUTS subspace=16": {"broad": broad, **strong, **NUTS},
    }
    refs = {
        "strong-broad": reference_loo(broad, targets, **strong),
        "isotropic": reference_loo(broad, targets, **strong, prior="isotropic"),
        "weak-broad": reference_loo(broad, targets, **weak),
    }
    refs["strong-broad, NUTS subspace=16"] = refs["strong-broad"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, t_cmp = timed(lambda: ad.compare_priors(cands, targets, kind="gaussian", tau=20.0))
    rows = []
    for name in result.table.index:
        row = result.table.loc[name]
        old = {"psis_elpd_old": "", "psis_max_k_old": ""}
        if name in ("strong-broad", "isotropic", "weak-broad"):
            opts = {k: v for k, v in cands[name].items() if k != "broad"}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                post = ad.adapt("gaussian", broad, targets, tau=20.0, **opts)
                loo = az.loo(
                    ad.inference_data(post, targets=targets, seed=0, prior=False), pointwise=True
                )
            old = {
                "psis_elpd_old": round(float(loo.elpd_loo), 1),
                "psis_max_k_old": round(float(np.max(loo.pareto_k)), 2),
            }
        rows.append(
            {
                "candidate": name,
                "estimator": row["estimator"],
                "elpd": round(float(row["elpd_loo"]), 2),
                "exact_reference": round(refs[name], 2) if name in refs else "",
                "weight": round(float(row["weight"]), 3),
                **old,
            }
        )
        print(rows[-1], flush=True)
    save(
        rows,
        f"compare_priors wall time: Gaussian candidates {t_cmp:.1f} s (incl. the NUTS "
        f"fit); mixture part not yet run.",
    )
    mix = {f"{k} components": {"broad": broad, "components": k} for k in (2, 4)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mres, t_mix = timed(
            lambda: ad.compare_priors(mix, targets, kind="mixture", tau=20.0, folds=5)
        )
    for name in mres.table.index:
        rows.append(
            {
                "candidate": f"mixture, {name}",
                "estimator": mres.loo[name].estimator,
                "elpd": round(float(mres.table.loc[name, "elpd_loo"]), 2),
                "exact_reference": "",
                "weight": round(float(mres.table.loc[name, "weight"]), 3),
                "psis_elpd_old": "",
                "psis_max_k_old": "",
            }
        )
        print(rows[-1], mres.loo[name].note, flush=True)
    return save(
        rows,
        f"compare_priors wall time: Gaussian candidates {t_cmp:.1f} s (incl. "
        f"the NUTS fit), mixture K-fold (5 folds x 2 candidates) {t_mix:.1f} s.",
    )


def monte_carlo_kfold(broad, targets, opts, draws=None) -> tuple[float, float, int]:
    """The Monte-Carlo K-fold ELPD on ``compare_priors``' 10 folds: each fold's exact NIW
    posterior, ``log mean_s p(t | θ_s)`` over ``draws`` draws (default: ``default_draws``, as
    K-fold draws for a model without a closed form); its largest Pareto k; the draws."""
    import scipy.special

    from anchordiv.checks import arviz as adz
    from anchordiv.checks.criticism import kfold_parts
    from anchordiv.checks.uncertainty import default_draws

    total, kmax = 0.0, 0.0
    for test in kfold_parts(len(targets), 10, 0):
        fold = ad.adapt("gaussian", broad, np.delete(targets, test, 0), tau=20.0, **opts)
        draws = draws or default_draws(fold)
        ll = fold.likelihood().log_density(fold.draws(0, draws), targets[test])  # [S, m]
        total += float((scipy.special.logsumexp(ll, axis=0) - np.log(draws)).sum())
        kmax = max(kmax, float(np.max(adz.psis_log_weights(ll.T)[1])))
    return total, kmax, draws


def kfold_part(quick: bool):
    rows = []
    n = 20
    for d in (64,) if quick else (64, 128, 512):
        rng = np.random.default_rng(0)
        scale = np.linspace(2.0, 0.2, d)
        broad = rng.normal(size=(max(400, 4 * d), d)) * scale
        targets = rng.normal(size=(n, d)) * scale + 0.1
        for label, opts in (("held-out", {}), ("fixed", {"kappa0": 5.0, "nu0": d + 10.0})):
            cand = {"c": {"broad": broad, **opts}}

            def elpd(**kw):
                res = ad.compare_priors(cand, targets, kind="gaussian", tau=20.0, **kw)
                return res.loo["c"].elpd

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exact, t_exact = timed(lambda: elpd())
                k10, t_k10 = timed(lambda: elpd(estimator="kfold"))
                kn = elpd(estimator="kfold", folds=n)
                (mc, kmax, s), t_mc = timed(lambda: monte_carlo_kfold(broad, targets, opts))
                mc2 = monte_carlo_kfold(broad, targets, opts, 2000)[0] if d <= 128 else ""
            rows.append(
                {
                    "d": d,
                    "strengths": label,
                    "exact_loo": round(exact, 2),
                    "kfold10": round(k10, 2),
                    f"kfold{n}": round(kn, 2),
                    "mc": round(mc, 2),
                    "mc_draws": s,
                    "mc_max_k": round(kmax, 2),
                    "mc2000": round(mc2, 2) if mc2 != "" else "",
                    "exact_s": round(t_exact, 2),
                    "kfold10_s": round(t_k10, 2),
                    "mc_s": round(t_mc, 1),
                }
            )
            print(rows[-1], flush=True)
    shown = [{k: f"{v:.2f}" if isinstance(v, float) else v for k, v in r.items()} for r in rows]
    md = table(
        shown,
        [
            ("d", "d"),
            ("strengths", "strengths"),
            ("exact_loo", "exact LOO"),
            ("kfold10", "10-fold (closed form)"),
            (f"kfold{n}", f"{n}-fold (closed form)"),
            ("mc", "10-fold, Monte Carlo"),
            ("mc_draws", "its draws"),
            ("mc_max_k", "its max Pareto k"),
            ("mc2000", "10-fold, Monte Carlo, 2000 draws"),
            ("exact_s", "exact s"),
            ("kfold10_s", "10-fold s"),
            ("mc_s", "Monte Carlo s"),
        ],
    )
    return rows, md


def brute_force_kfold(kwargs: dict, targets, folds: int = 10, seed: int = 0) -> float:
    """K-fold ELPD of the NIW model of ``kwargs`` (``mu0/kappa0/nu0/psi0``, or a one-component
    mixture's ``means0/psi0``) by exact refits: each fold's NIW update from scratch and scipy's
    multivariate Student-t of its held-out targets (the partition of ``compare_priors``)."""
    from anchordiv.checks.criticism import kfold_parts

    mu0 = np.asarray(kwargs.get("mu0", kwargs.get("means0")), np.float64).reshape(-1)
    psi0 = np.asarray(kwargs["psi0"], np.float64).reshape(mu0.size, mu0.size)
    k0, v0, d = float(kwargs["kappa0"]), float(kwargs["nu0"]), mu0.size
    total = 0.0
    for test in kfold_parts(len(targets), folds, seed):
        train = np.delete(targets, test, 0)
        n, tbar = len(train), train.mean(0)
        c = train - tbar
        kn, vn = k0 + n, v0 + n
        mun = (k0 * mu0 + n * tbar) / kn
        psin = psi0 + c.T @ c + k0 * n / kn * np.outer(tbar - mu0, tbar - mu0)
        df = vn - d + 1
        dist = scipy.stats.multivariate_t(mun, psin * (kn + 1) / (kn * df), df=df)
        total += float(dist.logpdf(targets[test]).sum())
    return total


def plain_monte_carlo_kfold(kind: str, broad, targets, cand: dict) -> float:
    """The estimator before issue 43: ``log mean_s p(t | θ_s)`` over the default draws of each
    fold's refit, on ``compare_priors``' 10 folds (what the mixture row was scored by)."""
    import scipy.special

    from anchordiv.checks.criticism import kfold_parts
    from anchordiv.checks.uncertainty import default_draws

    opts = {k: v for k, v in cand.items() if k not in ("broad", "kind")}
    total = 0.0
    for test in kfold_parts(len(targets), 10, 0):
        fold = ad.adapt(kind, broad, np.delete(targets, test, 0), tau=20.0, **opts)
        ll = fold.likelihood().log_density(fold.draws(0, default_draws(fold)), targets[test])
        total += float((scipy.special.logsumexp(ll, axis=0) - np.log(len(ll))).sum())
    return total


def brute_force_diagonal(kwargs: dict, targets, folds: int = 10, seed: int = 0) -> float:
    """K-fold ELPD of the diagonal family's Normal–inverse-gamma model by exact refits: scipy's
    per-coordinate Student-t of each fold's update."""
    from anchordiv.checks.criticism import kfold_parts

    mu0, k0, a0, b0 = (np.asarray(kwargs[k], np.float64) for k in ("mu0", "kappa0", "a0", "b0"))
    total = 0.0
    for test in kfold_parts(len(targets), folds, seed):
        rest = np.delete(targets, test, 0)
        n, tbar = len(rest), rest.mean(0)
        kn, an = k0 + n, a0 + n / 2
        mn = (k0 * mu0 + n * tbar) / kn
        bn = b0 + 0.5 * ((rest - tbar) ** 2).sum(0) + k0 * n * (tbar - mu0) ** 2 / (2 * kn)
        scale = np.sqrt(bn * (kn + 1) / (an * kn))
        total += float(scipy.stats.t(2 * an, mn, scale).logpdf(targets[test]).sum())
    return total


def anisotropic(d: int, n: int = 20, seed: int = 0):
    """Broad anchors ``[max(400, 4d), d]`` and ``n`` targets, an anisotropic spectrum (the
    ``kfold`` part's problem)."""
    rng = np.random.default_rng(seed)
    scale = np.linspace(2.0, 0.2, d)
    return rng.normal(size=(max(400, 4 * d), d)) * scale, rng.normal(size=(n, d)) * scale + 0.1


def audit_part(d: int = 128):
    """The audit's d = 128 pair (module docstring): the table, its warnings, the truth."""
    broad, targets = anisotropic(d)
    nu0 = d + 10.0
    cands = {
        "gaussian": {"broad": broad, "kind": "gaussian", "kappa0": 5.0, "nu0": nu0},
        "mixture": {
            "broad": broad,
            "kind": "mixture",
            "components": 1,
            "kappa0": 50.0,
            "nu0": nu0,
        },
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res, secs = timed(lambda: ad.compare_priors(cands, targets, tau=20.0, folds=10))
    rows = []
    for name, r in res.table.iterrows():
        kind = cands[name]["kind"]
        post = ad.adapt(
            kind,
            broad,
            targets,
            tau=20.0,
            **{k: v for k, v in cands[name].items() if k not in ("broad", "kind")},
        )
        truth = brute_force_kfold(post.model_kwargs, targets)
        plain = plain_monte_carlo_kfold(kind, broad, targets, cands[name])
        rows.append(
            {
                "candidate": name,
                "estimator": r["estimator"],
                "elpd": round(float(r["elpd_loo"]), 2),
                "mcse": round(float(res.loo[name].mcse), 2),
                "truth": round(truth, 2),
                "plain_mc": round(plain, 2),
                "weight": r["weight"],
                "rank": r["rank"],
                "dse": round(float(r["dse"]), 2),
                "reliable": res.loo[name].reliable,
            }
        )
        print(rows[-1], flush=True)
    said = [str(w.message) for w in caught if str(w.message).startswith("compare_priors")]
    md = (
        table(
            [{k: f"{v:.2f}" if isinstance(v, float) else v for k, v in r.items()} for r in rows],
            [(k, k) for k in rows[0]],
        )
        + f"\n\nnote: {res.note}\n\nwarnings: {said}\n\ncompare_priors {secs:.1f} s\n"
    )
    return {"d": d, "n_targets": 20, "folds": 10, "rows": rows, "warnings": said}, md


FAMILIES = {
    "gaussian": ("gaussian", {"kappa0": 5.0}),
    "mixture, 1 component": ("mixture", {"components": 1, "kappa0": 50.0}),
    "mixture, 2 components": ("mixture", {"components": 2, "kappa0": 20.0}),
    "diagonal-gaussian": ("diagonal-gaussian", {}),
}


def families_part(dims=(8, 32, 128)):
    """Families × d against brute-force K-fold (module docstring)."""
    rows = []
    for d in dims:
        broad, targets = anisotropic(d)
        for name, (kind, opts) in FAMILIES.items():
            opts = {**opts, "nu0": d + 10.0} if "kappa0" in opts else opts
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res, secs = timed(
                    lambda: ad.compare_priors(
                        {name: {"broad": broad, **opts}},
                        targets,
                        kind=kind,
                        tau=20.0,
                        estimator="kfold",
                    )
                )
            est = res.loo[name]
            truth = ""
            if kind == "gaussian" or opts.get("components") == 1:
                post = ad.adapt(kind, broad, targets, tau=20.0, **opts)
                truth = round(brute_force_kfold(post.model_kwargs, targets), 2)
            elif kind == "diagonal-gaussian":
                post = ad.adapt(kind, broad, targets, tau=20.0, **opts)
                truth = round(brute_force_diagonal(post.model_kwargs, targets), 2)
            rows.append(
                {
                    "d": d,
                    "family": name,
                    "elpd": round(est.elpd, 2),
                    "mcse": round(est.mcse, 2),
                    "reliable": est.reliable,
                    "truth": truth,
                    "how": next(
                        (p.strip()[:80] for p in est.note.split(";") if "scored by" in p), ""
                    ),
                    "s": round(secs, 1),
                }
            )
            print(rows[-1], flush=True)
    md = table(
        [{k: f"{v:.2f}" if isinstance(v, float) else v for k, v in r.items()} for r in rows],
        [(k, k) for k in rows[0]],
    )
    return {"n_targets": 20, "folds": 10, "rows": rows}, md


def compare_table(rows, note: str) -> str:
    shown = [
        {k: f"{v:.2f}" if isinstance(v, float) and k != "weight" else v for k, v in r.items()}
        for r in rows
    ]  # ELPDs to 0.01 nat, not 3 digits
    return (
        table(
            shown,
            [
                ("candidate", "candidate"),
                ("estimator", "estimator"),
                ("elpd", "elpd (compare_priors)"),
                ("exact_reference", "exact LOO (scipy, brute force)"),
                ("weight", "stacking weight"),
                ("psis_elpd_old", "old az.loo elpd"),
                ("psis_max_k_old", "old max Pareto k"),
            ],
        )
        + f"\n\n{note}\n"
    )


def main():
    p = parser(__doc__)
    p.add_argument(
        "--part",
        choices=("inference", "compare", "kfold", "audit", "families", "all"),
        default="all",
    )
    args = p.parse_args()
    if args.part in ("audit", "families"):
        payload, md = audit_part() if args.part == "audit" else families_part()
        return write_results("bench_criticism", payload, md, tag=args.tag)
    if args.part == "kfold":
        rows, md = kfold_part(args.quick)
        return write_results("bench_criticism", {"n_targets": 20, "kfold": rows}, md, tag=args.tag)
    d = 64 if args.quick else 384
    rng = np.random.default_rng(0)
    broad = synthetic_anchors(rng, 3000, d).astype(np.float64)
    targets = synthetic_anchors(np.random.default_rng(1), 50, d).astype(np.float64)
    payload, md = {"d": d, "n_targets": 50, "n_broad": 3000}, ""
    tag = args.tag or ("quick" if args.quick else "")
    if args.part in ("compare", "all"):

        def save(rows, note):  # after each stage: partial results survive
            md = compare_table(rows, note)
            write_results(
                "bench_criticism", {**payload, "compare": rows, "note": note}, md, tag=tag
            )
            return rows, md

        payload["compare"], md = compare_part(broad, targets, d, save)
    if args.part in ("inference", "all"):
        payload["rows"], md_inf = inference_part(broad, targets)
        md = md_inf + ("\n\n" + md if md else "")
    write_results("bench_criticism", payload, md, tag=tag)


def inference_part(broad, targets):
    rows = []
    for label, kind, opts in RUNS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post, t_adapt = timed(lambda: ad.adapt(kind, broad, targets, tau=20.0, **opts))
            iso = ad.adapt(
                kind,
                broad,
                targets,
                tau=20.0,
                prior="isotropic",
                **{k: v for k, v in opts.items() if k not in EXACT_ONLY},
            )
            idata, t_id = timed(lambda: ad.inference_data(post, targets=targets, seed=0))
            idata_iso = ad.inference_data(iso, targets=targets, seed=0)
            loo, t_loo = timed(lambda: az.loo(idata, pointwise=True))
            _, t_cmp = timed(lambda: az.compare({"broad": idata, "isotropic": idata_iso}))
        k = np.asarray(loo.pareto_k)
        rows.append(
            {
                "kind": label,
                "rank": post.info.get("rank", ""),
                "draws": int(idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]),
                "adapt_s": round(t_adapt, 2),
                "inference_data_s": round(t_id, 2),
                "loo_s": round(t_loo, 3),
                "compare_s": round(t_cmp, 3),
                "elpd_loo": round(float(loo.elpd_loo), 1),
                "max_k": round(float(k.max()), 2),
                "k_over_0.7": int((k > 0.7).sum()),
            }
        )
        print(rows[-1], flush=True)
    md = table(
        rows,
        [
            ("kind", "kind"),
            ("rank", "rank"),
            ("draws", "draws"),
            ("adapt_s", "adapt s"),
            ("inference_data_s", "inference_data s"),
            ("loo_s", "az.loo s"),
            ("compare_s", "az.compare s"),
            ("elpd_loo", "elpd_loo"),
            ("max_k", "max Pareto k"),
            ("k_over_0.7", "anchors k>0.7"),
        ],
    )
    return rows, md


if __name__ == "__main__":
    main()
