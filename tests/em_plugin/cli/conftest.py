"""A disk store holding the 7-workflow PFAS sample, imported once and copied for each test."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from em_plugin.cli import cli

SAMPLE = Path(__file__).parents[1] / "data" / "pfas_sample.jsonl"


@pytest.fixture(scope="session")
def sample_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample imported through ``em-plugin import`` (fake embedder): never modify it."""
    store = tmp_path_factory.mktemp("sample") / "store"
    result = CliRunner().invoke(
        cli, ["import", str(SAMPLE), "--store", str(store)], env={"EM_PLUGIN_EMBEDDER": "fake"}
    )
    assert result.exit_code == 0, result.output
    return store
