"""LangChain chat models as the engine's :class:`~em_plugin.suggest.chat.ChatModel`.

Registered when :mod:`integrations.langgraph` is imported, and found through the
``em_plugin.chat_models`` entry point (pyproject.toml) when a user passes a LangChain model to
``EpisodicMemory(llm=...)`` without importing the integration.
"""

from __future__ import annotations

import asyncio
from typing import Any

from em_plugin.errors import SuggestionError
from em_plugin.suggest.chat import Messages, register_chat_adapter

__all__ = ["LangChainChat", "adapt"]


class LangChainChat:
    """A LangChain chat model answering ``(role, text)`` message tuples.

    Anything with ``invoke`` will do, such as a ``BaseChatModel`` or a runnable chain ending in one.

    Args:
        model: The LangChain model; every LangChain chat model accepts message tuples.
    """

    def __init__(self, model: Any) -> None:
        self.model = model

    def complete(self, messages: Messages) -> str:
        """Call ``model.invoke`` and return the answer's text."""
        return _text(self.model.invoke(list(messages)))

    async def acomplete(self, messages: Messages) -> str:
        """Call ``model.ainvoke`` (``invoke`` in a worker thread when it has none)."""
        ainvoke = getattr(self.model, "ainvoke", None)
        if callable(ainvoke):
            return _text(await ainvoke(list(messages)))
        return _text(await asyncio.to_thread(self.model.invoke, list(messages)))


def adapt(model: Any) -> LangChainChat | None:
    """Wrap ``model`` when it is LangChain-shaped (has ``invoke``); ``None`` otherwise."""
    return LangChainChat(model) if callable(getattr(model, "invoke", None)) else None


def _text(answer: Any) -> str:
    """The text of an ``AIMessage`` (a string, or a list of content blocks) or of a string."""
    if isinstance(answer, str):
        return answer
    content = getattr(answer, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(getattr(block, "text", None), str):
                parts.append(block.text)
        return "".join(parts)
    raise SuggestionError(f"cannot read text from a chat answer of type {type(answer).__name__}")


register_chat_adapter("langchain", adapt)
