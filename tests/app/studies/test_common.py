"""Retrieval setups shared by the text and image studies: every item against all the others,
or a query/gallery split."""

import numpy as np
import pytest

from anchordiv.app.studies._common import labelled_retrieval, split_rows
from anchordiv.errors import AnchorDivError


def test_labelled_retrieval_with_and_without_a_split():
    x = np.eye(6)[:, :4] + 0.1
    labels = np.array([0, 0, 1, 1, 2, 2])
    every = labelled_retrieval(x, labels, None, 0)
    assert every["gallery"].shape == (6, 4) and every["query_index"].tolist() == list(range(6))
    mask = np.array([True, False, True, False, False, False])
    split = labelled_retrieval(x, labels, None, 0, query_mask=mask)
    assert split["query_index"] is None
    np.testing.assert_array_equal(split["queries"], x[[0, 2]])
    np.testing.assert_array_equal(split["gallery"], x[[1, 3, 4, 5]])
    assert split["relevance"].tolist() == [[True, False, False, False], [False, True, False, False]]
    q, g = split_rows(mask, 1, 0)
    assert len(q) == 1 and q[0] in (0, 2) and g.tolist() == [1, 3, 4, 5]
    with pytest.raises(AnchorDivError, match="need both"):
        labelled_retrieval(x, labels, None, 0, query_mask=np.ones(6, bool))
    with pytest.raises(AnchorDivError, match="query_mask: expected 6 rows"):
        labelled_retrieval(x, labels, None, 0, query_mask=mask[:3])
