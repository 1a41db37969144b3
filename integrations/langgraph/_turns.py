"""A LangGraph session in the graph's checkpointed state: one entry per turn, then a trajectory.

The :class:`~integrations.langgraph.EpisodicMemoryNode` writes, when a turn ends, the turn's
session record (:class:`~em_plugin.session.turns.Turn` JSON) into the private state channel
``episodic_capture`` (appended; checkpointed with the thread)::

    {"turn": <the instruction's HumanMessage id>, "instruction": <its text>,
     "started": <when the graph run started>, "calls": [<call records, see _capture>]}

It is the shape earlier releases stored, so their threads load unchanged.
:func:`trajectory_from_turns` compiles the session from the thread alone: the turns read from the
channel (a turn for each user message without one) get the answers from the messages, and
:func:`~em_plugin.session.turns.replay` rebuilds the trajectory. Whatever worker runs the next
turn, and after a restart, the same thread compiles to the same workflow.

A run that raises never reaches the node, so its failure is read from the thread too: LangGraph's
checkpointer keeps a failed task's error with the checkpoint its step started from (the
``__error__`` pending write). On the next turn, :func:`failed_run_entry` finds the previous run's
last checkpoint (the parent of this run's ``input`` checkpoint) and, when it holds an error, the
node appends an entry for the failed turn with the error (``"error": ...``, no calls: they were
in flight when the run raised). Replayed in its place, it makes the workflow's outcome
``"failure"`` until a later instruction or answer (docs/lifecycle.md), whichever worker, or a
restarted server, saves the thread.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.graph import MessagesState
from langgraph.graph.message import add_messages

from em_plugin.capture.trajectory import Trajectory, is_command
from em_plugin.session.turns import ToolCall, Turn, replay
from integrations.langgraph._capture import CallRecord, now
from integrations.langgraph._context import FRAMEWORK
from integrations.langgraph._memory_messages import memory_kind, message_text

CAPTURE_KEY = "episodic_capture"
"""The private state channel holding the session's turns."""

# LangGraph's names (langgraph._internal._constants: CONFIG_KEY_CHECKPOINTER, ERROR, NS_SEP):
# the checkpointer a node's config carries, and the pending-write channel of a task's error.
_CHECKPOINTER = "__pregel_checkpointer"
_ERROR = "__error__"
_NS_SEP = "|"
#: Checkpoints walked back to this run's input checkpoint at most (a run's steps so far).
_MAX_HOPS = 256
#: Errors that are no failure of the crew (a cancelled run).
_NOT_FAILURES = frozenset({"CancelledError"})

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
        The turn's JSON.
    """
    return Turn(
        turn=instruction.id,
        instruction=message_text(instruction),
        started=started or now(),
        calls=tuple(ToolCall.from_json(call) for call in calls),
    ).to_json()


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
    found = [Turn.from_json(t) for t in turns if isinstance(t, Mapping)]
    trajectory = Trajectory(session_id, scope=scope, framework=FRAMEWORK)
    return replay(session_turns(messages, found), trajectory)


def session_turns(messages: Sequence[BaseMessage], turns: Sequence[Turn]) -> list[Turn]:
    """The session's turns in order, with the thread's answers (see :func:`trajectory_from_turns`).

    Args:
        messages: The thread's messages, oldest first.
        turns: The stored turns, oldest first.

    Returns:
        The turns to replay.
    """
    position = {t.turn: i for i, t in enumerate(turns) if t.turn}
    out: list[Turn] = []
    done = 0  # stored turns placed so far (in order)
    for message in messages:
        if isinstance(message, HumanMessage):
            text = message_text(message)
            if not text.strip() or is_command(text):
                continue
            index = position.get(str(message.id))
            if index is None:
                out.append(Turn(turn=message.id, instruction=text))
                continue
            out.extend(turns[done:index])  # turns whose messages are gone come first
            out.append(turns[index])
            done = max(done, index + 1)
        elif (answer := answer_text(message)) is not None:
            last = out.pop() if out else Turn()
            out.append(replace(last, answers=(*last.answers, answer)))
    out.extend(turns[done:])
    return out


def answer_text(message: BaseMessage) -> str | None:
    """The text of a crew's answer (an AI message without tool calls), else ``None``."""
    if (
        isinstance(message, AIMessage)
        and memory_kind(message) is None
        and not message.tool_calls
        and message_text(message)
    ):
        return message_text(message)
    return None


