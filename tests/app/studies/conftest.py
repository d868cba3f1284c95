"""Fixtures for the study tests."""

import pytest

from helpers import hashed_words


@pytest.fixture
def bag_of_words():
    return hashed_words
