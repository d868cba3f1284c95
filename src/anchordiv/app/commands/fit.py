"""``anchordiv fit``: fit an anchor model to anchor embeddings and save it."""

from __future__ import annotations

from ._io import add_flags, check_out, count, load_embeddings, number, positive_int, report

TAU_HELP = (
    "encoder logit scale (inverse temperature): ~100 for CLIP, 20 for MiniLM; default: "
    "the logit_scale in the embeddings' sidecar (X.json, written by `anchordiv embed`)"
)


def register(sub) -> None:
    from ...anchors import KINDS

    p = sub.add_parser(
        "fit",
        help="fit an anchor model to anchor embeddings (.npy) and save it",
        description="Fit an anchor model of KIND to the anchor embeddings in ANCHORS "
        "(.npy, [n, d]) and save it as a model directory (arrays.npz + card.json recording "
        "encoder, tau and anchor source).",
    )
    p.add_argument("kind", choices=KINDS, help="anchor model")
    p.add_argument("anchors", help="anchor embeddings, .npy [n, d]")
    p.add_argument("-o", "--out", required=True, help="output model directory")
    add_flags(p, "overwrite")
    p.add_argument("--tau", type=number, help=TAU_HELP)
    add_flags(p, normalize="scale anchor rows to unit norm first (otherwise non-unit rows warn)")
    p.add_argument("--rank", type=positive_int, help="latent kinds: subspace dimension k")
    p.add_argument(
        "--variance",
        type=number,
        help="latent kinds: explained-variance fraction that picks k (default 0.95)",
    )
    p.add_argument(
        "--components", type=positive_int, help="mixture: number of components (default 4)"
    )
    p.add_argument("--seed", type=count, help="mixture: EM seed")
    p.add_argument("--reg", type=number, help="gaussian/mixture: relative covariance ridge")
    p.add_argument(
        "--encoder",
        help="encoder id recorded in the model card (default: from the embeddings' sidecar)",
    )
    p.add_argument(
        "--source", help="anchor source recorded in the model card (default: the anchors file)"
    )
    add_flags(p, "json")


def card_fields(args, embeddings, tau: float, source_default: str) -> dict:
    """Card entries every saved model/posterior gets: encoder, tau, anchor source."""
    from ...provenance import provenance_of

    return {
        "encoder": args.encoder or provenance_of(embeddings).get("encoder", ""),
        "tau": float(tau),
        "anchor_source": args.source or source_default,
    }


def run(args) -> int:
    from ...anchors import fit
    from ...io import save_model

    given = {k: getattr(args, k) for k in ("rank", "variance", "components", "seed", "reg")}
    options = {k: v for k, v in given.items() if v is not None}
    check_out(args, args.out)
    anchors = load_embeddings(args.anchors, "anchors")
    model = fit(args.kind, anchors, tau=args.tau, normalize=args.normalize, **options)
    card = card_fields(args, anchors, float(model.tau), args.anchors)
    n = int(anchors.shape[0])
    path = save_model(
        model, args.out, overwrite=args.overwrite, options=options, n_anchors=n, **card
    )
    fields = {"anchors": f"{n} x {model.dim} from {args.anchors}", "tau": card["tau"]}
    fields.update(encoder=card["encoder"], model=repr(model))
    result = {"model": str(path), "kind": model.kind, "dim": model.dim, **card}
    report(args, result, title=f"anchordiv fit: {model.kind} model saved to {path}", fields=fields)
    return 0
