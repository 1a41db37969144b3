"""Keep the memory's own text out of every model input.

The memory shows suggestions after the crew's answer, and answers ``/save`` and ``/suggest``
itself. Servers store and replay what the user saw (BeeAI's OpenAI-compatible Responses API adds
the returned message to the conversation; chat-completion clients send the whole history back;
handoffs copy the coordinator's memory to sub-agents), so that text can come back as model input.
It is recognised in two ways:

- messages the memory built carry ``meta[MARK]`` (``"suggestions"``: the shown copy of an answer,
  whose last text part is the suggestions; ``"reply"``: a command reply);
- text that lost its meta on the wire ends with the suggestions block exactly as
  :func:`em_plugin.suggest.types.format_suggestions` writes it (a blank line, ``Suggested next
  steps…:``, numbered lines), which is cut off.

A user message that is one of the memory's commands is dropped with the reply that follows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from beeai_framework.backend import AnyMessage, AssistantMessage, MessageTextContent, UserMessage

__all__ = ["MARK", "clean_messages", "strip_suggestions"]

#: The message-meta key marking text the memory added.
MARK = "em_plugin"
_TAIL = re.compile(r"\n\nSuggested next steps[^\n]*:\n\d+\. .*\Z", re.DOTALL)


def strip_suggestions(text: str) -> str:
    """Return ``text`` without a trailing suggestions block."""
    return _TAIL.sub("", text)


def clean_messages(messages: Sequence[Any], is_command: Callable[[str], bool]) -> list[Any] | None:
    """Return the messages without the memory's text, or ``None`` when there was none.

    Roles are not trusted: BeeAI's chat-completions server turns a replayed assistant message
    into a user message, so the suggestions block is cut from any user or assistant text, and
    the message after a command in a history (its reply) goes with it.

    Args:
        messages: A model's (or agent's) input messages, or a replayed history.
        is_command: Whether a user text is one of the memory's commands.

    Returns:
        A new list (messages that changed are copies; the others are the same objects), or
        ``None`` when nothing had to change.
    """
    cleaned: list[Any] = []
    changed = False
    skip_reply = False
    for message in messages:
        if skip_reply and isinstance(message, UserMessage | AssistantMessage):
            skip_reply, changed = False, True
            continue
        skip_reply = False
        if isinstance(message, UserMessage) and is_command(message.text):
            skip_reply, changed = True, True
            continue
        if isinstance(message, UserMessage | AssistantMessage):
            if (message.meta or {}).get(MARK) == "reply":
                changed = True
                continue
            copy = _without_suggestions(message)
            if copy is not message:
                changed = True
                message = copy
        cleaned.append(message)
    return cleaned if changed else None


def _without_suggestions(message: UserMessage | AssistantMessage) -> AnyMessage:
    parts: list[Any] = []
    changed = False
    for part in message.content:
        if isinstance(part, MessageTextContent):
            text = strip_suggestions(part.text)
            if text != part.text:
                changed = True
                if not text:
                    continue
                part = MessageTextContent(text=text)
        parts.append(part)
    if not changed:
        return message
    meta = {k: v for k, v in (message.meta or {}).items() if k != MARK}
    return type(message)(parts or "", meta, id=message.id)
