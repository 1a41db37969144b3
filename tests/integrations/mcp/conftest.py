"""Fixtures of the MCP server tests (helpers and seed data: mcp_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import copy_store, seed


@pytest.fixture(scope="session")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A disk store with both scopes' workflows and their index (fake embedder). Copy it."""
    return seed(tmp_path_factory.mktemp("mcp") / "store")


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> Path:
    """A private copy of the seeded store."""
    return copy_store(store_template, tmp_path)
