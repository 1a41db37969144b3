"""``WorkflowCache``, the one read-through cache of parsed workflows: memory, then the local
copies, then the store; a write drops the parsed entry and keeps the copies in step."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin.state.workflow_cache import WorkflowCache
from em_plugin.state.workflow_copies import FILE_NAME, WorkflowCopies
from provenance.errors import WorkflowNotFound
from provenance.model import CallStep, Workflow
from provenance.stores import open_store


def _flow(wid: str, tool: str) -> Workflow:
    return Workflow(id=wid, scope="s", steps=(CallStep(name=tool),))


class _Counting:
    """A store that counts its reads."""

    def __init__(self, store: object) -> None:
        self.store = store
        self.reads = 0

    def load(self, workflow_id: str, *, scope: str) -> Workflow:
        self.reads += 1
        return self.store.load(workflow_id, scope=scope)  # type: ignore[attr-defined]

    def load_many(self, scope: str, ids: list[str]) -> list[Workflow]:
        self.reads += 1
        return list(self.store.load_many(scope, ids))  # type: ignore[attr-defined]


def test_reads_go_through_memory_then_copies_then_the_store(tmp_path: Path) -> None:
    with open_store("memory:") as store:
        store.save_many([_flow("a", "t1"), _flow("b", "t2"), _flow("c", "t3")])
        counting = _Counting(store)
        copies = WorkflowCopies(tmp_path / FILE_NAME)
        cache = WorkflowCache(counting, copies, size=2)  # type: ignore[arg-type]
        first = cache.get("s", "a")
        assert counting.reads == 1 and cache.get("s", "a") is first  # parsed once
        assert copies.get_many("s", ["a"]) == [first]  # filled as read
        cache.prefetch("s", ["a", "b", "c"])  # one store read for the two missing
        assert counting.reads == 2
        cache.forget_parsed()
        assert cache.get("s", "b") == _flow("b", "t2") and counting.reads == 2  # from the copies
        cache.put_many([_flow("b", "t9")])  # a new version: the parsed one goes, the copy follows
        assert cache.get("s", "b") == _flow("b", "t9")
        cache.remove("s", ["b"])
        assert copies.get_many("s", ["b"]) == []
        with pytest.raises(WorkflowNotFound):
            cache.get("s", "absent")
        cache.close()


def test_without_copies_the_store_serves_misses() -> None:
    with open_store("memory:") as store:
        store.save_many([_flow("a", "t1")])
        cache = WorkflowCache(store, None)
        assert cache.get("s", "a") == _flow("a", "t1")
        cache.clear("s")
        assert cache.get("s", "a") == _flow("a", "t1")
