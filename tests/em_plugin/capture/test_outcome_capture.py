"""Outcomes captured where the framework tells: a tool error, a failed run."""

from __future__ import annotations

from em_plugin.capture.trajectory import Trajectory
from em_plugin.memory import EpisodicMemory
from em_plugin.session.controller import SessionController


def test_a_tool_error_is_a_failed_call_with_outcome_failure() -> None:
    trajectory = Trajectory("s1")
    trajectory.instruction("Classify PFOA")
    trajectory.call_start("c1", "pfas_classifier", {"smiles": "PFOA"})
    trajectory.call_error("c1", "ValueError: invalid SMILES")
    trajectory.call_start("c2", "pfas_classifier", {"smiles": "OC(=O)C(F)(F)F"})
    trajectory.call_end("c2", True)
    workflow = trajectory.compile()
    (failed,) = workflow.failed
    assert failed.call.outcome == "failure" and failed.error == "ValueError: invalid SMILES"
    assert workflow.leaves()[0].outcome is None  # finished; no outcome is written for it
    assert workflow.outcome is None  # the run answered: its outcome is not known


def test_a_failed_run_makes_the_workflow_a_failure_until_the_next_turn() -> None:
    trajectory = Trajectory("s2")
    trajectory.instruction("Classify PFOA")
    trajectory.call_start("c1", "pfas_classifier")
    trajectory.call_end("c1", True)
    trajectory.run_error(RuntimeError("the model provider timed out"))
    assert trajectory.compile().outcome == "failure"
    trajectory.instruction("Try again")
    assert trajectory.compile().outcome is None
    trajectory.run_error("boom")
    trajectory.final_answer("recovered")  # an answer after the error: the run did answer
    assert trajectory.compile().outcome is None


def test_the_controller_records_a_failed_turn_and_saves_it_as_a_failure() -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake")
    try:
        trajectory = Trajectory("s3")
        controller = SessionController(memory, trajectory)
        controller.begin_turn("Classify PFOA")
        trajectory.call_start("c1", "pfas_classifier")
        trajectory.call_end("c1", True)
        controller.fail_turn(TimeoutError("crew timed out"))
        assert controller.handle_command("/save") is not None
        assert memory.load("session/s3").outcome == "failure"
    finally:
        memory.close()


def test_a_failed_run_survives_the_session_journal() -> None:
    from em_plugin.session.journal import SessionJournal
    from provenance.stores import open_store

    with open_store("memory:") as store:
        journal = SessionJournal(store.backend)
        live = Trajectory("chat-9", scope="team")
        live.instruction("Classify PFOA")
        live.run_error("TimeoutError: the crew timed out")
        journal.append("team", "chat-9", live.events, base=0)
        replayed = journal.replay("team", "chat-9")
        assert replayed.events == live.events
        assert replayed.compile().outcome == "failure"
