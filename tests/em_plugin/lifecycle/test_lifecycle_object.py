"""Issue 34.1: one ``Lifecycle`` per memory and scope; the old spellings warn and still work."""

from __future__ import annotations

import dataclasses
import re

import pytest

from em_plugin import EpisodicMemory
from em_plugin.lifecycle import Lifecycle
from provenance.model import CallStep, InstructionStep, Workflow


def _wf(wid: str, *tools: str) -> Workflow:
    calls = tuple(CallStep(t) for t in tools)
    return Workflow(id=wid, steps=(InstructionStep(f"do {wid}", calls),))


NOW = Workflow(id="now", steps=(InstructionStep("do it", (CallStep("fetch"),)),))


@pytest.fixture
def memory():  # type: ignore[no-untyped-def]
    # A long poll interval: the active procedures stay cached unless a write drops them.
    with EpisodicMemory("memory:", embedder="fake:32", scope="lab", poll_interval=60) as found:
        yield found


def test_the_lifecycle_is_the_memory_scope_and_a_view_reaches_another(
    memory: EpisodicMemory,
) -> None:
    assert isinstance(memory.lifecycle, Lifecycle) and memory.lifecycle.scope == "lab"
    other = memory.with_scope("ops")
    other.save(_wf("o1", "fetch", "parse"))
    memory.save(_wf("l1", "fetch", "parse"))
    assert other.lifecycle.scope == "ops"
    assert other.lifecycle.retire("o1", reason="stale") is True
    assert other.lifecycle.retire("o1", reason="stale") is False  # already retired
    assert other.ids() == [] and memory.ids() == ["l1"]  # only the view's scope changed
    assert other.lifecycle.history("o1")[0].retired
    assert not memory.lifecycle.history("l1")[0].retired
    assert other.lifecycle.restore("o1") is True and other.ids() == ["o1"]


def test_the_engine_keeps_no_procedure_cache_and_views_share_the_lifecycle_one(
    memory: EpisodicMemory,
) -> None:
    engine = memory._engine
    assert not hasattr(engine, "active_procedures")
    assert not hasattr(engine, "procedures_changed")
    assert not hasattr(engine, "set_retired")  # retirement is the lifecycle's
    # The hidden ids the engine skips are the lifecycle's cache, shared by every view.
    assert vars(engine.versions)["_hidden"] is memory.with_scope("ops")._lifecycle.hidden
    assert not any(isinstance(v, dict | set) for v in vars(engine.versions).values())
    reader = memory.with_scope("ops").with_scope("lab")  # another view of the same scope
    reader.save_many([_wf(f"w{i}", "fetch", "parse", "report") for i in range(3)])
    assert all(s.source != "procedure" for s in reader.suggest(NOW, limit=None))  # now cached
    (candidate,) = reader.lifecycle.procedures()
    # Accepted through another view: the shared cache is dropped, so the reader sees it at once
    # (with a private cache it would wait for the 60 s poll interval).
    memory.with_scope("ops").with_scope("lab").lifecycle.accept_procedure(
        candidate.id, name="Fetch and report"
    )
    first = reader.suggest(NOW)[0]
    assert (first.source, first.tool) == ("procedure", "parse")


def test_set_outcome_recounts_the_procedures_the_workflow_runs(memory: EpisodicMemory) -> None:
    memory.save_many([_wf(f"w{i}", "fetch", "parse") for i in range(5)])
    (procedure,) = memory.lifecycle.procedures()
    assert procedure.success_rate == 1.0
    stored = memory.lifecycle.set_outcome("w0", "failure")
    assert stored.outcome == "failure" and memory.load("w0").outcome == "failure"
    assert memory.lifecycle.set_outcome("w0", "failure") == stored  # unchanged: no new version
    (recounted,) = memory.lifecycle.procedures()
    assert recounted.success_rate == pytest.approx(0.8)


@dataclasses.dataclass(frozen=True)
class _Old:
    name: str
    args: tuple[object, ...]
    kwargs: dict[str, object]


_OLD_CALLS = [
    _Old("history", ("w0",), {}),
    _Old("procedures", (), {"status": "candidate"}),
    _Old("set_outcome", ("w0", "success"), {}),
    _Old("retire", ("w1",), {"reason": "stale"}),
    _Old("restore", ("w1",), {}),
]


@pytest.mark.parametrize("old", _OLD_CALLS, ids=lambda o: o.name)
def test_the_old_methods_warn_and_delegate(memory: EpisodicMemory, old: _Old) -> None:
    memory.save_many([_wf(f"w{i}", "fetch", "parse") for i in range(3)])
    with pytest.warns(DeprecationWarning, match=rf"use memory\.lifecycle\.{old.name}\(\)"):
        got = getattr(memory, old.name)(*old.args, **old.kwargs)
    if old.name in ("history", "procedures", "set_outcome"):
        assert got == getattr(memory.lifecycle, old.name)(*old.args, **old.kwargs)


@pytest.mark.parametrize("old", _OLD_CALLS, ids=lambda o: o.name)
def test_the_old_scope_keyword_warns_and_names_with_scope(
    memory: EpisodicMemory, old: _Old
) -> None:
    other = memory.with_scope("ops")
    other.save_many([_wf(f"w{i}", "fetch", "parse") for i in range(3)])
    with pytest.warns(DeprecationWarning, match=r"with_scope\(scope\)\.lifecycle"):
        got = getattr(memory, old.name)(*old.args, scope="ops", **old.kwargs)
    if old.name in ("history", "procedures"):
        assert got == getattr(other.lifecycle, old.name)(*old.args, **old.kwargs)
    if old.name == "retire":
        assert other.ids() == ["w0", "w2"] and memory.ids() == []


def test_old_procedure_calls_warn_and_delegate(memory: EpisodicMemory) -> None:
    memory.save_many([_wf(f"w{i}", "fetch", "parse") for i in range(3)])
    (candidate,) = memory.lifecycle.procedures()
    with pytest.warns(DeprecationWarning, match="accept_procedure"):
        active = memory.accept_procedure(candidate.id, name="Fetch", scope="lab")
    assert memory.lifecycle.procedures(status="active") == [active]
    with pytest.warns(DeprecationWarning, match="retire_procedure"):
        memory.retire_procedure(candidate.id, reason="replaced")
    assert memory.lifecycle.procedures(status="active") == []


def test_scope_memory_of_another_scope_warns(memory: EpisodicMemory) -> None:
    memory.with_scope("ops").save(_wf("o1", "fetch", "parse"))
    with pytest.warns(DeprecationWarning, match=r"with_scope\(scope\)\.scope_memory\(\)"):
        state = memory.scope_memory("ops")
    assert state is memory.with_scope("ops").scope_memory() and "o1" in state.ids()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("crew", "crew_description"),
        ("feedback", "acceptance.feedback"),
        ("config", "retrieval.match_config()"),
    ],
)
def test_moved_attributes_warn_from_the_callers_line_and_are_no_public_names(
    memory: EpisodicMemory, old: str, new: str
) -> None:
    with pytest.warns(DeprecationWarning, match=rf"use EpisodicMemory\.{re.escape(new)}") as caught:
        value = getattr(memory, old)
    assert {w.filename for w in caught} == {__file__}
    owner: object = memory
    for part in new.removesuffix("()").split("."):
        owner = getattr(owner, part)
    assert value == (owner() if new.endswith("()") else owner)  # type: ignore[operator]
    moved = {old, *(o.name for o in _OLD_CALLS), "accept_procedure", "retire_procedure"}
    assert not moved & set(dir(EpisodicMemory))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        memory.no_such_name  # type: ignore[attr-defined]  # noqa: B018
