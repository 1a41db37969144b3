"""One plan, two executors: the sync and async paths decide alike, isolate each call alone and
keep to the turn's time budget."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from em_plugin.capture.trajectory import Trajectory
from em_plugin.errors import ConfigurationError
from em_plugin.session import (
    DEFAULT_TURN_BUDGET,
    MemoryPort,
    SessionController,
    SessionPolicy,
    SessionRegistry,
)
from tests.em_plugin.session.test_session import TinyMemory, run_turn

LOG = logging.getLogger("test.session")


def seeded(**policy: object) -> tuple[TinyMemory, SessionController]:
    memory = TinyMemory()
    seed = SessionController(memory, Trajectory("seed"))
    run_turn(seed, "Extract", [("extract", True), ("classify", True)])
    seed.handle_command("/save")
    ctl = SessionController(memory, Trajectory("new"), **policy)  # type: ignore[arg-type]
    ctl.begin_turn("Extract b.pdf")
    ctl.trajectory.call_start("x1", "extract", {})
    ctl.trajectory.call_end("x1", "ok")
    return memory, ctl


def test_tiny_memory_is_a_memory_port() -> None:
    assert isinstance(TinyMemory(), MemoryPort)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_failed_retrieval_keeps_the_prompt_blocks_suggestions(path: str, caplog) -> None:
    memory, ctl = seeded()
    real = memory.retrieve
    calls = {"n": 0}

    def retrieve_fails_first(workflow):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("index is down")
        return real(workflow)

    memory.retrieve = retrieve_fails_first  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        block = ctl.prompt_block() if path == "sync" else asyncio.run(ctl.aprompt_block())
    assert "retrieving past workflows failed (RuntimeError: index is down)" in caplog.text
    assert block.splitlines() == [
        "Relevant past workflows (episodic memory):",
        "- none similar enough",
        "Suggested next tools: classify",
    ]


@pytest.mark.parametrize("path", ["sync", "async"])
def test_both_paths_give_the_same_answers(path: str) -> None:
    memory, ctl = seeded()
    if path == "sync":
        suffix = ctl.suggestion_suffix("ok")
        saved = ctl.handle_command("/save")
    else:
        suffix = asyncio.run(ctl.asuggestion_suffix("ok"))
        saved = asyncio.run(ctl.ahandle_command("/save"))
    assert suffix == "\n\nSuggested next steps (from 1 similar past workflow):\n1. Run classify"
    assert [s.tool for s in ctl.last_suggestions] == ["classify"]
    assert memory.recorded[-1] == ("new", list(ctl.last_suggestions))
    assert saved == "Saved workflow session/new (1 step) in scope 'default'."


class Hanging(TinyMemory):
    """``suggest`` blocks until released (an embedder that hangs)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.finished = threading.Event()

    def suggest(self, workflow, limit=3):
        self.release.wait(10)
        self.finished.set()
        return super().suggest(workflow, limit)

    async def asuggest(self, workflow, limit=3):
        return await asyncio.to_thread(self.suggest, workflow, limit)  # as EpisodicMemory does


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_hanging_memory_costs_the_turn_at_most_its_budget(path: str, caplog) -> None:
    memory = Hanging()
    memory.release.set()
    seed = SessionController(memory, Trajectory("seed"))
    run_turn(seed, "Extract", [("extract", True), ("classify", True)])
    seed.handle_command("/save")
    memory.release.clear()
    ctl = SessionController(memory, Trajectory("new"), turn_budget=0.2)
    ctl.begin_turn("Extract b.pdf")

    async def timed_async_turn() -> tuple[str, float]:
        started = time.monotonic()
        answer = await ctl.aafter_turn("the answer")
        elapsed = time.monotonic() - started
        memory.release.set()  # let the worker thread end before the loop shuts down
        return answer, elapsed

    with caplog.at_level(logging.WARNING):
        if path == "sync":
            started = time.monotonic()
            answer = ctl.after_turn("the answer")
            elapsed = time.monotonic() - started
        else:
            answer, elapsed = asyncio.run(timed_async_turn())
    assert answer == "the answer"  # unchanged, no suggestions
    assert elapsed < 2.0
    assert "exceeded the turn budget of 0.2 s" in caplog.text
    assert ctl.last_suggestions == ()
    memory.release.set()  # the background work finishes once the memory answers
    assert memory.finished.wait(5)


