"""PNG figures from plain rows: NaN cells skipped, intervals drawn, files written."""

import numpy as np
import pytest

from helpers import normed
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


def _query_frame_rows(png) -> int:
    """Query thumbnails in a neighbours grid: runs of the query frame's colour down the column
    that holds the most of it (the frames' left edges)."""
    from PIL import Image

    rgb = np.asarray(Image.open(png).convert("RGB")).astype(int)
    want = np.array([int(plots.BORDERS["query"][i : i + 2], 16) for i in (1, 3, 5)])
    mask = np.abs(rgb - want).sum(axis=2) < 30
    column = mask[:, mask.sum(axis=0).argmax()]
    return int(np.sum(column[1:] & ~column[:-1]) + column[0])


def test_neighbours_grid_of_images(tmp_path):
    """Real photographs (scikit-image) as files: one row per query and geometry, the query
    first in its frame, thumbnails square, the figure sized by its rows."""
    from PIL import Image
    from skimage import data, io

    import anchordiv as ad
    from anchordiv.evaluation import neighbours

    names = ["astronaut", "coffee", "chelsea", "rocket", "camera", "moon", "horse", "page"]
    paths = []
    for name in names:
        image = getattr(data, name)()
        if image.dtype == bool:
            image = image.astype(np.uint8) * 255
        paths.append(tmp_path / f"{name}.png")
        io.imsave(paths[-1], image, check_contrast=False)
    rng = np.random.default_rng(0)
    labels = np.arange(8) % 2
    x = np.eye(3)[labels] + 0.5 * rng.normal(size=(8, 3))
    x = normed(x)
    result = neighbours(
        {"gaussian": ad.fit("gaussian", x[:4], tau=20.0)}, x, 2, anchors=x[:4], labels=labels, k=3
    )
    fig = plots.neighbours(result, paths, tmp_path / "grid.png", captions=names, title="t")
    png = tmp_path / "grid.png"
    assert png.read_bytes()[:8] == PNG
    w, h = Image.open(png).size
    fw, fh = fig.get_size_inches() * 120  # save_figure's dpi, margins trimmed
    assert 0.85 * fw < w <= fw + 2 and 0.85 * fh < h <= fh + 2
    assert h > w  # 3 geometries × 2 queries = 6 rows of 1 + 3 thumbnails
    assert _query_frame_rows(png) == 3 * 2
    by_query = plots.neighbours(result, [str(p) for p in paths], group="query", thumb=0.8)
    assert len(by_query.axes) == 2 + 3 * 2 * 4  # a header per block, 4 thumbnails per row
    plots.pyplot().close(by_query)
    # queries from outside the gallery: their own images and captions
    outside = neighbours({}, x[2:], x[:2], labels=labels[2:], query_labels=labels[:2], k=3)
    fig = plots.neighbours(
        outside,
        paths[2:],
        tmp_path / "outside.png",
        captions=names[2:],
        query_items=paths[:2],
        query_captions=["query: astronaut", "query: coffee"],
    )
    shown = [ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()]
    assert "query: astronaut" in shown and "query: coffee" in shown
    assert len(shown) == len([ax for ax in fig.axes if ax.images])  # every tile has its caption
    with pytest.raises(ad.AnchorDivError, match="query_captions"):
        plots.neighbours(outside, paths[2:], query_items=paths[:2], query_captions=["one"])
    # arrays work too; a thumbnail is the centre square, never squashed
    strip = np.zeros((40, 120, 3), np.uint8)
    strip[:, 40:80] = 255
    thumb = plots.thumbnail(strip, size=20)
    assert thumb.shape == (20, 20, 3) and thumb.min() > 200  # only the white centre is kept
    # texts give the markdown table
    md = plots.neighbours(result, names, tmp_path / "n.md")
    assert md.startswith("**Query 1**") and (tmp_path / "n.md").read_text().strip() == md


def test_neighbours_rejects_what_it_cannot_draw(tmp_path):
    import anchordiv as ad
    from anchordiv.evaluation import neighbours

    x = np.eye(4)
    result = neighbours({}, x, [0], k=2, baselines=("cosine",))
    with pytest.raises(ad.AnchorDivError, match="items"):
        plots.neighbours(result, [1, 2, 3, 4])
    with pytest.raises(ad.AnchorDivError, match="group"):
        plots.neighbours(result, ["a"] * 4, group="diagonal")
    with pytest.raises(ad.AnchorDivError, match="cannot read"):
        plots.neighbours(result, [tmp_path / f"missing{i}.png" for i in range(4)])
