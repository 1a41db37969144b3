"""One chat session with the demo crew, the same way for LangGraph and BeeAI.

:class:`ChatSession` hides the framework: ``ask(text)`` sends one user message and returns a
:class:`Turn` with the answer exactly as the user receives it (the crew's result, then
``"\\n\\n"`` and the suggestions) and the :class:`~em_plugin.suggest.types.Suggestion` objects
behind it, so the demo can show where each suggestion came from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from em_plugin.suggest.types import Suggestion

__all__ = ["BeeAISession", "ChatSession", "LangGraphSession", "SuggestionTap", "Turn"]


@dataclass(frozen=True)
class Turn:
    """What one user message got back."""

    text: str
    """The whole answer, as the user receives it."""
    suggestions: tuple[Suggestion, ...] = ()
    """The suggestions appended to it (none for commands)."""
    crew_answer: str | None = None
    """The crew's own result, when the framework reports it separately."""


class SuggestionTap:
    """Keeps the suggestions shown per session, with their evidence, for the demo to display.

    Pass it as ``EpisodicMemory(on_suggestions=tap)``: the memory calls it each time an
    integration shows suggestions (the public hook of
    :meth:`~em_plugin.memory.EpisodicMemory.record_suggestions`).
    """

    def __init__(self) -> None:
        self.shown: dict[str, tuple[Suggestion, ...]] = {}

    def __call__(self, session_id: str, suggestions: Sequence[Suggestion]) -> None:
        """Remember the suggestions just shown in a session."""
        self.shown[str(session_id)] = tuple(suggestions)

    def take(self, session_id: str) -> tuple[Suggestion, ...]:
        """Return and forget the suggestions last recorded for a session."""
        return self.shown.pop(session_id, ())


class ChatSession:
    """A chat session with one crew (see the module doc)."""

    framework: str = ""
    session_id: str = ""

    def ask(self, text: str) -> Turn:
        """Send one user message; return what it got back."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the session holds."""


class LangGraphSession(ChatSession):
    """A LangGraph thread of the demo crew.

    Args:
        crew: A :class:`~integrations.demo.crews.LangGraphCrew`.
        session_id: The thread id.
        tap: Where the memory's recorded suggestions are read.
    """

    framework = "LangGraph"

    def __init__(self, crew: Any, session_id: str, tap: SuggestionTap) -> None:
        self.crew = crew
        self.session_id = session_id
        self.tap = tap

    def ask(self, text: str) -> Turn:
        """Send one user message through the graph."""
        self.tap.take(self.session_id)
        answer = self.crew.ask(text, self.session_id)
        return Turn(answer, self.tap.take(self.session_id))


class BeeAISession(ChatSession):
    """A BeeAI conversation of the demo crew, run on its own event loop.

    Args:
        crew: A :class:`~integrations.demo.crews.BeeAICrew` (one conversation).
        session_id: The session id given to the episodic-memory agent.
    """

    framework = "BeeAI"

    def __init__(self, crew: Any, session_id: str) -> None:
        self.crew = crew
        self.session_id = session_id
        # One loop for the whole conversation: BeeAI objects may keep loop-bound state.
        self._loop = asyncio.new_event_loop()

    def ask(self, text: str) -> Turn:
        """Send one user message to the episodic-memory agent."""
        output = self._loop.run_until_complete(self.crew.ask(text, self.session_id))
        crew_answer = output.answer if output.crew_output is not None else None
        return Turn(output.last_message.text, tuple(output.suggestions), crew_answer)

    def close(self) -> None:
        """Close the session's event loop."""
        self._loop.close()
