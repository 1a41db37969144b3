"""``em-plugin history``, ``retire``, ``restore`` and ``procedures`` through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from em_plugin.cli import cli
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.workflow_json import dumps_workflow

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EM_PLUGIN_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _import(path: Path, *workflows: Workflow) -> None:
    path.write_text("".join(dumps_workflow(w) + "\n" for w in workflows))
    result = run("import", str(path))
    assert result.exit_code == 0, result.output


def _session(*tools: str) -> Workflow:
    steps = (InstructionStep("classify the SDS", tuple(CallStep(t) for t in tools)),)
    return Workflow(id="session/t1", session="t1", steps=steps)


def test_history_lists_versions_and_show_reads_an_old_one(tmp_path: Path) -> None:
    _import(tmp_path / "a.jsonl", _session("extract", "classify"))
    _import(tmp_path / "b.jsonl", _session("extract", "classify", "report"))
    result = run("history", "session/t1", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(r["id"], r["version"], r["superseded_by"]) for r in rows] == [
        ("session/t1@v1", 1, "session/t1"),
        ("session/t1", 2, None),
    ]
    shown = run("show", "session/t1@v1", "--format", "json")
    assert [s["name"] for s in json.loads(shown.output)["steps"][0]["steps"]] == [
        "extract",
        "classify",
    ]
    # The named query reads the same records.
    queried = json.loads(run("query", "versions", "--format", "json").output)
    assert [(r["id"], r["revises"]) for r in queried] == [
        ("session/t1@v1", None),
        ("session/t1", "session/t1@v1"),
    ]
    missing = CliRunner().invoke(cli, ["history", "nope"])
    assert missing.exit_code == 3 and "nope" in missing.output


def test_retire_and_restore(tmp_path: Path) -> None:
    _import(tmp_path / "a.jsonl", _session("extract", "classify"))
    result = run("retire", "session/t1", "--reason", "wrong classifier")
    assert result.exit_code == 0, result.output
    assert "retired session/t1" in result.output
    rows = json.loads(run("history", "session/t1", "--format", "json").output)
    assert rows[-1]["retired"] is True and rows[-1]["reason"] == "wrong classifier"
    assert run("restore", "session/t1").exit_code == 0
    rows = json.loads(run("history", "session/t1", "--format", "json").output)
    assert rows[-1]["retired"] is False
    missing = CliRunner().invoke(cli, ["retire", "nope", "--reason", "x"])
    assert missing.exit_code == 3
    no_reason = CliRunner().invoke(cli, ["retire", "session/t1"])
    assert no_reason.exit_code == 2 and "--reason" in no_reason.output


def test_procedures_on_the_pfas_bootstrap_data() -> None:
    assert run("import", str(BOOTSTRAP)).exit_code == 0
    result = run("procedures", "--format", "json", "--limit", "0")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert found[0]["tools"] == ["product_extractor", "pfas_classifier"]
    assert found[0]["support"] == 40 and found[0]["status"] == "candidate"
    table = run("procedures").output
    assert found[0]["id"] in table and "product_extractor" in table
    assert "11 of 11 procedures of scope 'default'" in table

    pid = found[0]["id"]
    accepted = run("procedures", "accept", pid, "--name", "PFAS intake", "--format", "json")
    assert accepted.exit_code == 0, accepted.output
    assert json.loads(accepted.output)[0]["status"] == "active"
    active = json.loads(run("procedures", "--status", "active", "--format", "json").output)
    assert [p["name"] for p in active] == ["PFAS intake"]
    retired = run("procedures", "retire", pid, "--reason", "too generic", "--format", "json")
    assert json.loads(retired.output)[0]["reason"] == "too generic"
    unknown = CliRunner().invoke(cli, ["procedures", "accept", "p-nope", "--name", "x"])
    assert unknown.exit_code == 1 and "no procedure 'p-nope'" in unknown.output
