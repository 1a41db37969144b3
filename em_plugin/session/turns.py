"""The session record every integration stores: one :class:`Turn` per turn, one :func:`replay`.

A turn is what a chat session keeps of one user instruction: its text, the tool calls made while
serving it (at every depth, each with its arguments, result or error, times and the call it was
made under), the crew's answers and, when the crew's run raised, the error. The LangGraph node
keeps its turns in the graph's checkpointed channel ``episodic_capture``, the LangGraph
middleware in ``episodic_trace`` (one turn fragment per tool call of the agent), the BeeAI
integrations in the store's session journal (:mod:`em_plugin.session.journal`); all of them
rebuild the session with :func:`replay`, so one session compiles to one workflow whichever
framework ran it, in whichever worker.

The JSON form (:meth:`Turn.to_json`) is what those places store::

    {"turn": <id of the message that opened it>, "instruction": <text>, "started": <ISO time>,
     "calls": [{"id": ..., "name": ..., "args": {...}, "agent": ..., "parent": <id of the
                call it was made under>, "started": ..., "ended": ..., "output": ... | "error":
                ..., "order": <position among the model's tool calls>}, ...],
     "ended": <ISO time>, "error": <the run's error>, "answers": [<text>, ...],
     "revision_of": <id of the instruction it corrects>}

Keys after ``calls`` appear only when set. It is the shape the LangGraph node stored before this
record existed, so those threads load unchanged.

Example:
    >>> from em_plugin.capture.trajectory import Trajectory
    >>> turn = Turn(instruction="Extract the ingredients", calls=(
    ...     ToolCall("c1", "product_extractor", {"file": "acme.pdf"}, ended="2026-01-01T00:00:00",
    ...              output="PFOA"),))
    >>> workflow = replay([turn], Trajectory("chat-1")).compile()
    >>> [s.name for s in workflow.leaves()]
    ['product_extractor']
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from em_plugin.capture.trajectory import (
    CallEnd,
    CallError,
    CallStart,
    FinalAnswer,
    Instruction,
    RunError,
    Trajectory,
    TrajectoryEvent,
    is_command,
)
from em_plugin.errors import TrajectoryError

__all__ = ["ToolCall", "Turn", "merge_turns", "replay", "turns_from_events"]

log = logging.getLogger("em_plugin.session.turns")


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a turn: finished when ``ended`` is set, failed when ``error`` is."""

    id: str
    """The framework's id of the call (unique in its turn)."""
    name: str
    """The tool's name."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """The call's arguments, as JSON."""
    agent: str | None = None
    """The agent that made the call."""
    parent: str | None = None
    """The id of the call of the same turn it was made under (a handoff, a sub-agent's tool)."""
    started: str | None = None
    """ISO 8601 time the call started (``None``: unknown)."""
    ended: str | None = None
    """ISO 8601 time the call returned or failed (``None``: it never finished)."""
    output: Any = None
    """What it returned, as JSON."""
    error: str | None = None
    """Why it failed (``None``: it did not)."""
    order: int | None = None
    """Its position among the model's tool calls: calls run in parallel replay in this order."""

    def to_json(self) -> dict[str, Any]:
        """Return the call as JSON (see the module docstring)."""
        data: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "args": dict(self.args),
            "agent": self.agent,
            "parent": self.parent,
            "started": self.started,
            "order": self.order,
        }
        if self.ended is not None:
            data["ended"] = self.ended
            if self.error is not None:
                data["error"] = self.error
            else:
                data["output"] = self.output
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolCall:
        """Read a call from its JSON form; missing or malformed fields take their defaults."""
        args = data.get("args")
        order = data.get("order")
        error = data.get("error") if "error" in data else None
        return cls(
            id=str(data.get("id") or "call"),
            name=str(data.get("name") or "unknown_tool"),
            args=dict(args) if isinstance(args, Mapping) else {},
            agent=_text(data.get("agent")),
            parent=_text(data.get("parent")),
            started=_text(data.get("started")),
            ended=_text(data.get("ended")),
            output=data.get("output"),
            error=None if error is None else str(error),
            order=order if isinstance(order, int) and not isinstance(order, bool) else None,
        )