def previous_run_walk(
    config: Mapping[str, Any] | None,
) -> tuple[Any, Generator[dict[str, Any], Any, Any]] | None:
    """The thread's checkpointer and a walk to the previous run's last checkpoint.

    The walk yields checkpoint configs to read and is sent what the checkpointer returns for
    each (``get_tuple``, or ``aget_tuple`` in async nodes); it returns the previous run's last
    checkpoint tuple, or ``None``.

    Args:
        config: The node's run config.

    Returns:
        ``(checkpointer, walk)``, or ``None`` when the run has no checkpointer or thread.
    """
    configurable = (config or {}).get("configurable") or {}
    saver, thread = configurable.get(_CHECKPOINTER), configurable.get("thread_id")
    # The node's task namespace is "<graph ns>|<node>:<task>": the graph's checkpoints are
    # under "<graph ns>" ("" for a root graph).
    graph_ns = str(configurable.get("checkpoint_ns") or "").rpartition(_NS_SEP)[0]
    current = (configurable.get("checkpoint_map") or {}).get(graph_ns)
    if saver is None or not thread or not current:
        return None
    start = {"configurable": {"thread_id": thread, "checkpoint_ns": graph_ns}}
    start["configurable"]["checkpoint_id"] = current
    return saver, _walk(start)


def _walk(start: dict[str, Any]) -> Generator[dict[str, Any], Any, Any]:
    found = yield start
    for _ in range(_MAX_HOPS):
        if found is None or (found.metadata or {}).get("source") == "input":
            break
        if found.parent_config is None:
            return None
        found = yield found.parent_config
    else:
        return None
    if found is None or found.parent_config is None:
        return None  # the thread's first run
    return (yield found.parent_config)


def failed_run_entry(
    previous: Any,
    turns: Sequence[Mapping[str, Any]],
    *,
    messages_key: str = "messages",
    command_of: Callable[[str], str | None] | None = None,
) -> TurnEntry | None:
    """The entry of the thread's previous run if it raised (see the module docstring).

    Args:
        previous: The previous run's last checkpoint tuple (``None``: none).
        turns: The ``episodic_capture`` entries so far.
        messages_key: The state key holding the messages.
        command_of: Tells a memory command from an instruction (default: ``is_command``).

    Returns:
        ``{"turn", "instruction", "started", "ended", "calls": [], "error"}``, or ``None`` when
        that run did not raise, was cancelled, or its turn already has an entry.
    """
    if previous is None:
        return None
    errors = [
        _error_text(value)
        for _, channel, value in previous.pending_writes or ()
        if channel == _ERROR
    ]
    errors = [e for e in errors if e.split(":", 1)[0] not in _NOT_FAILURES]
    if not errors:
        return None
    values = (previous.checkpoint or {}).get("channel_values") or {}
    human = next(
        (m for m in reversed(values.get(messages_key) or []) if isinstance(m, HumanMessage)), None
    )
    text = message_text(human) if human is not None else ""
    commanded = command_of(text) if command_of is not None else is_command(text)
    if human is None or not text.strip() or commanded:
        return None
    if any(str(t.get("turn")) == str(human.id) for t in turns):
        return None  # recorded already (or the node finished that turn before the error)
    when = (previous.checkpoint or {}).get("ts") or now()
    return Turn(
        turn=human.id, instruction=text, started=when, ended=when, error=errors[0]
    ).to_json()


def _error_text(value: Any) -> str:
    """``"Type: message"`` from an error or its ``repr`` (how checkpointers serialize one)."""
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    text = str(value)
    match = re.fullmatch(r"([A-Za-z_][\w.]*)\((.*)\)", text, re.DOTALL)
    if match is None:
        return text
    try:
        args = ast.literal_eval(f"({match[2]},)") if match[2].strip() else ()
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return f"{match[1]}: {', '.join(str(a) for a in args)}" if args else match[1]
