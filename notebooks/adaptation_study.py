# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # An adaptation study: how many target anchors does a broad prior save?
#
# The paper's Fig. 5 in kind, on text: broad anchors are WordNet noun glosses, target anchors
# are prompts of ImageNet class names ("a photo of a {name}."), and the retrieval items are
# glosses of WordNet hyponyms of those classes (relevant = same class), disjoint from all
# anchors.  For each target budget (1, 2, 5, … all) and several seeded random target subsets,
# `ad.adaptation_curve` compares
#
# * target-only models (`softmax`, `gaussian`, `latent-gaussian`: fit to the targets alone),
# * posterior models adapted from the broad anchors (`posterior-*`, via `ad.adapt`),
# * the isotropic-prior control (`isotropic-*`: the same prior strength, but an isotropic prior
#   covariance of the same trace — if it does as well as the posterior, the gain is shrinkage,
#   not knowledge transferred from the broad anchors),
# * cosine and inversion.
#
# This page shows the **small mode**, the default (fewer anchors, steps and draws: what the docs
# gallery shows and the tests run); `ANCHORDIV_NOTEBOOK_FULL=1` runs the full version.

# %%
import json
import os
from pathlib import Path

import numpy as np
from IPython import display

import anchordiv as ad
from anchordiv.data import embed_texts, get_encoder, imagenet, wordnet
from anchordiv.app.studies import wordnet_imagenet as wi

SMALL = os.environ.get("ANCHORDIV_NOTEBOOK_FULL") != "1"  # small mode by default
OUT = Path(os.environ.get("ANCHORDIV_NOTEBOOK_OUT", "reports/notebooks")) / "adaptation_study"
N_CLASSES, TEMPLATES = (8, 2) if SMALL else (40, 4)
N_BROAD = 200 if SMALL else 4000
BUDGETS, SUBSETS = ((1, 4), 1) if SMALL else ((1, 2, 5, 10, 20, 50, 100), 5)
MODELS = ["softmax", "gaussian", "posterior-gaussian", "isotropic-gaussian", "cosine", "inversion"]
if not SMALL:  # the latent kinds too (each adaptation eigendecomposes a d x d matrix)
    MODELS[3:3] = ["latent-gaussian", "posterior-latent-gaussian", "isotropic-latent-gaussian"]

# %% [markdown]
# ## The task
# `wordnet_imagenet_task` picks classes with enough usable hyponyms (each item lies under
# exactly one chosen class).  The broad anchors are a seeded sample of all WordNet noun glosses
# minus everything in the chosen classes' subtrees, so no item or class is a broad anchor.

# %%
task = wi.wordnet_imagenet_task(
    imagenet.wnids(), imagenet.names(), imagenet.TEMPLATES[:TEMPLATES], n_classes=N_CLASSES, seed=0
)
held_out = {s.offset() for w in task.wnids for s in wordnet.subtree(w)}
broad_records = [r for r in wordnet.gloss_records(N_BROAD, seed=1) if r.offset not in held_out]
broad_texts = [wordnet.record_text(r) for r in broad_records]
print(len(task.items), "items in", len(task.names), "classes:", task.names[:5])
print(len(task.targets), "target anchors, e.g.", task.targets[:2])
print(len(broad_texts), "broad anchors, e.g.", broad_texts[0])

# %%
encoder = get_encoder("minilm")
emb = wi.WordNetEmbeddings(embed_texts(encoder, task.items), embed_texts(encoder, task.targets))
broad = embed_texts(encoder, broad_texts)
setup = wi.retrieval_setup(task, emb, max_queries=None, seed=0)  # every item is a query

# %% [markdown]
# ## The curve
# One progress bar covers the (budget × subset × model) grid.  Cells where a model is undefined
# (a Gaussian from one anchor) are kept in the table with their error, not dropped silently.

# %%
curve = ad.adaptation_curve(
    broad,
    emb.targets,
    tau=encoder.logit_scale,
    models=MODELS,
    budgets=BUDGETS,
    n_subsets=SUBSETS,
    seed=0,
    **setup,
)
paths = curve.write(
    OUT, fraction=0.9, title="WordNet glosses → ImageNet class prompts (MiniLM)", overwrite=True
)
summary = curve.summary()
for row in summary:
    if row["budget"] in (curve.budgets[0], curve.budgets[1], curve.budgets[-1]):  # 3 budgets
        print(
            f"{row['model']:27s} n={row['budget']:3d}  AUPRC {row['auprc']:.3f} "
            f"[{row['low']:.3f}, {row['high']:.3f}]"
        )
print("prevalence", round(curve.prevalence, 3))
print(paths)
display.Image(filename=paths["plot"])

# %% [markdown]
# ## How many target anchors does each model need?
# `needs` reports, per model, the smallest budget from which the mean AUPRC stays at 90 % of
# its full-coverage gain over chance, and for each posterior the ratio to its target-only
# counterpart, plus the paired difference posterior − isotropic control per budget.

# %%
needs = curve.needs(0.9)
for name, n in needs["models"].items():
    print(f"{name:27s} needs {n['budget_needed']} (≈{n['budget_needed_interpolated']})")
for comp in needs["comparisons"]:
    print(
        comp["model"],
        "vs",
        comp["reference"],
        "ratio",
        comp["ratio_own"],
        "| reaches the target-only level at",
        comp["budget_to_reference_level"],
    )
    for c in comp.get("minus_isotropic_control", [])[:2]:
        print(
            f"   budget {c['budget']}: posterior − isotropic = {c['difference']:+.3f} "
            f"[{c['low']:+.3f}, {c['high']:+.3f}]"
        )

# %% [markdown]
# ## Checks on the results

# %%
assert curve.budgets == [b for b in BUDGETS if b < len(task.targets)] + [len(task.targets)]
assert len(summary) == len(MODELS) * len(curve.budgets)
full = {r["model"]: r for r in summary if r["budget"] == curve.budgets[-1]}
for name, row in full.items():
    assert row["low"] <= row["auprc"] <= row["high"], row
    assert row["auprc"] > curve.prevalence, row  # every model beats chance
# posterior models are defined at every budget, target-only Gaussians not below two anchors
post = [r for r in summary if r["model"] == "posterior-gaussian"]
assert all(np.isfinite(r["auprc"]) for r in post)
assert np.isnan(next(r["auprc"] for r in summary if r["model"] == "gaussian" and r["budget"] == 1))
# cosine ignores the targets: a flat line
cos = {round(r["auprc"], 12) for r in summary if r["model"] == "cosine"}
assert len(cos) == 1
assert Path(paths["plot"]).stat().st_size > 0
json.dumps(needs)
