"""The chain fetches the workflows it cites in one store read per suggestion (one request to a
remote store instead of one per cited workflow), and the suggestions stay the same."""

from __future__ import annotations

import pytest

from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import WorkflowStore


def flow(workflow_id: str, *tools: str, args: dict[str, str] | None = None) -> Workflow:
    calls = tuple(CallStep(t, args=args or {}) for t in tools)
    return Workflow(id=workflow_id, steps=(InstructionStep(f"work on {workflow_id}", calls),))


def current(*tools: str) -> Workflow:
    calls = tuple(CallStep(t) for t in tools)
    return Workflow(id="now", steps=(InstructionStep("work on it", calls),))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []
    load, load_many = WorkflowStore.load, WorkflowStore.load_many

    def counted_load(self, workflow_id, *args, **kwargs):
        calls.append(("load", 1))
        return load(self, workflow_id, *args, **kwargs)

    def counted_load_many(self, scope, ids, *args, **kwargs):
        ids = list(ids)
        calls.append(("load_many", len(ids)))
        return load_many(self, scope, ids, *args, **kwargs)

    monkeypatch.setattr(WorkflowStore, "load", counted_load)
    monkeypatch.setattr(WorkflowStore, "load_many", counted_load_many)
    return calls


def test_cited_workflows_are_read_in_one_go(reads: list[tuple[str, int]]) -> None:
    with EpisodicMemory("memory:", embedder="fake:32", scope="crew") as memory:
        memory.save_many(
            [flow(f"w{i}", "extract", f"tool{i % 3}", args={"x": str(i)}) for i in range(12)]
        )
        reads.clear()
        found = memory.suggest(current("extract"))
        assert found and all(s.evidence for s in found)
        assert [kind for kind, _ in reads] == ["load_many"]
        # Every cited workflow: lifting reads the first, outcomes all of them.
        assert reads[0][1] == len({e.workflow_id for s in found for e in s.evidence})
        # The same suggestion without prefetching: same answer, one read per cited workflow.
        reads.clear()
        request = memory.request(current("extract"))
        request = type(request)(**{**request.__dict__, "prefetch": None})
        memory._engine.workflows.forget_parsed()
        memory.chain.cited._cache.clear()
        again = memory.suggest_from(request)
    assert [(s.tool, s.args, s.example_args) for s in again] == [
        (s.tool, s.args, s.example_args) for s in found
    ]
    assert {kind for kind, _ in reads} == {"load"}
