"""The middleware's trace: one entry per tool call in the private state key ``episodic_trace``.

An entry is a JSON dict (it is checkpointed with the agent's state)::

    {"turn": <HumanMessage id>, "call_id": ..., "name": ..., "args": {...}, "agent": ...,
     "output": ... | "error": ..., "children": [<entries of calls made inside this call>]}

:func:`trajectory_from_trace` rebuilds the session from the messages (instructions, answers) and
the entries (calls).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from em_plugin.capture.trajectory import Trajectory, is_command
from integrations.langgraph._memory_messages import memory_kind, message_text

TRACE_KEY = "episodic_trace"


def trace_entry(
    request: Any, result: Any, exc: BaseException | None, children: list[dict[str, Any]]
) -> dict[str, Any]:
    """Build the entry of one tool call from its request and its result or exception."""
    call = request.tool_call
    state = request.state if isinstance(request.state, Mapping) else {}
    messages: Sequence[BaseMessage] = state.get("messages") or []
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    agent = next(
        (
            m.name
            for m in reversed(messages)
            if isinstance(m, AIMessage) and any(c.get("id") == call.get("id") for c in m.tool_calls)
        ),
        None,
    )
    entry: dict[str, Any] = {
        "turn": human.id if human is not None else None,
        "call_id": call.get("id"),
        "name": call.get("name"),
        "args": dict(call.get("args") or {}),
        "agent": agent or agent_of_config(current_config()),
        "children": children,
    }
    if exc is not None:
        entry["error"] = f"{type(exc).__name__}: {exc}"
    elif isinstance(result, ToolMessage) and result.status == "error":
        entry["error"] = message_text(result)
    elif isinstance(result, ToolMessage):
        entry["output"] = message_text(result)
    return entry


def trajectory_from_trace(
    messages: Sequence[BaseMessage],
    trace: Sequence[Mapping[str, Any]],
    *,
    session_id: str,
    scope: str,
) -> Trajectory:
    """Rebuild a session: instructions and answers from the messages, calls from the trace.

    Args:
        messages: The agent's messages, oldest first.
        trace: The ``episodic_trace`` entries.
        session_id: The thread id.
        scope: The memory scope.

    Returns:
        The trajectory.
    """
    trajectory = Trajectory(session_id, scope=scope, framework="langgraph")
    by_turn: dict[str | None, list[Mapping[str, Any]]] = {}
    for entry in trace:
        by_turn.setdefault(entry.get("turn"), []).append(entry)
    order = _call_order(messages)
    used: set[str] = set()
    for message in messages:
        if isinstance(message, HumanMessage):
            text = message_text(message)
            if text.strip() and not is_command(text):
                trajectory.instruction(text)
                # Parallel tool calls finish in any order: replay them in the model's order.
                position = order.get(message.id, {})
                entries = by_turn.pop(message.id, [])
                ranked = sorted(
                    enumerate(entries),
                    key=lambda item: (
                        position.get(str(item[1].get("call_id")), item[0]),
                        item[0],
                    ),
                )
                for _, entry in ranked:
                    _replay(trajectory, entry, None, used)
        elif (
            isinstance(message, AIMessage)
            and memory_kind(message) is None
            and not message.tool_calls
            and message_text(message)
        ):
            trajectory.final_answer(message_text(message))
    for entries in by_turn.values():  # turns whose message is gone (trimmed history)
        for entry in entries:
            _replay(trajectory, entry, None, used)
    return trajectory


def _call_order(messages: Sequence[BaseMessage]) -> dict[str | None, dict[str, int]]:
    """For each turn (HumanMessage id), the position of each tool call id the model made."""
    order: dict[str | None, dict[str, int]] = {}
    current: dict[str, int] | None = None
    count = 0
    for message in messages:
        if isinstance(message, HumanMessage):
            current = order.setdefault(message.id, {})
            count = 0
        elif isinstance(message, AIMessage) and current is not None:
            for call in message.tool_calls:
                call_id = call.get("id")
                if call_id and call_id not in current:
                    current[call_id] = count
                    count += 1
    return order


def _replay(
    trajectory: Trajectory, entry: Mapping[str, Any], parent: str | None, used: set[str]
) -> None:
    base = str(entry.get("call_id") or "call")
    call_id, n = base, 1
    while call_id in used:
        n += 1
        call_id = f"{base}#{n}"
    used.add(call_id)
    trajectory.call_start(
        call_id,
        entry.get("name") or "unknown_tool",
        entry.get("args") or {},
        agent=entry.get("agent"),
        parent_call_id=parent,
    )
    for child in entry.get("children") or []:
        _replay(trajectory, child, call_id, used)
    if "error" in entry:
        trajectory.call_error(call_id, entry["error"])
    else:
        trajectory.call_end(call_id, entry.get("output"))


#: The identity of an agent that has no name and runs at the top of its graph.
DEFAULT_AGENT = "agent"


def agent_of_config(config: Any) -> str:
    """A stable identity for the agent running a tool when its messages name none.

    ``lc_agent_name`` when the agent has a name; else the graph node the agent runs in (the
    last segment of ``checkpoint_ns``, e.g. ``crew`` for ``crew:<task id>``); else ``agent``.
    """
    metadata = (config or {}).get("metadata") or {}
    name = metadata.get("lc_agent_name")
    if isinstance(name, str) and name:
        return name
    namespace = metadata.get("checkpoint_ns")
    if isinstance(namespace, str) and namespace:
        node = namespace.split("|")[-1].split(":")[0]
        if node:
            return node
    return DEFAULT_AGENT


def first_human_id(messages: Sequence[BaseMessage]) -> str:
    """The first HumanMessage's id: the session id of a run without a thread id."""
    human = next((m for m in messages if isinstance(m, HumanMessage)), None)
    return (human.id if human is not None else None) or "default"


def current_config() -> Any:
    """The running graph's config, or ``None`` outside a run."""
    try:
        from langgraph.config import get_config

        return get_config()
    except Exception:  # noqa: BLE001 - outside a runnable context
        return None
