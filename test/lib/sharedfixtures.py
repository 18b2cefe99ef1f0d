"""Fixtures both stack suites' conftests load: test/integration/conftest.py (the single
stack) and test/cluster/conftest.py (the tests' cluster) import them by name, and pytest
registers a fixture a conftest imports as that conftest's own, for the tests under its
directory (as it does the hook of strictoutcomes.py)."""

import time

import pytest


@pytest.fixture(scope="module")
def ids():
    """Fresh user ids for every call, distinct across runs against the same services."""
    base = int(time.time() * 1000) % 10**12 * 1000
    counter = iter(range(base + 1, base + 10**6))
    return lambda: next(counter)
