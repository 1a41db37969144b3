"""The shared session policy: commands, autosave, appended suggestions, fault isolation."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from em_plugin.capture.trajectory import Trajectory
from em_plugin.errors import ConfigurationError, EmbedderError
from em_plugin.retrieval.reference import Match
from em_plugin.session import (
    SessionController,
    TurnOutcome,
    append_text,
    recall_text,
)
from em_plugin.session.recall import instruction_matches
from em_plugin.suggest.types import Evidence, Suggestion
from em_plugin.testing import FakeMemory
from provenance.model import CallStep, InstructionStep, Workflow


class NoWorkflows:
    """A store view with nothing to read (the recall tool's second route finds nothing)."""

    def iter_workflows(self, scope: str | None = None) -> list[Workflow]:
        return []


class ZeroEmbedder:
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), 4), dtype=np.float32)


class TinyMemory:
    """A dict-backed :class:`MemoryPort`; suggests unseen tools."""

    threshold = 0.65
    store = NoWorkflows()
    embedder = ZeroEmbedder()

    def __init__(self, scope: str = "default") -> None:
        self.scope = scope
        self.saved: dict[str, Workflow] = {}
        self.recorded: list[tuple[str, list[Suggestion]]] = []
        self.fail: set[str] = set()

    def with_scope(self, scope: str) -> TinyMemory:
        view = TinyMemory(scope)
        view.saved, view.recorded, view.fail = self.saved, self.recorded, self.fail
        return view

    def _check(self, what: str) -> None:
        if what in self.fail:
            raise EmbedderError(f"{what} is down")

    def save(self, workflow: Workflow) -> Workflow:
        self._check("save")
        self.saved[workflow.id] = workflow
        return workflow

    def load(self, workflow_id: str) -> Workflow:
        return self.saved[workflow_id]

    def retrieve(self, workflow: Workflow) -> list[Match]:
        self._check("retrieve")
        return [Match(w.id, 0.9, (0,)) for w in self.saved.values() if w.id != workflow.id]

    def suggest(self, workflow: Workflow, limit: int = 3) -> list[Suggestion]:
        self._check("suggest")
        done = {s.name for s in workflow.leaves() if isinstance(s, CallStep)}
        out: list[Suggestion] = []
        for match in self.retrieve(workflow):
            for pos, leaf in enumerate(self.saved[match.workflow_id].leaves()):
                if isinstance(leaf, CallStep) and leaf.name not in done:
                    out.append(
                        Suggestion(
                            f"Run {leaf.name}",
                            tool=leaf.name,
                            score=0.9,
                            evidence=(Evidence(match.workflow_id, pos, 0.9),),
                        )
                    )
        return out[:limit]

    def record_suggestions(self, session_id: str, suggestions: list[Suggestion]) -> None:
        self._check("record")
        self.recorded.append((session_id, suggestions))

    async def asave(self, workflow: Workflow) -> Workflow:
        return self.save(workflow)

    async def asuggest(self, workflow: Workflow, limit: int = 3) -> list[Suggestion]:
        return self.suggest(workflow, limit)

    async def aretrieve(self, workflow: Workflow) -> list[Match]:
        return self.retrieve(workflow)

    async def arecord_suggestions(self, session_id: str, suggestions: list[Suggestion]) -> None:
        self.record_suggestions(session_id, suggestions)


def run_turn(ctl: SessionController, text: str, calls: list[tuple[str, bool]]) -> str:
    ctl.begin_turn(text)
    for number, (name, ok) in enumerate(calls):
        call_id = f"{ctl.trajectory.turn_call_count}-{number}-{len(ctl.trajectory)}"
        ctl.trajectory.call_start(call_id, name, {})
        if ok:
            ctl.trajectory.call_end(call_id, "ok")
        else:
            ctl.trajectory.call_error(call_id, "boom")
    return ctl.after_turn(f"answer to {text}")


def controller(memory: TinyMemory, session: str = "s1", **kw) -> SessionController:
    return SessionController(memory, Trajectory(session), **kw)


