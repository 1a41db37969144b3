"""Issue 21.3: a retired workflow leaves every suggestion within one poll interval, in this
process and in another process on the same store (disk store with a reader process, remote
store with two writers); restoring brings it back."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from em_plugin import EpisodicMemory
from em_plugin.errors import ConfigurationError
from provenance.errors import WorkflowNotFound
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.vocab import PROV
from tests.processes import ScriptWorker
from tests.small_workflows import current

POLL = 0.5

# A worker on a store: "save <id> <tool>...", "retire <id>", "restore <id>"; answers "done".
_WORKER = """
import sys
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow

memory = EpisodicMemory(sys.argv[1], embedder="fake:32", scope="crew")
print("ready", flush=True)
for line in sys.stdin:
    verb, wid, *tools = line.split()
    if verb == "save":
        steps = (InstructionStep("work on it", tuple(CallStep(t) for t in tools)),)
        memory.save(Workflow(id=wid, steps=steps))
    elif verb == "retire":
        memory.lifecycle.retire(wid, reason="wrong classifier", agent="reviewer")
    else:
        memory.lifecycle.restore(wid)
    print("done", flush=True)
memory.close()
"""


class Worker(ScriptWorker):
    """Another process with a memory on the store."""

    def __init__(self, spec: str) -> None:
        super().__init__(_WORKER, spec)

    def do(self, line: str) -> None:
        self.send(line, answer="done")


def sources(memory: EpisodicMemory, tool: str) -> set[str]:
    """Every workflow any suggestion (or retrieval) for ``current(tool)`` rests on."""
    found = {e.workflow_id for s in memory.suggest(current(tool), limit=None) for e in s.evidence}
    return found | {m.workflow_id for m in memory.retrieve(current(tool))}


def test_retiring_removes_a_workflow_from_every_suggestion_in_this_process() -> None:
    with EpisodicMemory("memory:", embedder="fake:32", scope="crew") as memory:
        memory.save(
            Workflow(
                id="good",
                steps=(InstructionStep("work on it", (CallStep("extract"), CallStep("classify"))),),
            )
        )
        memory.save(
            Workflow(
                id="bad",
                steps=(InstructionStep("work on it", (CallStep("extract"), CallStep("guess"))),),
            )
        )
        assert sources(memory, "extract") == {"good", "bad"}

        memory.lifecycle.retire("bad", reason="used the wrong tool")
        assert sources(memory, "extract") == {"good"}
        assert [s.tool for s in memory.suggest(current("extract"), limit=None)] == ["classify"]
        assert memory.ids() == ["good"]
        assert "bad" in memory.store.ids("crew")  # still stored: still provenance
        (version,) = memory.lifecycle.history("bad")
        assert version.retired and version.reason == "used the wrong tool"

        memory.lifecycle.restore("bad")
        assert sources(memory, "extract") == {"good", "bad"}
        assert not memory.lifecycle.history("bad")[0].retired


def test_retirement_is_prov_invalidation_with_time_and_agent() -> None:
    with EpisodicMemory("memory:", embedder="fake:32", scope="crew") as memory:
        memory.save(Workflow(id="w", steps=(CallStep("a"),)))
        memory.lifecycle.retire("w", reason="stale", agent="reviewer")
        rows = memory.store.backend.query(
            "PREFIX prov: <http://www.w3.org/ns/prov#> "
            "PREFIX wf: <https://w3id.org/em-plugin/ns#> "
            "SELECT ?wf ?when ?act ?who ?reason WHERE { GRAPH ?g { "
            "?wf prov:wasInvalidatedBy ?act ; prov:invalidatedAtTime ?when . "
            "?act a prov:Activity, wf:Retirement ; prov:startedAtTime ?start ; "
            "prov:wasAssociatedWith ?who ; wf:reason ?reason } }"
        ).dicts()
        assert len(rows) == 1
        assert str(rows[0]["who"]).endswith("/agent/reviewer")
        assert str(rows[0]["reason"]) == "stale"
        memory.lifecycle.restore("w")
        kinds = memory.store.backend.query(
            "PREFIX prov: <http://www.w3.org/ns/prov#> SELECT ?k WHERE { GRAPH ?g { "
            "?a a prov:Activity, ?k } } ORDER BY ?k"
        ).rows
        # The workflow's own run and steps are PROV activities too (docs/provenance-mapping.md).
        run = {"ChatSession", "FunctionCall", "InstructionExecution"}
        names = [str(k[0]).rsplit("#", 1)[-1] for k in kinds if "em-plugin/ns#" in str(k[0])]
        assert [n for n in names if n not in run] == [
            "Restoration",
            "Retirement",
        ]
        # Restored: no invalidation left on the workflow, the retirement stays in the history.
        assert not list(
            memory.store.backend.query(
                "PREFIX prov: <http://www.w3.org/ns/prov#> "
                "SELECT ?a WHERE { GRAPH ?g { ?w prov:wasInvalidatedBy ?a } }"
            ).rows
        )
        assert PROV.wasInvalidatedBy is not None


def test_bad_retirements_are_clear_errors() -> None:
    with EpisodicMemory("memory:", embedder="fake:32", scope="crew") as memory:
        memory.save(Workflow(id="w", steps=(CallStep("a"),)))
        with pytest.raises(WorkflowNotFound, match="nope"):
            memory.lifecycle.retire("nope", reason="x")
        with pytest.raises(ConfigurationError, match="reason"):
            memory.lifecycle.retire("w", reason=" ")
        memory.save(Workflow(id="w", steps=(CallStep("b"),)))
        with pytest.raises(ConfigurationError, match="older version"):
            memory.lifecycle.retire("w@v1", reason="x")


def _other_process_sees(memory: EpisodicMemory, worker: Worker) -> None:
    worker.do("save good extract classify")
    worker.do("save bad extract guess")
    time.sleep(POLL)
    assert sources(memory, "extract") == {"good", "bad"}
    worker.do("retire bad")
    time.sleep(POLL)  # one poll interval: the next read checks the change marker
    assert sources(memory, "extract") == {"good"}
    assert memory.ids() == ["good"]
    worker.do("restore bad")
    time.sleep(POLL)
    assert sources(memory, "extract") == {"good", "bad"}


def test_a_reader_process_on_a_disk_store_stops_using_a_retired_workflow(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    worker = Worker(path)
    try:
        store = open_store(path, read_only=True)
        try:
            with EpisodicMemory(
                store, embedder="fake:32", scope="crew", poll_interval=POLL
            ) as reader:
                _other_process_sees(reader, worker)
        finally:
            store.close()
    finally:
        worker.close()


def test_two_processes_on_a_remote_store(remote_store_url: str) -> None:
    worker = Worker(remote_store_url)
    try:
        with EpisodicMemory(
            remote_store_url, embedder="fake:32", scope="crew", poll_interval=POLL
        ) as other:
            _other_process_sees(other, worker)
            # And the other way round: this process retires, the worker's memory follows.
            other.lifecycle.retire("good", reason="superseded by a new tool")
            assert sources(other, "extract") == {"bad"}
    finally:
        worker.close()
