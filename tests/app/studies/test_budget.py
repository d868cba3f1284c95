"""The anchor-budget section's claim: which target-only model is best at each budget."""

from anchordiv.app.studies import budget


def _row(model, b, auprc, role="target"):
    return {"model": model, "budget": b, "auprc": auprc, "role": role, "coverage": 1.0}


def test_best_target_only_model_yes_no_and_tie():
    """Softmax best by a clear margin at 2 (yes), behind at 4 (no: the Gaussian is), within
    the tie margin at 8 (neither), alone at 1; baselines are never candidates."""
    rows = [
        _row("softmax", 1, 0.4),
        _row("softmax", 2, 0.6),
        _row("gaussian", 2, 0.5),
        _row("softmax", 4, 0.5),
        _row("gaussian", 4, 0.7),
        _row("softmax", 8, 0.8),
        _row("gaussian", 8, 0.8005),
        _row("cosine", 8, 0.99, role="baseline"),
    ]
    best = {w["budget"]: w["best"] for w in budget.winners(rows)}
    assert best == {1: "only softmax", 2: "softmax", 4: "gaussian", 8: "tie"}