def test_save_then_a_new_session_gets_the_next_step_appended() -> None:
    memory = TinyMemory()
    first = controller(memory)
    assert run_turn(first, "Extract acme.pdf", [("extract", False), ("extract", True)]) == (
        "answer to Extract acme.pdf"
    )
    run_turn(first, "Classify", [("classify", True)])
    reply = first.handle_command("/save")
    assert reply == "Saved workflow session/s1 (2 steps) in scope 'default'."
    assert [leaf.name for leaf in memory.saved["session/s1"].leaves()] == ["extract", "classify"]

    second = controller(memory, "s2")
    answer = run_turn(second, "Extract b.pdf", [("extract", True)])
    assert (
        answer == "answer to Extract b.pdf\n\nSuggested next steps (from 1 similar past "
        "workflow):\n1. Run classify"
    )
    assert memory.recorded == [("s2", list(second.last_suggestions))]
    assert second.handle_command("/suggest").startswith("Suggested next steps")


def test_commands_and_non_commands() -> None:
    ctl = controller(TinyMemory())
    assert ctl.handle_command("hello") is None
    assert ctl.handle_command("/save") == "Nothing to save yet: this session has no instructions."
    assert ctl.handle_command("/suggest") == "No suggestions yet: nothing similar is in memory."
    assert ctl.begin_turn("/save") is None


def test_saving_the_same_session_again_replaces_it() -> None:
    memory = TinyMemory()
    ctl = controller(memory)
    run_turn(ctl, "one", [("a", True)])
    ctl.handle_command("/save")
    run_turn(ctl, "two", [("b", True)])
    ctl.handle_command("/save")
    assert list(memory.saved) == ["session/s1"]
    assert len(memory.saved["session/s1"].leaves()) == 2


def test_autosave_on_success_skips_turns_with_a_failed_call() -> None:
    memory = TinyMemory()
    ctl = controller(memory, autosave="on_success")
    run_turn(ctl, "one", [("a", False)])
    assert memory.saved == {}
    run_turn(ctl, "two", [("b", True)])
    leaves = memory.saved["session/s1"].leaves()
    assert [getattr(leaf, "name", getattr(leaf, "text", None)) for leaf in leaves] == ["one", "b"]


def test_a_judge_decides_what_autosave_keeps() -> None:
    memory = TinyMemory()
    seen: list[TurnOutcome] = []

    def judge(workflow: Workflow, outcome: TurnOutcome) -> bool:
        seen.append(outcome)
        return "keep" in outcome.instruction

    ctl = controller(memory, autosave="on_success", judge=judge)
    run_turn(ctl, "drop this", [("a", True)])
    assert memory.saved == {}
    run_turn(ctl, "keep this", [("b", False)])
    assert "session/s1" in memory.saved
    assert seen[1] == TurnOutcome("keep this", "answer to keep this", ("boom",), 1)


