"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flaky_tools import FLAKY


@pytest.fixture(autouse=True)
def _reset_flaky() -> Iterator[None]:
    FLAKY.reset()
    yield
    FLAKY.reset()
