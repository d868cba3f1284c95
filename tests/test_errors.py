"""Input checks of :mod:`anchordiv.errors` against their direct definitions."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.errors import check_spread, distinct_rows


def void_unique(a):
    a = np.ascontiguousarray(a)
    return len(np.unique(a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1])))))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64])
@pytest.mark.parametrize("d", [1, 3, 384])
def test_distinct_rows_is_numpys_unique_of_the_rows(dtype, d):
    rng = np.random.default_rng(d)
    a = (rng.normal(size=(300, d)) * 10).astype(dtype)
    a = np.concatenate([a, a[:40], a[:3], a[:3]])
    rng.shuffle(a)
    assert distinct_rows(a) == void_unique(a) <= 300
    assert distinct_rows(a[:1]) == 1


def test_rows_whose_hashes_collide_are_compared_exactly():
    """Two distinct rows built to share the 64-bit hash (δᵢ = c_j, δ_j = −cᵢ) still count twice."""
    c = np.random.default_rng(0x5EED).integers(1, 2**63, size=2, dtype=np.uint64) | np.uint64(1)
    r = np.array([[10, 20]], dtype=np.uint64)
    with np.errstate(over="ignore"):
        s = r + np.array([[c[1], -c[0]]], dtype=np.uint64)
        assert (r @ c)[0] == (s @ c)[0]  # a real collision
    a = np.concatenate([r, s, r])
    assert distinct_rows(a) == void_unique(a) == 2


def test_check_spread_is_the_direct_definition():
    rng = np.random.default_rng(0)
    same = np.tile(rng.normal(size=(1, 5)), (4, 1))
    with pytest.raises(ad.AnchorDivError, match="all 4 anchors are identical"):
        check_spread("broad", same)
    almost = same.copy()
    almost[2, 3] += 1e-3
    assert check_spread("broad", almost) is almost


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_the_finite_check_is_the_entrywise_one(dtype):
    """One summing pass decides (NaN or ±inf anywhere makes the sum non-finite); a sum that
    overflows with finite entries, or cancels inf against -inf, goes to the entry-wise check."""
    from anchordiv.errors import as_matrix

    big = np.full((6, 4), np.finfo(dtype).max / 2, dtype)  # finite, the sum overflows
    assert as_matrix("x", big) is not None
    for bad in (np.nan, np.inf, -np.inf):
        x = np.ones((6, 4), dtype)
        x[4, 2] = bad
        with pytest.raises(
            ad.AnchorDivError, match=r"x: contains NaN or inf in 1 row\(s\) .*row 4"
        ):
            as_matrix("x", x)
    x = np.ones((6, 4), dtype)
    x[1, 0], x[3, 1] = np.inf, -np.inf  # the sum is NaN: still the rows are named
    with pytest.raises(ad.AnchorDivError, match=r"in 2 row\(s\) \(first: row 1\)"):
        as_matrix("x", x)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (float("nan"), "got nan"),
        (np.float32("inf"), "got np.float32\\(inf\\)"),
        (None, "got None"),
        ("3", "got '3'"),
        (b"3", "got b'3'"),
        (True, "got True"),
        (2.5, "got 2.5"),
        (object(), "got <object"),
    ],
)
def test_integer_refuses_what_is_not_a_whole_number(value, match):
    """``int(nan)`` and ``int(None)`` were raw ValueError / TypeError."""
    from anchordiv.errors import integer

    with pytest.raises(ad.AnchorDivError, match=f"k: expected an integer, {match}"):
        integer("k", value, low=1)
    assert integer("k", np.int64(3), low=1) == integer("k", 3.0, low=1) == 3
