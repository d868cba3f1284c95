"""``anchordiv adapt``: broad + target anchor embeddings -> adapted point model (+ posterior)."""

from __future__ import annotations

from ._io import add_json_flag, load_embeddings, number, number_or_auto, report
from .fit import TAU_HELP, card_fields

#: option name in ``ad.adapt`` -> (flag, argparse type, help).  Only options the user gives are
#: forwarded, so the library's defaults stay the single source of truth.
OPTIONS = {
    "kappa0": ("--kappa0", number_or_auto, "gaussian/mixture: prior mean strength "
               "(pseudo-anchors); gaussian default 'auto' (empirical Bayes)"),
    "nu0": ("--nu0", number_or_auto, "gaussian/mixture: IW degrees of freedom (> d + 1) or "
            "'auto'"),
    "rank": ("--rank", int, "latent kinds: subspace dimension k"),
    "beta": ("--beta", number, "latent kinds: target weight in [0, 1]"),
    "prior_anchors": ("--prior-anchors", number, "latent kinds: prior strength in "
                      "pseudo-anchors (default 10)"),
    "concentration": ("--concentration", number, "latent-spherical: draw concentration"),
    "radius": ("--radius", number, "latent-spherical: radius r"),
    "components": ("--components", int, "mixture: number of components (default 4)"),
    "alpha0": ("--alpha0", number, "mixture: Dirichlet strength (pseudo-anchors)"),
    "reg": ("--reg", number, "gaussian/mixture: relative ridge of the broad fit"),
    "guide": ("--guide", str, "svi: variational family: delta (MAP), normal (mean-field) or "
              "lowrank (low-rank multivariate normal)"),
    "guide_rank": ("--guide-rank", int, "svi with --guide lowrank: rank R of the covariance"),
    "subspace": ("--subspace", int, "infer in the broad anchors' top-R principal subspace "
                 "(R << d makes svi/nuts affordable at d = 384)"),
    "num_steps": ("--num-steps", int, "svi: optimisation steps"),
    "learning_rate": ("--learning-rate", number, "svi: initial Adam learning rate (it decays "
                      "to 1 %% of this over the run)"),
    "num_samples": ("--num-samples", int, "nuts: posterior samples per chain; svi: guide "
                    "draws kept"),
    "num_warmup": ("--num-warmup", int, "nuts: warm-up steps per chain"),
    "num_chains": ("--num-chains", int, "nuts: chains"),
    "seed": ("--seed", int, "random seed (mixture EM, svi, nuts)"),
}


def register(sub) -> None:
    from ...adapt import KINDS
    from ...adapt.variational import GUIDES

    p = sub.add_parser(
        "adapt", help="adapt an anchor model from broad to target anchors (Bayesian update)",
        description="Fit a prior to the BROAD anchor embeddings, update it with the TARGET "
                    "anchor embeddings (.npy, [n, d] each) and save the posterior summary as a "
                    "model directory (arrays.npz + card.json); optionally save the posterior. "
                    "Samplers show progress bars.")
    p.add_argument("kind", choices=KINDS, help="anchor model")
    p.add_argument("broad", help="broad anchor embeddings, .npy [N, d]")
    p.add_argument("target", help="target anchor embeddings, .npy [n, d]")
    p.add_argument("-o", "--out", required=True, help="output model directory (point summary)")
    p.add_argument("--tau", type=number, help=TAU_HELP)
    p.add_argument("--summary", choices=("mean", "map"), default="mean",
                   help="posterior summary to save (default mean)")
    p.add_argument("--posterior-out", help="also save the posterior to this directory")
    p.add_argument("--prior", choices=("broad", "isotropic"), default="broad",
                   help="broad prior covariance (default) or the isotropic control")
    p.add_argument("--method", choices=("exact", "svi", "nuts"), default="exact",
                   help="exact conjugate update (default), svi (variational) or nuts (MCMC)")
    p.add_argument("--normalize", action="store_true",
                   help="scale target rows to unit norm first (otherwise non-unit rows warn)")
    for name, (flag, kind, text) in OPTIONS.items():
        p.add_argument(flag, dest=name, type=kind, choices=GUIDES if name == "guide" else None, help=text)
    p.add_argument("--encoder", help="encoder id recorded in the cards (default: sidecar)")
    p.add_argument("--source", help="anchor source recorded in the cards (default: the target "
                                    "file)")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ...adapt import adapt
    from ...io import save_model

    opts = {k: getattr(args, k) for k in OPTIONS if getattr(args, k) is not None}
    broad = load_embeddings(args.broad, "broad")
    target = load_embeddings(args.target, "target")
    post = adapt(args.kind, broad, target, tau=args.tau, prior=args.prior, method=args.method,
                 normalize=args.normalize, **opts)
    info = {k: v for k, v in post.info.items() if k != "model_kwargs"}
    card = card_fields(args, target, post.tau, args.target)
    path = save_model(post.point(args.summary), args.out, adaptation=info,
                      summary=args.summary, broad_source=args.broad, **card)
    posterior = str(post.save(args.posterior_out, **card)) if args.posterior_out else None
    report(args, {"model": str(path), "posterior": posterior, **card, **info},
           title=f"anchordiv adapt: {args.kind} ({args.method}, {args.prior} prior) -> {path}",
           fields={"posterior": posterior, "tau": card["tau"], "encoder": card["encoder"],
                   **{k: v for k, v in info.items() if not isinstance(v, (dict, list))}})
    return 0
