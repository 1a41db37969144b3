"""The session journal: a session's capture kept in the store, on every backend."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from em_plugin.capture.trajectory import (
    CallEnd,
    CallError,
    CallStart,
    FinalAnswer,
    Instruction,
    Trajectory,
)
from em_plugin.errors import ConfigurationError, TrajectoryError
from em_plugin.session import SessionPolicy, SessionRegistry
from em_plugin.session.journal import (
    JournaledSessions,
    SessionJournal,
    _event_json,
    _event_of,
    conversation_digest,
    journal_graph_prefix,
)
from provenance.model import Workflow
from provenance.stores import WorkflowStore


def session_events(trajectory: Trajectory, *, turn: int) -> None:
    """One turn: an instruction, a handoff with a nested call, a failed retry, the answer."""
    trajectory.instruction(f"Extract the ingredients of file {turn}")
    trajectory.call_start(f"h{turn}", "extractor", {"task": "extract"}, agent="coordinator")
    trajectory.call_start(
        f"c{turn}", "product_extractor", {"file": f"{turn}.pdf"}, agent="extractor",
        parent_call_id=f"h{turn}",
    )  # fmt: skip
    trajectory.call_error(f"c{turn}", "TimeoutError: slow")
    trajectory.call_start(
        f"d{turn}", "product_extractor", {"file": f"{turn}.pdf"}, agent="extractor",
        parent_call_id=f"h{turn}",
    )  # fmt: skip
    trajectory.call_end(f"d{turn}", {"ingredients": ["PFOA", "water"]})
    trajectory.call_end(f"h{turn}", "PFOA, water")
    trajectory.final_answer("It holds PFOA and water.")


def test_a_replayed_journal_compiles_the_same_workflow_with_its_times(
    store: WorkflowStore,
) -> None:
    journal = SessionJournal(store.backend)
    live = Trajectory("chat-1", scope="team", framework="beeai")
    session_events(live, turn=1)
    journal.append("team", "chat-1", live.events, base=0)
    base = len(live)
    session_events(live, turn=2)
    journal.append("team", "chat-1", live.events[base:], base=base)
    replayed = journal.replay("team", "chat-1", framework="beeai")
    assert replayed.events == live.events
    assert replayed.compile(crew="crew") == live.compile(crew="crew")
    workflow = replayed.compile()
    assert [f.call.name for f in workflow.failed] == ["product_extractor", "product_extractor"]
    assert workflow.session == "chat-1" and workflow.scope == "team"


def test_journal_graphs_are_never_workflows(store: WorkflowStore) -> None:
    journal = SessionJournal(store.backend)
    t = Trajectory("chat-1", scope="team")
    session_events(t, turn=1)
    journal.append("team", "chat-1", t.events, base=0)
    journal.mark_saved("team", "chat-1", events=len(t), workflow_id="session/chat-1")
    assert store.ids() == [] and len(store) == 0 and store.scopes() == []
    names = [str(g) for g in store.backend.graph_names()]
    assert names and all(n.startswith(journal_graph_prefix("team")) for n in names)


def test_unsaved_sessions_are_listed_with_their_last_activity(store: WorkflowStore) -> None:
    journal = SessionJournal(store.backend)
    for session in ("a", "b"):
        t = Trajectory(session, scope="team")
        session_events(t, turn=1)
        journal.append("team", session, t.events, base=0)
    other = Trajectory("c", scope="other")
    other.instruction("hello")
    journal.append("other", "c", other.events, base=0)
    assert {s.session_id for s in journal.unsaved(scope="team")} == {"a", "b"}
    journal.mark_saved("team", "a", events=8, workflow_id="session/a")
    unsaved = journal.unsaved(scope="team")
    assert [s.session_id for s in unsaved] == ["b"]
    assert unsaved[0].events == 8 and unsaved[0].last_activity.startswith("20")
    (saved,) = [s for s in journal.sessions(scope="team") if s.session_id == "a"]
    assert saved.saved and saved.workflow_id == "session/a" and saved.saved_at
    assert {(s.scope, s.session_id) for s in journal.unsaved()} == {("team", "b"), ("other", "c")}
    assert journal.forget("team") == 4  # two chunks, a saved mark and the scope's marker
    assert [s.scope for s in journal.sessions()] == ["other"]


def test_two_workers_continue_one_session(store: WorkflowStore) -> None:
    """Worker A serves turn 1, worker B turn 2, A turn 3: each compiles the whole session."""
    memory = NoMemory()

    def worker() -> JournaledSessions:
        registry = SessionRegistry(
            memory, SessionPolicy(), framework="beeai", log=logging.getLogger("test")
        )
        return JournaledSessions(registry, SessionJournal(store.backend))

    a, b = worker(), worker()
    for turn, current in enumerate((a, b, a), start=1):
        controller = current.open("chat-1", scope="team", crew="crew")
        session_events(controller.trajectory, turn=turn)
        current.commit(controller)
    compiled = [w.open("chat-1", scope="team", crew="crew").trajectory.compile() for w in (a, b)]
    assert compiled[0] == compiled[1]
    assert [s.text for s in compiled[0].steps] == [
        f"Extract the ingredients of file {turn}" for turn in (1, 2, 3)
    ]
    assert [s.id for s in compiled[0].steps] == ["i1", "i2", "i3"]


def test_a_turn_that_never_committed_is_not_part_of_the_session(store: WorkflowStore) -> None:
    memory = NoMemory()
    registry = SessionRegistry(memory, SessionPolicy(), framework="x", log=logging.getLogger("t"))
    sessions = JournaledSessions(registry, SessionJournal(store.backend))
    controller = sessions.open("s", scope="team", crew=None)
    session_events(controller.trajectory, turn=1)
    sessions.commit(controller)
    controller.trajectory.instruction("a turn whose worker died")  # never committed
    again = sessions.open("s", scope="team", crew=None)
    assert len(again.trajectory.compile().steps) == 1


def test_a_save_is_marked_once_it_happened(store: WorkflowStore) -> None:
    registry = SessionRegistry(
        NoMemory(), SessionPolicy(), framework="x", log=logging.getLogger("t")
    )
    sessions = JournaledSessions(registry, SessionJournal(store.backend))
    controller = sessions.open("s", scope="team", crew=None)
    session_events(controller.trajectory, turn=1)
    sessions.commit(controller)
    assert [s.session_id for s in sessions.journal.unsaved()] == ["s"]
    controller.last_saved = Workflow(id="session/s", scope="team")
    sessions.commit(controller)
    assert sessions.journal.unsaved() == []


def test_bad_keys_and_backends_are_refused_clearly(store: WorkflowStore) -> None:
    journal = SessionJournal(store.backend)
    with pytest.raises(TrajectoryError, match="session_id must be a non-empty string"):
        journal.append("team", " ", [], base=0)
    with pytest.raises(TrajectoryError, match="base must be an integer >= 0"):
        journal.append("team", "s", [], base=-1)
    with pytest.raises(ConfigurationError, match="needs a GraphStore backend"):
        SessionJournal(store)  # type: ignore[arg-type]
    with pytest.raises(TrajectoryError, match="valid kinds: call_end, call_error"):
        _event_of({"kind": "nope"})
    assert store.backend.graph_names() == []


def test_the_conversation_digest_ignores_blank_differences_only() -> None:
    one = conversation_digest([("user", "hi  there"), ("assistant", "hello")])
    assert one == conversation_digest([("user", "hi there\n"), ("assistant", "hello")])
    assert one != conversation_digest([("user", "hi there"), ("assistant", "hello!")])


_text = st.text(min_size=1, max_size=20).filter(str.strip)
_time = st.datetimes().map(lambda d: d.isoformat())
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3)
    ),
    max_leaves=8,
)
_events = st.one_of(
    st.builds(Instruction, _text, _text, _time, st.none() | _text),
    st.builds(
        CallStart,
        _text,
        _text,
        st.dictionaries(st.text(max_size=5), _json, max_size=3),
        st.none() | _text,
        st.none() | _text,
        _time,
    ),  # fmt: skip
    st.builds(CallEnd, _text, _json, _time),
    st.builds(CallError, _text, _text, _time),
    st.builds(FinalAnswer, _text, _time),
)


@settings(max_examples=60, deadline=None)
@given(_events)
def test_events_round_trip_through_the_journal_json(event: Any) -> None:
    assert _event_of(_event_json(event)) == event


class NoMemory:
    """A memory port that is never asked anything (the journal tests record no suggestions)."""

    scope = "team"
    threshold = 0.5
    store: Any = None
    embedder: Any = None

    def with_scope(self, scope: str) -> NoMemory:
        return self


def test_forgetting_a_scope_erases_its_session_journals() -> None:
    from em_plugin.embedding import FakeEmbedder
    from em_plugin.memory import EpisodicMemory
    from provenance.stores import open_store

    memory = EpisodicMemory(store=open_store("memory:"), embedder=FakeEmbedder(16), scope="team")
    journal = SessionJournal(memory.store.backend)
    for scope in ("team", "other"):
        t = Trajectory("s", scope=scope)
        t.instruction("hello")
        journal.append(scope, "s", t.events, base=0)
    memory.forget()
    assert [s.scope for s in journal.sessions()] == ["other"]
