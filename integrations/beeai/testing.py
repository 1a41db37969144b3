"""An offline, scripted BeeAI chat model for tests, demos and benchmarks.

BeeAI ships no fake model. :class:`ScriptedChatModel` implements the framework's ``ChatModel``
interface and answers from a script: each item is a :class:`ScriptStep` (a tool call or plain
text) or a callable that builds one from the :class:`~beeai_framework.backend.types.ChatModelInput`
(to react to tool results). A ``RequirementAgent`` ends its run when the model calls the built-in
``final_answer`` tool, so scripts end each turn with :func:`final`.

Example::

    llm = ScriptedChatModel([call("lookup_order", order_id="A-17"), final("Shipped.")])
    agent = RequirementAgent(llm=llm, tools=[lookup_order], name="coordinator")
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from beeai_framework.backend import AssistantMessage, ChatModel, ChatModelOutput, ToolMessage
from beeai_framework.backend.message import MessageToolCallContent
from beeai_framework.backend.types import ChatModelInput
from beeai_framework.context import RunContext

__all__ = ["ScriptStep", "ScriptedChatModel", "call", "final", "last_tool_result", "say"]


@dataclass(frozen=True)
class ScriptStep:
    """One scripted model response: a single tool call, or plain text."""

    tool: str | None = None
    """The tool to call; ``None`` for a plain-text response."""
    args: dict[str, Any] = field(default_factory=dict)
    """The call's arguments (serialised to the JSON string BeeAI expects)."""
    text: str | None = None
    """The text of a plain-text response."""


ScriptItem = ScriptStep | Callable[[ChatModelInput], ScriptStep]


def call(tool: str, /, **args: Any) -> ScriptStep:
    """Script a tool call.

    Args:
        tool: The tool name, e.g. a function tool's name or a handoff sub-agent's safe name.
        **args: The call's arguments.

    Returns:
        The scripted step.
    """
    return ScriptStep(tool=tool, args=args)


def final(text: str) -> ScriptStep:
    """Script the ``final_answer`` tool call that ends a ``RequirementAgent`` run.

    Args:
        text: The answer.

    Returns:
        The scripted step.
    """
    return ScriptStep(tool="final_answer", args={"response": text})


def say(text: str) -> ScriptStep:
    """Script a plain-text response (agents that accept text answers).

    Args:
        text: The response text.

    Returns:
        The scripted step.
    """
    return ScriptStep(text=text)


def last_tool_result(model_input: ChatModelInput) -> str:
    """Return the text of the newest tool result in a model input ("" when there is none).

    Args:
        model_input: What the agent sent to the model.

    Returns:
        The newest tool message's text.
    """
    for message in reversed(model_input.messages):
        if isinstance(message, ToolMessage):
            return "".join(str(getattr(part, "result", "")) for part in message.content)
    return ""


class ScriptedChatModel(ChatModel):
    """A chat model that replays a script, one response per call, without any network."""

    def __init__(self, script: Sequence[ScriptItem] = (), *, name: str = "scripted") -> None:
        """Create the model.

        Args:
            script: Responses in order; callables receive the model input and return a step.
            name: The model id; also prefixes the deterministic tool-call ids.
        """
        super().__init__()
        self._script: list[ScriptItem] = list(script)
        self._name = name
        self._counter = 0
        self.calls: list[ChatModelInput] = []
        """Every input the model received, in order."""

    @property
    def model_id(self) -> str:
        """The model id (the ``name`` given at construction)."""
        return self._name

    @property
    def provider_id(self) -> Any:
        """The provider id; it becomes part of the emitter namespace ``backend.scripted.chat``."""
        return "scripted"

    def extend(self, script: Sequence[ScriptItem]) -> None:
        """Append responses to the script (e.g. for the next turn).

        Args:
            script: More responses.
        """
        self._script.extend(script)

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script)

    async def _create(self, input: ChatModelInput, run: RunContext) -> ChatModelOutput:
        self.calls.append(input)
        if not self._script:
            raise RuntimeError(f"{self._name}: script exhausted at call #{len(self.calls)}")
        item = self._script.pop(0)
        step = item if isinstance(item, ScriptStep) else item(input)
        return self._to_output(step)

    async def _create_stream(
        self, input: ChatModelInput, run: RunContext
    ) -> AsyncGenerator[ChatModelOutput]:
        # Only used with stream=True: the whole scripted answer is one chunk.
        yield await self._create(input, run)

    async def clone(self) -> ScriptedChatModel:
        """Return ``self``: a handoff clones its sub-agent's model; the clone shares the script."""
        return self

    def _to_output(self, step: ScriptStep) -> ChatModelOutput:
        if step.tool is None:
            message = AssistantMessage(step.text or "")
        else:
            self._counter += 1
            message = AssistantMessage(
                MessageToolCallContent(
                    id=f"{self._name}_{self._counter}",
                    tool_name=step.tool,
                    args=json.dumps(step.args),
                )
            )
        return ChatModelOutput(output=[message], finish_reason="stop")
