"""Model criticism at the encoder's dimension: ``inference_data`` with the log-likelihood groups,
``az.loo`` and ``az.compare`` (broad prior vs its isotropic control) for exact posteriors of
every kind at d = 384 (synthetic text-like anchors, ``common.synthetic_anchors``).

Timed once per kind (wall seconds): ``adapt``, ``inference_data`` (default draw count, i.e.
200 — fewer, cost-scaled, for the Gibbs-sampled latent kinds — with ``targets``), ``loo``
(az.loo on it), ``compare`` (az.compare of the two priors' InferenceData).  Also reports the
draws, the worst Pareto k and the number of anchors with k > 0.7.

    .venv/bin/python benchmarks/bench_criticism.py            # d = 384, n = 50
    .venv/bin/python benchmarks/bench_criticism.py --quick    # d = 64
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import numpy as np

import anchordiv as ad
from common import parser, synthetic_anchors, table, write_results

KINDS = {"gaussian": {}, "latent-gaussian": {}, "latent-spherical": {}, "mixture": {}}
#: sampled posteriors at full d: NUTS in the broad top-16 subspace, lifted to d (issue 9)
NUTS = {"method": "nuts", "subspace": 16, "num_warmup": 300, "num_samples": 300,
        "num_chains": 2, "progress": False}
RUNS = [(k, k, o) for k, o in KINDS.items()] + [
    ("gaussian, NUTS subspace=16", "gaussian", NUTS),
    ("latent-gaussian rank 8, NUTS subspace=16", "latent-gaussian", {"rank": 8, **NUTS})]
EXACT_ONLY = ("method", "subspace", "num_warmup", "num_samples", "num_chains", "progress")


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    args = parser(__doc__).parse_args()
    d = 64 if args.quick else 384
    rng = np.random.default_rng(0)
    broad = synthetic_anchors(rng, 3000, d).astype(np.float64)
    targets = synthetic_anchors(np.random.default_rng(1), 50, d).astype(np.float64)
    rows = []
    for label, kind, opts in RUNS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post, t_adapt = timed(lambda: ad.adapt(kind, broad, targets, tau=20.0, **opts))
            iso = ad.adapt(kind, broad, targets, tau=20.0, prior="isotropic",
                           **{k: v for k, v in opts.items() if k not in EXACT_ONLY})
            idata, t_id = timed(lambda: ad.inference_data(post, targets=targets, seed=0))
            idata_iso = ad.inference_data(iso, targets=targets, seed=0)
            loo, t_loo = timed(lambda: az.loo(idata, pointwise=True))
            _, t_cmp = timed(lambda: az.compare({"broad": idata, "isotropic": idata_iso}))
        k = np.asarray(loo.pareto_k)
        rows.append({"kind": label, "rank": post.info.get("rank", ""),
                     "draws": int(idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]),
                     "adapt_s": round(t_adapt, 2), "inference_data_s": round(t_id, 2),
                     "loo_s": round(t_loo, 3), "compare_s": round(t_cmp, 3),
                     "elpd_loo": round(float(loo.elpd_loo), 1), "max_k": round(float(k.max()), 2),
                     "k_over_0.7": int((k > 0.7).sum())})
        print(rows[-1], flush=True)
    md = table(rows, [("kind", "kind"), ("rank", "rank"), ("draws", "draws"),
                      ("adapt_s", "adapt s"), ("inference_data_s", "inference_data s"),
                      ("loo_s", "az.loo s"), ("compare_s", "az.compare s"),
                      ("elpd_loo", "elpd_loo"), ("max_k", "max Pareto k"),
                      ("k_over_0.7", "anchors k>0.7")])
    write_results("bench_criticism", {"d": d, "n_targets": 50, "n_broad": 3000, "rows": rows},
                  md, tag=args.tag or ("quick" if args.quick else ""))


if __name__ == "__main__":
    main()
