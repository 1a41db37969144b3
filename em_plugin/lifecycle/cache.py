"""The lifecycle's own state: per scope, the hidden ids and the active procedures.

A memory holds one :class:`LifecycleCache`, shared by its scope views and its
:class:`~em_plugin.lifecycle.Lifecycle` objects; the engine reads the hidden ids through it on
every write and catch-up, and keeps no lifecycle state of its own.
"""

from __future__ import annotations

import time

from em_plugin.state.versions import HiddenIds
from provenance.lifecycle import ProcedureRecord

__all__ = ["LifecycleCache", "ProcedureCache"]


class ProcedureCache:
    """Per scope, the active procedures as last read, kept at most ``interval`` seconds.

    Suggestions read them on every turn; a write of procedure records drops the scope's entry
    (:meth:`drop`), and another process's writes show after ``interval``.

    Args:
        interval: Seconds an entry serves reads (the memory's ``poll_interval``).
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._entries: dict[str, tuple[float, list[ProcedureRecord]]] = {}

    def get(self, scope: str) -> list[ProcedureRecord] | None:
        """Return the scope's cached active procedures, or ``None`` when absent or too old."""
        entry = self._entries.get(scope)
        if entry is None or time.monotonic() - entry[0] >= self.interval:
            return None
        return entry[1]

    def put(self, scope: str, records: list[ProcedureRecord]) -> None:
        """Keep the scope's active procedures as read now."""
        self._entries[scope] = (time.monotonic(), records)

    def drop(self, scope: str) -> None:
        """Forget the scope's entry (re-read at the next suggestion)."""
        self._entries.pop(scope, None)


class LifecycleCache:
    """The lifecycle's state of one memory: per scope, hidden ids and active procedures.

    Args:
        interval: Seconds an active-procedure entry serves reads (the memory's
            ``poll_interval``); hidden ids are dropped when the store's change log moves.
    """

    def __init__(self, interval: float) -> None:
        self.hidden = HiddenIds()
        self.procedures = ProcedureCache(interval)
