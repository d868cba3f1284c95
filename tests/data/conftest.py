"""Shared fixtures for the data tests: one MiniLM encoder per session (loads in seconds)."""

import pytest


@pytest.fixture(scope="session")
def minilm():
    from anchordiv import data

    return data.get_encoder("minilm")
