"""Environment settings are parsed in one place and fail with the valid forms."""

from __future__ import annotations

import pytest

from em_plugin import config
from em_plugin.errors import ConfigurationError
from em_plugin.session.policy import SessionPolicy


def test_turn_budget_reads_seconds_none_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.TURN_BUDGET_ENV, raising=False)
    assert config.turn_budget() == config.DEFAULT_TURN_BUDGET
    monkeypatch.setenv(config.TURN_BUDGET_ENV, "1.5")
    assert config.turn_budget() == 1.5 and SessionPolicy().turn_budget == 1.5
    monkeypatch.setenv(config.TURN_BUDGET_ENV, "None")
    assert config.turn_budget() is None


def test_bad_turn_budget_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.TURN_BUDGET_ENV, "soon")
    with pytest.raises(ConfigurationError, match="EM_PLUGIN_TURN_BUDGET must be a number"):
        config.turn_budget()


@pytest.mark.parametrize("raw", ["0", "-2", "two"])
def test_bad_torch_threads_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(config.TORCH_THREADS_ENV, raw)
    with pytest.raises(ConfigurationError, match="EM_PLUGIN_TORCH_THREADS must be a positive"):
        config.torch_threads()


def test_torch_threads_unset_lets_the_embedder_choose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.TORCH_THREADS_ENV, raising=False)
    assert config.torch_threads() is None
    monkeypatch.setenv(config.TORCH_THREADS_ENV, "3")
    assert config.torch_threads() == 3