@dataclass(frozen=True)
class Turn:
    """One turn of a session (or a fragment of one: no ``instruction``, more calls of the last)."""

    turn: str | None = None
    """The id of the message that opened the turn (a LangGraph ``HumanMessage`` id)."""
    instruction: str | None = None
    """The user's instruction (``None``: the turn continues the previous one)."""
    started: str | None = None
    """ISO 8601 time the turn started (the instruction's time)."""
    calls: tuple[ToolCall, ...] = ()
    """The calls made while serving it, parents before the calls made under them."""
    ended: str | None = None
    """ISO 8601 time of its answer or of the run's error."""
    error: str | None = None
    """The error the crew's run raised (the workflow's outcome is then "failure")."""
    answers: tuple[str, ...] = ()
    """The crew's answers (not workflow steps; an answer after an error clears the failure)."""
    revision_of: str | None = None
    """The id (``i1``, ``i2`` ...) of the earlier instruction it corrects, when known."""

    def to_json(self) -> dict[str, Any]:
        """Return the turn as JSON (see the module docstring)."""
        data: dict[str, Any] = {
            "turn": self.turn,
            "instruction": self.instruction,
            "started": self.started,
            "calls": [call.to_json() for call in self.calls],
        }
        optional = {"ended": self.ended, "error": self.error, "revision_of": self.revision_of}
        data.update({key: value for key, value in optional.items() if value is not None})
        if self.answers:
            data["answers"] = list(self.answers)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Turn:
        """Read a turn from its JSON form; malformed calls and answers are left out."""
        calls = data.get("calls")
        answers = data.get("answers")
        error = data.get("error")
        turn = data.get("turn")
        return cls(
            turn=None if turn is None else str(turn),
            instruction=_text(data.get("instruction")),
            started=_text(data.get("started")),
            calls=tuple(ToolCall.from_json(c) for c in calls or () if isinstance(c, Mapping)),
            ended=_text(data.get("ended")),
            error=str(error) if isinstance(error, str) and error else None,
            answers=tuple(a for a in answers or () if isinstance(a, str)),
            revision_of=_text(data.get("revision_of")),
        )


def merge_turns(fragments: Iterable[Turn]) -> list[Turn]:
    """Join the fragments of each turn (same ``turn`` id) into one, in first-seen order.

    The first fragment's fields win; calls and answers are concatenated in order.

    Args:
        fragments: Turns and turn fragments; those without an id stay apart.

    Returns:
        One turn per id (and each fragment without an id), in the order they first appear.
    """
    merged: list[Turn] = []
    where: dict[str, int] = {}
    for fragment in fragments:
        index = where.get(fragment.turn) if fragment.turn is not None else None
        if index is None:
            if fragment.turn is not None:
                where[fragment.turn] = len(merged)
            merged.append(fragment)
            continue
        first = merged[index]
        merged[index] = replace(
            first,
            instruction=first.instruction or fragment.instruction,
            started=first.started or fragment.started,
            calls=first.calls + fragment.calls,
            ended=fragment.ended or first.ended,
            error=first.error or fragment.error,
            answers=first.answers + fragment.answers,
        )
    return merged


def replay(turns: Iterable[Turn], trajectory: Trajectory) -> Trajectory:
    """Append the turns' events to ``trajectory`` (a fresh one rebuilds the session).

    Per turn: the instruction (commands and blank text are not instructions), the calls (each
    under its parent; siblings in the model's order, then by start time; starts and ends
    interleaved by their times), the run's error, the answers. Call ids already used in the
    trajectory (models reuse them across turns) get a ``#2``, ``#3`` ... suffix. A piece the
    trajectory refuses (an unknown revision, a malformed time) is logged and skipped: the rest of
    the session still replays.

    Args:
        turns: The session's turns, oldest first.
        trajectory: Where the events go.

    Returns:
        ``trajectory``.
    """
    for turn in turns:
        _replay_turn(trajectory, turn)
    return trajectory


def _replay_turn(trajectory: Trajectory, turn: Turn) -> None:
    text = turn.instruction
    if isinstance(text, str) and text.strip() and not is_command(text):
        revision = turn.revision_of if turn.revision_of in trajectory.instruction_ids else None
        _guarded(trajectory, "instruction", trajectory.instruction, text,
                 timestamp=turn.started, revision_of=revision)  # fmt: skip
    _replay_calls(trajectory, turn.calls)
    if turn.error:
        _guarded(trajectory, "run error", trajectory.run_error, turn.error, timestamp=turn.ended)
    for answer in turn.answers:
        _guarded(trajectory, "answer", trajectory.final_answer, answer, timestamp=turn.ended)


def _replay_calls(trajectory: Trajectory, calls: Sequence[ToolCall]) -> None:
    # A call's parent is the nearest earlier call with that id (ids repeat when models reuse
    # them; a parent always starts before the calls made under it).
    parent_of: list[int | None] = []
    latest: dict[str, int] = {}
    for index, call in enumerate(calls):
        parent_of.append(latest.get(call.parent) if call.parent is not None else None)
        latest[call.id] = index
    children: dict[int | None, list[int]] = {}
    for index, parent in enumerate(parent_of):
        children.setdefault(parent, []).append(index)
    ordered: list[tuple[int, int]] = []  # (index, depth), parents first

    def walk(parent: int | None, depth: int) -> None:
        siblings = sorted(children.get(parent, []), key=lambda i: _sibling_key(calls[i], i))
        for index in siblings:
            ordered.append((index, depth))
            walk(index, depth + 1)

    walk(None, 0)
    names: dict[int, str] = {}
    ends: list[tuple[float, int, int, int]] = []  # (time, -depth, position, index)
    for position, (index, depth) in enumerate(ordered):
        call = calls[index]
        while ends and ends[0][0] <= _moment(call.started, default=float("-inf")):
            _end(trajectory, calls, names, heapq.heappop(ends)[3])
        name = _unique(trajectory, call.id)
        parent = parent_of[index]
        started = _guarded(
            trajectory, "call", trajectory.call_start, name, call.name, call.args,
            agent=call.agent, parent_call_id=names.get(parent) if parent is not None else None,
            timestamp=call.started,
        )  # fmt: skip
        if started is _FAILED:
            continue
        names[index] = name
        if call.ended is not None:
            moment = _moment(call.ended, default=float("inf"))
            heapq.heappush(ends, (moment, -depth, position, index))
    while ends:
        _end(trajectory, calls, names, heapq.heappop(ends)[3])


