"""Sessions nobody saved: idle ones are saved with outcome "abandoned" (API and CLI)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from em_plugin.capture.trajectory import Trajectory
from em_plugin.cli import cli
from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.session import unsaved_sessions
from em_plugin.session.abandon import abandon_idle
from em_plugin.session.journal import SessionJournal


def journal_session(journal: SessionJournal, scope: str, session_id: str) -> int:
    """Journal one turn of a session: an instruction, a call, the answer."""
    live = Trajectory(session_id, scope=scope, framework="beeai")
    live.instruction(f"Extract the ingredients of {session_id}.pdf")
    live.call_start("c1", "product_extractor", {"file": f"{session_id}.pdf"}, agent="crew")
    live.call_end("c1", {"ingredients": ["PFOA"]})
    live.final_answer("It holds PFOA.")
    journal.append(scope, session_id, live.events, base=0)
    return len(live)


def test_idle_unsaved_sessions_are_saved_as_abandoned() -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake")
    journal = SessionJournal(memory.store.backend)
    events = journal_session(journal, "team", "chat-1")
    journal_session(journal, "lab", "chat-2")
    journal_session(journal, "team", "chat-3")
    journal.mark_saved("team", "chat-3", events=events, workflow_id="session/chat-3")

    # Not idle long enough yet: nothing happens.
    assert abandon_idle(memory, journal, older_than=timedelta(hours=1)) == []
    later = datetime.now(UTC) + timedelta(hours=2)
    saved = abandon_idle(memory, journal, older_than=3600, scope="team", now=later)

    assert saved == ["session/chat-1"]
    workflow = memory.with_scope("team").load("session/chat-1")
    assert workflow.outcome == "abandoned"
    assert [leaf.name for leaf in workflow.leaves()] == ["product_extractor"]
    assert [(s.scope, s.session_id) for s in journal.unsaved()] == [("lab", "chat-2")]
    assert memory.abandon_idle(older_than=0) == ["session/chat-2"]
    assert journal.unsaved() == []
    assert memory.abandon_idle(older_than=0) == []  # saved sessions stay as they are


@pytest.mark.parametrize("bad", [-1, "1h", True, timedelta(seconds=-5)])
def test_a_bad_idle_bound_is_a_clear_error(bad: object) -> None:
    memory = EpisodicMemory(store="memory:", embedder="fake")
    with pytest.raises(ConfigurationError, match="older_than"):
        memory.abandon_idle(older_than=bad)  # type: ignore[arg-type]


def test_cli_lists_and_abandons_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    monkeypatch.setenv("EM_PLUGIN_STORE", str(store))
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")
    memory = EpisodicMemory(store=str(store), embedder="fake")
    journal_session(SessionJournal(memory.store.backend), "team", "chat-1")
    memory.close()
    runner = CliRunner()

    listed = runner.invoke(cli, ["sessions"])
    assert listed.exit_code == 0, listed.output
    [line] = listed.stdout.splitlines()
    assert line.startswith("team\tchat-1\t4 events\tlast activity 20")

    kept = runner.invoke(cli, ["sessions", "abandon", "--older-than", "1h"])
    assert kept.exit_code == 0, kept.output
    assert kept.stdout.splitlines() == ["0 sessions abandoned."]
    done = runner.invoke(cli, ["sessions", "abandon", "--older-than", "0s"])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["session/chat-1: outcome abandoned", "1 session abandoned."]
    assert runner.invoke(cli, ["sessions"]).stdout.strip() == "No unsaved sessions."

    bad = runner.invoke(cli, ["sessions", "abandon", "--older-than", "soon"])
    assert bad.exit_code == 2 and "90s, 30m, 1h, 2d" in bad.stderr


def test_unsaved_sessions_reads_a_store_most_recent_first() -> None:
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        journal = SessionJournal(memory.store.backend)
        assert unsaved_sessions(memory.store) == []
        events = journal_session(journal, "team", "chat-1")
        journal_session(journal, "lab", "chat-2")
        journal_session(journal, "team", "chat-3")
        journal.mark_saved("team", "chat-3", events=events, workflow_id="session/chat-3")
        found = unsaved_sessions(memory.store)
        assert found == journal.unsaved()
        assert {(s.scope, s.session_id) for s in found} == {("team", "chat-1"), ("lab", "chat-2")}
        assert [s.session_id for s in unsaved_sessions(memory.store, scope="team")] == ["chat-1"]
