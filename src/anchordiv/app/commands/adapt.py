"""``anchordiv adapt``: broad + target anchor embeddings (or a saved prior, as BROAD or
``--prior DIR``) -> adapted point model (+ posterior); the prior flags come from the families
(:mod:`._options`), ``--model`` runs a user's NumPyro model with nuts/svi."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ...errors import AnchorDivError
from ._io import (
    add_flags,
    check_out,
    count,
    import_object,
    load_broad,
    load_embeddings,
    number,
    positive_int,
    report,
)
from ._options import check_family_known, load_family, prior_flags
from ._options import family_options as kind_options
from .fit import TAU_HELP, card_fields

#: help of the inference methods' options (names of ``anchordiv.adaptation.METHOD_OPTIONS``);
#: only options the user gives are forwarded, so the library's defaults stay the source of truth
METHOD_HELP = {
    "guide": "svi: variational family: delta (MAP), normal (mean-field) or lowrank (low-rank "
    "multivariate normal)",
    "guide_rank": "svi with --guide lowrank: rank R of the covariance",
    "subspace": "infer in the broad anchors' top-R principal subspace (R << d makes svi/nuts "
    "affordable at d = 384)",
    "num_steps": "svi: optimisation steps",
    "learning_rate": "svi: initial Adam learning rate (it decays to 1 %% of this over the run)",
    "num_samples": "nuts: posterior samples per chain; svi: guide draws kept",
    "num_warmup": "nuts: warm-up steps per chain",
    "num_chains": "nuts: chains",
    "seed": "random seed of svi / nuts (the mixture's EM fit has its own, --em-seed)",
}


def prior_options() -> dict:
    """The flags of every registered family's ``from_anchors`` options (:func:`prior_flags`)."""
    from ...adaptation import KINDS

    return prior_flags(KINDS)


def register(sub) -> None:
    from ...adaptation import COMMON, GUIDES, KINDS, METHOD_OPTIONS

    p = sub.add_parser(
        "adapt",
        help="adapt an anchor model from broad to target anchors (Bayesian update)",
        description="Fit a prior to the BROAD anchor embeddings, update it with the TARGET anchor "
        "embeddings (.npy, [n, d] each) and save the posterior summary as a model directory "
        "(arrays.npz + card.json); optionally save the posterior. Samplers show progress bars.",
    )
    p.add_argument(
        "kind", help=f"anchor model: {', '.join(KINDS)}, or the kind of a family --family defines"
    )
    p.add_argument(
        "anchors",
        nargs="+",
        metavar="BROAD TARGET",
        help="broad anchor embeddings (.npy [N, d], or a saved prior directory) and "
        "target anchor embeddings (.npy [n, d]); only TARGET with --prior DIR",
    )
    p.add_argument("-o", "--out", required=True, help="output model directory (point summary)")
    add_flags(p, "overwrite", "sha256")
    p.add_argument("--tau", type=number, help=TAU_HELP)
    p.add_argument(
        "--summary",
        choices=("mean", "map"),
        default="mean",
        help="posterior summary to save (default mean)",
    )
    p.add_argument("--posterior-out", help="also save the posterior to this directory")
    p.add_argument(
        "--prior",
        default=COMMON["prior"],
        metavar="{broad,isotropic,DIR}",
        help="broad prior covariance (default), the isotropic control, or a saved "
        "prior directory (models/*, build-prior output) to adapt from",
    )
    p.add_argument(
        "--method",
        choices=tuple(METHOD_OPTIONS),
        default=COMMON["method"],
        help="exact conjugate update (default), svi (variational) or nuts (MCMC)",
    )
    add_flags(p, normalize="scale target rows to unit norm first (otherwise non-unit rows warn)")
    flags, methods = prior_options(), {"guide": (str, GUIDES), "learning_rate": (number, None)}
    methods["seed"] = (count, None)
    for name, text in METHOD_HELP.items():  # a method option's flag wins over a prior's
        kind, choices = methods.get(name, (positive_int, None))
        flags[name] = ("--" + name.replace("_", "-"), kind, text, choices)
    for name, (flag, kind, text, choices) in flags.items():
        p.add_argument(flag, dest=name, type=kind, choices=choices, help=text)
    p.add_argument(
        "--model",
        metavar="MODULE:FUNCTION",
        help="nuts/svi: a NumPyro prior model fn(targets, **model_kwargs) defining "
        "the kind's sites (gaussian: mu, Sigma), as module:function (importable, "
        "the current directory included) or path/to/file.py:function",
    )
    p.add_argument(
        "--model-kwargs",
        metavar="JSON|MODULE:NAME",
        help="keywords of --model: a JSON object, or module:name of a dict or of a "
        "builder f(broad [N, d]) -> dict",
    )
    add_flags(p, "family")
    p.add_argument(
        "--prior-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a keyword of the family's from_anchors that has no flag of its own (e.g. a "
        "--family's); VALUE is read as JSON, else as text; repeatable",
    )
    p.add_argument("--encoder", help="encoder id recorded in the cards (default: sidecar)")
    p.add_argument(
        "--source", help="anchor source recorded in the cards (default: the target file)"
    )
    add_flags(p, "json")


