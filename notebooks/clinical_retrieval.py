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
# # Clinical retrieval with pathology-specific anchors
#
# The paper's Table 2 in kind, on text: the 3,927 Open-i chest X-ray reports (shipped inside
# the `torchxrayvision` wheel, read as a data file) are both queries and gallery; a report is
# relevant to a query for finding *f* when both carry *f*'s MeSH label.  Anchors are
# report-style sentences built from the Human Phenotype Ontology and ICD-10-CM terms for *f*
# (`anchordiv.data.clinical.pathology_anchors`), embedded with the shipped MiniLM encoder.
#
# Text-to-text retrieval has no modality gap, so cosine and inversion are strong here, and
# reports often *negate* findings ("no pleural effusion"): the table reports how often a
# report without the label still names the finding.
#
# This page shows the **small mode**, the default (fewer anchors, steps and draws: what the docs
# gallery shows and the tests run); `ANCHORDIV_NOTEBOOK_FULL=1` runs the full version.

# %%
import os
from pathlib import Path

import numpy as np
from IPython import display

import anchordiv as ad
from anchordiv.data import clinical, embed_texts, get_encoder, openi
from anchordiv.evaluation import neighbours
from anchordiv.plots import plot_scores
from anchordiv.app.studies import clinical as study

SMALL = os.environ.get("ANCHORDIV_NOTEBOOK_FULL") != "1"  # small mode by default
OUT = Path(os.environ.get("ANCHORDIV_NOTEBOOK_OUT", "reports/notebooks")) / "clinical_retrieval"
FINDINGS = ["cardiomegaly", "pleural effusion"] if SMALL else list(clinical.FINDINGS)
N_GALLERY, N_QUERIES, N_SUBSETS = (400, 20, 2) if SMALL else (None, 200, 5)

# %% [markdown]
# ## Reports, labels and anchors

# %%
reports = openi.load_reports()
rng = np.random.default_rng(0)
rows = (
    np.sort(rng.choice(len(reports), N_GALLERY, replace=False))
    if N_GALLERY
    else np.arange(len(reports))
)
texts = [reports.texts[i] for i in rows]
labels = np.stack([reports.finding(f)[rows] for f in FINDINGS], axis=1)  # [n, F]
encoder = get_encoder("minilm")
tau = encoder.logit_scale
X = embed_texts(encoder, texts)
anchor_texts = {f: clinical.pathology_anchors(f) for f in FINDINGS}
anchors = {f: embed_texts(encoder, a) for f, a in anchor_texts.items()}
print(len(texts), "reports;", dict(zip(FINDINGS, labels.sum(0).tolist())), "labelled")
for f in FINDINGS:
    print(f"{f}: {len(anchor_texts[f])} anchors, e.g. {anchor_texts[f][:2]}")

# %% [markdown]
# ## One finding by hand: `ad.evaluate`
# Queries are the reports labelled with the finding; each is removed from its own ranking
# (`query_index`); relevance is the gallery's label column.  Cosine and inversion (with the same
# anchors) are always evaluated beside the anchor models.

# %%
f = FINDINGS[0]
col = labels[:, 0]
q = np.nonzero(col)[0][:N_QUERIES]
models = {
    kind: ad.fit(kind, anchors[f], tau=tau) for kind in ("gaussian", "latent-gaussian", "softmax")
}
ev = ad.evaluate(
    models, X[q], X, np.broadcast_to(col, (len(q), len(X))), anchors=anchors[f], query_index=q
)
for row in ev.summary():
    print(
        f"{row['scorer']:16s} AUPRC {row['auprc']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
        f"  prevalence {row['prevalence']:.3f}"
    )
print("gaussian − cosine:", ev.difference("gaussian", "cosine"))
plot_scores(ev.summary(), OUT / f"{f.replace(' ', '_')}.png", title=f"Open-i: {f}")

# %% [markdown]
# ## What each geometry retrieves
# AUPRC summarises whole rankings; `anchordiv.evaluation.neighbours` shows their tops.  Three of
# the queries and their five nearest reports under cosine, inversion and each model (the query
# itself left out); ✓ marks a report labelled with the finding.

# %%
shown = neighbours(models, X, q[:3], anchors=anchors[f], labels=col, k=5)
print(shown)  # the share of relevant neighbours per geometry
display.Markdown(shown.to_markdown(texts, width=60))

# %% [markdown]
# ## Every finding: `anchordiv.app.studies.clinical`
# The study repeats this per finding, with intervals from a two-level bootstrap over queries and
# over random anchor subsets (80 % of the anchors each), and adds the negated-mention rate.

# %%
result = study.clinical_study(
    X,
    labels,
    FINDINGS,
    anchors,
    texts=texts,
    tau=tau,
    n_subsets=N_SUBSETS,
    max_queries=N_QUERIES,
    seed=0,
    progress=False,
)
table = study.findings_summary(result.rows)
for r in table:
    print(
        f"{r['finding']:18s} best {r['best_model']:16s} {r[r['best_model']]:.3f}  "
        f"cosine {r['cosine']:.3f}  inversion {r['inversion']:.3f}  "
        f"best−cosine {r['best_minus_cosine']:+.3f} [{r['diff_low']:+.3f}, {r['diff_high']:+.3f}]"
        f"  prevalence {r['prevalence']:.3f}  negated mentions {r['negated_mentions']:.2f}"
    )
png = study.plot_clinical(result.rows, OUT / "clinical.png")
display.Image(filename=png)

# %% [markdown]
# ## Checks

# %%
assert {r["finding"] for r in table} == set(FINDINGS)
for r in result.rows:
    assert 0 < r["prevalence"] < 1 and r["low"] <= r["auprc"] <= r["high"], r
    assert r["auprc"] > r["prevalence"], r  # every scorer ranks better than chance
for r in table:
    assert -1 <= r["diff_low"] <= r["best_minus_cosine"] <= r["diff_high"] <= 1
    assert 0 <= r["negated_mentions"] <= 1
# the hand-made evaluation of the first finding matches the study's setting
assert ev.summary()[0]["n_queries"] == len(q)
# the gaussian's neighbours are ad.top_k's, the query dropped from its own list
idx, _ = ad.top_k(models["gaussian"], X[q[:3]], X, k=6)
expected = [[j for j in row if j != query][:5] for row, query in zip(idx, q[:3])]
assert shown.indices["gaussian"].tolist() == expected
assert Path(png).stat().st_size > 0
