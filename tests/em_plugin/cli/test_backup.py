"""``em-plugin export --format nq`` + ``import``: the full backup carries every family the store's
registry backs up, the embedder record included (issue: "restored 64 workflows and 0 record
graphs"), and refuses to restore a record of another embedder."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner, Result

from em_plugin.cli import cli
from em_plugin.embedding.record import read_record
from em_plugin.memory import EpisodicMemory
from em_plugin.session.journal import SessionJournal
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.stores.graph_families import FAMILIES, family_of
from provenance.stores.union import with_standard_prefixes

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _families(path: Path) -> dict[str, int]:
    with open_store(path, read_only=True) as store:
        names = store.backend.graph_names()
    return {f.name: sum(family_of(n) is f for n in names) for f in FAMILIES}


def test_a_full_backup_restores_every_family_and_the_embedder_record(tmp_path: Path) -> None:
    source, target, backup = tmp_path / "source", tmp_path / "target", tmp_path / "b.nq"
    assert (
        run("--embedder", "fake", "import", str(BOOTSTRAP), "--store", str(source)).exit_code == 0
    )
    with EpisodicMemory(store=source, embedder="fake") as memory:
        (first, *_) = memory.ids()
        memory.lifecycle.retire(first, reason="noise")  # a lifecycle record
        shown = Suggestion("Check it", "checker", score=0.9, evidence=(Evidence(first, 1, 1.0),))
        memory.record_suggestions("chat-1", [shown])
        journal = SessionJournal(memory.store.backend)
        journal.mark_saved("default", "chat-1", events=0, workflow_id=first)
    before = _families(source)
    assert all(before[f.name] for f in FAMILIES), before  # the source holds every family

    exported = run("export", "--format", "nq", "-o", str(backup), "--store", str(source))
    assert exported.exit_code == 0, exported.output
    restored = run("--embedder", "fake", "import", str(backup), "--store", str(target))
    assert restored.exit_code == 0, restored.output

    after = _families(target)
    backed_up = {f.name for f in FAMILIES if f.backup}
    assert {k: v for k, v in after.items() if k in backed_up} == {
        k: v for k, v in before.items() if k in backed_up
    }
    others = sum(before[name] for name in backed_up - {"workflows"})
    assert f"restored {before['workflows']} workflows and {others} record graphs" in restored.output
    with open_store(target, read_only=True) as store:
        record = read_record(store)
    assert record is not None and record.name == "fake-64"


def test_a_backup_of_another_embedder_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    source, target, backup = tmp_path / "source", tmp_path / "target", tmp_path / "b.nq"
    workflow = Workflow(id="w1", steps=(InstructionStep("go", (CallStep("reader"),)),))
    with EpisodicMemory(store=source, embedder="fake:32") as memory:
        memory.save(workflow)
    assert run("export", "--format", "nq", "-o", str(backup), "--store", str(source)).exit_code == 0
    result = CliRunner().invoke(
        cli, ["--embedder", "fake", "import", str(backup), "--store", str(target)]
    )
    assert result.exit_code != 0
    assert "fake-32" in result.output and "--embedder fake:32" in result.output
    with open_store(target, read_only=True) as store:
        assert len(store) == 0 and read_record(store) is None


@pytest.mark.parametrize("scope", ["team"])
def test_an_import_into_a_scope_keeps_the_records_but_the_lifecycle(
    tmp_path: Path, scope: str
) -> None:
    source, target, backup = tmp_path / "source", tmp_path / "target", tmp_path / "b.nq"
    workflow = Workflow(id="w1", steps=(InstructionStep("go", (CallStep("reader"),)),))
    with EpisodicMemory(store=source, embedder="fake") as memory:
        memory.save(workflow)
        memory.save(workflow.replace(title="again"))  # w1@v1 and a lifecycle record
    assert run("export", "--format", "nq", "-o", str(backup), "--store", str(source)).exit_code == 0
    args = ("--embedder", "fake", "import", str(backup), "--store", str(target), "--scope", scope)
    assert run(*args).exit_code == 0
    with open_store(target, read_only=True) as store:
        assert store.ids(scope=scope) == ["w1", "w1@v1"]
        assert store.lifecycle_graphs("default") == []
        assert read_record(store) is not None


def test_a_prov_export_answers_the_lifecycle_queries_as_the_live_store(tmp_path: Path) -> None:
    source, exported = tmp_path / "source", tmp_path / "prov.trig"
    step = InstructionStep("Check the SDS", (CallStep("sds_reader"),))
    with EpisodicMemory(store=source, embedder="fake") as memory:
        memory.save_many([Workflow(id=f"w{i}", steps=(step,)) for i in range(3)])
        memory.save(Workflow(id="w0", title="saved again", steps=(step, step)))  # a version
        memory.lifecycle.retire("w1", reason="duplicate")
    done = run("export", "--format", "trig", "-o", str(exported), "--store", str(source))
    assert done.exit_code == 0, done.output
    offline_store = ox.Store()
    offline_store.load(exported.read_bytes(), format=ox.RdfFormat.TRIG)
    offline_store.update("INSERT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }")  # the merge
    queries = (
        "SELECT (COUNT(*) AS ?n) WHERE { ?new prov:wasRevisionOf ?old }",
        "SELECT (COUNT(*) AS ?n) WHERE { ?e prov:invalidatedAtTime ?t }",
        "SELECT (COUNT(DISTINCT ?a) AS ?n) WHERE { ?a a prov:Activity }",
    )
    with open_store(source, read_only=True) as store:
        live = [int(store.query(q).rows[0][0]) for q in queries]
    offline = [
        int(next(iter(offline_store.query(with_standard_prefixes(q))))[0].value) for q in queries
    ]
    assert live[:2] == [1, 1] and offline == live
