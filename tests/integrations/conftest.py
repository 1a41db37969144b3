"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flaky_tools import FLAKY


@pytest.fixture(autouse=True)
def _generous_turn_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # A loaded CI machine must not cut the suggestions the tests check; the budget tests set
    # their own budget explicitly.
    monkeypatch.setenv("EM_PLUGIN_TURN_BUDGET", "30")


@pytest.fixture(autouse=True)
def _reset_flaky() -> Iterator[None]:
    FLAKY.reset()
    yield
    FLAKY.reset()
