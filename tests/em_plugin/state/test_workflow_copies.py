"""``WorkflowCopies``: workflows round-trip through the SQLite file exactly, per scope, and a
failed write turns copies off and deletes the file (a copy must never be older than the index)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from em_plugin.state.workflow_copies import FILE_NAME, WorkflowCopies
from provenance.model import CallStep, Workflow
from tests.strategies import workflows


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(workflow=workflows)
def test_a_copy_is_the_workflow(tmp_path: Path, workflow: Workflow) -> None:
    copies = WorkflowCopies(tmp_path / FILE_NAME)
    try:
        copies.put_many([workflow])
        assert copies.get_many(workflow.scope, [workflow.id]) == [workflow]
        copies.remove(workflow.scope, [workflow.id])
        assert copies.get_many(workflow.scope, [workflow.id]) == []
    finally:
        copies.close()


def test_copies_are_per_scope_and_a_scope_clears_alone(tmp_path: Path) -> None:
    a = [Workflow(id=f"w{i}", scope="a", steps=(CallStep(name="t"),)) for i in range(1200)]
    b = Workflow(id="w1", scope="b", steps=(CallStep(name="u"),))
    with_copies = WorkflowCopies(tmp_path / FILE_NAME)
    with_copies.put_many([*a, b])
    ids = [w.id for w in a]
    assert sorted(w.id for w in with_copies.get_many("a", [*ids, "absent"])) == sorted(ids)
    assert with_copies.get_many("b", ["w1"]) == [b]
    with_copies.clear("a")
    assert with_copies.get_many("a", ids) == [] and with_copies.get_many("b", ["w1"]) == [b]
    with_copies.clear()
    assert with_copies.get_many("b", ["w1"]) == []
    with_copies.close()


class _FailingConnection:
    """A connection whose writes fail like a full disk; everything else is the real one."""

    def __init__(self, inner: sqlite3.Connection) -> None:
        self.inner = inner

    def executemany(self, *args: Any) -> Any:
        raise sqlite3.OperationalError("database or disk is full")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __enter__(self) -> Any:
        return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.inner.__exit__(*exc)


def test_a_failed_write_turns_copies_off_and_deletes_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / FILE_NAME
    copies = WorkflowCopies(path)
    old = Workflow(id="w", steps=(CallStep(name="old"),))
    copies.put_many([old])
    copies._db = _FailingConnection(copies._db)  # type: ignore[arg-type,assignment]
    with caplog.at_level(logging.WARNING, logger="em_plugin.memory"):
        copies.put_many([old.replace(steps=(CallStep(name="new"),))])  # no exception
    assert not copies.active and not path.exists()
    assert "workflow copies are off" in caplog.text and "disk is full" in caplog.text
    assert copies.get_many("default", ["w"]) == []  # never the old copy
    reopened = WorkflowCopies(path)
    assert reopened.get_many("default", ["w"]) == []
    reopened.close()
