"""``anchordiv fit``: fit an anchor model to anchor embeddings and save it."""

from __future__ import annotations

import json

from ._io import load_embeddings


def register(sub) -> None:
    from ..anchors import KINDS

    p = sub.add_parser("fit", help="fit an anchor model to anchor embeddings (.npy) and save it",
                       description="Fit an anchor model of KIND to the anchor embeddings in "
                                   "ANCHORS (.npy, [n, d]) and save it as a model directory "
                                   "(arrays.npz + card.json).")
    p.add_argument("kind", choices=KINDS, help="anchor model")
    p.add_argument("anchors", help="anchor embeddings, .npy [n, d]")
    p.add_argument("-o", "--out", required=True, help="output model directory")
    p.add_argument("--tau", type=float, required=True,
                   help="encoder logit scale (inverse temperature): ~100 for CLIP, 20 for MiniLM")
    p.add_argument("--rank", type=int, help="latent kinds: subspace dimension k")
    p.add_argument("--variance", type=float,
                   help="latent kinds: explained-variance fraction that picks k (default 0.95)")
    p.add_argument("--components", type=int, help="mixture: number of components (default 4)")
    p.add_argument("--seed", type=int, help="mixture: EM seed")
    p.add_argument("--reg", type=float, help="gaussian/mixture: relative covariance ridge")
    p.add_argument("--encoder", default="", help="encoder id recorded in the model card")
    p.add_argument("--source", default="", help="anchor source recorded in the model card")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..anchors import fit
    from ..io import save_model

    options = {k: getattr(args, k) for k in ("rank", "variance", "components", "seed", "reg")
               if getattr(args, k) is not None}
    model = fit(args.kind, load_embeddings(args.anchors, "anchors"), tau=args.tau, **options)
    path = save_model(model, args.out, encoder=args.encoder, anchor_source=args.source,
                      options=options, tau=args.tau)
    print(json.dumps({"model": str(path), "kind": model.kind, "dim": model.dim}))
    return 0
