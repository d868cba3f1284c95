# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Custom priors at the encoder's dimension: SVI, subspace NUTS and ArviZ
#
# `ad.adapt(kind, broad, target, tau=)` updates a prior fitted to broad anchors with a few
# target anchors.  The default is the exact conjugate update of the kind's prior; `model=`
# swaps in *your own* NumPyro model (for the Gaussian kind it must define the sites `mu` and
# `Sigma`).  Here everything runs on the full 384-dimensional MiniLM embeddings:
#
# * a factor-analysis prior (`ad.adaptation.families.factor_model`, loadings centred on the broad anchors'
#   principal directions) fitted by **SVI at full d**;
# * the same prior by **subspace NUTS**: the model runs on the broad anchors' top-r principal
#   directions and the result is lifted back to 384-d with the exact conditional posterior of
#   the default NIW prior outside the subspace;
# * both compared with the **exact NIW posterior** and its SVI MAP on a retrieval task, with
#   ArviZ diagnostics and plots.
#
# This page shows the **small mode**, the default (fewer anchors, steps and draws: what the docs
# gallery shows and the tests run); `ANCHORDIV_NOTEBOOK_FULL=1` runs the full version.

# %%
import os
from pathlib import Path

import numpy as np
import pandas as pd
from IPython import display

import anchordiv as ad
from anchordiv.checks import arviz as adz  # ArviZ 0.x or 1.x, one API
from anchordiv.data import embed_texts, get_encoder, wordnet
from anchordiv.adaptation.families import factor_model, factor_prior

SMALL = os.environ.get("ANCHORDIV_NOTEBOOK_FULL") != "1"  # small mode by default
OUT = Path(os.environ.get("ANCHORDIV_NOTEBOOK_OUT", "reports/notebooks")) / "custom_priors"
OUT.mkdir(parents=True, exist_ok=True)
N_BROAD, PER_CLASS, TARGETS_PER_CLASS = (1000, 10, 2) if SMALL else (3000, 60, 5)
SVI_STEPS = 2000
R = 4 if SMALL else 16  # subspace rank for NUTS
NUTS = (
    dict(num_warmup=100, num_samples=100, num_chains=2)
    if SMALL
    else dict(num_warmup=400, num_samples=400, num_chains=2)
)

# %% [markdown]
# ## Data
# Broad anchors: WordNet noun glosses.  Task: glosses in four WordNet categories (relevant =
# same category); target anchors: names of other synsets of those categories.  Nothing is
# projected: every model below lives in the encoder's 384 dimensions.

# %%
CATEGORIES = ["dog.n.01", "bird.n.01", "fish.n.01", "tree.n.01"]
rng = np.random.default_rng(1)
items, labels, target_texts, held_out = [], [], [], set()
for c, root in enumerate(CATEGORIES):
    synsets = wordnet.subtree(root)
    held_out |= {s.offset() for s in synsets}
    pick = rng.permutation(len(synsets) - 1)[: PER_CLASS + TARGETS_PER_CLASS] + 1
    items += [wordnet.gloss(synsets[i], with_name=False) for i in pick[:PER_CLASS]]
    labels += [c] * PER_CLASS
    target_texts += [wordnet.readable(synsets[i]) for i in pick[PER_CLASS:]]
broad_texts = [
    wordnet.record_text(r)
    for r in wordnet.gloss_records(N_BROAD, seed=2)
    if r.offset not in held_out
]
labels = np.array(labels)

encoder = get_encoder("minilm")
tau = encoder.logit_scale
broad = embed_texts(encoder, broad_texts)
targets = embed_texts(encoder, target_texts)
X = embed_texts(encoder, items)
queries, gallery = X[::3], np.delete(X, np.s_[::3], axis=0)  # disjoint: no self-matches
relevance = labels[::3, None] == np.delete(labels, np.s_[::3])[None, :]
print(broad.shape, targets.shape, queries.shape, gallery.shape)

# %% [markdown]
# ## The exact posterior (Normal–Inverse-Wishart) and its SVI MAP
# The prior strengths (κ₀ for the mean, ν₀ − d − 1 for the covariance, in pseudo-anchors) are
# fixed to a moderate prior.  `method="svi", guide="delta"` maximises the density of (μ, Σ)
# itself (the default model supplies the Jacobian of its Bartlett coordinates), so it must find
# the exact joint mode Ψₙ/(νₙ + d + 2).

# %%
d = broad.shape[1]
strength = {"kappa0": 10.0, "nu0": d + 1 + 20.0}
exact = ad.adapt("gaussian", broad, targets, tau=tau, **strength)
svi_map = ad.adapt(
    "gaussian",
    broad,
    targets,
    tau=tau,
    method="svi",
    guide="delta",
    num_steps=SVI_STEPS,
    progress=False,
    **strength,
)
D_exact = np.asarray(ad.divergence(exact.point("map"), queries, gallery), np.float64)
D_svi = np.asarray(ad.divergence(svi_map.point("map"), queries, gallery), np.float64)
map_error = np.abs(D_svi - D_exact).max() / np.abs(D_exact).max()
print(f"SVI MAP vs exact joint mode: relative error of the divergence matrix {map_error:.1e}")
svi_map.plot_elbo(OUT / "elbo_niw_map.png")

