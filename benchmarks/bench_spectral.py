"""The spectral shrinkage prior (``ad.SpectralPrior``) at the encoder's dimension: SVI and NUTS
in full d = 384 (MiniLM), no subspace.

Data: the style task of ``bench_recipe.py`` — broad = the shipped
``models/wordnet-visual-art-gaussian`` (moment points), targets = random subsets of its 80 style
anchors (seeded).  Per rank k and budget n, each method runs twice on two different subsets of
the same size: the first run includes compilation, the second reuses the compiled step (the
figure a loop over subsets or budgets pays).  Reported: wall and process-CPU seconds, NUTS
divergences and mean leapfrog steps per transition, SVI convergence, and the posterior-mean
scale of the leading direction against the broad one.

Second table, the family's ceiling on this task (no inference): the Gaussian scorer with the
covariance of all 80 style anchors restricted to the spectral form — the targets' own variance
along each of the k broad directions plus their mean residual variance ("diagonal": the best
any spectral posterior can do) — and, for contrast, with the targets' full k × k block in
span(V_k) ("block": what a prior that may also rotate within the broad subspace could reach),
against the target-only Gaussian and cosine; 150 queries.

    .venv/bin/python benchmarks/bench_spectral.py            # k = 64, n = 5, 20, 80: ~6 min
    .venv/bin/python benchmarks/bench_spectral.py --quick    # k = 32, n = 5, 20
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import anchordiv as ad
from bench_recipe import TAU, style_task
from common import parser, table, write_results

METHODS = {
    "svi-normal": lambda: ad.SVI(guide="normal", num_steps=2000, num_samples=200, progress=False),
    "svi-delta": lambda: ad.SVI(guide="delta", num_steps=2000, progress=False),
    "nuts": lambda: ad.NUTS(num_warmup=300, num_samples=300, num_chains=1, progress=False),
}


def one_fit(prior, targets, method):
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.infer(prior, targets, method, tau=TAU)
        which = "map" if post.info.get("guide") == "delta" else "mean"
        v = post.params(which)["variances"]
    row = {
        "wall_s": time.perf_counter() - w0,
        "cpu_s": time.process_time() - c0,
        "v1_ratio": float(v[0] / prior.eigenvalues[0]),
    }
    if post.method == "nuts":
        row.update(
            divergences=post.info["divergences"], leapfrog=float(post.stats["num_steps"].mean())
        )
    else:
        row["converged"] = bool(post.info["elbo_converged"])
    return row


def ceiling_rows(broad, style, setup) -> list[dict]:
    """AUPRC of the oracle spectral-form covariances (module docstring)."""
    from anchordiv.anchors.gaussian import moments

    _, cov_b = moments(broad)
    vec = np.linalg.eigh(cov_b)[1][:, ::-1]
    mean, cov_t = moments(style)
    d = cov_t.shape[0]
    scorers = {"target-only": ad.Gaussian.from_moments(mean, cov_t, tau=TAU)}
    for k in (16, 64, 128, d):
        v = vec[:, :k]
        rest = np.eye(d) - v @ v.T
        s2 = max(np.trace(rest @ cov_t) / max(d - k, 1), 1e-12)
        block = v.T @ cov_t @ v
        for name, inner in (("diagonal", np.diag(np.diag(block))), ("block", block)):
            scorers[f"{name} k={k}"] = ad.Gaussian.from_moments(
                mean, v @ inner @ v.T + s2 * rest, tau=TAU
            )
    ev = ad.evaluate(
        scorers,
        setup["queries"],
        setup["gallery"],
        setup["relevance"],
        query_index=setup["query_index"],
        baselines=("cosine",),
        n_boot=200,
    )
    return [
        {"scorer": name, "auprc": float(np.nanmean(ev.per_query[name]))}
        for name in [*scorers, "cosine"]
    ]


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    args = p.parse_args()
    ranks, budgets = ((32,), (5, 20)) if args.quick else ((64,), (5, 20, 80))
    broad, style, setup = style_task(150)
    rng = np.random.default_rng(0)
    rows = []
    start = time.time()
    for k in ranks:
        prior = ad.SpectralPrior.from_anchors(broad, rank=k)
        for n in budgets:
            for name, make in METHODS.items():
                for run in ("first (compiles)", "again (compiled)"):
                    t = style[rng.choice(len(style), size=n, replace=n > len(style))]
                    rows.append(
                        {"k": k, "n": n, "method": name, "run": run, **one_fit(prior, t, make())}
                    )
                    print(rows[-1], flush=True)
    ceiling = ceiling_rows(broad, style, setup)
    seconds = time.time() - start
    cols = [
        ("k", "k"),
        ("n", "n"),
        ("method", "method"),
        ("run", "run"),
        ("wall_s", "wall s"),
        ("cpu_s", "CPU s"),
        ("divergences", "divergences"),
        ("leapfrog", "leapfrog / transition"),
        ("converged", "ELBO converged"),
        ("v1_ratio", "v₁ / λ₁"),
    ]
    md = "\n\n".join(
        [
            f"Style task (MiniLM, d = {broad.shape[1]}, broad = wordnet-visual-art-gaussian, "
            f"targets = subsets of the 80 style anchors), τ = {TAU:g}; full d, no subspace. SVI: "
            f"2000 steps; NUTS: 1 chain, 300 warm-up + 300 draws. Total {seconds:.0f} s.",
            table(rows, cols),
            "## The spectral form's ceiling on the style task (covariance of all 80 style anchors)",
            table(ceiling, [("scorer", "scorer"), ("auprc", "AUPRC (150 queries)")]),
        ]
    )
    path = write_results(
        "bench_spectral", {"rows": rows, "ceiling": ceiling, "seconds": seconds}, md, args.tag
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
