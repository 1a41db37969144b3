"""LangChain messages -> trajectory events: what a thread's messages alone say.

The memory node does not capture from messages (its calls come from the run hierarchy, see
``_capture``); this view serves code that has only a thread's messages.

A session's messages are replayed in order: each non-command ``HumanMessage`` is an instruction,
each ``AIMessage`` tool call a call (its agent is the message's ``name``), and the matching
``ToolMessage`` ends it (``status="error"`` means failed). Malformed tool calls
(``invalid_tool_calls``) are recorded as failed calls.

Handoffs in shared-message multi-agent graphs (langgraph-supervisor / swarm style): after a
successful handoff call (``transfer_to_<agent>`` by default), tool calls by other agents nest under
it until the agent that handed off speaks again or someone calls ``transfer_back_to_<agent>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from em_plugin.capture.trajectory import Trajectory, is_command
from em_plugin.session.turns import ToolCall, Turn, replay
from integrations.langgraph._capture import now
from integrations.langgraph._memory_messages import memory_kind, message_text


def is_handoff(name: str) -> bool:
    """The default handoff test: ``transfer_to_<agent>`` (langgraph-supervisor, swarm)."""
    return name.startswith("transfer_to_")


def _is_transfer_back(name: str) -> bool:
    return name.startswith("transfer_back_to_")


@dataclass
class _Open:
    call_id: str
    issuer: str | None


def trajectory_from_messages(
    messages: Sequence[BaseMessage],
    *,
    session_id: str,
    scope: str,
    handoff: Callable[[str], bool] = is_handoff,
    default_agent: str | None = None,
) -> Trajectory:
    """Replay a session's messages into a fresh :class:`Trajectory`.

    Args:
        messages: The session's messages, oldest first.
        session_id: The LangGraph thread id.
        scope: The memory scope.
        handoff: Tells whether a tool name is a handoff to another agent.
        default_agent: The agent of calls whose message names none (e.g. the crew's node).

    Returns:
        The trajectory.
    """
    turns = turns_from_messages(messages, handoff=handoff, default_agent=default_agent)
    return replay(turns, Trajectory(session_id, scope=scope, framework="langgraph"))


def turns_from_messages(
    messages: Sequence[BaseMessage],
    *,
    handoff: Callable[[str], bool] = is_handoff,
    default_agent: str | None = None,
) -> list[Turn]:
    """The session's turns as its messages alone tell them (see the module docstring).

    Args:
        messages: The session's messages, oldest first.
        handoff: Tells whether a tool name is a handoff to another agent.
        default_agent: The agent of calls whose message names none.

    Returns:
        The turns, for :func:`~em_plugin.session.turns.replay`.
    """
    results = _results_by_call(messages)
    used: set[str] = set()
    open_handoffs: list[_Open] = []
    turns: list[_TurnSoFar] = []
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            text = message_text(message)
            if text.strip() and not is_command(text):
                turns.append(_TurnSoFar(message.id, text))
                open_handoffs.clear()
        elif isinstance(message, AIMessage) and memory_kind(message) is None:
            agent = message.name
            while open_handoffs and agent is not None and open_handoffs[-1].issuer == agent:
                open_handoffs.pop()
            for call in message.tool_calls:
                name = call.get("name") or "unknown_tool"
                if _is_transfer_back(name):
                    if open_handoffs:
                        open_handoffs.pop()
                    continue
                call_id = _unique(call.get("id") or f"call-{index}", used)
                result = results.get((call.get("id"), index))
                ended = None if result is None else now()  # never answered: did not finish
                failed = result is not None and result.status == "error"
                _calls_of(turns).append(
                    ToolCall(
                        call_id,
                        name,
                        call.get("args") or {},
                        agent=agent or default_agent,
                        parent=open_handoffs[-1].call_id if open_handoffs else None,
                        ended=ended,
                        output=_output(result) if result is not None and not failed else None,
                        error=message_text(result) if result is not None and failed else None,
                    )
                )
                if result is not None and not failed and handoff(name):
                    open_handoffs.append(_Open(call_id, agent))
            for bad in message.invalid_tool_calls:
                _calls_of(turns).append(
                    ToolCall(
                        _unique(bad.get("id") or f"invalid-{index}", used),
                        bad.get("name") or "invalid_tool_call",
                        agent=agent or default_agent,
                        ended=now(),
                        error=f"invalid tool call: {bad.get('error') or bad}",
                    )
                )
            if not message.tool_calls and message_text(message):
                if not turns:
                    turns.append(_TurnSoFar(None, None))
                turns[-1].answers.append(message_text(message))
    return [t.turn() for t in turns]


@dataclass
class _TurnSoFar:
    id: str | None
    instruction: str | None
    calls: list[ToolCall] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    def turn(self) -> Turn:
        return Turn(
            turn=self.id,
            instruction=self.instruction,
            calls=tuple(self.calls),
            answers=tuple(self.answers),
        )


def _calls_of(turns: list[_TurnSoFar]) -> list[ToolCall]:
    """Where the next call goes: the current turn, or a fragment after its answer."""
    if not turns or turns[-1].answers:
        turns.append(_TurnSoFar(None, None))
    return turns[-1].calls


def _results_by_call(messages: Sequence[BaseMessage]) -> dict[tuple[str | None, int], ToolMessage]:
    """Pair each AI tool call with the first later ToolMessage answering its id.

    Scripted (and some real) models reuse tool-call ids across turns, so the pairing is by position
    as well as by id.
    """
    pending: dict[str, int] = {}
    paired: dict[tuple[str | None, int], ToolMessage] = {}
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call.get("id")
                if call_id:
                    pending[call_id] = index
        elif isinstance(message, ToolMessage):
            origin = pending.pop(message.tool_call_id, None)
            if origin is not None:
                paired[(message.tool_call_id, origin)] = message
    return paired


def _unique(call_id: str, used: set[str]) -> str:
    candidate, n = call_id, 1
    while candidate in used:
        n += 1
        candidate = f"{call_id}#{n}"
    used.add(candidate)
    return candidate


def _output(message: ToolMessage) -> Any:
    if message.artifact is not None and isinstance(message.artifact, Mapping | list):
        return message.artifact
    return message_text(message)