def inputs(args) -> tuple[str, str, str | None, str]:
    """``(broad source, target file, prior directory or None, prior mode)``."""
    mode = args.prior if args.prior in ("broad", "isotropic") else "broad"
    directory = None if args.prior in ("broad", "isotropic") else args.prior
    if directory is not None and not Path(directory).is_dir():
        raise AnchorDivError(
            f"--prior: 'broad', 'isotropic' or a saved prior directory; "
            f"no such directory: {directory}"
        )
    want = 1 if directory is not None else 2
    if len(args.anchors) != want:
        raise AnchorDivError(
            f"anchors: expected {'TARGET' if want == 1 else 'BROAD TARGET'}"
            f"{' (the broad side is --prior DIR)' if want == 1 else ''}, got "
            f"{len(args.anchors)} path(s)"
        )
    if directory is None and Path(args.anchors[0]).is_dir():
        directory = args.anchors[0]
    return (directory or args.anchors[0]), args.anchors[-1], directory, mode


def adapt_from_prior(args, directory: str, mode: str, target, opts: dict):
    """Adapt from a saved Gaussian model or a ``prior.save`` directory."""
    from ...adaptation import infer, load_prior, split_options
    from ...io import load_card

    prior_opts, method = split_options(args.kind, {"method": args.method, "prior": mode, **opts})
    card = load_card(directory)
    check_family_known(card, directory, "prior")
    if card.get("type") == "prior":
        prior = load_prior(directory)
        if prior.kind != args.kind:
            raise AnchorDivError(
                f"kind: {directory} holds a saved {prior.kind} prior; adapt it "
                f"as {prior.kind}, not {args.kind}"
            )
        given = sorted(k for k in prior_opts if k != "prior") + (
            ["--prior isotropic"] if mode != "broad" else []
        )
        if given:
            raise AnchorDivError(
                f"{', '.join(given)}: {directory} is a saved prior object, "
                f"whose strengths and covariance are fixed; build the prior "
                f"anew from broad anchors or a Gaussian model to change them"
            )
        has_moments = hasattr(prior, "mu0") and hasattr(prior, "cov")
        broad = load_broad(directory) if has_moments else None
    else:
        prior = load_prior(directory, args.kind, targets=target, **prior_opts)
        broad = load_broad(directory)
    return infer(prior, target, method, tau=args.tau, normalize=args.normalize, broad=broad)


def family_options(args) -> dict:
    """Import ``--family``, check ``kind`` against the registry; the ``--prior-option``s."""
    from ...adaptation import FAMILIES, unknown_kind

    cls = load_family(args.family)
    if cls is not None and cls.kind != args.kind:
        raise AnchorDivError(
            f"kind: {args.family} is registered as {cls.kind!r}; run `anchordiv adapt "
            f"{cls.kind} ...`"
        )
    if args.kind not in FAMILIES:
        raise unknown_kind(args.kind)
    out = {}
    table = kind_options(args.kind)
    for item in args.prior_option:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise AnchorDivError(f"--prior-option: expected NAME=VALUE, got {item!r}")
        key = name.replace("-", "_")
        if key not in table:
            raise AnchorDivError(
                f"--prior-option {name}: not an option of the {args.kind} family's from_anchors; "
                f"its options: {', '.join(sorted(table)) or 'none'}"
            )
        takes = table[key][0]
        if takes.text:  # free text or a type the flags do not parse (a list, an array): JSON
            try:
                out[key] = json.loads(text)
            except json.JSONDecodeError:
                out[key] = text
            continue
        try:
            out[key] = takes(text)  # the annotation's type, as its own flag would parse it
        except argparse.ArgumentTypeError as err:
            raise AnchorDivError(f"--prior-option {name}: {err}") from None
    return out


