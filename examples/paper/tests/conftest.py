"""Fixtures shared with the library's tests."""

from tests.conftest import rng, tiny, tiny_model  # noqa: F401