@pytest.mark.parametrize("fault", ["suggest", "record", "save"])
def test_faults_leave_the_answer_unchanged_and_log_a_warning(fault, caplog) -> None:
    memory = TinyMemory()
    seed = controller(memory, "seed")
    run_turn(seed, "x", [("a", True), ("b", True)])
    seed.handle_command("/save")
    memory.fail.add(fault)
    ctl = controller(memory, autosave="on_success")
    with caplog.at_level(logging.WARNING, logger="em_plugin.session"):
        answer = run_turn(ctl, "y", [("a", True)])
    if fault == "save":  # autosave failed; the suggestions are still shown (and recorded)
        assert answer.startswith("answer to y\n\nSuggested next steps")
    else:  # no suggestions, or none whose provenance could be recorded: answer unchanged
        assert answer == "answer to y"
    assert any(fault in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_strict_mode_raises() -> None:
    memory = TinyMemory()
    memory.fail.add("suggest")
    ctl = controller(memory, strict=True)
    ctl.begin_turn("go")
    with pytest.raises(EmbedderError, match="suggest is down"):
        ctl.after_turn("answer")
    memory.fail = {"save"}
    with pytest.raises(EmbedderError):
        ctl.handle_command("/save")


def test_save_failure_is_reported_in_the_reply(caplog) -> None:
    memory = TinyMemory()
    memory.fail.add("save")
    ctl = controller(memory)
    run_turn(ctl, "go", [("a", True)])
    with caplog.at_level(logging.WARNING):
        assert ctl.handle_command("/save").startswith("Could not save the workflow: EmbedderError")
    assert caplog.records


def test_inconsistent_trajectory_is_isolated(caplog) -> None:
    ctl = controller(TinyMemory())
    ctl.begin_turn("go")
    with caplog.at_level(logging.WARNING), ctl.guard("recording a tool call"):
        ctl.trajectory.call_end("never-started", 1)
    assert "recording a tool call failed" in caplog.text
    assert ctl.after_turn("fine") == "fine"


async def test_async_twins() -> None:
    memory = TinyMemory()
    first = controller(memory)
    first.begin_turn("Extract")
    first.trajectory.call_start("c1", "extract", {})
    first.trajectory.call_end("c1", 1)
    first.trajectory.call_start("c2", "classify", {})
    first.trajectory.call_end("c2", 1)
    assert await first.aafter_turn("done") == "done"
    assert (await first.ahandle_command("/save")).startswith("Saved workflow session/s1")
    second = controller(memory, "s2")
    second.begin_turn("Extract again")
    second.trajectory.call_start("d1", "extract", {})
    second.trajectory.call_end("d1", 1)
    assert (await second.aafter_turn("ok")).endswith("1. Run classify")
    assert memory.recorded[-1][0] == "s2"
    assert "Suggested next tools: classify" in await second.aprompt_block()
    assert await second.ahandle_command("hi") is None


def test_prompt_block_and_recall_text() -> None:
    memory = TinyMemory()
    seed = controller(memory, "seed")
    run_turn(seed, "Extract", [("extract", True), ("classify", True)])
    seed.handle_command("/save")
    ctl = controller(memory, "new")
    assert ctl.prompt_block() == ""  # nothing happened yet
    ctl.begin_turn("Extract b.pdf")
    block = ctl.prompt_block()
    assert block.splitlines()[0] == "Relevant past workflows (episodic memory):"
    assert "session/seed (similarity 0.90)" in block
    assert "Suggested next tools: extract, classify" in block
    text = recall_text(memory, "extract things")
    assert "1. session/seed (similarity 0.90)" in text
    assert "steps: extract -> classify" in text
    assert recall_text(memory, " ") == "Give a non-empty query describing the task."
    assert "No past workflow" in recall_text(TinyMemory(), "anything")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"autosave": "always"}, "'off', 'on_success'"),
        ({"judge": lambda w, o: True}, "needs autosave='on_success'"),
        ({"autosave": "on_success", "judge": 3}, "callable"),
        ({"save_command": "save"}, "starting with '/'"),
        ({"suggest_command": "/save"}, "must differ"),
        ({"limit": 0}, "limit"),
    ],
)
def test_bad_settings_fail_at_construction(kwargs, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        controller(TinyMemory(), **kwargs)


def test_append_text() -> None:
    assert append_text("a", "") == "a"
    assert append_text("a", "b") == "a\n\nb"


def test_instruction_matches_finds_instructions_that_are_not_leaves() -> None:
    memory = FakeMemory(scope="team")
    nested = InstructionStep("Classify the ingredients", (CallStep("pfas_classifier"),))
    memory.save(Workflow(id="w1", steps=(InstructionStep("Open acme.pdf", (nested,)),)))
    memory.save(Workflow(id="w2", steps=(InstructionStep("Book a flight"),)))
    found = instruction_matches(memory, "Classify the ingredients")
    assert [(workflow_id, workflow.id) for workflow_id, _, workflow in found] == [("w1", "w1")]
    assert found[0][1] == pytest.approx(1.0)
    assert instruction_matches(memory, "Classify the ingredients", scope="other") == []
    assert instruction_matches(memory, "Classify the ingredients", threshold=1.5) == []
