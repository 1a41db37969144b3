"""The workflow compiler: trajectory events -> a :class:`~provenance.model.Workflow`.

The contract is docs/capture.md.

The rules are listed in :mod:`em_plugin.capture.trajectory`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from em_plugin.capture.events import (
    DEFAULT_IGNORED_TOOLS,
    CallEnd,
    CallError,
    CallStart,
    FinalAnswer,
    Instruction,
    RunError,
    TrajectoryEvent,
)
from em_plugin.errors import TrajectoryError
from provenance.errors import ProvenanceError
from provenance.model import (
    DEFAULT_SCOPE,
    CallStep,
    FailedCall,
    InstructionStep,
    Step,
    Workflow,
)

__all__ = ["compile_workflow", "without_run_details"]

_TITLE_CHARS = 80


@dataclass
class _Call:
    start: CallStart
    status: str = "running"
    output: Any = None
    error: str | None = None
    ended: str | None = None
    children: list[_Call] = field(default_factory=list)


@dataclass
class _Instr:
    event: Instruction
    children: list[_Call] = field(default_factory=list)


def compile_workflow(
    events: Iterable[TrajectoryEvent],
    *,
    workflow_id: str,
    session_id: str | None = None,
    scope: str = DEFAULT_SCOPE,
    framework: str | None = None,
    crew: str | None = None,
    title: str | None = None,
    ignore_tools: Collection[str] = DEFAULT_IGNORED_TOOLS,
) -> Workflow:
    """Compile trajectory events into a workflow (rules in the module docstring).

    Args:
        events: The session's events in order.
        workflow_id: The workflow id.
        session_id: Recorded on the workflow.
        scope: Recorded on the workflow.
        framework: Recorded on the workflow.
        crew: The crew description's name.
        title: Defaults to the first kept instruction, shortened.
        ignore_tools: Reasoning tools to drop.

    Returns:
        The compiled workflow.

    Raises:
        TrajectoryError: When the events are inconsistent (unknown or repeated ids).
    """
    top, instructions, created, run_failed = _build_tree(events, frozenset(ignore_tools))
    revised_ids = {
        i.event.revision_of for i in instructions.values() if i.event.revision_of is not None
    }
    failed: list[FailedCall] = []
    steps: list[Step] = []
    revised: list[InstructionStep] = []
    try:
        for node in top:
            if isinstance(node, _Instr) and node.event.id in revised_ids:
                revised.append(_instruction_step(node, None, failed))
                continue
            step = (
                _instruction_step(node, str(len(steps)), failed)
                if isinstance(node, _Instr)
                else _call_step(node, None, str(len(steps)), failed)
            )
            if step is not None:
                steps.append(step)
        first = next((s.text for s in steps if isinstance(s, InstructionStep)), None)
        return Workflow(
            id=workflow_id,
            steps=tuple(steps),
            title=title if title is not None else _shorten(first),
            scope=scope,
            session=session_id,
            created=created,
            framework=framework,
            crew=crew,
            failed=tuple(failed),
            revised=tuple(revised),
            # The framework told that the latest turn's run failed; otherwise unknown.
            outcome="failure" if run_failed else None,
        )
    except ProvenanceError as exc:
        raise TrajectoryError(f"the trajectory does not form a valid workflow: {exc}") from exc


def _build_tree(
    events: Iterable[TrajectoryEvent], ignore: frozenset[str]
) -> tuple[list[_Instr | _Call], dict[str, _Instr], str | None, bool]:
    top: list[_Instr | _Call] = []
    instructions: dict[str, _Instr] = {}
    calls: dict[str, _Call] = {}
    current: _Instr | None = None
    created: str | None = None
    run_failed = False  # the latest turn's run raised instead of answering
    for event in events:
        created = created or getattr(event, "timestamp", None)
        if isinstance(event, RunError | FinalAnswer):
            run_failed = isinstance(event, RunError)
            continue
        if isinstance(event, Instruction):
            run_failed = False
            if event.id in instructions:
                raise TrajectoryError(f"instruction {event.id!r} appears twice")
            if event.revision_of is not None and event.revision_of not in instructions:
                raise TrajectoryError(
                    f"instruction {event.id!r} revises unknown instruction {event.revision_of!r}"
                )
            current = _Instr(event)
            instructions[event.id] = current
            top.append(current)
        elif isinstance(event, CallStart):
            if event.call_id in calls:
                raise TrajectoryError(f"call {event.call_id!r} started twice")
            node = _Call(event)
            calls[event.call_id] = node
            if event.parent_call_id is not None:
                parent = calls.get(event.parent_call_id)
                if parent is None:
                    raise TrajectoryError(
                        f"call {event.call_id!r} names unknown parent {event.parent_call_id!r}"
                    )
                parent.children.append(node)
            elif current is not None:
                current.children.append(node)
            else:
                top.append(node)
        elif isinstance(event, CallEnd | CallError):
            ended = calls.get(event.call_id)
            if ended is None:
                raise TrajectoryError(f"call {event.call_id!r} ended but never started")
            node = ended
            if node.status != "running":
                raise TrajectoryError(f"call {event.call_id!r} already ended ({node.status})")
            node.ended = event.timestamp
            if isinstance(event, CallEnd):
                node.status, node.output = "ok", event.output
            else:
                node.status, node.error = "failed", event.error
        else:
            raise TrajectoryError(f"unknown trajectory event {type(event).__name__}")
    return _splice_ignored(top, ignore), instructions, created, run_failed


def _splice_ignored(nodes: list[Any], ignore: frozenset[str]) -> list[Any]:
    """Drop reasoning-tool calls, moving their sub-calls up into their place."""
    out: list[Any] = []
    for node in nodes:
        node.children = _splice_ignored(node.children, ignore)
        if isinstance(node, _Call) and node.start.name in ignore:
            out.extend(node.children)
        else:
            out.append(node)
    return out


def _instruction_step(node: _Instr, path: str | None, failed: list[FailedCall]) -> InstructionStep:
    children: list[Step] = []
    for child in node.children:
        step = _call_step(child, path, _child(path, len(children)), failed)
        if step is not None:
            children.append(step)
    event = node.event
    return InstructionStep(
        text=event.text,
        steps=tuple(children),
        id=event.id,
        revision_of=event.revision_of,
        timestamp=event.timestamp,
    )


def _call_step(
    node: _Call, parent_path: str | None, path: str | None, failed: list[FailedCall]
) -> CallStep | None:
    """Build a kept call step, or record the call as failed and return None."""
    ok = node.status == "ok"
    # Failures inside a failed call (path None) are placed under its nearest kept ancestor.
    anchor = path if ok and path is not None else parent_path
    children: list[Step] = []
    for child in node.children:
        step = _call_step(child, anchor, _child(path, len(children)) if ok else None, failed)
        if step is not None:
            children.append(step)
    start = node.start
    call = CallStep(
        name=start.name,
        args=dict(start.args),
        output=node.output,
        agent=start.agent,
        steps=tuple(children),
        id=start.call_id,
        started=start.timestamp,
        ended=node.ended,
    )
    if ok:
        return call
    error = node.error if node.status == "failed" else "the call did not finish"
    failed.append(FailedCall(call=call, error=error or "", parent=parent_path))
    return None


def _child(path: str | None, index: int) -> str | None:
    return None if path is None else f"{path}.{index}"


def without_run_details(workflow: Workflow) -> Workflow:
    """Drop what differs between two runs of the same session: call ids, times, framework.

    Two frameworks running the same session give equal results under this view.

    Args:
        workflow: A compiled workflow.

    Returns:
        A copy without call ids, timestamps, ``created``, ``framework`` and failed-call details
        other than name, args and parent.
    """

    def strip(step: Step) -> Step:
        kids = tuple(strip(s) for s in step.steps)
        if isinstance(step, CallStep):
            return dataclasses.replace(step, id=None, started=None, ended=None, steps=kids)
        return dataclasses.replace(step, timestamp=None, steps=kids)

    failed = tuple(
        FailedCall(call=strip(f.call), error="", parent=f.parent)  # type: ignore[arg-type]
        for f in workflow.failed
    )
    return workflow.replace(
        steps=tuple(strip(s) for s in workflow.steps),
        revised=tuple(strip(r) for r in workflow.revised),
        failed=failed,
        created=None,
        framework=None,
    )


def _shorten(text: str | None) -> str | None:
    if text is None:
        return None
    one_line = " ".join(text.split())
    if len(one_line) <= _TITLE_CHARS:
        return one_line
    return one_line[: _TITLE_CHARS - 1] + "…"
