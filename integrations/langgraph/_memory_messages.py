"""The memory's own messages in a LangGraph thread, and the crew's view without them.

The user sees the suggestions after the crew's unchanged answer, as their own ``AIMessage``
(named ``episodic_memory`` and marked in ``response_metadata``); ``/save`` and ``/suggest`` and
their replies are memory traffic too. None of it is the crew's conversation: the middleware
strips it from every model request, and the node removes it from the thread when the next turn
starts (through its router), so the crew's model never reads the suggestions as its own words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from em_plugin.capture.trajectory import is_command
from em_plugin.session import SEPARATOR


def message_text(message: BaseMessage) -> str:
    """Return a message's text (content blocks joined), never raising."""
    try:
        text = message.text
    except Exception:  # noqa: BLE001 - exotic content: fall back to its repr
        return str(message.content)
    return text if isinstance(text, str) else str(text)


MEMORY_NAME = "episodic_memory"
#: The custom stream chunk key (``stream_mode="custom"``) and the ``astream_events`` custom
#: event name that carry the suggestions after the crew's answer.
SUGGESTIONS_EVENT = "episodic_memory_suggestions"
#: The ``response_metadata`` key marking the memory's messages; its value is the kind.
MEMORY_MARK = "episodic_memory"

Kind = Literal["suggestions", "reply"]


def memory_message(text: str, kind: Kind) -> AIMessage:
    """Return the memory's own message (suggestions, or a command's reply).

    Args:
        text: What the user reads.
        kind: ``"suggestions"`` or ``"reply"``.

    Returns:
        The marked message.
    """
    return AIMessage(text, name=MEMORY_NAME, response_metadata={MEMORY_MARK: kind})


def memory_kind(message: BaseMessage) -> str | None:
    """Tell the memory's own messages apart.

    Args:
        message: A thread message.

    Returns:
        ``"suggestions"`` or ``"reply"`` for the memory's messages, else ``None``.
    """
    if not isinstance(message, AIMessage):
        return None
    kind = (message.response_metadata or {}).get(MEMORY_MARK)
    return kind if isinstance(kind, str) else None


def is_memory_traffic(
    message: BaseMessage, command_of: Callable[[str], object] | None = None
) -> bool:
    """Tell whether a message belongs to the memory, not to the crew's conversation.

    Args:
        message: A thread message.
        command_of: Tells a command from a user message (default: any ``/word``).

    Returns:
        True for the memory's messages and the user's commands.
    """
    if memory_kind(message) is not None:
        return True
    if isinstance(message, HumanMessage):
        text = message_text(message)
        return bool(command_of(text)) if command_of is not None else is_command(text)
    return False


def crew_view(
    messages: Sequence[BaseMessage], command_of: Callable[[str], object] | None = None
) -> list[BaseMessage]:
    """Return the messages without the memory's traffic (what the crew's model may read).

    Args:
        messages: The thread's messages.
        command_of: Tells a command from a user message (default: any ``/word``).

    Returns:
        The messages, in order, without suggestions, commands and replies.
    """
    return [m for m in messages if not is_memory_traffic(m, command_of)]


def reply_text(messages: Sequence[BaseMessage]) -> str:
    """Return the last turn's answer as the user reads it.

    The crew's answer, then a blank line and the suggestions (when the memory showed any).

    Args:
        messages: The thread's messages after a turn (``graph.invoke(...)["messages"]``).

    Returns:
        The text.
    """
    if not messages:
        return ""
    last = messages[-1]
    if memory_kind(last) != "suggestions":
        return message_text(last)
    answer = next(
        (m for m in reversed(messages[:-1]) if isinstance(m, AIMessage) and memory_kind(m) is None),
        None,
    )
    suggestions = message_text(last)
    return message_text(answer) + SEPARATOR + suggestions if answer is not None else suggestions


def announce(text: str) -> None:
    """Stream the suggestions as their own chunk and event (never raises).

    ``stream_mode="custom"`` gets ``{"episodic_memory_suggestions": text}``;
    ``astream_events`` gets an ``on_custom_event`` named ``episodic_memory_suggestions``. The
    other stream modes see the memory's message itself ("messages", "updates", "values").

    Args:
        text: The suggestions as the user reads them.
    """
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()({SUGGESTIONS_EVENT: text})
    except Exception:  # noqa: BLE001 - outside a run or not streaming: nothing to announce
        pass
    try:
        from langchain_core.callbacks import dispatch_custom_event

        dispatch_custom_event(SUGGESTIONS_EVENT, {"text": text})
    except Exception:  # noqa: BLE001 - no parent run to attach the event to
        pass
