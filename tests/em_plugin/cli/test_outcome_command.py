"""``em-plugin outcome``: set a workflow's outcome through click's runner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sample_store import copy_store

from em_plugin.cli import cli


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EM_PLUGIN_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")


def run(*args: Any, ok: bool = True) -> Result:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}"
    return result


def exported(store: Path) -> dict[str, dict[str, Any]]:
    lines = run("export", "--store", store).stdout.splitlines()
    return {obj["id"]: obj for obj in map(json.loads, filter(str.strip, lines))}


def test_outcome_is_set_shown_in_the_export_and_changed(
    sample_store_template: Path, tmp_path: Path
) -> None:
    store = copy_store(sample_store_template, tmp_path / "store")
    assert "outcome" not in exported(store)["sample/pfas-2"]
    out = run("outcome", "sample/pfas-2", "failure", "--store", store).stdout
    assert out.strip() == "sample/pfas-2 (scope 'default'): outcome failure"
    assert exported(store)["sample/pfas-2"]["outcome"] == "failure"
    run("outcome", "sample/pfas-2", "success", "--store", store)
    workflows = exported(store)
    assert workflows["sample/pfas-2"]["outcome"] == "success"
    # Earlier versions (ID@vN, kept by the lifecycle) are other ids; the rest have no outcome.
    others = [w for i, w in workflows.items() if not i.startswith("sample/pfas-2")]
    assert others and all("outcome" not in w for w in others)


def test_bad_outcomes_ids_and_scopes_are_clear_errors(
    sample_store_template: Path, tmp_path: Path
) -> None:
    store = copy_store(sample_store_template, tmp_path / "store")
    bad = run("outcome", "sample/pfas-2", "done", "--store", store, ok=False)
    assert bad.exit_code == 2
    assert "'success', 'failure', 'abandoned'" in bad.stderr
    missing = run("outcome", "nope", "failure", "--store", store, ok=False)
    assert missing.exit_code == 3 and "no workflow 'nope'" in missing.stderr
    other = run("outcome", "sample/pfas-2", "failure", "--scope", "x", "--store", store, ok=False)
    assert other.exit_code == 3 and "scope 'x'" in other.stderr
