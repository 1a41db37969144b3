"""The middleware's trace: the session record in the private state key ``episodic_trace``.

Each tool call the agent makes adds one turn fragment (:class:`~em_plugin.session.turns.Turn`
JSON without the instruction, checkpointed with the agent's state): the turn's ``HumanMessage`` id
and the call with the calls made inside it (a sub-agent's, at every depth), each with its
arguments, result or error, times, the call it was made under and its position among the model's
tool calls. :func:`trajectory_from_trace` joins the fragments of each turn, takes the instructions
and answers from the messages and replays the turns (:func:`~em_plugin.session.turns.replay`).

Earlier releases stored one nested entry per call::

    {"turn": <HumanMessage id>, "call_id": ..., "name": ..., "args": {...}, "agent": ...,
     "output": ... | "error": ..., "children": [<entries of calls made inside this call>]}

They are read too (:func:`fragment_of`), in the order the model made the calls, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from em_plugin.capture.trajectory import Trajectory, is_command
from em_plugin.session.turns import ToolCall, Turn, merge_turns, replay
from integrations.langgraph._capture import now
from integrations.langgraph._memory_messages import message_text
from integrations.langgraph._turns import answer_text

TRACE_KEY = "episodic_trace"

CallTree = dict[str, Any]
"""One call while the agent runs: ``call_id``, ``name``, ``args``, ``agent``, ``started``,
``ended``, ``output`` or ``error``, ``order`` and ``children`` (the calls made inside it)."""


def trace_entry(
    request: Any,
    result: Any,
    exc: BaseException | None,
    children: list[CallTree],
    *,
    started: str | None = None,
) -> CallTree:
    """Build the record of one tool call from its request and its result or exception."""
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
    entry: CallTree = {
        "turn": human.id if human is not None else None,
        "call_id": call.get("id"),
        "name": call.get("name"),
        "args": dict(call.get("args") or {}),
        "agent": agent or agent_of_config(current_config()),
        "children": children,
        "started": started,
        "ended": now(),
        "order": _call_order(messages)
        .get(human.id if human is not None else None, {})
        .get(str(call.get("id"))),
    }
    if exc is not None:
        entry["error"] = f"{type(exc).__name__}: {exc}"
    elif isinstance(result, ToolMessage) and result.status == "error":
        entry["error"] = message_text(result)
    elif isinstance(result, ToolMessage):
        entry["output"] = message_text(result)
    return entry


def trace_fragment(entry: CallTree) -> dict[str, Any]:
    """The turn fragment the agent's state keeps for a call the agent made (with its children)."""
    calls: list[ToolCall] = []
    _flatten(entry, None, entry.get("order"), set(), calls)
    turn = entry.get("turn")
    return Turn(turn=None if turn is None else str(turn), calls=tuple(calls)).to_json()


def fragment_of(entry: Mapping[str, Any], order: int | None) -> Turn:
    """Read one ``episodic_trace`` entry: a turn fragment, or an earlier release's call entry.

    Args:
        entry: The entry.
        order: For an earlier release's entry: the call's position in its turn.

    Returns:
        The turn fragment.
    """
    if "calls" in entry:
        return Turn.from_json(entry)
    calls: list[ToolCall] = []
    _flatten(entry, None, order, set(), calls)
    turn = entry.get("turn")
    return Turn(turn=None if turn is None else str(turn), calls=tuple(calls))


def _flatten(
    entry: Mapping[str, Any],
    parent: str | None,
    order: int | None,
    seen: set[str],
    out: list[ToolCall],
) -> None:
    # Sub-agents reuse the model's call ids: ids are made unique within the fragment, so each
    # call names its parent unambiguously.
    raw = str(entry.get("call_id") or "call")
    name, n = raw, 1
    while name in seen:
        n += 1
        name = f"{raw}#{n}"
    seen.add(name)
    args = entry.get("args")
    error = entry.get("error") if "error" in entry else None
    out.append(
        ToolCall(
            id=name,
            name=str(entry.get("name") or "unknown_tool"),
            args=dict(args) if isinstance(args, Mapping) else {},
            agent=entry.get("agent") or None,
            parent=parent,
            started=entry.get("started") or None,
            ended=entry.get("ended") or now(),  # an entry is written once the call returned
            output=entry.get("output"),
            error=None if error is None else str(error),
            order=order,
        )
    )
    for child in entry.get("children") or []:
        if isinstance(child, Mapping):
            _flatten(child, name, None, seen, out)


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
    order = _call_order(messages)
    fragments: list[Turn] = []
    counts: dict[Any, int] = {}
    for entry in trace:
        if not isinstance(entry, Mapping):
            continue
        turn = entry.get("turn")
        index = counts[turn] = counts.get(turn, -1) + 1
        # Earlier releases' entries: the model's order, else their place in the turn.
        position = order.get(turn, {}).get(str(entry.get("call_id")), index)
        fragments.append(fragment_of(entry, position))
    by_turn = {t.turn: t for t in merge_turns(fragments) if t.turn is not None}
    loose = [t for t in merge_turns(fragments) if t.turn is None]
    turns: list[Turn] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            text = message_text(message)
            if text.strip() and not is_command(text):
                stored = by_turn.pop(str(message.id), None)
                calls = stored.calls if stored is not None else ()
                turns.append(Turn(turn=message.id, instruction=text, calls=calls))
        elif (answer := answer_text(message)) is not None:
            last = turns.pop() if turns else Turn()
            turns.append(replace(last, answers=(*last.answers, answer)))
    turns.extend([*by_turn.values(), *loose])  # turns whose message is gone (trimmed history)
    trajectory = Trajectory(session_id, scope=scope, framework="langgraph")
    return replay(turns, trajectory)


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
