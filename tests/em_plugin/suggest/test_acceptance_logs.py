"""A memory keeps the acceptance logs of as many scopes as its scope cache, losing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin.config import SCOPE_CACHE_ENV
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.acceptance_logs import LastAsked
from provenance.model import CallStep, InstructionStep, Workflow
from tests.em_plugin.suggest.test_acceptance import PAST

EXTRACT = InstructionStep("Extract the ingredients of the SDS", (CallStep("extractor"),))


def _session(sid: str, *more: InstructionStep) -> Workflow:
    return Workflow(id=f"session/{sid}", session=sid, steps=(EXTRACT, *more))


def test_idle_logs_beyond_the_bound_are_dropped_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SCOPE_CACHE_ENV, "2")
    with EpisodicMemory(store=tmp_path / "store", embedder="fake") as memory:
        tenants = {s: memory.with_scope(s) for s in ("a", "b", "c", "d", "e")}
        for view in tenants.values():
            view.save_many(PAST)
        # Scope a judges a round (taken): its count is in the store's round record.
        a = tenants["a"]
        a.record_suggestions("s1", a.suggest(_session("s1")))
        table = InstructionStep("Show a table", (CallStep("table"),))
        log_a = a.acceptance
        assert log_a.observe("s1", _session("s1", table)) is not None  # the session's next turn
        judged = log_a.feedback.rounds()
        assert judged >= 1
        # Scope b shows a round whose next turn has not come: only its log holds it.
        b = tenants["b"]
        b.record_suggestions("s2", b.suggest(_session("s2")))
        log_b = b.acceptance
        assert log_b.waiting
        for scope in ("c", "d", "e"):  # three more tenants served: a bound of 2 logs
            tenants[scope].suggest(_session("x"))
        assert tenants["a"].acceptance is not log_a  # dropped, made again...
        assert tenants["a"].acceptance.feedback.rounds() == judged  # ...from the store
        assert tenants["b"].acceptance is log_b  # kept while its round waits
        classify = InstructionStep("Classify them as PFAS", (CallStep("classifier"),))
        assert log_b.observe("s2", _session("s2", classify)) is not None
        assert not log_b.waiting
        verdicts = b.store.query("suggestion-acceptance", {"session": "s2"}).dicts()
        assert {str(r.get("acceptance")) for r in verdicts if str(r["rank"]) == "1"} >= {"taken"}


def test_logs_with_pending_rounds_are_kept_up_to_twice_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SCOPE_CACHE_ENV, "2")
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        logs = {}
        for scope in ("a", "b", "c", "d", "e", "f"):  # every session left with a round shown
            view = memory.with_scope(scope)
            view.save_many(PAST)
            view.record_suggestions("s", view.suggest(_session("s")))
            logs[scope] = view.acceptance
            assert logs[scope].waiting
        # Twice the bound kept; the two least recent dropped (their rounds stay undecided).
        assert len(memory._learning) == 4
        assert all(memory.with_scope(s).acceptance is logs[s] for s in "fedc")


def test_the_last_workflow_asked_is_kept_for_the_most_recent_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        memory.save_many(PAST)
        monkeypatch.setattr(memory, "_asked", LastAsked(limit=2))
        for sid in ("s1", "s2", "s3"):  # sessions that ask and never record
            memory.suggest(_session(sid))
        assert len(memory._asked) == 2 and memory._asked.take("default", "s1") is None
        # A recorded round takes its session's workflow; an empty one leaves nothing behind.
        memory.record_suggestions("s3", memory.suggest(_session("s3")))
        assert memory.acceptance.waiting
        memory.record_suggestions("s2", [])
        assert len(memory._asked) == 0