def check_method_options(args, opts: dict) -> None:
    """The inference options against the kind's family and ``--method``, refused in the
    command's terms before anything is read or fitted (each combination here used to fail
    after the whole fit, or in the library's Python terms)."""
    from ...adaptation import FAMILIES, METHOD_OPTIONS
    from ...adaptation.protocol import Family
    from ...adaptation.registry import Projectable, is_conjugate

    fam, method = FAMILIES[args.kind], args.method
    given = [k for k in (*METHOD_HELP, "model", "model_kwargs") if opts.get(k) is not None]
    for name in given:
        if name not in METHOD_OPTIONS[method]:
            takes = [m for m, names in METHOD_OPTIONS.items() if name in names]
            raise AnchorDivError(
                f"--{name.replace('_', '-')}: applies to "
                f"{' or '.join(f'--method {m}' for m in takes)}, not to --method {method}"
            )
    if method == "exact":
        if not is_conjugate(fam):
            raise AnchorDivError(
                f"--method exact (the default): the {args.kind} family has no closed-form "
                f"update; pass --method svi (with --guide normal or lowrank) or --method nuts"
            )
        return
    subspace = opts.get("subspace")
    if subspace is not None and not issubclass(fam, Projectable):
        raise AnchorDivError(
            f"--subspace: the {args.kind} family has no principal-subspace projection (its "
            f"class does not implement project/lift); drop --subspace to run it at full d"
        )
    guide = opts.get("guide", "delta")
    if method != "svi":
        return
    if guide != "delta":
        if opts.get("num_samples") == 1:
            raise AnchorDivError(
                f"--num-samples: svi with --guide {guide} keeps at least 2 guide draws, got 1"
            )
        if opts.get("guide_rank") is not None and guide != "lowrank":
            raise AnchorDivError(f"--guide-rank: applies to --guide lowrank, not --guide {guide}")
        return
    if opts.get("guide_rank") is not None:
        raise AnchorDivError("--guide-rank: applies to --guide lowrank, not --guide delta")
    if args.summary != "mean":
        return
    why = None
    if args.model:
        why = "a --model's posterior has no closed-form mean"
    elif not is_conjugate(fam):
        why = f"the {args.kind} family has no closed-form posterior mean"
    elif subspace is not None and getattr(fam.project_mean, "__func__", None) is getattr(
        Family.project_mean, "__func__", 0
    ):
        why = f"the {args.kind} family's closed-form mean does not project onto --subspace"
    if why:
        raise AnchorDivError(
            f"--summary mean (the default): svi's default guide, delta, is a MAP point and {why}; "
            f"pass --guide normal or --guide lowrank (a distribution, whose mean is saved), "
            f"--method nuts, or --summary map (the MAP point)"
        )


def model_options(args) -> dict:
    """``model`` / ``model_kwargs`` of ``ad.adapt`` from ``--model`` / ``--model-kwargs``."""
    out = {}
    if args.model:
        out["model"] = import_object(args.model, "--model")
        if not callable(out["model"]):
            raise AnchorDivError(
                f"--model: {args.model} is a {type(out['model']).__name__}, "
                f"not a NumPyro model function"
            )
    if args.model_kwargs:
        if not args.model:
            raise AnchorDivError("--model-kwargs: only with --model")
        text = args.model_kwargs.strip()
        if text.startswith("{"):
            try:
                kwargs = json.loads(text)
            except json.JSONDecodeError as err:
                raise AnchorDivError(f"--model-kwargs: not valid JSON ({err})") from None
        else:
            kwargs = import_object(text, "--model-kwargs")
        if not (isinstance(kwargs, dict) or callable(kwargs)):
            raise AnchorDivError(
                f"--model-kwargs: expected a JSON object, a dict or a builder "
                f"f(broad) -> dict, got {type(kwargs).__name__}"
            )
        out["model_kwargs"] = kwargs
    return out


def run(args) -> int:
    from ...adaptation import adapt
    from ...io import save_model

    names = {**prior_options(), **METHOD_HELP}
    opts = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    check_out(args, args.out, args.posterior_out)
    opts.update(family_options(args))
    opts.update(model_options(args))
    check_method_options(args, opts)
    broad_source, target_file, directory, mode = inputs(args)
    target = load_embeddings(target_file, "target")
    if directory is not None:
        post = adapt_from_prior(args, directory, mode, target, opts)
    else:
        common = dict(tau=args.tau, prior=mode, method=args.method, normalize=args.normalize)
        post = adapt(args.kind, load_embeddings(broad_source, "broad"), target, **common, **opts)
    info = dict(post.info)
    if args.model:
        info["model"] = args.model
    card = card_fields(args, target, post.tau, target_file)
    if not card["encoder"] and directory is not None:  # the saved prior's encoder
        card["encoder"] = post.prior.card.get("card", {}).get("encoder") or ""
    extra = dict(adaptation=info, summary=args.summary, broad_source=broad_source)
    path = save_model(post.point(args.summary), args.out, overwrite=args.overwrite, **extra, **card)
    posterior = None
    if args.posterior_out:
        posterior = str(post.save(args.posterior_out, overwrite=args.overwrite, **card))
    scalars = {k: v for k, v in info.items() if not isinstance(v, (dict, list))}
    fields = {"posterior": posterior, "tau": card["tau"], "encoder": card["encoder"], **scalars}
    title = f"anchordiv adapt: {args.kind} ({args.method}, {args.prior} prior) -> {path}"
    result = {"model": str(path), "posterior": posterior, **card, **info}
    report(args, result, title=title, fields=fields)
    return 0
