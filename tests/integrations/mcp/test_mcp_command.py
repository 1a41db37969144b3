"""``em-plugin mcp``: its options, its refusals, and its place among the commands."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp_support import ROOT, token_file

from em_plugin.cli import cli
from em_plugin.cli.base import ENTRY_POINT_GROUP
from integrations.mcp.command import mcp, missing_mcp_requirements
from integrations.mcp.http_server import check_bind
from provenance.stores import open_store


def test_the_command_is_registered_like_the_panel() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    entry = pyproject["project"]["entry-points"][ENTRY_POINT_GROUP]["mcp"]
    assert metadata.EntryPoint("mcp", entry, ENTRY_POINT_GROUP).load() is mcp
    assert cli.get_command(None, "mcp") is mcp  # type: ignore[arg-type]
    assert "mcp" in pyproject["project"]["optional-dependencies"]
    assert missing_mcp_requirements() == []


def test_the_help_names_every_option() -> None:
    result = CliRunner().invoke(cli, ["mcp", "--help"])
    assert result.exit_code == 0
    for option in (
        "--store",
        "--update-url",
        "--scope",
        "--transport",
        "--host",
        "--port",
        "--token-file",
        "--allow-write",
    ):
        assert option in result.output


def test_tokens_need_the_http_transport(tmp_path: Path) -> None:
    tokens = token_file(tmp_path / "tokens.toml")
    result = CliRunner().invoke(cli, ["mcp", "--store", "memory:", "--token-file", str(tokens)])
    assert result.exit_code == 2
    assert "--token-file needs --transport http" in result.output


def test_a_non_loopback_host_needs_tokens() -> None:
    result = CliRunner().invoke(
        cli, ["mcp", "--store", "memory:", "--transport", "http", "--host", "0.0.0.0"]
    )
    assert result.exit_code == 2
    assert "without --token-file" in result.output
    with pytest.raises(ValueError, match="--token-file"):
        check_bind("192.168.1.20", None)
    check_bind("::1", None)
    check_bind("localhost", None)


def test_a_bad_token_file_names_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "tokens.toml"
    bad.write_text('[tokens.short]\ntoken = "abc"\nscopes = ["a"]\n', encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["mcp", "--store", "memory:", "--transport", "http", "--token-file", str(bad)]
    )
    assert result.exit_code == 2
    assert "entry 'short'" in result.output


def test_a_read_only_server_never_creates_a_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code == 3
    assert "no store at" in result.output
    assert not (tmp_path / "nowhere").exists()


def test_a_store_held_by_a_writer_is_served_read_only_or_explained(store: Path) -> None:
    with open_store(str(store)):  # a crew holds it for writing
        refused = CliRunner().invoke(cli, ["mcp", "--store", str(store), "--allow-write"])
    assert refused.exit_code == 1
    assert "open for writing in another process" in refused.output
    assert "leave out --allow-write" in refused.output
