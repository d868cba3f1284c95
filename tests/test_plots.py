"""PNG figures from plain rows: NaN cells skipped, intervals drawn, files written."""

import numpy as np

from anchordiv.plots import plot_curve, plot_scores

PNG = b"\x89PNG\r\n\x1a\n"


def test_plot_curve_skips_undefined_cells(tmp_path):
    rows = [{"model": m, "role": r, "budget": b, "auprc": a, "low": a - 0.05, "high": a + 0.05}
            for m, r in (("gaussian", "target"), ("cosine", "baseline"))
            for b, a in ((1, np.nan), (2, 0.4), (10, 0.6))]
    rows.append({"model": "never", "role": "custom", "budget": 1, "auprc": np.nan,
                 "low": np.nan, "high": np.nan})
    path = plot_curve(rows, tmp_path / "sub" / "c.png", prevalence=0.1, title="t")
    assert path.read_bytes()[:8] == PNG


def test_plot_scores(tmp_path):
    rows = [{"scorer": "a", "auprc": 0.5, "low": 0.4, "high": 0.6, "prevalence": 0.1},
            {"scorer": "b", "auprc": 0.3, "low": 0.2, "high": 0.35, "prevalence": 0.1}]
    assert plot_scores(rows, tmp_path / "s.png").read_bytes()[:8] == PNG
