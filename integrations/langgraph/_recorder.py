"""A standalone recorder of sessions from the run hierarchy (for inspection, without a node).

:class:`~integrations.langgraph.EpisodicMemoryNode` needs no recorder: it collects each turn's
calls from the process's :class:`~integrations.langgraph._capture.RunCapture` and keeps them in
the graph's checkpointed state. :class:`TrajectoryRecorder` applies the same capture to runs it is
passed to and keeps, per session (``thread_id``), the calls nobody else collected, e.g. to look at
what a crew without the memory node did.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage, convert_to_messages

from em_plugin.capture.trajectory import Trajectory
from em_plugin.errors import ConfigurationError
from em_plugin.session.turns import ToolCall, Turn, replay
from integrations.langgraph._capture import CallRecord, RunCapture, now
from integrations.langgraph._context import FRAMEWORK
from integrations.langgraph._messages import message_text


class TrajectoryRecorder(RunCapture):
    """Records each run's instruction and calls (every depth) into its session's trajectory.

    Args:
        max_sessions: How many sessions to keep; the least recently used are dropped.

    Raises:
        ConfigurationError: When ``max_sessions`` is not an integer >= 1.

    Example:
        >>> recorder = TrajectoryRecorder()
        >>> graph.invoke(inputs, {"callbacks": [recorder], "configurable": {"thread_id": "t1"}})
        >>> recorder.trajectory("t1").compile()
    """

    def __init__(self, *, max_sessions: int = 256) -> None:
        super().__init__()
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigurationError(f"max_sessions must be an integer >= 1, got {max_sessions!r}")
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Trajectory] = OrderedDict()
        self._sessions_lock = threading.Lock()

    def trajectory(self, session_id: str) -> Trajectory | None:
        """Return the recorded trajectory of a session, if any."""
        with self._sessions_lock:
            return self._sessions.get(session_id)

    def forget(self, session_id: str) -> None:
        """Drop a session's recording."""
        with self._sessions_lock:
            self._sessions.pop(session_id, None)

    def finished(
        self,
        session: str | None,
        inputs: Any,
        records: list[CallRecord],
        *,
        started: str | None = None,
    ) -> None:
        """Append a finished run (its instruction and uncollected calls) to its session."""
        if session is None:
            return
        with self._sessions_lock:
            trajectory = self._sessions.get(session)
            if trajectory is None:
                trajectory = self._sessions[session] = Trajectory(session, framework=FRAMEWORK)
                while len(self._sessions) > self.max_sessions:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(session)
            turn = Turn(
                instruction=_last_human_text(inputs),
                started=started or now(),
                calls=tuple(ToolCall.from_json(record) for record in records),
            )
            replay([turn], trajectory)


def _last_human_text(inputs: Any) -> str | None:
    if not isinstance(inputs, Mapping):
        return None
    raw = inputs.get("messages")
    if not raw:
        return None
    try:
        messages = convert_to_messages(raw)
    except Exception:  # noqa: BLE001 - not a message list: no instruction to record
        return None
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return None