def test_no_budget_runs_inline() -> None:
    memory, ctl = seeded(turn_budget=None)
    assert ctl.turn_budget is None
    assert ctl.suggestion_suffix("ok").endswith("1. Run classify")


def test_policy_from_keyword_options() -> None:
    policy = SessionPolicy.from_options({"strict": True, "limit": 2})
    assert (policy.strict, policy.limit, policy.turn_budget) == (True, 2, DEFAULT_TURN_BUDGET)
    with pytest.raises(ConfigurationError, match=r"unknown option\(s\) stritc; valid: autosave"):
        SessionPolicy.from_options({"stritc": True})
    for budget in (0, -1, "1s", True):
        with pytest.raises(ConfigurationError, match="turn_budget must be a number"):
            SessionPolicy(turn_budget=budget)  # type: ignore[arg-type]


def test_registry_keeps_scopes_apart_and_drops_the_least_recent() -> None:
    memory = TinyMemory()
    registry = SessionRegistry(memory, SessionPolicy(), framework="test", log=LOG, max_sessions=2)
    a = registry.get("t-1", scope="alice", crew=None)
    b = registry.get("t-1", scope="bob", crew=None)
    assert a is not b
    assert (a.memory.scope, b.memory.scope) == ("alice", "bob")
    assert registry.get("t-1", scope="alice", crew=None) is a
    registry.get("t-2", scope="alice", crew=None)  # evicts bob's t-1, the least recent
    assert registry.session_ids == ("t-1", "t-2")
    assert registry.find("t-1") is a
    assert registry.close("t-1") and not registry.close("t-1")
    with pytest.raises(KeyError, match="'t-1' is not open"):
        registry.find("t-1")
    with pytest.raises(ConfigurationError, match="max_sessions"):
        SessionRegistry(memory, SessionPolicy(), framework="x", log=LOG, max_sessions=0)
    with pytest.raises(ConfigurationError, match="memory is required"):
        SessionRegistry(None, SessionPolicy(), framework="x", log=LOG)  # type: ignore[arg-type]


def test_the_default_budget_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("EM_PLUGIN_TURN_BUDGET", raising=False)
    assert SessionPolicy().turn_budget == DEFAULT_TURN_BUDGET
    monkeypatch.setenv("EM_PLUGIN_TURN_BUDGET", "2.5")
    assert SessionPolicy().turn_budget == 2.5
    monkeypatch.setenv("EM_PLUGIN_TURN_BUDGET", "none")
    assert SessionPolicy().turn_budget is None
    monkeypatch.setenv("EM_PLUGIN_TURN_BUDGET", "soon")
    with pytest.raises(ConfigurationError, match="EM_PLUGIN_TURN_BUDGET must be a number"):
        SessionPolicy()


class SlowSave(TinyMemory):
    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def save(self, workflow):
        self.release.wait(10)
        return super().save(workflow)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_save_answers_once_stored_whatever_the_budget(path: str) -> None:
    memory = SlowSave()
    ctl = SessionController(memory, Trajectory("slow"), turn_budget=0.01)
    ctl.begin_turn("Extract")
    ctl.trajectory.call_start("c1", "extract", {})
    ctl.trajectory.call_end("c1", "ok")
    # Released only after the budget has long passed: the reply still waits for the store.
    threading.Timer(0.3, memory.release.set).start()
    reply = (
        ctl.handle_command("/save") if path == "sync" else asyncio.run(ctl.ahandle_command("/save"))
    )
    assert reply == "Saved workflow session/slow (1 step) in scope 'default'."
    assert "session/slow" in memory.saved
