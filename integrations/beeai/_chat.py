"""BeeAI chat models as the engine's :class:`~em_plugin.suggest.chat.ChatModel`.

Registered when :mod:`integrations.beeai` is imported, and found through the
``em_plugin.chat_models`` entry point (pyproject.toml) when a user passes a BeeAI ``ChatModel``
to ``EpisodicMemory(llm=...)`` without importing the integration.
"""

from __future__ import annotations

from typing import Any

from beeai_framework.backend.chat import ChatModel as BeeAIChatModel
from beeai_framework.backend.message import AnyMessage, SystemMessage, UserMessage

from em_plugin.errors import SuggestionError
from em_plugin.suggest.chat import AsyncChatModel, Messages, register_chat_adapter

__all__ = ["BeeAIChat", "adapt"]

_ROLES: dict[str, type[SystemMessage] | type[UserMessage]] = {
    "system": SystemMessage,
    "human": UserMessage,
}


class BeeAIChat(AsyncChatModel):
    """A BeeAI ``ChatModel``, called with its own message objects; sync calls run it to the end.

    Args:
        model: The BeeAI chat model.
    """

    def __init__(self, model: BeeAIChatModel) -> None:
        self.model = model

    async def acomplete(self, messages: Messages) -> str:
        """Run the model on ``SystemMessage``/``UserMessage`` objects; return its text."""
        built: list[AnyMessage] = []
        for role, text in messages:
            kind = _ROLES.get(role)
            if kind is None:
                raise SuggestionError(f"unknown message role {role!r}; use one of {sorted(_ROLES)}")
            built.append(kind(text))
        output = await self.model.run(built)
        return output.get_text_content()


def adapt(model: Any) -> BeeAIChat | None:
    """Wrap ``model`` when it is a BeeAI ``ChatModel``; ``None`` otherwise."""
    return BeeAIChat(model) if isinstance(model, BeeAIChatModel) else None


register_chat_adapter("beeai", adapt)
