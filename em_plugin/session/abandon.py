"""Close sessions nobody saved: each one idle long enough is saved with outcome "abandoned"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from em_plugin.errors import ConfigurationError
from em_plugin.session.journal import SessionJournal

ABANDONED = "abandoned"


def idle_bound(older_than: timedelta | float) -> timedelta:
    """Return ``older_than`` as a non-negative :class:`timedelta` (numbers are seconds).

    Raises:
        ConfigurationError: When it is not a duration or a number of seconds >= 0.
    """
    if isinstance(older_than, bool) or not isinstance(older_than, timedelta | int | float):
        raise ConfigurationError(
            f"older_than must be a timedelta or a number of seconds, got {older_than!r}"
        )
    bound = older_than if isinstance(older_than, timedelta) else timedelta(seconds=older_than)
    if bound < timedelta(0):
        raise ConfigurationError(f"older_than must be >= 0, got {older_than!r}")
    return bound


def abandon_idle(
    memory: Any,
    journal: SessionJournal,
    *,
    older_than: timedelta | float,
    scope: str | None = None,
    now: datetime | None = None,
) -> list[str]:
    """Save every unsaved journaled session idle longer than ``older_than`` as "abandoned".

    Each is compiled from its journal, saved under the id a ``/save`` gives
    (``session/<session_id>``) with outcome ``"abandoned"``, and its journal marked saved.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        journal: The store's session journal.
        older_than: The idle time (a timedelta, or seconds).
        scope: Only this scope's sessions (default: every scope).
        now: The current time (default: now, UTC).

    Returns:
        The ids of the workflows saved, in the order of the sessions' last activity (latest
        first).

    Raises:
        ConfigurationError: On an invalid ``older_than``.
        StoreError: When the store fails (the sessions saved so far stay saved).
    """
    cutoff = (now or datetime.now(UTC)) - idle_bound(older_than)
    saved: list[str] = []
    for session in journal.unsaved(scope=scope):
        if _parse(session.last_activity) > cutoff:
            continue
        trajectory = journal.replay(session.scope, session.session_id)
        workflow = trajectory.compile()
        if not workflow.steps:
            continue  # nothing but commands: no workflow to keep
        stored = memory.with_scope(session.scope).save(workflow.replace(outcome=ABANDONED))
        journal.mark_saved(
            session.scope, session.session_id, events=len(trajectory), workflow_id=stored.id
        )
        saved.append(stored.id)
    return saved


def _parse(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
