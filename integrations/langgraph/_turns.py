"""A LangGraph session in the graph's checkpointed state: one entry per turn, then a trajectory.

The :class:`~integrations.langgraph.EpisodicMemoryNode` writes, when a turn ends, one JSON entry
into the private state channel ``episodic_capture`` (appended; checkpointed with the thread)::

    {"turn": <the instruction's HumanMessage id>, "instruction": <its text>,
     "started": <when the graph run started>, "calls": [<call records, see _capture>]}

:func:`trajectory_from_turns` compiles the session from the thread alone: instructions from the
entries (and from the messages of turns without one), calls from the entries, answers from the
messages. Whatever worker runs the next turn, and after a restart, the same thread compiles to the
same workflow.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.graph import MessagesState
from langgraph.graph.message import add_messages

from em_plugin.capture.trajectory import Trajectory, is_command
from integrations.langgraph._capture import CallRecord, now
from integrations.langgraph._context import FRAMEWORK
from integrations.langgraph._memory_messages import memory_kind, message_text

CAPTURE_KEY = "episodic_capture"
"""The private state channel holding the session's turns."""

TurnEntry = dict[str, Any]
"""One turn, as JSON (see the module docstring)."""


class EpisodicMemoryState(MessagesState):
    """``MessagesState`` plus the session's private channel (what the memory node reads).

    Adding the node to a graph adds the channel: it is not in the graph's output (``invoke``,
    ``stream_mode="values"``); the thread's state (``get_state``) and its checkpoints keep it.
    """

    episodic_capture: NotRequired[Annotated[list[dict[str, Any]], operator.add]]


def input_schema(messages_key: str) -> type[Any]:
    """The memory node's input schema for a graph whose messages live under ``messages_key``."""
    if messages_key == "messages":
        return EpisodicMemoryState
    fields = {
        messages_key: Annotated[list[AnyMessage], add_messages],
        CAPTURE_KEY: NotRequired[Annotated[list[dict[str, Any]], operator.add]],
    }
    return TypedDict("EpisodicMemoryInput", fields)  # type: ignore[operator]


def turn_entry(
    instruction: HumanMessage, calls: Sequence[CallRecord], started: str | None
) -> TurnEntry:
    """Build the entry of the turn that ``instruction`` opened.

    Args:
        instruction: The turn's user message.
        calls: The calls collected from the run hierarchy.
        started: When the graph run started (now when unknown).

    Returns:
        The entry.
    """
    return {
        "turn": instruction.id,
        "instruction": message_text(instruction),
        "started": started or now(),
        "calls": list(calls),
    }


def trajectory_from_turns(
    messages: Sequence[BaseMessage],
    turns: Sequence[Mapping[str, Any]],
    *,
    session_id: str,
    scope: str,
) -> Trajectory:
    """Compile a session: instructions and calls from the turn entries, answers from messages.

    A user message without an entry (a turn the node did not finish) is an instruction without
    calls; an entry whose message is gone (trimmed history) still counts, in its place.

    Args:
        messages: The thread's messages, oldest first.
        turns: The ``episodic_capture`` entries, oldest first.
        session_id: The thread id.
        scope: The memory scope.

    Returns:
        The trajectory.
    """
    trajectory = Trajectory(session_id, scope=scope, framework=FRAMEWORK)
    position = {str(t.get("turn")): i for i, t in enumerate(turns) if t.get("turn")}
    used: set[str] = set()
    done = 0  # entries replayed so far (in order)
    for message in messages:
        if isinstance(message, HumanMessage):
            text = message_text(message)
            if not text.strip() or is_command(text):
                continue
            index = position.get(str(message.id))
            if index is None:
                trajectory.instruction(text)
                continue
            for earlier in turns[done:index]:  # entries whose messages are gone come first
                replay_turn(trajectory, earlier, used)
            replay_turn(trajectory, turns[index], used)
            done = max(done, index + 1)
        elif (
            isinstance(message, AIMessage)
            and memory_kind(message) is None
            and not message.tool_calls
            and message_text(message)
        ):
            trajectory.final_answer(message_text(message))
    for entry in turns[done:]:
        replay_turn(trajectory, entry, used)
    return trajectory


def replay_turn(trajectory: Trajectory, entry: Mapping[str, Any], used: set[str]) -> None:
    text = entry.get("instruction")
    if isinstance(text, str) and text.strip() and not is_command(text):
        trajectory.instruction(text, timestamp=entry.get("started"))
    calls = [c for c in entry.get("calls") or [] if isinstance(c, Mapping)]
    known = {str(c.get("id")) for c in calls}
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for call in calls:
        parent = call.get("parent")
        children.setdefault(str(parent) if parent in known else None, []).append(call)
    ids: dict[str, str] = {}
    ordered: list[Mapping[str, Any]] = []

    def walk(parent: str | None) -> None:
        # Parallel calls start in any order: siblings follow the model's order, then time.
        siblings = sorted(
            children.get(parent, []),
            key=lambda c: (c.get("order") is None, c.get("order") or 0, c.get("started") or ""),
        )
        for call in siblings:
            ordered.append(call)
            walk(str(call.get("id")))

    walk(None)
    for call in ordered:
        raw = str(call.get("id") or "call")
        call_id, n = raw, 1
        while call_id in used:  # models reuse tool-call ids across turns and sub-agents
            n += 1
            call_id = f"{raw}#{n}"
        used.add(call_id)
        ids[raw] = call_id
        parent = call.get("parent")
        trajectory.call_start(
            call_id,
            str(call.get("name") or "unknown_tool"),
            call.get("args") if isinstance(call.get("args"), Mapping) else {},
            agent=call.get("agent"),
            parent_call_id=ids.get(str(parent)) if parent in known else None,
            timestamp=call.get("started"),
        )
    for call in ordered:
        if not call.get("ended"):
            continue  # never finished: compiles as "did not finish"
        call_id = ids[str(call.get("id") or "call")]
        if "error" in call:
            trajectory.call_error(call_id, str(call["error"]), timestamp=call["ended"])
        else:
            trajectory.call_end(call_id, call.get("output"), timestamp=call["ended"])
