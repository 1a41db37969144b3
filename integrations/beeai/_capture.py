"""Follow a BeeAI run tree at every depth and mirror its tool calls into a trajectory.

BeeAI's run-context emitters forward events only one run level up: a listener on the coordinator's
run sees its own tools and the ``HandoffTool`` run, but not the sub-agent behind the handoff
(BeeAI emits a nested run's events on that run's own emitter). :class:`CallRecorder` therefore
subscribes on a run and, whenever a direct child run starts, records it and subscribes on the
child too — the same recursion the built-in ``GlobalTrajectoryMiddleware`` uses. All listeners
live on run-context emitters, which BeeAI destroys when each run finishes, so nothing leaks.

Each event is handled once, by the listener of its parent run: ``start`` opens a call,
``success``/``error`` close it. Tools the agent uses to talk rather than act (``final_answer``,
``think``) are not calls (docs/capture.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from beeai_framework.agents import BaseAgent
from beeai_framework.agents.requirement.utils._tool import FinalAnswerTool
from beeai_framework.backend import ChatModel, UserMessage
from beeai_framework.context import RunContext
from beeai_framework.emitter import EmitterOptions, EventMeta
from beeai_framework.emitter.utils import create_internal_event_matcher
from beeai_framework.errors import FrameworkError
from beeai_framework.tools import JSONToolOutput, Tool, ToolOutput
from beeai_framework.tools.think import ThinkTool

#: Tools that carry the agent's answer or reasoning, not an action on the world.
NOT_CALLS: tuple[type, ...] = (FinalAnswerTool, ThinkTool)
_EVENTS = ["start", "success", "error"]
#: Run before other listeners so sub-agent runs are followed before they emit anything.
_PRIORITY = 100


class CallSink(Protocol):
    """The part of :class:`em_plugin.capture.trajectory.Trajectory` the recorder writes to."""

    def call_start(
        self,
        call_id: str,
        name: str,
        args: Mapping[str, Any],
        *,
        agent: str | None = None,
        parent_call_id: str | None = None,
        timestamp: str | None = None,
    ) -> None: ...

    def call_end(self, call_id: str, output: Any, *, timestamp: str | None = None) -> None: ...

    def call_error(self, call_id: str, error: str, *, timestamp: str | None = None) -> None: ...

    def has_call(self, call_id: str) -> bool: ...


#: Called with the failing step's name and the exception; logs it or re-raises (strict mode).
FaultHandler = Callable[[str, BaseException], None]
#: Returns a model's input messages without the memory's own text, or ``None`` if clean.
InputCleaner = Callable[[list[Any]], list[Any] | None]


@dataclass
class _Node:
    parent_id: str | None
    agent: str | None  # set on agent runs: the agent's identity
    call_id: str | None  # set on recorded tool runs: the trajectory call id
    tool: str | None = None  # set on tool runs: the tool's name
    unnamed: int = 0  # how many default-named agents ran directly under this run


class CallRecorder:
    """Mirror the tool calls of one root run and all its nested runs into a :class:`CallSink`."""

    def __init__(
        self,
        sink: CallSink,
        on_fault: FaultHandler,
        *,
        skip: tuple[type, ...] = (),
        clean: InputCleaner | None = None,
    ) -> None:
        """Create a recorder.

        Args:
            sink: Where calls go (the session's trajectory).
            on_fault: Called when recording fails; it decides between logging and raising.
            skip: More tool classes whose runs are not calls (e.g. the memory's recall tool).
            clean: Rewrites each model run's input messages at every depth (sub-agents behind
                handoffs included) before the model reads them.
        """
        self._sink = sink
        self._on_fault = on_fault
        self._clean = clean
        self._skip = NOT_CALLS + tuple(skip)
        self._nodes: dict[str, _Node] = {}
        self.failed_calls = 0
        """How many recorded calls ended with an error."""
        self.calls = 0
        """How many calls were recorded."""
        self.root_agent: str | None = None
        """The identity of the followed root run's agent (``None`` for a workflow)."""

    def follow(self, ctx: RunContext) -> None:
        """Record the runs nested under ``ctx`` (which itself is registered, not recorded).

        Args:
            ctx: The root run's context.
        """
        self._nodes[ctx.run_id] = _Node(ctx.parent_id, agent_name(ctx.instance), None)
        self._subscribe(ctx)
        self.root_agent = self._nodes[ctx.run_id].agent

    def _subscribe(self, ctx: RunContext) -> None:
        parent_id = ctx.run_id

        async def on_event(data: Any, meta: EventMeta) -> None:
            await self._on_event(parent_id, data, meta)

        ctx.emitter.on(
            create_internal_event_matcher(_EVENTS),
            on_event,
            EmitterOptions(match_nested=True, is_blocking=True, priority=_PRIORITY),
        )

    async def _on_event(self, parent_id: str, data: Any, meta: EventMeta) -> None:
        child = meta.creator
        if not isinstance(child, RunContext) or child.parent_id != parent_id:
            return  # the run's own event: the listener on its parent handles it
        try:
            if meta.name == "start":
                self._on_start(child, data.input)
            elif meta.name == "success":
                self._on_end(child, data.output, None)
            else:
                self._on_end(child, None, data)
        except Exception as exc:  # noqa: BLE001 - a recording bug must not break the crew (pitfall 5)
            self._on_fault(f"recording a BeeAI {meta.name} event", exc)

    def _on_start(self, ctx: RunContext, run_input: Mapping[str, Any]) -> None:
        if ctx.run_id in self._nodes:
            return
        instance = ctx.instance
        node = _Node(ctx.parent_id, self._identity(ctx), None)
        if isinstance(instance, Tool):
            node.tool = instance.name
        self._nodes[ctx.run_id] = node
        if not isinstance(instance, ChatModel):  # a model call runs no tools: nothing to follow
            self._subscribe(ctx)
        elif self._clean is not None and isinstance(run_input, dict):
            # BeeAI copies a start event's input back into the run before the model reads it.
            messages = run_input.get("input")
            cleaned = self._clean(messages) if isinstance(messages, list) else None
            if cleaned is not None:
                run_input["input"] = cleaned
        if isinstance(instance, Tool) and not isinstance(instance, self._skip):
            call_id = self._call_id(ctx)
            self._sink.call_start(
                call_id,
                instance.name,
                _json_args(run_input.get("input")),
                agent=self._enclosing(ctx.parent_id, "agent"),
                parent_call_id=self._enclosing(ctx.parent_id, "call_id"),
            )
            node.call_id = call_id  # only once the sink accepted the start
            self.calls += 1

    def _identity(self, ctx: RunContext) -> str | None:
        """A stable identity for an agent run, distinct for agents that have no name.

        A named agent is its name. An agent left with its class's default name takes the name of
        the handoff tool that runs it, else its position among the unnamed agents run directly by
        its parent (``RequirementAgent#2``: the second agent step of a workflow).
        """
        name = agent_name(ctx.instance)
        if name is None or name not in DEFAULT_AGENT_NAMES:
            return name
        parent = self._nodes.get(ctx.parent_id) if ctx.parent_id is not None else None
        if parent is None:
            return name
        if parent.tool is not None:
            return parent.tool
        parent.unnamed += 1
        return f"{name}#{parent.unnamed}"

    def _call_id(self, ctx: RunContext) -> str:
        # The model's tool-call id, as LangGraph records it; the run id when the model gave none
        # or reused one (some providers number calls per response).
        message = ctx.context.get("tool_call_msg")
        call_id = getattr(message, "id", None)
        if isinstance(call_id, str) and call_id and not self._sink.has_call(call_id):
            return call_id
        return ctx.run_id

    def _on_end(self, ctx: RunContext, output: Any, error: FrameworkError | None) -> None:
        node = self._nodes.get(ctx.run_id)
        if node is None or node.call_id is None:
            return
        if error is None:
            self._sink.call_end(node.call_id, _json_output(output))
        else:
            self.failed_calls += 1
            self._sink.call_error(node.call_id, _error_text(error))

    def _enclosing(self, run_id: str | None, attribute: str) -> str | None:
        """Return ``attribute`` of the nearest run at or above ``run_id`` that has it set."""
        while run_id is not None:
            node = self._nodes.get(run_id)
            if node is None:
                return None
            value = getattr(node, attribute)
            if value is not None:
                return value
            run_id = node.parent_id
        return None


#: The names BeeAI gives agents created without one.
DEFAULT_AGENT_NAMES = frozenset(
    {"RequirementAgent", "ToolCallingAgent", "ReActAgent", "ReActAgentOutput", ""}
)


def agent_name(instance: object) -> str | None:
    """Return an agent's name (``meta.name``), or ``None`` when ``instance`` is not an agent."""
    if isinstance(instance, BaseAgent):
        return instance.meta.name or type(instance).__name__
    return None


def run_instruction(run_params: Mapping[str, Any]) -> str:
    """Return the user's instruction from a root run's parameters.

    An agent run's parameters hold ``input`` (text or messages); a workflow run's hold
    ``{state, options}``, and an ``AgentWorkflow`` state's ``inputs`` carry the prompts.

    Args:
        run_params: The root run's ``run_params`` (the start event's ``input``).

    Returns:
        The instruction text ("" when there is none).
    """
    if "input" in run_params:
        return instruction_text(run_params.get("input"))
    return workflow_prompt(run_params.get("state"))


def workflow_prompt(state: Any) -> str:
    """Return the prompts of an ``AgentWorkflow`` state's inputs, one per line ("" if none)."""
    inputs = getattr(state, "inputs", None)
    if isinstance(state, Mapping):
        inputs = state.get("inputs")
    prompts: list[str] = []
    for item in inputs or []:
        prompt = item.get("prompt") if isinstance(item, Mapping) else getattr(item, "prompt", None)
        if isinstance(prompt, str) and prompt.strip():
            prompts.append(prompt)
    return "\n".join(prompts)


def instruction_text(run_input: Any) -> str:
    """Return the user's instruction from an agent run's input (a string or a message list).

    Args:
        run_input: ``run_params["input"]`` of an agent run.

    Returns:
        The text of the input, or of its last user message.
    """
    if isinstance(run_input, str):
        return run_input
    if isinstance(run_input, list):
        users = [m for m in run_input if isinstance(m, UserMessage)]
        return users[-1].text if users else ""
    return "" if run_input is None else str(run_input)


def _json_args(value: Any) -> dict[str, Any]:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if not isinstance(value, Mapping):
        return {"input": _json_value(value)}
    return {str(k): _json_value(v) for k, v in value.items()}


def _json_output(output: Any) -> Any:
    if isinstance(output, JSONToolOutput):
        return _json_value(output.result)
    if isinstance(output, ToolOutput):
        return output.get_text_content()
    return _json_value(output)


def _json_value(value: Any) -> Any:
    """Return ``value`` as plain JSON data; anything else becomes its text."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return str(value)


def _error_text(error: FrameworkError) -> str:
    # BeeAI wraps tool exceptions in a generic ToolError("Tool Error"); the cause says what failed.
    cause = error.get_cause() if isinstance(error, FrameworkError) else error
    return f"{type(cause).__name__}: {cause}"
