"""The one session record: turns, their JSON, the replay, and the journal of earlier releases."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from rdflib import URIRef
from rdflib.util import from_n3

from em_plugin.capture.trajectory import Trajectory
from em_plugin.session import SessionJournal, ToolCall, Turn, merge_turns, replay, turns_from_events
from provenance.model import CallStep
from provenance.stores import WorkflowStore, open_store
from provenance.stores.graph_writes import write_graphs
from provenance.workflow_json import workflow_from_json

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "tests" / "data" / "sessions"
T = "2026-11-02T09:00:0{}+00:00"


def handoff_turn() -> Turn:
    """A handoff with a failed nested call and its retry, answered."""
    return Turn(
        turn="m1",
        instruction="Extract the ingredients of acme.pdf",
        started=T.format(0),
        calls=(
            ToolCall(
                "h1",
                "extractor",
                {"task": "extract"},
                "coordinator",
                None,
                T.format(1),
                T.format(6),
                "PFOA, water",
            ),
            ToolCall(
                "c1",
                "product_extractor",
                {"file": "acme.pdf"},
                "extractor",
                "h1",
                T.format(2),
                T.format(3),
                error="TimeoutError: slow",
            ),
            ToolCall(
                "c2",
                "product_extractor",
                {"file": "acme.pdf"},
                "extractor",
                "h1",
                T.format(4),
                T.format(5),
                {"ingredients": ["PFOA", "water"]},
            ),
        ),  # fmt: skip
        ended=T.format(7),
        answers=("It holds PFOA and water.",),
    )


def test_a_turn_round_trips_through_its_json() -> None:
    turn = handoff_turn()
    assert Turn.from_json(json.loads(json.dumps(turn.to_json()))) == turn
    failed = Turn(turn="m2", instruction="Go", error="RuntimeError: down", ended=T.format(1))
    assert Turn.from_json(failed.to_json()) == failed


def test_replay_nests_calls_under_their_parent_and_keeps_the_failure_apart() -> None:
    workflow = replay([handoff_turn()], Trajectory("chat-1", scope="team")).compile()
    (instruction,) = workflow.steps
    (handoff,) = instruction.steps
    assert isinstance(handoff, CallStep) and handoff.name == "extractor"
    assert [(s.name, s.id, s.started) for s in handoff.steps] == [
        ("product_extractor", "c2", T.format(4))
    ]
    assert [(f.call.id, f.error, f.parent) for f in workflow.failed] == [
        ("c1", "TimeoutError: slow", "0.0")
    ]
    assert workflow.created == T.format(0) and workflow.outcome is None


def test_events_grouped_into_turns_replay_to_the_same_events() -> None:
    live = Trajectory("chat-1", scope="team", framework="beeai")
    replay([handoff_turn()], live)
    live.instruction("Classify them")
    live.call_start("k1", "pfas_classifier", {"names": ["PFOA"]}, agent="coordinator")
    live.final_answer("PFOA is a PFAS.")
    live.call_start("k2", "write_report", {}, agent="coordinator")  # after the answer
    live.call_end("k2", "done")
    live.run_error("RuntimeError: down")
    turns = turns_from_events(live.events)
    assert [t.instruction for t in turns] == [
        "Extract the ingredients of acme.pdf",
        "Classify them",
        None,  # a call after the answer continues the turn in a fragment
    ]
    again = replay(turns, Trajectory("chat-1", scope="team", framework="beeai"))
    assert again.events == live.events
    assert again.compile().outcome == "failure"


def test_parallel_calls_replay_in_the_models_order_and_reused_ids_get_a_suffix() -> None:
    first = Turn(instruction="One", calls=(ToolCall("c1", "a", ended=T.format(1)),))
    second = Turn(
        instruction="Two",
        calls=(
            ToolCall("c2", "late", started=T.format(2), ended=T.format(3), order=1),
            ToolCall("c1", "early", started=T.format(4), ended=T.format(5), order=0),
        ),
    )
    workflow = replay([first, second], Trajectory("s")).compile()
    assert [(s.name, s.id) for s in workflow.steps[1].steps] == [("early", "c1#2"), ("late", "c2")]


def test_fragments_of_one_turn_merge_in_order() -> None:
    a = Turn(turn="m1", calls=(ToolCall("c1", "a"),))
    b = Turn(turn="m1", calls=(ToolCall("c2", "b"),))
    loose = Turn(calls=(ToolCall("c3", "c"),))
    merged = merge_turns([a, loose, b])
    assert [[c.id for c in t.calls] for t in merged] == [["c1", "c2"], ["c3"]]


def test_what_the_replay_refuses_is_logged_and_the_rest_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    turn = Turn(
        instruction="Go",
        calls=(ToolCall("c1", "a", started="yesterday"), ToolCall("c2", "b", ended=T.format(1))),
    )
    with caplog.at_level(logging.WARNING, logger="em_plugin.session.turns"):
        workflow = replay([turn], Trajectory("s")).compile()
    assert [s.name for s in workflow.leaves() if isinstance(s, CallStep)] == ["b"]
    assert "call skipped" in caplog.text


def test_a_journal_of_the_previous_release_replays_to_the_workflow_it_compiled_to(
    store: WorkflowStore,
) -> None:
    data = json.loads((SAMPLES / "beeai_journal_v1.json").read_text(encoding="utf-8"))
    graphs = [
        (URIRef(chunk["graph"]), [tuple(from_n3(term) for term in t) for t in chunk["triples"]])
        for chunk in data["chunks"]
    ]
    write_graphs(store.backend, graphs)
    journal = SessionJournal(store.backend)
    replayed = journal.replay(data["scope"], data["session"], framework="beeai")
    expected = workflow_from_json(data["workflow"])
    assert replayed.compile(crew="pfas-crew") == expected
    assert expected.revised and expected.outcome == "failure"  # the sample covers both
    # A turn journaled now goes beside the old chunks as a turn record.
    base = len(replayed)
    replayed.instruction("Write the report")
    journal.append(data["scope"], data["session"], replayed.events[base:], base=base)
    again = journal.replay(data["scope"], data["session"], framework="beeai")
    assert again.events == replayed.events


def test_new_chunks_hold_turns() -> None:
    store = open_store("memory:")
    try:
        journal = SessionJournal(store.backend)
        replay([handoff_turn()], live := Trajectory("chat-1", scope="team"))
        (name,) = [journal.append("team", "chat-1", live.events, base=0)]
        ((_, triples),) = store.backend.read_graphs([URIRef(name)])
        payload = next(str(o) for _, p, o in triples if str(p).endswith("#turns"))
        assert [Turn.from_json(t) for t in json.loads(payload)] == [
            Turn(**{**handoff_turn().__dict__, "turn": None})
        ]
    finally:
        store.close()


def test_the_capture_guide_example_runs_and_prints_what_it_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    guide = (ROOT / "docs" / "capture.md").read_text(encoding="utf-8")
    block = guide.split("## The session record")[1].split("```python\n")[1].split("```")[0]
    exec(compile(block, "docs/capture.md", "exec"), {})
    shown = block.rsplit("# ", 1)[1].strip()
    assert capsys.readouterr().out.strip() == shown
