"""Custom priors at the encoder's dimension: SVI, subspace NUTS and NUTS initialisation (issue 9).

Synthetic part (``common.synthetic_anchors``, float32, d = 384, N = 5,000 broad anchors,
n = 20 targets from a shifted cloud; NIW strengths fixed at κ₀ = 20, ν₀ − d − 1 = 100 so every
method targets the same posterior):

* wall seconds of ``ad.adapt(..., method="svi")`` *including compilation* (first call in the
  process for that model/guide) for the default NIW model (``guide="delta"`` and
  ``"lowrank"``) and the factor-analysis prior (``ad.adaptation.families.factor_model``, rank 16);
* the SVI-MAP of the NIW model against the exact joint mode: relative error of the Q×G
  divergence matrix (max |ΔD| / max |D|, 200 queries × 2,000 gallery items);
* subspace NUTS (r = 16, 2 chains × 500 warm-up + 500 draws): wall seconds and the largest
  R-hat over every μ and Σ entry of the subspace posterior;
* NUTS initialisation and a short run at d = 8 … 384: full d up to 32, ``subspace=16`` above.

Real part: the WordNet → ImageNet task of the main job (MiniLM, 50 classes, 8 hyponym glosses
per class, 300 queries) with the shipped broad prior ``models/wordnet-glosses-gaussian`` and 20
target anchors: mean AUPRC of the exact posterior's MAP and mean against SVI (delta, lowrank).

    .venv/bin/python benchmarks/bench_svi.py            # ~10 minutes on 2 cores
    .venv/bin/python benchmarks/bench_svi.py --quick    # d = 64 smoke run, no real part
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import anchordiv as ad
from anchordiv.adaptation.families import factor_model, factor_prior
from common import parser, synthetic_anchors, table, unit_rows, write_results


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def rel_div_error(a, b, q, g) -> float:
    da = np.asarray(ad.divergence(a, q, g), np.float64)
    db = np.asarray(ad.divergence(b, q, g), np.float64)
    return float(np.abs(da - db).max() / np.abs(db).max())


def max_rhat(post) -> float:
    import arviz as az

    idata = az.from_dict(posterior={k: post.samples[k] for k in ("mu", "Sigma")})
    return float(max(np.nanmax(az.rhat(idata)[k].values) for k in ("mu", "Sigma")))


def synthetic(d: int, n_broad: int, steps: int, nuts: dict, rng) -> tuple[list, dict]:
    broad = synthetic_anchors(rng, n_broad, d)
    targets = unit_rows(rng, 20, d, decay=0.5, shift=0.8)
    q, g = synthetic_anchors(rng, 200, d), synthetic_anchors(rng, 2000, d)
    strength = {"kappa0": 20.0, "nu0": d + 1 + 100.0}
    exact = ad.adapt("gaussian", broad, targets, tau=20.0, **strength)
    base = dict(tau=20.0, method="svi", num_steps=steps, progress=False, **strength)
    rows, extra = [], {}
    runs = {
        "NIW, delta (MAP)": dict(guide="delta"),
        "NIW, lowrank (rank 4)": dict(guide="lowrank", guide_rank=4, num_samples=20),
        "factor r=16, delta": dict(
            guide="delta", model=factor_model, model_kwargs=factor_prior(rank=16)
        ),
        "factor r=16, lowrank": dict(
            guide="lowrank",
            guide_rank=4,
            num_samples=20,
            model=factor_model,
            model_kwargs=factor_prior(rank=16),
        ),
    }
    for name, opts in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post, secs = timed(lambda: ad.adapt("gaussian", broad, targets, **base, **opts))
        row = {"run": name, "seconds": secs, "converged": post.info["elbo_converged"]}
        if name.startswith("NIW, delta"):
            row["div_rel_error_vs_exact"] = rel_div_error(
                post.point("map"), exact.point("map"), q, g
            )
        rows.append(row)
        print(row, flush=True)
    post, secs = timed(
        lambda: ad.adapt(
            "gaussian",
            broad,
            targets,
            tau=20.0,
            method="nuts",
            subspace=16,
            progress=False,
            **strength,
            **nuts,
        )
    )
    rows.append(
        {
            "run": "NIW, subspace NUTS r=16",
            "seconds": secs,
            "max_rhat": max_rhat(post),
            "divergences": post.info["divergences"],
        }
    )
    print(rows[-1], flush=True)
    extra["exact_seconds"] = timed(
        lambda: ad.adapt("gaussian", broad, targets, tau=20.0, **strength).point("map")
    )[1]
    return rows, extra


def initialisation(dims, rng) -> list[dict]:
    rows = []
    for d in dims:
        broad = synthetic_anchors(rng, max(400, 2 * d), d)
        targets = unit_rows(rng, 20, d, decay=0.5, shift=0.8)
        opts = {} if d <= 32 else {"subspace": 16}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post, secs = timed(
                lambda: ad.adapt(
                    "gaussian",
                    broad,
                    targets,
                    tau=20.0,
                    method="nuts",
                    num_warmup=100,
                    num_samples=100,
                    num_chains=1,
                    progress=False,
                    kappa0=20.0,
                    nu0=d + 101.0,
                    **opts,
                )
            )
        rows.append(
            {
                "d": d,
                "mode": "subspace r=16" if opts else "full d",
                "seconds": secs,
                "finite": bool(np.all(np.isfinite(post.params("mean")["Sigma"]))),
                "divergences": post.info["divergences"],
            }
        )
        print(rows[-1], flush=True)
    return rows


def real_task(steps: int) -> list[dict]:
    from anchordiv.data import imagenet
    from anchordiv.app.studies import wordnet_imagenet as wni
    from anchordiv.app.studies._common import text_embed, labelled_retrieval
    from anchordiv.data.encoders import get_encoder
    from anchordiv.app.studies.priors import WORDNET_PRIOR, default_models_dir, load_prior

    embed = text_embed(get_encoder("minilm"))
    classes = imagenet.classes()
    task = wni.wordnet_imagenet_task(
        [w for w, _ in classes],
        [n for _, n in classes],
        imagenet.TEMPLATES[:6],
        n_classes=50,
        max_items=8,
        seed=0,
    )
    emb = wni.embed_task(task, embed)
    setup = labelled_retrieval(emb.items, task.item_class, 300, 0)
    broad = wni.broad_from_model(load_prior(WORDNET_PRIOR, default_models_dir(), None))
    pick = np.random.default_rng(0).choice(len(emb.targets), 20, replace=False)
    targets = emb.targets[pick]
    exact = ad.adapt("gaussian", broad, targets, tau=20.0)
    strength = {k: exact.info[k] for k in ("kappa0", "nu0")}
    models = {"exact MAP": exact.point("map"), "exact mean": exact.point("mean")}
    for guide, extra in (("delta", {}), ("lowrank", {"guide_rank": 4, "num_samples": 50})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = ad.adapt(
                "gaussian",
                broad,
                targets,
                tau=20.0,
                method="svi",
                guide=guide,
                num_steps=steps,
                progress=False,
                **strength,
                **extra,
            )
        models[f"SVI {guide} " + ("MAP" if guide == "delta" else "mean")] = post.point(
            "map" if guide == "delta" else "mean"
        )
    ev = ad.evaluate(
        models,
        setup["queries"],
        setup["gallery"],
        setup["relevance"],
        query_index=setup["query_index"],
        baselines=(),
    )
    return [{"model": r["scorer"], "auprc": r["auprc"]} for r in ev.summary()]


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    rng = np.random.default_rng(0)
    d, n_broad, steps = (64, 1000, 500) if args.quick else (384, 5000, 2000)
    nuts = (
        dict(num_warmup=100, num_samples=100, num_chains=2)
        if args.quick
        else dict(num_warmup=500, num_samples=500, num_chains=2)
    )
    rows, extra = synthetic(d, n_broad, steps, nuts, rng)
    init = initialisation((8, 16, 32, 64) if args.quick else (8, 16, 32, 64, 128, 384), rng)
    real = [] if args.quick else real_task(steps)
    md = (
        f"## d = {d}, N = {n_broad} broad, n = 20 targets, float32\n\n"
        + table(
            rows,
            [
                ("run", "run"),
                ("seconds", "s (incl. compile)"),
                ("converged", "ELBO converged"),
                ("div_rel_error_vs_exact", "max |ΔD|/max |D| vs exact mode"),
                ("max_rhat", "max R-hat"),
                ("divergences", "divergences"),
            ],
        )
        + f"\n\nExact NIW update + MAP summary: {extra['exact_seconds']:.2f} s.\n\n"
        + "## NUTS initialisation and a short run (100 + 100 draws, 1 chain)\n\n"
        + table(
            init,
            [
                ("d", "d"),
                ("mode", "mode"),
                ("seconds", "s"),
                ("finite", "finite"),
                ("divergences", "divergences"),
            ],
        )
    )
    if real:
        md += (
            "\n\n## WordNet → ImageNet (MiniLM), 20 target anchors, shipped WordNet prior\n\n"
            + table(real, [("model", "model"), ("auprc", "mean AUPRC")])
        )
    path = write_results(
        "bench_svi",
        {
            "d": d,
            "n_broad": n_broad,
            "num_steps": steps,
            "synthetic": rows,
            "initialisation": init,
            "real_task": real,
            **extra,
        },
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
