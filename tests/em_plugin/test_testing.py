"""The shipped test doubles (``em_plugin.testing``) do what a test of an integration needs."""

from __future__ import annotations

import logging

import pytest

from em_plugin import EpisodicMemory
from em_plugin.capture.trajectory import Trajectory
from em_plugin.errors import ConfigurationError, EpisodicMemoryError
from em_plugin.session import MemoryIntegration, MemoryPort, SessionController
from em_plugin.testing import OPERATIONS, FakeMemory, ScriptedChat
from provenance.model import CallStep, InstructionStep, Workflow


def run_turn(session: SessionController, text: str, tools: list[str]) -> str:
    session.begin_turn(text)
    for number, tool in enumerate(tools):
        call_id = f"{len(session.trajectory)}-{number}"
        session.trajectory.call_start(call_id, tool, {})
        session.trajectory.call_end(call_id, "ok")
    return session.after_turn(f"answer to {text}")


def test_the_fake_memory_is_a_memory_port_that_saves_and_suggests() -> None:
    memory = FakeMemory()
    assert isinstance(memory, MemoryPort)
    first = SessionController(memory, Trajectory("s1"))
    run_turn(first, "Extract acme.pdf", ["product_extractor", "pfas_classifier"])
    assert first.handle_command(
        "/save",
    ).startswith("Saved workflow session/s1")
    second = SessionController(memory, Trajectory("s2"))
    answer = run_turn(second, "Extract beta.pdf", ["product_extractor"])
    assert answer.startswith("answer to Extract beta.pdf\n\n") and "pfas_classifier" in answer
    assert [(sid, [s.tool for s in shown]) for sid, shown in memory.recorded] == [
        ("s2", ["pfas_classifier"])
    ]
    assert [w.title for w in memory.store.iter_workflows("default")] == ["Extract acme.pdf"]


def test_scopes_are_views_of_one_fake_memory() -> None:
    memory = FakeMemory()
    team = memory.with_scope("team")
    workflow = Workflow(id="w", steps=(InstructionStep("Go", (CallStep("tool"),)),))
    assert team.save(workflow).scope == "team"
    assert list(team.saved) == ["w"] and memory.saved == {}
    assert memory.with_scope("team").load("w").scope == "team"


def test_a_failing_fake_memory_never_breaks_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    memory = FakeMemory()
    memory.fail("suggest", "save")
    session = SessionController(memory, Trajectory("s1"))
    with caplog.at_level(logging.WARNING):
        assert run_turn(session, "Extract acme.pdf", ["product_extractor"]) == (
            "answer to Extract acme.pdf"
        )
    assert "suggest failed (FakeMemory.fail)" in caplog.text
    assert session.handle_command("/save").startswith("Could not save the workflow")
    with pytest.raises(EpisodicMemoryError):
        memory.save(Workflow(id="w"))
    memory.heal()
    assert memory.save(Workflow(id="w")).id == "w"
    with pytest.raises(ConfigurationError, match="valid: " + ", ".join(OPERATIONS)):
        memory.fail("load")


def test_the_scripted_chat_is_the_memorys_llm_suggester() -> None:
    writer = ScriptedChat(["1. Check which ingredients are PFAS [pfas_classifier]"])
    crew = {"name": "chemists", "agents": [{"name": "a", "tools": [{"name": "pfas_classifier"}]}]}
    with EpisodicMemory("memory:", embedder="fake", llm=writer, crew_description=crew) as memory:
        first = memory.suggest(Workflow(id="now"))[0]
    assert (first.source, first.tool) == ("llm", "pfas_classifier")
    assert writer.remaining == 0 and [role for role, _ in writer.prompts[0]] == ["system", "human"]
    with pytest.raises(RuntimeError, match="script exhausted at call #2"):
        writer.complete([("human", "again")])


def test_the_integration_base_opens_sessions_publicly_and_the_old_name_warns() -> None:
    class Adapter(MemoryIntegration):
        def __init__(self, memory: FakeMemory, *, old: bool = False) -> None:
            opener = self._open_sessions if old else self.open_sessions
            opener(memory, owner="Adapter", framework="toy", log=logging.getLogger("toy"))

    memory = FakeMemory()
    assert Adapter(memory).sessions.get("t", scope="default", crew=None).trajectory.framework == (
        "toy"
    )
    with pytest.warns(DeprecationWarning, match="Adapter._open_sessions is deprecated"):
        Adapter(memory, old=True)
