"""Whether a served crew's memory was wired so that it sees each request's conversation.

BeeAI's servers (A2A, the OpenAI-compatible Responses API, Zed's Agent Client Protocol over
stdio) keep one conversation memory per conversation id in a ``MemoryManager`` and clone the
agent for each request. The memory learns the A2A and Responses conversation ids only through
:class:`~integrations.beeai.SessionMemoryManager`; a server given another manager (or none, so
BeeAI's default) leaves sessions unnamed by the conversation: the Responses API makes every
request a session of its own (``/save`` finds nothing to save), and elsewhere another worker or a
restarted server cannot continue a session. :func:`unkeyed_server` finds, once, the server a
run is served by and tells whether it is wired that way; the middleware and the EM agent then
log one warning naming the fix, unless the run's session is named anyway (Zed's ACP adapter
names the session of the prompt it serves with any manager:
:func:`~integrations.beeai._deployment.deployment_session`).

The server is found on the threads' stacks: its ``serve()`` runs the event loop every request
runs in, and holds the manager as ``_memory_manager``. OpenAI chat completions are left out:
that API keeps no conversation (the client replays the history, from which the session is
found).
"""

from __future__ import annotations

import logging
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import Any

from integrations.beeai._deployment import SessionMemoryManager

__all__ = ["WIRING_FIX", "Serving", "WiringCheck", "serving_server", "unkeyed_server"]

_ADAPTERS = "beeai_framework.adapters."

#: The warning a mis-wired server gets (``{server}``: its class name).
WIRING_FIX = (
    "the episodic memory is served by BeeAI's {server} without "
    "memory_manager=SessionMemoryManager(): it does not see the requests' conversation ids, so "
    "sessions are not the conversations (a request may be a session of its own, and /save then "
    "finds nothing to save; another worker or a restarted server cannot continue a session). "
    "Pass memory_manager=SessionMemoryManager() (from integrations.beeai) to the server "
    "(docs/deploy.md)"
)


@dataclass(frozen=True)
class Serving:
    """The BeeAI server serving a run.

    Attributes:
        server: Its class name (``A2AServer``, ``OpenAIServer``, ``ACPZedServer``, ...).
        keyed: Whether its requests name their conversation to the memory: it holds a
            :class:`SessionMemoryManager`, or serves OpenAI chat completions (stateless: the
            client replays the history, from which the session is found).
    """

    server: str
    keyed: bool


def serving_server() -> Serving | None:
    """Return the BeeAI server serving this run, if one does.

    Returns:
        The server and whether it is session-keyed; ``None`` for a run no server serves.
    """
    # Every thread's stack: BeeAI binds middlewares on a worker thread and runs event handlers
    # in tasks of their own, while serve() sits under the event loop's thread.
    for top in sys._current_frames().values():
        frame: FrameType | None = top
        while frame is not None:
            owner = frame.f_locals.get("self")
            if owner is not None and _is_server(owner):
                manager = getattr(owner, "_memory_manager", None)
                keyed = _keeps_no_conversation(owner) or isinstance(manager, SessionMemoryManager)
                return Serving(type(owner).__name__, keyed)
            frame = frame.f_back
    return None


class WiringCheck:
    """The server serving an agent's runs, found at its first run, and one warning if unkeyed.

    One instance is shared by an agent and its clones (BeeAI's servers clone per request).

    Args:
        log: The logger the warning goes to.
    """

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._checked = self._warned = False
        self._serving: Serving | None = None

    def serving(self) -> Serving | None:
        """Return the server serving the runs (looked for at the first call only)."""
        with self._lock:
            if not self._checked:
                self._checked = True
                self._serving = serving_server()
            return self._serving

    def warn(self, server: str) -> None:
        """Log :data:`WIRING_FIX` for ``server``, the first time only."""
        with self._lock:
            if self._warned:
                return
            self._warned = True
        self._log.warning(WIRING_FIX.format(server=server))


def unkeyed_server() -> str | None:
    """Return the class name of the BeeAI server serving this run without a session-keyed manager.

    Returns:
        The name (``A2AServer``, ``OpenAIServer``, ``ACPZedServer``, an executor's or API's
        class), or ``None`` when the run is not served, or served with a
        :class:`SessionMemoryManager`, or by the chat-completions API.
    """
    serving = serving_server()
    return serving.server if serving is not None and not serving.keyed else None


def _is_server(owner: Any) -> bool:
    module = type(owner).__module__
    return module.startswith(_ADAPTERS) and ".serve" in module and hasattr(owner, "_memory_manager")


def _keeps_no_conversation(owner: Any) -> bool:
    """Whether it serves OpenAI chat completions (stateless: the client replays the history)."""
    if ".chat_completion" in type(owner).__module__:
        return True
    api = getattr(getattr(owner, "_config", None), "api", None)
    return str(getattr(api, "value", api)) == "chat-completion"
