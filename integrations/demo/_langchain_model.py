"""The demo crew's offline LangChain chat model: a real ``BaseChatModel`` driven by the router.

:class:`OfflineChatModel` behaves like a tool-calling LLM with no network: ``bind_tools`` binds
the tools' OpenAI-style schemas (names, descriptions, argument schemas) exactly as provider
models do, and each ``_generate`` reads the conversation and asks
:meth:`~integrations.demo.router.OfflineRouter.respond` what to do: a new human instruction gets an
``AIMessage`` with ``tool_calls`` (or a plain answer when no tool fits); a ``ToolMessage`` gets
the final answer built from the tool's result.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from integrations.demo.router import ChatTurn, OfflineRouter, ToolSpec

__all__ = ["OfflineChatModel", "tool_specs"]


class OfflineChatModel(BaseChatModel):
    """A deterministic tool-calling chat model that routes instructions by embedding similarity.

    Args:
        router: The :class:`~integrations.demo.router.OfflineRouter` that makes the decisions.

    Example::

        model = OfflineChatModel(router=OfflineRouter(embedder))
        agent = create_agent(model, tools=[product_extractor_tool])
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    router: OfflineRouter = Field(exclude=True)
    model_name: str = "em-plugin-offline-router"
    # Streaming would route through ``_stream``, which this model does not implement; LangGraph's
    # "messages" stream mode would otherwise ask for it (langgraph notes, pitfall 2).
    disable_streaming: bool = True

    @property
    def _llm_type(self) -> str:
        return "em-plugin-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[Mapping[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way provider models do: as OpenAI tool schemas passed to each call.

        Args:
            tools: LangChain tools, functions, pydantic models or OpenAI tool dicts.
            tool_choice: Accepted for compatibility; the router decides whether to call a tool.
            **kwargs: Further call arguments to bind.

        Returns:
            This model with ``tools`` bound.
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return super().bind(tools=formatted, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        decision = self.router.respond(_turns(messages), tool_specs(kwargs.get("tools") or ()))
        if decision.tool is not None:
            call_id = f"call_{uuid.uuid4().hex[:16]}"
            message = AIMessage(
                content="",
                tool_calls=[{"name": decision.tool, "args": dict(decision.args), "id": call_id}],
            )
        else:
            message = AIMessage(content=decision.answer or "")
        return ChatResult(generations=[ChatGeneration(message=message)])


def tool_specs(tools: Sequence[Mapping[str, Any]]) -> list[ToolSpec]:
    """Read OpenAI-style tool schemas (what ``bind_tools`` binds) as router tool specs."""
    specs = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {}
        specs.append(
            ToolSpec(
                name=str(function["name"]),
                description=str(function.get("description") or ""),
                parameters=tuple((parameters.get("properties") or {}).keys()),
                required=tuple(parameters.get("required") or ()),
            )
        )
    return specs


def _turns(messages: Sequence[BaseMessage]) -> list[ChatTurn]:
    names: dict[str, str] = {}
    turns: list[ChatTurn] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append(ChatTurn("user", message.text))
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                names[str(call.get("id"))] = call["name"]
            turns.append(ChatTurn("assistant", message.text))
        elif isinstance(message, ToolMessage):
            turns.append(
                ChatTurn(
                    "tool",
                    _content_text(message.content),
                    tool=message.name or names.get(message.tool_call_id),
                    error=message.status == "error",
                )
            )
    return turns


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        ]
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)