def _end(trajectory: Trajectory, calls: Sequence[ToolCall], names: dict[int, str], i: int) -> None:
    call = calls[i]
    if call.error is not None:
        _guarded(trajectory, "call error", trajectory.call_error, names[i], call.error,
                 timestamp=call.ended)  # fmt: skip
    else:
        _guarded(trajectory, "call end", trajectory.call_end, names[i], call.output,
                 timestamp=call.ended)  # fmt: skip


def _sibling_key(call: ToolCall, index: int) -> tuple[bool, int, str, int]:
    # Parallel calls start in any order: the model's order first, then the start time.
    return (call.order is None, call.order or 0, call.started or "", index)


def _unique(trajectory: Trajectory, call_id: str) -> str:
    candidate, n = call_id, 1
    while trajectory.has_call(candidate):
        n += 1
        candidate = f"{call_id}#{n}"
    return candidate


_FAILED = object()


def _guarded(trajectory: Trajectory, what: str, append: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return append(*args, **kwargs)
    except TrajectoryError as exc:
        log.warning("session %r: %s skipped in replay (%s)", trajectory.session_id, what, exc)
        return _FAILED


def _moment(stamp: str | None, *, default: float) -> float:
    if not stamp:
        return default
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return default
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


def turns_from_events(events: Iterable[TrajectoryEvent]) -> list[Turn]:
    """Group trajectory events into turns (how a live :class:`Trajectory` is journaled).

    Each instruction opens a turn. Events that cannot follow in the same turn (a call after the
    answer or the error, an error after an answer) and events before the first instruction open
    a fragment without an instruction, so :func:`replay` gives the events back in their order.
    An end whose call started in an earlier batch of events cannot be placed: it is logged and
    left out.

    Args:
        events: The events, in order.

    Returns:
        The turns.
    """
    built: list[_Building] = []
    owner: dict[str, _Building] = {}  # call id -> the turn that started it
    for event in events:
        current = built[-1] if built else None
        if isinstance(event, Instruction):
            built.append(_Building(event.text, event.timestamp, event.revision_of))
        elif isinstance(event, CallEnd | CallError):
            started = owner.get(event.call_id)
            if started is None:
                log.warning("call %r ended in a later batch than it started", event.call_id)
            else:
                started.end(event)
        else:
            if current is None or not current.accepts(event):
                current = _Building(None, None, None)
                built.append(current)
            current.add(event)
            if isinstance(event, CallStart):
                owner[event.call_id] = current
    return [b.turn() for b in built]


@dataclass
class _Building:
    instruction: str | None
    started: str | None
    revision_of: str | None
    calls: dict[str, ToolCall] = field(default_factory=dict)
    ended: str | None = None
    error: str | None = None
    answers: list[str] = field(default_factory=list)

    def accepts(self, event: TrajectoryEvent) -> bool:
        if isinstance(event, CallStart):
            return self.error is None and not self.answers and event.call_id not in self.calls
        return not (isinstance(event, RunError) and (self.error is not None or self.answers))

    def add(self, event: TrajectoryEvent) -> None:
        if isinstance(event, CallStart):
            self.calls[event.call_id] = ToolCall(
                event.call_id, event.name, dict(event.args), event.agent, event.parent_call_id,
                started=event.timestamp,
            )  # fmt: skip
        elif isinstance(event, RunError):
            self.error, self.ended = event.error, event.timestamp
        elif isinstance(event, FinalAnswer):
            self.answers.append(event.text)
            self.ended = event.timestamp

    def end(self, event: CallEnd | CallError) -> None:
        failed = isinstance(event, CallError)
        self.calls[event.call_id] = replace(
            self.calls[event.call_id],
            ended=event.timestamp,
            error=event.error if isinstance(event, CallError) else None,
            output=None if failed else getattr(event, "output", None),
        )

    def turn(self) -> Turn:
        return Turn(
            instruction=self.instruction,
            started=self.started,
            calls=tuple(self.calls.values()),
            ended=self.ended,
            error=self.error,
            answers=tuple(self.answers),
            revision_of=self.revision_of,
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
