"""``anchordiv adapt``: broad + target anchor embeddings -> adapted point model (+ posterior)."""

from __future__ import annotations

import json

from ._io import load_embeddings

FLOAT_OPTIONS = ("beta", "prior_anchors", "concentration", "alpha0", "reg", "radius")


def register(sub) -> None:
    from ..adapt import KINDS

    p = sub.add_parser(
        "adapt", help="adapt an anchor model from broad to target anchors (Bayesian update)",
        description="Fit a prior to the BROAD anchor embeddings, update it with the TARGET "
                    "anchor embeddings (.npy, [n, d] each) and save the posterior summary as a "
                    "model directory (arrays.npz + card.json); optionally save the posterior.")
    p.add_argument("kind", choices=KINDS, help="anchor model")
    p.add_argument("broad", help="broad anchor embeddings, .npy [N, d]")
    p.add_argument("target", help="target anchor embeddings, .npy [n, d]")
    p.add_argument("-o", "--out", required=True, help="output model directory (point summary)")
    p.add_argument("--tau", type=float, required=True,
                   help="encoder logit scale (inverse temperature): ~100 for CLIP, 20 for MiniLM")
    p.add_argument("--summary", choices=("mean", "map"), default="mean",
                   help="posterior summary to save (default mean)")
    p.add_argument("--posterior-out", help="also save the posterior to this directory")
    p.add_argument("--prior", choices=("broad", "isotropic"), default="broad",
                   help="broad prior covariance (default) or the isotropic control")
    p.add_argument("--method", choices=("exact", "nuts"), default="exact")
    p.add_argument("--kappa0", help="gaussian/mixture: prior mean strength (pseudo-anchors); "
                                    "gaussian default 'auto' (empirical Bayes)")
    p.add_argument("--nu0", help="gaussian/mixture: IW degrees of freedom (> d + 1) or 'auto'")
    p.add_argument("--rank", type=int, help="latent kinds: subspace dimension k")
    p.add_argument("--beta", type=float, help="latent kinds: target weight in [0, 1]")
    p.add_argument("--prior-anchors", dest="prior_anchors", type=float,
                   help="latent kinds: prior strength in pseudo-anchors (default 10)")
    p.add_argument("--concentration", type=float, help="latent-spherical: draw concentration")
    p.add_argument("--radius", type=float, help="latent-spherical: radius r")
    p.add_argument("--components", type=int, help="mixture: number of components (default 4)")
    p.add_argument("--alpha0", type=float, help="mixture: Dirichlet strength (pseudo-anchors)")
    p.add_argument("--reg", type=float, help="gaussian/mixture: relative ridge of the broad fit")
    p.add_argument("--seed", type=int, help="mixture EM seed / NUTS seed")
    p.add_argument("--encoder", default="", help="encoder id recorded in the cards")
    p.add_argument("--source", default="", help="anchor source recorded in the cards")
    p.set_defaults(func=run)


def _number_or_auto(value):
    return value if value is None or value == "auto" else float(value)


def run(args) -> int:
    from ..adapt import adapt
    from ..io import save_model

    opts = {k: getattr(args, k) for k in FLOAT_OPTIONS + ("rank", "components", "seed")
            if getattr(args, k) is not None}
    opts.update({k: _number_or_auto(getattr(args, k)) for k in ("kappa0", "nu0")
                 if getattr(args, k) is not None})
    post = adapt(args.kind, load_embeddings(args.broad, "broad"),
                 load_embeddings(args.target, "target"), tau=args.tau, prior=args.prior,
                 method=args.method, progress=False, **opts)
    info = {k: v for k, v in post.info.items() if k != "model_kwargs"}
    card = {"encoder": args.encoder, "anchor_source": args.source, "adaptation": info,
            "summary": args.summary, "tau": args.tau}
    path = save_model(post.point(args.summary), args.out, **card)
    if args.posterior_out:
        post.save(args.posterior_out, encoder=args.encoder, anchor_source=args.source)
    print(json.dumps({"model": str(path), "posterior": args.posterior_out, **info}))
    return 0
