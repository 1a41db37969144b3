"""The sequence table: identical leaf sequences are indexed once, with their multiplicity."""

from __future__ import annotations

import numpy as np
import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.retrieval.reference import MatchConfig
from em_plugin.state.step_index import StepIndex
from provenance.model import CallStep, InstructionStep, Workflow


def _wf(workflow_id: str, text: str, *tools: str) -> Workflow:
    return Workflow(workflow_id, (InstructionStep(text), *(CallStep(t) for t in tools)))


def _entries(index: StepIndex) -> list[tuple[list[int], int]]:
    scope = index.scope_index("default")
    assert scope is not None
    return [(codes.tolist(), count) for codes, count in scope.sequences()]


def test_n_identical_workflows_occupy_one_entry_with_count_n():
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_wf(f"w{i}", "find the order", "lookup", "refund") for i in range(5))
    index.add(_wf("other", "find the order", "lookup", "cancel"))
    scope = index.scope_index("default")
    assert scope is not None
    assert len(scope) == 6 and len(scope.sequence_ids) == 2
    assert [count for _, count in _entries(index)] == [5, 1]
    twin = index.leaves("w0")
    assert scope.sequence_count(twin) == 5
    assert len({int(s) for s in scope.slot_sequences.view()[:5]}) == 1
    # Same tools with another instruction text is another sequence.
    index.add(_wf("reworded", "look the order up", "lookup", "refund"))
    assert [count for _, count in _entries(index)] == [5, 1, 1]


def test_deleting_and_replacing_decrement_the_count():
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_wf(f"w{i}", "find the order", "lookup", "refund") for i in range(3))
    twin = index.leaves("w0")
    scope = index.scope_index("default")
    assert scope is not None and scope.sequence_count(twin) == 3
    assert index.remove("w1") is True
    assert scope.sequence_count(twin) == 2
    index.add(_wf("w2", "find the order", "lookup", "cancel"))  # replaces w2
    assert scope.sequence_count(twin) == 1
    assert sorted(count for _, count in _entries(index)) == [1, 1]
    index.remove("w0")
    assert scope.sequence_count(twin) == 0
    assert [count for _, count in _entries(index)] == [1]


def test_counts_survive_compaction_and_persistence(tmp_path):
    path = tmp_path / "index"
    index = StepIndex(FakeEmbedder(16), path=path)
    index.add_many(_wf(f"w{i}", f"text {i % 2}", "search", "extract") for i in range(40))
    for i in range(0, 40, 4):
        index.remove(f"w{i}")
    index.save()
    index.close()
    loaded = StepIndex.load(path, FakeEmbedder(16))
    scope = loaded.scope_index("default")
    assert scope is not None and scope.dead == 0
    assert sorted(count for _, count in _entries(loaded)) == [10, 20]
    assert len(scope.sequence_ids) == 2
    loaded.close()


@pytest.mark.parametrize("exclude", [True, False])
def test_retrieval_with_identical_exclusion_is_unchanged(exclude):
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_wf(f"w{i}", "find the order", "lookup", "refund") for i in range(4))
    index.add(_wf("near", "find the order", "lookup", "refund", "notify"))
    query = _wf("q", "find the order", "lookup", "refund")
    config = MatchConfig(threshold=0.3, exclude_identical=exclude, require_continuation=False)
    fast = index.match(query, config=config)
    assert fast == index.match(query, config=config, method="reference")
    found = [m.workflow_id for m in fast]
    assert ("w0" in found) is not exclude and "near" in found
    scope = index.scope_index("default")
    assert scope is not None
    assert np.array_equal(scope.lookup_codes(index.leaves("w0")), scope.slot_codes(0))
