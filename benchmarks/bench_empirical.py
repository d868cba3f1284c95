"""Empirical (softmax) anchors: cached one-GEMM query time vs the direct O(Q·G·N) KL.

TIP-X scores a query against a gallery by KL between anchor profiles:
``p_x = softmax(τ A x)``, ``KL(p_x ‖ p_y) = Σ_n p_x (log p_x − log p_y)`` — with the gallery's
``log p_y [G, N]`` cached, a query batch costs a ``[Q, N] × [N, G]`` product.  anchordiv caches
``[y, ψ(y)]`` (``GalleryIndex``) and computes the same matrix as ``ψ(y) − ψ(x) − ⟨∇ψ(x), y − x⟩``:
``[Q, N] × [N, d]`` for ∇ψ(x) plus a ``[Q, d] × [d, G]`` product.  Both sides cache their
gallery terms; the timed part is the query batch.  Target (issue 6): ≥ 10× at N = 20,000.

    .venv/bin/python benchmarks/bench_empirical.py            # a few minutes
    .venv/bin/python benchmarks/bench_empirical.py --quick
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import anchordiv as ad
from common import interleaved, parser, synthetic_anchors, table, unit_rows, write_results


@jax.jit
def log_profiles(anchors, tau, x):
    """``log p_x [n, N]`` = log softmax(τ A x)."""
    return jax.nn.log_softmax(tau * (x @ anchors.T), axis=-1)


@jax.jit
def direct_kl(anchors, tau, x, log_py):
    """TIP-X's KL ``[Q, G]``: Σ_n p_x log p_x − p_x · log p_yᵀ (an O(Q·G·N) product)."""
    log_px = log_profiles(anchors, tau, x)
    px = jnp.exp(log_px)
    return jnp.sum(px * log_px, axis=-1)[:, None] - px @ log_py.T


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--anchors", type=int, default=20000, help="N anchors (default 20000)")
    p.add_argument("--queries", type=int, default=None, help="Q (default 500; quick 200)")
    p.add_argument("--gallery", type=int, default=None, help="G (default 20000; quick 2000)")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--tau", type=float, default=100.0)
    args = p.parse_args()
    n_q = args.queries or (200 if args.quick else 500)
    n_g = args.gallery or (2000 if args.quick else 20000)
    repeats = args.repeats or (2 if args.quick else 3)
    rng = np.random.default_rng(0)
    anchors = synthetic_anchors(rng, args.anchors, args.dim)
    x = unit_rows(rng, n_q, args.dim, decay=0.3)
    y = unit_rows(rng, n_g, args.dim, decay=0.3)

    model = ad.fit("softmax", anchors, tau=args.tau, pad=False)
    index = ad.GalleryIndex(model, y)
    a, tau = jnp.asarray(anchors), jnp.float32(args.tau)
    log_py = jax.block_until_ready(log_profiles(a, tau, jnp.asarray(y)))  # TIP-X's cache

    ours = np.asarray(index.divergence(x))
    theirs = np.asarray(direct_kl(a, tau, jnp.asarray(x), log_py))
    agree = float(np.max(np.abs(ours - np.maximum(theirs, 0))) / np.max(np.abs(theirs)))
    r = interleaved(
        {"direct": lambda: direct_kl(a, tau, x, log_py), "ours": lambda: index.divergence(x)},
        "ours",
        repeats,
    )
    speedup = r["direct"]["ratio"]
    row = {
        "N": args.anchors,
        "Q": n_q,
        "G": n_g,
        "d": args.dim,
        "direct_s": r["direct"]["median_s"],
        "ours_s": r["ours"]["median_s"],
        "speedup": speedup,
        "cpu_speedup": r["direct"]["cpu_ratio"],
        "max_rel_difference": agree,
        "meets_target": "yes" if speedup >= 10 else "no",
    }
    md = table(
        [row],
        [
            ("N", "N"),
            ("Q", "Q"),
            ("G", "G"),
            ("d", "d"),
            ("direct_s", "direct KL s"),
            ("ours_s", "cached GEMM s"),
            ("speedup", "speed-up (wall)"),
            ("cpu_speedup", "speed-up (CPU time)"),
            ("max_rel_difference", "max |Δ| / max D"),
            ("meets_target", "≥ 10×"),
        ],
    )
    md += (
        "\n\nSpeed-up = median over interleaved rounds of time(direct KL) / time(cached "
        "one-GEMM form), float32, same Q×G output; both sides cache their gallery terms "
        "(TIP-X: log p_y [G, N]; anchordiv: [y, ψ(y)]).  Expected from the FLOP count: "
        "≈ N(d + G) / (d(2N + G)).\n"
    )
    print(md)
    path = write_results(
        "bench_empirical",
        {"row": row, "repeats": repeats, "tau": args.tau, "quick": args.quick},
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
