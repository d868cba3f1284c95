"""PNG figures from plain rows: NaN cells skipped, intervals drawn, files written."""

import numpy as np
import pytest

from anchordiv import plots
from anchordiv.plots import plot_curve, plot_scores

PNG = b"\x89PNG\r\n\x1a\n"


def test_plot_curve_skips_undefined_cells(tmp_path):
    rows = [
        {"model": m, "role": r, "budget": b, "auprc": a, "low": a - 0.05, "high": a + 0.05}
        for m, r in (("gaussian", "target"), ("cosine", "baseline"))
        for b, a in ((1, np.nan), (2, 0.4), (10, 0.6))
    ]
    rows.append(
        {
            "model": "never",
            "role": "custom",
            "budget": 1,
            "auprc": np.nan,
            "low": np.nan,
            "high": np.nan,
        }
    )
    path = plot_curve(rows, tmp_path / "sub" / "c.png", prevalence=0.1, title="t")
    assert path.read_bytes()[:8] == PNG


def test_plot_scores(tmp_path):
    rows = [
        {"scorer": "a", "auprc": 0.5, "low": 0.4, "high": 0.6, "prevalence": 0.1},
        {"scorer": "b", "auprc": 0.3, "low": 0.2, "high": 0.35, "prevalence": 0.1},
    ]
    assert plot_scores(rows, tmp_path / "s.png").read_bytes()[:8] == PNG


@pytest.mark.parametrize("n", [3, 10, 11, 20, 25])
def test_distinct_colours_never_repeat(n):
    """No two curves share a colour, however many models a curve plots (the default cycle
    repeats after ten)."""
    colours = [tuple(np.round(c, 6)) for c in plots.distinct_colours(n)]
    assert len(colours) == n and len(set(colours)) == n


def test_an_eleven_model_curve_gives_every_line_its_own_colour(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows = [
        {
            "model": f"m{i}",
            "role": "target",
            "budget": b,
            "auprc": 0.1 * i / 11 + b / 100,
            "low": 0.0,
            "high": 1.0,
        }
        for i in range(11)
        for b in (1, 2, 5)
    ]
    captured = {}
    original = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        captured["colours"] = [tuple(line.get_color()) for line in fig.axes[0].get_lines()]
        return original(fig, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        plots.plot_curve(rows, tmp_path / "c.png")
    finally:
        plt.Figure.savefig = original
    assert len(captured["colours"]) == 11 and len(set(captured["colours"])) == 11
