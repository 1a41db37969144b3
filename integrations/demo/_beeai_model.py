"""The demo crew's offline BeeAI chat model: a real ``ChatModel`` driven by the router.

:class:`OfflineBeeAIChatModel` answers every request with exactly one tool call, as a
``RequirementAgent`` expects: a new user task gets a call of the tool the router picks (by
embedding similarity to the tools' descriptions), and once that tool's result is in the
conversation, a call of the built-in ``final_answer`` tool carrying the answer. When no tool fits,
the answer goes straight into ``final_answer``.
"""

from __future__ import annotations

import html
import json
import uuid
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from beeai_framework.backend import (
    AssistantMessage,
    ChatModel,
    ChatModelOutput,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from beeai_framework.backend.message import MessageToolCallContent
from beeai_framework.backend.types import ChatModelInput
from beeai_framework.context import RunContext

from integrations.demo.router import ChatTurn, OfflineRouter, ToolSpec

__all__ = ["FINAL_ANSWER", "OfflineBeeAIChatModel"]

FINAL_ANSWER = "final_answer"
"""The tool a ``RequirementAgent`` model calls to end its run."""

# RequirementAgent wraps each task as "...Your task: <prompt>" (its task prompt template, a
# Mustache template that HTML-escapes the prompt).
_TASK_MARKER = "Your task: "
# RequirementAgent renders a failed tool call with this opening (its tool-error template).
_TOOL_ERROR = "The tool has failed"


class OfflineBeeAIChatModel(ChatModel):
    """A deterministic BeeAI chat model that routes tasks to tools by embedding similarity.

    Args:
        router: The :class:`~integrations.demo.router.OfflineRouter` that makes the decisions.
        name: The model id shown in BeeAI events.

    Example::

        llm = OfflineBeeAIChatModel(OfflineRouter(embedder))
        agent = RequirementAgent(llm=llm, tools=[product_extractor_tool], name="extractor")
    """

    def __init__(self, router: OfflineRouter, *, name: str = "em-plugin-offline-router") -> None:
        super().__init__()
        self._router = router
        self._name = name

    @property
    def model_id(self) -> str:
        """The model's id."""
        return self._name

    @property
    def provider_id(self) -> Any:
        """The provider id (part of the emitter namespace ``backend.<provider>.chat``)."""
        return "offline"

    @property
    def router(self) -> OfflineRouter:
        """The router that makes the decisions."""
        return self._router

    async def _create(self, input: ChatModelInput, run: RunContext) -> ChatModelOutput:
        tools = list(input.tools or [])
        forced = input.tool_choice
        if forced is not None and not isinstance(forced, str):
            tools = [forced]
        decision = self._router.respond(_turns(input.messages), _specs(tools))
        if decision.tool is not None:
            return _tool_call(decision.tool, dict(decision.args))
        return _tool_call(FINAL_ANSWER, {"response": decision.answer or ""})

    async def _create_stream(
        self, input: ChatModelInput, run: RunContext
    ) -> AsyncGenerator[ChatModelOutput]:
        # Only used with stream=True: the whole response is one chunk.
        yield await self._create(input, run)

    async def clone(self) -> OfflineBeeAIChatModel:
        """Return a model sharing this one's router (``HandoffTool`` clones sub-agents' models)."""
        return OfflineBeeAIChatModel(self._router, name=self._name)


def _tool_call(tool: str, args: dict[str, Any]) -> ChatModelOutput:
    content = MessageToolCallContent(
        id=f"call_{uuid.uuid4().hex[:16]}",
        tool_name=tool,
        args=json.dumps(args, ensure_ascii=False),
    )
    return ChatModelOutput(output=[AssistantMessage(content)], finish_reason="tool_calls")


def _specs(tools: Sequence[Any]) -> list[ToolSpec]:
    specs = []
    for tool in tools:
        schema = tool.input_schema.model_json_schema()
        specs.append(
            ToolSpec(
                name=tool.name,
                description=tool.description or "",
                parameters=tuple((schema.get("properties") or {}).keys()),
                required=tuple(schema.get("required") or ()),
            )
        )
    return specs


def _turns(messages: Sequence[Any]) -> list[ChatTurn]:
    turns: list[ChatTurn] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, UserMessage):
            text = message.text
            _, marker, task = text.rpartition(_TASK_MARKER)
            turns.append(ChatTurn("user", html.unescape(task) if marker else text))
        elif isinstance(message, AssistantMessage):
            turns.append(ChatTurn("assistant", message.text))
        elif isinstance(message, ToolMessage):
            for result in message.get_tool_results():
                if result.tool_name == FINAL_ANSWER:
                    continue
                text = result.result if isinstance(result.result, str) else str(result.result)
                error = text.startswith(_TOOL_ERROR)
                turns.append(ChatTurn("tool", text, tool=result.tool_name, error=error))
    return turns
