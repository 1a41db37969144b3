"""An offline, scripted LangChain chat model for tests, demos and benchmarks.

:class:`ScriptedChatModel` is a LangChain ``BaseChatModel`` (LangChain's
``GenericFakeChatModel``) that accepts ``bind_tools``, so ``create_agent``, ``ToolNode`` loops
and LangGraph graphs run on it: each call answers the next scripted ``AIMessage`` (a tool call
made with :func:`call`, or the answer). The framework-free test doubles (a fake memory, a scripted
chat model for the memory's LLM suggester) are in :mod:`em_plugin.testing`; BeeAI's scripted
model is ``integrations.beeai.testing.ScriptedChatModel``.

Example::

    model = ScriptedChatModel().load([call("lookup_order", {"order_id": "A-17"}, "c1"),
                                      AIMessage("Shipped.")])
    agent = create_agent(model, [lookup_order], checkpointer=InMemorySaver())
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from pydantic import Field

__all__ = ["ScriptedChatModel", "call"]


class ScriptedChatModel(GenericFakeChatModel):
    """A chat model that accepts ``bind_tools`` and answers from a reloadable script."""

    messages: Any = Field(default_factory=lambda: iter(()))
    """The scripted answers still to give (an iterator; see :meth:`load`)."""
    seen: list = Field(default_factory=list)
    """Every message list the model was sent, in order."""
    disable_streaming: bool = True  # GenericFakeChatModel's stream path drops tool calls

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Return the model itself: the script decides which tool is called."""
        return self

    def load(self, script: Iterable[AIMessage]) -> ScriptedChatModel:
        """Replace the script with ``script`` (e.g. the next turn's answers); return the model."""
        self.messages = iter(list(script))
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    """Script an AI message making one tool call.

    Args:
        name: The tool's name.
        args: The call's arguments.
        call_id: The model's id of the call.

    Returns:
        The message.
    """
    return AIMessage(
        "", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )
