"""The ``em-plugin`` console script: the engine's commands plus ``demo`` from the integrations."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

import em_plugin.cli
import integrations.cli

ROOT = Path(__file__).resolve().parents[2]


def test_console_script_points_at_the_integrations_group() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["em-plugin"] == "integrations.cli:main"


def test_demo_is_added_to_the_engine_group() -> None:
    # One group: the integrations add a command to the engine's group, never the reverse.
    assert integrations.cli.cli is em_plugin.cli.cli
    assert "demo" in integrations.cli.cli.commands
    assert {"import", "export", "query", "show"} <= set(integrations.cli.cli.commands)


def test_demo_has_help() -> None:
    result = CliRunner().invoke(integrations.cli.cli, ["demo", "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: cli demo")
    assert "--store" in result.output and "em-plugin demo" in result.output


def test_main_runs_the_group(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        integrations.cli.main(["--help"])
    assert exit_info.value.code == 0
    assert "demo" in capsys.readouterr().out
