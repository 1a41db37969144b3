"""The acceptance logs of the scopes a memory serves, as many as its scope cache bounds.

A memory serving many tenants (a ``with_scope`` view per request) makes an
:class:`~em_plugin.suggest.acceptance.AcceptanceLog` for every scope it suggests for. Kept for
ever, they grew the process by about 2.6 KB for every scope ever served (docs/performance.md,
"Many tenants"). A log holds nothing the store lacks except its rounds still waiting for their
session's next turn: its counts are read back from the judged rounds' records
(:meth:`~em_plugin.suggest.feedback.FeedbackStats.from_store`). So the least recently used logs
beyond the bound are dropped and made again on the scope's next use, those with a pending round
last: they are kept up to twice the bound. A pending round dropped stays undecided, as the last
round of a session that never goes on does (docs/suggestions.md, "Acceptance").

:class:`LastAsked` bounds the other thing a memory keeps per session for judging rounds: the
workflow it last suggested for, which ``record_suggestions`` uses when not given one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from em_plugin.suggest.acceptance import AcceptanceLog
from provenance.model import Workflow

__all__ = ["LAST_ASKED_SESSIONS", "AcceptanceLogs", "LastAsked"]

#: Sessions whose last suggested-for workflow a memory keeps (the least recently asked dropped).
LAST_ASKED_SESSIONS = 10_000


class AcceptanceLogs:
    """A memory's acceptance logs by scope, the least recently used dropped beyond ``limit``.

    Args:
        limit: How many logs to keep (``None``: every one); logs with a pending round are
            kept up to twice as many.
    """

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._logs: OrderedDict[str, AcceptanceLog] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._logs)

    def get(self, scope: str, make: Callable[[], AcceptanceLog]) -> AcceptanceLog:
        """Return the scope's log, made by ``make`` when there is none; drop idle ones beyond.

        Args:
            scope: The scope.
            make: Makes the scope's log (reading its judged rounds from the store).

        Returns:
            The one log of the scope while it is kept.
        """
        with self._lock:
            found = self._logs.get(scope)
            if found is not None:
                self._logs.move_to_end(scope)
                return found
        made = make()  # outside the lock: it reads the store
        with self._lock:
            found = self._logs.setdefault(scope, made)
            self._logs.move_to_end(scope)
            self._trim()
        return found

    def _trim(self) -> None:
        if self._limit is None or len(self._logs) <= self._limit:
            return
        idle_first = sorted(list(self._logs)[:-1], key=lambda s: self._logs[s].waiting)  # stable
        for scope in idle_first:  # never the one just used
            excess = len(self._logs) - self._limit
            if excess <= 0 or (self._logs[scope].waiting and len(self._logs) <= 2 * self._limit):
                return
            del self._logs[scope]


class LastAsked:
    """The workflow each (scope, session) was last suggested for, for the most recent sessions.

    A session whose round is recorded takes its entry; one that asks and never records (an app
    calling ``suggest`` alone, a session that ends) would otherwise keep it for ever.

    Args:
        limit: How many sessions to keep.
    """

    def __init__(self, limit: int = LAST_ASKED_SESSIONS) -> None:
        self._limit = limit
        self._workflows: OrderedDict[tuple[str, str], Workflow] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._workflows)

    def put(self, scope: str, session: str, workflow: Workflow) -> None:
        """Note the workflow a session was just suggested for; drop the least recent beyond."""
        with self._lock:
            self._workflows[(scope, session)] = workflow
            self._workflows.move_to_end((scope, session))
            while len(self._workflows) > self._limit:
                self._workflows.popitem(last=False)

    def take(self, scope: str, session: str) -> Workflow | None:
        """Return and forget the session's last workflow (``None`` when not kept)."""
        with self._lock:
            return self._workflows.pop((scope, session), None)
