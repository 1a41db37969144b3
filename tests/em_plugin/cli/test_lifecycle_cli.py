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


def test_id_commands_find_the_only_scope_that_holds_the_id(tmp_path: Path) -> None:
    """history, retire and restore find an id's scope like show does; an id of several
    scopes names them."""
    path = tmp_path / "a.jsonl"
    path.write_text(dumps_workflow(_session("extract", "classify")) + "\n")
    assert run("import", str(path), "--scope", "air").exit_code == 0

    listed = run("history", "session/t1", "--format", "json")
    assert listed.exit_code == 0, listed.output
    assert [r["id"] for r in json.loads(listed.output)] == ["session/t1"]
    retired = run("retire", "session/t1", "--reason", "wrong classifier")
    assert retired.exit_code == 0, retired.output
    assert "retired session/t1 (scope 'air')" in retired.output
    assert json.loads(run("history", "session/t1", "--format", "json").output)[-1]["retired"]
    restored = run("restore", "session/t1")
    assert restored.output.strip() == "restored session/t1 (scope 'air')"

    assert run("import", str(path), "--scope", "sea").exit_code == 0
    for args in (["history"], ["retire", "--reason", "x"], ["restore"]):
        ambiguous = CliRunner().invoke(cli, [*args, "session/t1"])
        assert ambiguous.exit_code == 2, ambiguous.output
        assert "several scopes ('air', 'sea'); add --scope" in ambiguous.output
    chosen = run("history", "session/t1", "--scope", "sea", "--format", "json")
    assert chosen.exit_code == 0, chosen.output
    wrong = CliRunner().invoke(cli, ["retire", "session/t1", "--scope", "land", "--reason", "x"])
    assert wrong.exit_code == 3 and "scope 'land' has no workflows" in wrong.output


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


def _lifecycle_state(store_path: Path) -> dict[str, object]:
    """What a store says about the lifecycle: graphs, histories, live ids, procedures."""
    from rdflib import Graph

    from em_plugin import EpisodicMemory

    with EpisodicMemory(str(store_path), embedder="fake", scope="lab") as memory:
        names = memory.store.lifecycle_graphs("lab")
        graphs = {}
        for name, triples in memory.store.read_records(names).items():
            graph = Graph()
            for triple in triples:
                graph.add(triple)
            graphs[str(name)] = graph
        now = Workflow(id="now", steps=(InstructionStep("do it", (CallStep("fetch"),)),))
        return {
            "graphs": graphs,
            "ids": memory.ids(),
            "history": {w: memory.lifecycle.history(w) for w in ("s1", "w1", "w2")},
            "outcome": memory.load("w0").outcome,
            "procedures": memory.lifecycle.procedures(),
            "cited": sorted(
                {e.workflow_id for s in memory.suggest(now, limit=None) for e in s.evidence}
            ),
        }


def test_an_nq_backup_carries_the_lifecycle(tmp_path: Path) -> None:
    """export --format nq + import restores versions, retirements, restorations, outcomes and
    procedures as they were: the same records, and only the live workflows indexed."""
    from rdflib.compare import isomorphic

    from em_plugin import EpisodicMemory

    source, target, backup = tmp_path / "source", tmp_path / "target", tmp_path / "b.nq"

    def wf(wid: str, *tools: str) -> Workflow:
        steps = (InstructionStep(f"do {wid}", tuple(CallStep(t) for t in tools)),)
        return Workflow(id=wid, steps=steps)

    with EpisodicMemory(str(source), embedder="fake", scope="lab") as memory:
        memory.save(wf("s1", "fetch", "parse"))
        memory.save(wf("s1", "fetch", "parse", "report"))  # s1@v1 kept, revised
        memory.save_many([wf(f"w{i}", "fetch", "parse") for i in range(3)])
        memory.lifecycle.retire("w2", reason="noise")
        memory.lifecycle.retire("w1", reason="mistake")
        memory.lifecycle.restore("w1")
        memory.lifecycle.set_outcome("w0", "failure")
        (procedure,) = [p for p in memory.lifecycle.procedures() if p.tools == ("fetch", "parse")]
        memory.lifecycle.accept_procedure(procedure.id, name="Fetch and parse")
    before = _lifecycle_state(source)

    exported = run("export", "--format", "nq", "-o", str(backup), "--store", str(source))
    assert exported.exit_code == 0, exported.output
    restored = run("import", str(backup), "--store", str(target))
    assert restored.exit_code == 0, restored.output
    # s1, s1@v1, w0, w0@v1 (an outcome set is a new version), w1, w2; four records, the
    # procedure and the store's embedder record.
    assert "restored 6 workflows and 6 record graphs" in restored.output
    after = _lifecycle_state(target)

    assert set(after["graphs"]) == set(before["graphs"]) != set()  # type: ignore[arg-type]
    for name, graph in before["graphs"].items():  # type: ignore[attr-defined]
        assert isomorphic(graph, after["graphs"][name]), name  # type: ignore[index]
    for key in ("ids", "history", "outcome", "procedures", "cited"):
        assert after[key] == before[key], key
    assert "w2" not in after["cited"] and "s1@v1" not in after["cited"]  # type: ignore[operator]
    assert [v.id for v in after["history"]["s1"]] == ["s1@v1", "s1"]  # type: ignore[index]
    assert after["history"]["w2"][-1].retired  # type: ignore[index]
    assert [p.status for p in after["procedures"] if p.name] == ["active"]  # type: ignore[attr-defined]
