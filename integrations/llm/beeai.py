"""SmolLM2 (see :mod:`integrations.llm.local`) as a BeeAI ``ChatModel``.

A plain-text model: it answers with text only (no tool calls), which is what the LLM suggester
asks of it. Generation runs in a worker thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from beeai_framework.backend import AssistantMessage, ChatModel, ChatModelOutput
from beeai_framework.backend.types import ChatModelInput
from beeai_framework.context import RunContext

from integrations.llm.local import (
    LOCAL_MODEL,
    MAX_NEW_TOKENS,
    PACKAGE,
    LocalModel,
    generate,
    load_local_model,
)

__all__ = ["LocalBeeAIChatModel", "local_beeai_chat_model"]

_ROLES = {"system": "system", "user": "user", "assistant": "assistant"}


class LocalBeeAIChatModel(ChatModel):
    """A BeeAI chat model answering with the local SmolLM2 weights.

    Args:
        local: The loaded model (:func:`~integrations.llm.local.load_local_model`).
        max_new_tokens: New tokens per answer.
    """

    def __init__(self, local: LocalModel, *, max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        super().__init__()
        self._local = local
        self._max_new_tokens = max_new_tokens

    @property
    def model_id(self) -> str:
        """The model's id."""
        return f"{PACKAGE}/{LOCAL_MODEL}"

    @property
    def provider_id(self) -> Any:
        """The provider id (part of the emitter namespace ``backend.<provider>.chat``)."""
        return "local"

    async def _create(self, input: ChatModelInput, run: RunContext) -> ChatModelOutput:
        messages = [
            {"role": _ROLES.get(str(m.role), "user"), "content": m.text}
            for m in input.messages
            if str(m.role) in _ROLES
        ]
        text = await asyncio.to_thread(generate, self._local, messages, self._max_new_tokens)
        return ChatModelOutput(output=[AssistantMessage(text)], finish_reason="stop")

    async def _create_stream(
        self, input: ChatModelInput, run: RunContext
    ) -> AsyncGenerator[ChatModelOutput]:
        # Only used with stream=True: the whole answer is one chunk.
        yield await self._create(input, run)

    async def clone(self) -> LocalBeeAIChatModel:
        """Return a model sharing the same loaded weights."""
        return LocalBeeAIChatModel(self._local, max_new_tokens=self._max_new_tokens)


def local_beeai_chat_model(max_new_tokens: int = MAX_NEW_TOKENS) -> LocalBeeAIChatModel:
    """Return SmolLM2 as a BeeAI ``ChatModel`` (loads the weights once per process)."""
    return LocalBeeAIChatModel(load_local_model(), max_new_tokens=max_new_tokens)