# %% [markdown]
# ## A custom prior at full d: factor analysis by SVI
# `factor_prior(rank=16)` builds the hyperparameters from the broad anchors (PPCA loadings and
# per-coordinate residual variances); passing the *builder* as `model_kwargs` lets the same
# call work in a subspace too.  A low-rank Gaussian guide gives a posterior with correlations.

# %%
builder = factor_prior(rank=16)
factor_svi = ad.adapt(
    "gaussian",
    broad,
    targets,
    tau=tau,
    method="svi",
    model=factor_model,
    model_kwargs=builder,
    guide="lowrank",
    guide_rank=4,
    num_steps=SVI_STEPS,
    num_samples=50,
    progress=False,
)
print({k: factor_svi.info[k] for k in ("guide", "elbo_converged", "elbo_relative_change")})
factor_svi.plot_elbo(OUT / "elbo_factor.png")

# %% [markdown]
# ## The same prior by subspace NUTS
# NUTS cannot move in the 384·16 + 2·384 coordinates of the full factor model on two cores,
# but it can in the broad anchors' top-r principal subspace: `subspace=r` runs the model there
# (the builder receives the projected broad anchors) and lifts each draw back to 384-d.

# %%
factor_nuts = ad.adapt(
    "gaussian",
    broad,
    targets,
    tau=tau,
    method="nuts",
    model=factor_model,
    model_kwargs=factor_prior(rank=min(4, R - 1)),
    subspace=R,
    progress=False,
    **NUTS,
)
print("divergent transitions:", factor_nuts.info["divergences"])

# %% [markdown]
# ## ArviZ: diagnostics and posterior plots
# `inference_data` reports interpretable quantities (cosine between drawn and point mean,
# covariance trace and eigenvalues, leading-axis angle) plus NUTS sample statistics.

# %%
idata = {
    "exact": ad.inference_data(exact, num_draws=40 if SMALL else 200),
    "factor (SVI)": ad.inference_data(factor_svi, num_draws=50),
    "factor (subspace NUTS)": ad.inference_data(factor_nuts),
}
summary = adz.summary(idata["factor (subspace NUTS)"], var_names=["mean_cosine", "cov_trace"])
print(summary)
adz.plot_trace(
    idata["factor (subspace NUTS)"], ["mean_cosine", "cov_trace"], OUT / "nuts_trace.png"
)
print(  # the covariance trace under each posterior
    pd.concat(
        {
            name: adz.summary(data, var_names=["cov_trace"], kind="stats")
            for name, data in idata.items()
        }
    )
)
ad.save_inference_data(idata["exact"], OUT / "exact_idata", overwrite=True, encoder=encoder.id)
display.Image(filename=OUT / "nuts_trace.png")

# %% [markdown]
# ## Retrieval: point summaries, and stability across posterior draws

# %%
models = {
    "exact NIW": exact.point("mean"),
    "NIW MAP (SVI)": svi_map.point("map"),
    "factor (SVI)": factor_svi.point("mean"),
    "factor (subspace NUTS)": factor_nuts.point("mean"),
    "target-only": ad.fit("gaussian", targets, tau=tau),
}
ev = ad.evaluate(models, queries, gallery, relevance, anchors=targets)
for row in ev.summary():
    print(
        f"{row['scorer']:24s} AUPRC {row['auprc']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
        f"  prevalence {row['prevalence']:.3f}"
    )
stab = {
    name: ad.retrieval_uncertainty(
        p, queries, gallery, k=5, relevance=relevance, num_draws=5 if SMALL else 20
    ).summary()
    for name, p in (("factor (SVI)", factor_svi), ("factor (subspace NUTS)", factor_nuts))
}
for name, s in stab.items():
    print(name, "top-5 overlap", s["topk_overlap"], "AUPRC over draws", s["auprc"])

# %% [markdown]
# ## Checks
# The SVI MAP is the exact joint mode; every model is 384-dimensional; the subspace chains
# mixed; every retrieval model beats a random ranking; the summaries are proper fractions.

# %%
auprc = {row["scorer"]: row for row in ev.summary()}
assert map_error < 1e-3, map_error
assert abs(auprc["NIW MAP (SVI)"]["auprc"] - auprc["exact NIW"]["auprc"]) < 0.01
for name, m in models.items():
    assert np.asarray(m.mean).shape == (d,), name
summ = adz.summary(idata["factor (subspace NUTS)"], var_names=["cov_trace"])
assert (summ["r_hat"] < 1.1).all(), summ
for row in ev.summary():
    assert row["auprc"] > row["prevalence"], row
for s in stab.values():
    assert 0 <= s["topk_overlap"]["low"] <= s["topk_overlap"]["mean"] <= 1
    assert 0 < s["auprc"]["low"] <= s["auprc"]["high"] <= 1
assert ad.load_inference_data(OUT / "exact_idata")["posterior"].sizes["chain"] == 2
assert (OUT / "nuts_trace.png").stat().st_size > 0
