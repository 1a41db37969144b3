"""Framework-neutral trajectory events and the workflow compiler (docs/capture.md).

An integration turns what its framework reports into a few events on a :class:`Trajectory`, one
per chat session::

    t = Trajectory("thread-1", scope="alice", framework="langgraph")
    t.instruction("Extract the ingredients from acme.pdf")   # -> "i1"; commands return None
    t.call_start("c1", "handoff_extractor", {"task": "..."}, agent="coordinator")
    t.call_start("c2", "product_extractor", {"file": "acme.pdf"}, agent="extractor",
                 parent_call_id="c1")                        # nested under the handoff
    t.call_error("c2", "TimeoutError: ...")                  # dropped, kept in Workflow.failed
    ...
    t.final_answer("The ingredients are ...")
    workflow = t.compile()                                   # the whole session so far

Compilation rules (paper §2, docs/capture.md):

- each instruction opens an :class:`~provenance.model.InstructionStep`; calls made while serving it
  nest under it; a call whose ``parent_call_id`` names another call nests under that call (a
  handoff's sub-steps are the sub-agent's calls);
- failed calls (and calls that never finished) are dropped from the steps and kept in
  :attr:`Workflow.failed <provenance.model.Workflow.failed>` with the path of the step they were
  made under; successful sub-calls of a failed handoff stay inside the failed call;
- reasoning and chat-model calls are never events; calls to the reasoning tools in
  ``ignore_tools`` (default ``think`` and ``final_answer``, BeeAI's built-ins) are dropped and their
  sub-calls move up to the nearest kept step;
- commands (``/save``, ``/suggest`` …, see :func:`is_command`) are not steps;
- revisions (TME): an instruction that corrects the previous one ("actually …", "… instead",
  "no, use …"; see :func:`looks_like_revision`) gets ``revision_of`` = the previous instruction's
  id, and the previous instruction, with its calls, moves to ``Workflow.revised``;
- the compiled workflow is the whole session so far; its id defaults to ``session/<session_id>`` so
  that saving the same session again replaces its earlier workflow.

Instruction ids are ``i1``, ``i2`` … in session order, so the same session compiles to the same
workflow whatever framework ran it (:func:`without_run_details` drops the run-specific fields,
call ids and times, for comparisons).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from em_plugin.capture.compiler import compile_workflow, without_run_details
from em_plugin.capture.events import (
    DEFAULT_IGNORED_TOOLS,
    CallEnd,
    CallError,
    CallStart,
    FinalAnswer,
    Instruction,
    RunError,
    TrajectoryEvent,
    is_command,
    looks_like_revision,
    session_workflow_id,
)
from em_plugin.errors import TrajectoryError
from provenance.model import DEFAULT_SCOPE, Workflow

__all__ = [
    "DEFAULT_IGNORED_TOOLS",
    "MAX_OUTPUT_CHARS",
    "CallEnd",
    "CallError",
    "CallStart",
    "FinalAnswer",
    "Instruction",
    "RunError",
    "Trajectory",
    "TrajectoryEvent",
    "compile_workflow",
    "is_command",
    "looks_like_revision",
    "session_workflow_id",
    "without_run_details",
]

#: Outputs longer than this (as text or JSON) are cut: the workflow keeps a readable excerpt
#: rather than megabytes of tool output, and stays under the model's size limits.
MAX_OUTPUT_CHARS = 20_000


class Trajectory:
    """One chat session's framework-neutral event log; appends are thread-safe.

    Args:
        session_id: The chat session (LangGraph ``thread_id``, a BeeAI session id …).
        scope: The scope the compiled workflow belongs to.
        framework: The source framework, recorded on the workflow.
        ignore_tools: Tool names that are reasoning, not work (see module docstring).
        revision_detector: Decides whether an instruction revises the previous one;
            ``None`` turns detection off (explicit ``revision_of`` still works).

    Raises:
        TrajectoryError: When ``session_id`` or ``scope`` is empty.
    """

    def __init__(
        self,
        session_id: str,
        *,
        scope: str = DEFAULT_SCOPE,
        framework: str | None = None,
        ignore_tools: Collection[str] = DEFAULT_IGNORED_TOOLS,
        revision_detector: Callable[[str], bool] | None = looks_like_revision,
    ) -> None:
        for name, value in (("session_id", session_id), ("scope", scope)):
            if not isinstance(value, str) or not value.strip():
                raise TrajectoryError(f"{name} must be a non-empty string, got {value!r}")
        self.session_id = session_id
        self.scope = scope
        self.framework = framework
        self.ignore_tools = frozenset(ignore_tools)
        self._detect = revision_detector
        self._lock = threading.RLock()
        self._events: list[TrajectoryEvent] = []
        self._calls: dict[str, str] = {}  # call id -> "running" | "ok" | "failed"
        self._instructions: list[str] = []  # ids, in order
        self._turn_failures: list[str] = []
        self._turn_calls = 0

    # -- appends ---------------------------------------------------------------------------

    def instruction(
        self, text: str, *, timestamp: str | None = None, revision_of: str | None = None
    ) -> str | None:
        """Record a user instruction; commands are not recorded.

        Args:
            text: The user message.
            timestamp: ISO 8601 time; now when omitted.
            revision_of: The id of an earlier instruction this one corrects; when omitted, the
                revision detector decides whether it revises the previous instruction.

        Returns:
            The new instruction's id, or ``None`` when ``text`` is a command.

        Raises:
            TrajectoryError: When the text is empty or ``revision_of`` is unknown.
        """
        if not isinstance(text, str) or not text.strip():
            raise TrajectoryError("an instruction must be non-empty text")
        if is_command(text):
            return None
        stamp = _timestamp(timestamp)
        with self._lock:
            if revision_of is not None and revision_of not in self._instructions:
                raise TrajectoryError(f"revision_of {revision_of!r} is not an earlier instruction")
            if revision_of is None and self._instructions and self._detect is not None:
                if self._detect(text):
                    revision_of = self._instructions[-1]
            instruction_id = f"i{len(self._instructions) + 1}"
            self._instructions.append(instruction_id)
            self._events.append(Instruction(instruction_id, text, stamp, revision_of))
            self._turn_failures = []
            self._turn_calls = 0
            return instruction_id

    def call_start(
        self,
        call_id: str,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        agent: str | None = None,
        parent_call_id: str | None = None,
        timestamp: str | None = None,
    ) -> None:
        """Record the start of a tool or handoff call.

        Args:
            call_id: The framework's id for the call, unique in the session.
            name: The tool name.
            args: The arguments; values that are not JSON become text.
            agent: The agent making the call.
            parent_call_id: The handoff call it was made under.
            timestamp: ISO 8601 time; now when omitted.

        Raises:
            TrajectoryError: On an empty id or name, a repeated id or an unknown parent.
        """
        if not isinstance(call_id, str) or not call_id:
            raise TrajectoryError(f"call id must be a non-empty string, got {call_id!r}")
        if not isinstance(name, str) or not name.strip():
            raise TrajectoryError(f"call {call_id!r} needs a tool name")
        if args is not None and not isinstance(args, Mapping):
            raise TrajectoryError(
                f"call {call_id!r} args must be a mapping, not {type(args).__name__}"
            )
        clean_args = {str(k): _jsonable(v) for k, v in (args or {}).items()}
        event = CallStart(call_id, name, clean_args, agent, parent_call_id, _timestamp(timestamp))
        with self._lock:
            if call_id in self._calls:
                raise TrajectoryError(f"call {call_id!r} started twice")
            if parent_call_id is not None and parent_call_id not in self._calls:
                raise TrajectoryError(f"call {call_id!r} names unknown parent {parent_call_id!r}")
            self._calls[call_id] = "running"
            self._turn_calls += 1
            self._events.append(event)

    def call_end(self, call_id: str, output: Any = None, *, timestamp: str | None = None) -> None:
        """Record that a call returned.

        Args:
            call_id: The call's id.
            output: Its result; values that are not JSON become text; long outputs are cut.
            timestamp: ISO 8601 time; now when omitted.

        Raises:
            TrajectoryError: When the call was not started or already finished.
        """
        event = CallEnd(call_id, _output(output), _timestamp(timestamp))
        with self._lock:
            self._finish(call_id, "ok")
            self._events.append(event)

    def call_error(self, call_id: str, error: str, *, timestamp: str | None = None) -> None:
        """Record that a call failed.

        Args:
            call_id: The call's id.
            error: The error message.
            timestamp: ISO 8601 time; now when omitted.

        Raises:
            TrajectoryError: When the call was not started or already finished.
        """
        message = str(error)[:MAX_OUTPUT_CHARS]
        event = CallError(call_id, message, _timestamp(timestamp))
        with self._lock:
            self._finish(call_id, "failed")
            self._turn_failures.append(message)
            self._events.append(event)

    def final_answer(self, text: str, *, timestamp: str | None = None) -> None:
        """Record the crew's answer to the current instruction (not a workflow step).

        Args:
            text: The answer, before suggestions were appended.
            timestamp: ISO 8601 time; now when omitted.
        """
        with self._lock:
            self._events.append(FinalAnswer(str(text), _timestamp(timestamp)))

    def run_error(self, error: str | BaseException, *, timestamp: str | None = None) -> None:
        """Record that the crew's run of the current instruction failed (it raised).

        The compiled workflow's outcome is then ``"failure"``, until a later instruction or
        answer (docs/capture.md).

        Args:
            error: The error or its message.
            timestamp: ISO 8601 time; now when omitted.
        """
        message = str(error)[:MAX_OUTPUT_CHARS]
        with self._lock:
            self._events.append(RunError(message, _timestamp(timestamp)))

    def _finish(self, call_id: str, status: str) -> None:
        state = self._calls.get(call_id)
        if state is None:
            raise TrajectoryError(f"call {call_id!r} ended but never started")
        if state != "running":
            raise TrajectoryError(f"call {call_id!r} already ended ({state})")
        self._calls[call_id] = status

    # -- reads -----------------------------------------------------------------------------

    @property
    def events(self) -> tuple[TrajectoryEvent, ...]:
        """A snapshot of the events so far."""
        with self._lock:
            return tuple(self._events)

    @property
    def instruction_ids(self) -> tuple[str, ...]:
        """Ids of the recorded instructions, in order."""
        with self._lock:
            return tuple(self._instructions)

    @property
    def turn_failures(self) -> tuple[str, ...]:
        """Error messages of the calls that failed since the last instruction."""
        with self._lock:
            return tuple(self._turn_failures)

    @property
    def turn_call_count(self) -> int:
        """How many calls started since the last instruction."""
        with self._lock:
            return self._turn_calls

    def has_call(self, call_id: str) -> bool:
        """Tell whether a call with this id was started."""
        with self._lock:
            return call_id in self._calls

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def compile(
        self,
        *,
        workflow_id: str | None = None,
        crew: str | None = None,
        title: str | None = None,
    ) -> Workflow:
        """Compile the whole session so far into a workflow (docs/capture.md).

        Args:
            workflow_id: Defaults to ``session/<session_id>``.
            crew: The crew description's name, recorded on the workflow.
            title: Defaults to the first instruction, shortened.

        Returns:
            The workflow; its steps may be empty when nothing happened yet.

        Raises:
            TrajectoryError: When the events cannot form a valid workflow.
        """
        return compile_workflow(
            self.events,
            workflow_id=workflow_id or session_workflow_id(self.session_id),
            session_id=self.session_id,
            scope=self.scope,
            framework=self.framework,
            crew=crew,
            title=title,
            ignore_tools=self.ignore_tools,
        )


def _timestamp(value: str | None) -> str:
    if value is None:
        return datetime.now(UTC).isoformat()
    if not isinstance(value, str):
        raise TrajectoryError(f"timestamp must be an ISO 8601 string, not {type(value).__name__}")
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise TrajectoryError(f"timestamp {value!r} is not ISO 8601") from None
    return value


def _jsonable(value: Any, depth: int = 0) -> Any:
    """Turn a framework value into a JSON value; anything unknown becomes its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 20:
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)  # pydantic models (tool outputs, args)
    if callable(dump):
        try:
            return _jsonable(dump(mode="json"), depth + 1)
        except Exception:  # noqa: BLE001 - fall back to text, a dump is a nicety
            pass
    return str(value)


def _output(value: Any) -> Any:
    value = _jsonable(value)
    if isinstance(value, str):
        return value if len(value) <= MAX_OUTPUT_CHARS else value[:MAX_OUTPUT_CHARS] + "…"
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_OUTPUT_CHARS:
        return value
    return text[:MAX_OUTPUT_CHARS] + "…"
