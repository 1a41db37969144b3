"""Workflow JSON v1: read and write the interchange format (``docs/workflow-json.md``).

One JSON object per workflow, one per line in ``.jsonl`` files. ``kind`` and ``text``/``name`` are
required, ``args`` defaults to ``{}``. Keys this module does not know are kept in the ``extra``
mapping of the object they were found on and written back unchanged.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from provenance.errors import WorkflowFormatError
from provenance.json_text import json_text
from provenance.model import (
    DEFAULT_SCOPE,
    MAX_DEPTH,
    MAX_JSON_BYTES,
    CallStep,
    FailedCall,
    InstructionStep,
    Step,
    Workflow,
)

__all__ = [
    "dumps_workflow",
    "iter_jsonl",
    "iter_numbered",
    "loads_workflow",
    "read_jsonl",
    "step_from_json",
    "step_to_json",
    "workflow_from_json",
    "workflow_to_json",
    "write_jsonl",
]

_WORKFLOW_KEYS = (
    "id",
    "title",
    "split",
    "source",
    "scope",
    "session",
    "created",
    "framework",
    "crew",
    "outcome",
)
_INSTRUCTION_KEYS = ("id", "revision_of", "timestamp")
_CALL_KEYS = ("agent", "id", "started", "ended", "outcome")
_KINDS = ("instruction", "call")


def step_from_json(obj: Any, where: str = "step") -> Step:
    """Build a step from its Workflow JSON object.

    Args:
        obj: The decoded JSON object.
        where: A location used in error messages, e.g. ``"steps[1].steps[0]"``.

    Returns:
        An :class:`InstructionStep` or :class:`CallStep`.

    Raises:
        WorkflowFormatError: When the object is not a valid step.
    """
    if not isinstance(obj, Mapping):
        raise WorkflowFormatError(f"{where} must be an object, not {type(obj).__name__}")
    kind = obj.get("kind")
    if kind not in _KINDS:
        raise WorkflowFormatError(f"{where}.kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    raw_steps = obj.get("steps", [])
    if not isinstance(raw_steps, list):
        raise WorkflowFormatError(f"{where}.steps must be a list")
    steps = tuple(step_from_json(s, f"{where}.steps[{i}]") for i, s in enumerate(raw_steps))
    try:
        if kind == "instruction":
            if "text" not in obj:
                raise WorkflowFormatError("an instruction needs 'text'")
            known = {"kind", "text", "steps", *_INSTRUCTION_KEYS}
            return InstructionStep(
                text=obj["text"],
                steps=steps,
                extra=_extra(obj, known),
                **{k: obj.get(k) for k in _INSTRUCTION_KEYS},
            )
        if "name" not in obj:
            raise WorkflowFormatError("a call needs 'name'")
        known = {"kind", "name", "args", "output", "steps", *_CALL_KEYS}
        extra = _extra(obj, known)
        if "output" in obj and obj["output"] is None:
            # Keep an explicit null output distinct from an absent one.
            extra["output"] = None
        return CallStep(
            name=obj["name"],
            args=obj.get("args", {}),
            output=obj.get("output"),
            steps=steps,
            extra=extra,
            **{k: obj.get(k) for k in _CALL_KEYS},
        )
    except WorkflowFormatError as exc:
        raise type(exc)(f"{where}: {exc.reason}") from None


def step_to_json(step: Step) -> dict[str, Any]:
    """Return the Workflow JSON object of a step."""
    if isinstance(step, InstructionStep):
        out: dict[str, Any] = {"kind": "instruction", "text": step.text}
        out.update({k: getattr(step, k) for k in _INSTRUCTION_KEYS if getattr(step, k) is not None})
        out.update(step.extra)
        out["steps"] = [step_to_json(s) for s in step.steps]
        return out
    out = {"kind": "call", "name": step.name, "args": dict(step.args)}
    if step.output is not None:
        out["output"] = step.output
    out.update({k: getattr(step, k) for k in _CALL_KEYS if getattr(step, k) is not None})
    out.update(step.extra)
    if step.steps:
        out["steps"] = [step_to_json(s) for s in step.steps]
    return out


def workflow_from_json(obj: Any) -> Workflow:
    """Build a workflow from its Workflow JSON v1 object.

    Args:
        obj: The decoded JSON object.

    Returns:
        The workflow.

    Raises:
        WorkflowFormatError: When the object is not a valid workflow; the message names the key.
    """
    if not isinstance(obj, Mapping):
        raise WorkflowFormatError(f"a workflow must be a JSON object, not {type(obj).__name__}")
    if "id" not in obj:
        raise WorkflowFormatError("a workflow needs 'id'")
    if not isinstance(obj["id"], str):
        raise WorkflowFormatError(f"'id' must be a string, not {_json_type(obj['id'])}")
    if "steps" not in obj or not isinstance(obj["steps"], list):
        raise WorkflowFormatError("a workflow needs 'steps', a list")
    steps = tuple(step_from_json(s, f"steps[{i}]") for i, s in enumerate(obj["steps"]))
    failed = tuple(_failed_from_json(f, i) for i, f in enumerate(_list(obj, "failed")))
    revised = tuple(
        _instruction_from_json(r, f"revised[{i}]") for i, r in enumerate(_list(obj, "revised"))
    )
    known = {"steps", "failed", "revised", *_WORKFLOW_KEYS}
    fields = {k: obj[k] for k in _WORKFLOW_KEYS if obj.get(k) is not None}
    fields.setdefault("scope", DEFAULT_SCOPE)
    return Workflow(steps=steps, failed=failed, revised=revised, extra=_extra(obj, known), **fields)


def workflow_to_json(workflow: Workflow) -> dict[str, Any]:
    """Return the Workflow JSON v1 object of a workflow (inverse of :func:`workflow_from_json`)."""
    out: dict[str, Any] = {}
    for key in _WORKFLOW_KEYS:
        value = getattr(workflow, key)
        if value is not None and not (key == "scope" and value == DEFAULT_SCOPE):
            out[key] = value
    out.update(workflow.extra)
    if workflow.failed:
        out["failed"] = [_failed_to_json(f) for f in workflow.failed]
    if workflow.revised:
        out["revised"] = [step_to_json(r) for r in workflow.revised]
    out["steps"] = [step_to_json(s) for s in workflow.steps]
    return out


def dumps_workflow(workflow: Workflow) -> str:
    """Return a workflow as one line of Workflow JSON (UTF-8 text, no trailing newline)."""
    return json_text(workflow_to_json(workflow))


def loads_workflow(line: str) -> Workflow:
    """Parse one line of Workflow JSON.

    Raises:
        WorkflowFormatError: When the line is not JSON or not a valid workflow.
    """
    if len(line) > MAX_JSON_BYTES * 4:
        raise WorkflowFormatError(f"line is {len(line)} characters, over the limit")
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise WorkflowFormatError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise WorkflowFormatError("invalid JSON: nested too deeply") from None
    except ValueError as exc:
        # json raises a bare ValueError for integers over sys.get_int_max_str_digits() digits.
        if "digits" in str(exc):
            limit = sys.get_int_max_str_digits()
            raise WorkflowFormatError(
                f"invalid JSON: an integer has more than {limit} digits"
            ) from None
        raise WorkflowFormatError(f"invalid JSON: {exc}") from None
    try:
        return workflow_from_json(obj)
    except RecursionError:
        # Steps nested far deeper than MAX_DEPTH exhaust the stack before the limit is checked.
        raise WorkflowFormatError(f"steps nest deeper than {MAX_DEPTH} levels") from None


def iter_jsonl(
    source: str | Path | IO[str] | IO[bytes],
    *,
    skip_invalid: bool = False,
    errors: list[WorkflowFormatError] | None = None,
) -> Iterator[Workflow]:
    """Yield the workflows of a ``.jsonl`` file; blank lines are ignored.

    Args:
        source: A path, or an open text or binary file.
        skip_invalid: Skip malformed lines instead of raising; they are appended to ``errors``.
        errors: Receives the located errors of skipped lines.

    Raises:
        WorkflowFormatError: On the first malformed line (unless ``skip_invalid``), located as
            ``file:line: reason``. A line that is not UTF-8 is a malformed line.
    """
    for _, workflow in iter_numbered(source, skip_invalid=skip_invalid, errors=errors):
        yield workflow


def iter_numbered(
    source: str | Path | IO[str] | IO[bytes],
    *,
    skip_invalid: bool = False,
    errors: list[WorkflowFormatError] | None = None,
) -> Iterator[tuple[int, Workflow]]:
    """Like :func:`iter_jsonl`, yielding ``(line number, workflow)`` pairs (1-based lines).

    Raises:
        WorkflowFormatError: As :func:`iter_jsonl`.
    """
    if isinstance(source, str | Path):
        name = str(source)
        try:
            # Binary, so that a line that is not UTF-8 is located and can be skipped alone.
            handle: IO[Any] = open(source, "rb")
        except OSError as exc:
            raise WorkflowFormatError(f"cannot read: {exc.strerror}", file=name) from None
    else:
        handle, name = source, str(getattr(source, "name", "<stream>"))
    with handle:
        number = 0
        while True:
            number += 1
            try:
                line = handle.readline()
            except UnicodeDecodeError as exc:
                # A text stream decodes ahead of the line, so this line is a best guess.
                raise WorkflowFormatError(
                    f"not UTF-8 text: {exc.reason}", file=name, line=number
                ) from None
            if not line:
                return
            try:
                text = _decode(line)
                if not text.strip():
                    continue
                yield number, loads_workflow(text)
            except WorkflowFormatError as exc:
                located = exc.at(file=name, line=number)
                if not skip_invalid:
                    raise located from None
                if errors is not None:
                    errors.append(located)


def _decode(line: str | bytes) -> str:
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def read_jsonl(
    source: str | Path | IO[str] | IO[bytes],
    *,
    skip_invalid: bool = False,
    errors: list[WorkflowFormatError] | None = None,
) -> list[Workflow]:
    """Read every workflow of a ``.jsonl`` file, all or nothing (unless ``skip_invalid``).

    Args:
        source: A path, or an open text or binary file.
        skip_invalid: Skip malformed lines, and lines that repeat an earlier id, instead of
            raising; they are appended to ``errors``.
        errors: Receives the located errors of skipped lines.

    Returns:
        The workflows in file order.

    Raises:
        WorkflowFormatError: On the first malformed line, as ``file:line: reason``; a line that
            repeats an id of an earlier line is malformed too (the message names both lines).
    """
    name = str(getattr(source, "name", "<stream>")) if not isinstance(source, str | Path) else None
    file = str(source) if name is None else name
    first_line: dict[str, int] = {}
    out = []
    for number, workflow in iter_numbered(source, skip_invalid=skip_invalid, errors=errors):
        if workflow.id in first_line:
            error = WorkflowFormatError(
                f"duplicate workflow id {workflow.id!r} (first on line {first_line[workflow.id]})",
                file=file,
                line=number,
            )
            if not skip_invalid:
                raise error
            if errors is not None:
                errors.append(error)
            continue
        first_line[workflow.id] = number
        out.append(workflow)
    return out


def write_jsonl(workflows: Iterable[Workflow], target: str | Path | IO[str]) -> int:
    """Write workflows as Workflow JSON lines; returns how many were written."""
    if isinstance(target, str | Path):
        with open(target, "w", encoding="utf-8") as handle:
            return write_jsonl(workflows, handle)
    count = 0
    for workflow in workflows:
        target.write(dumps_workflow(workflow) + "\n")
        count += 1
    return count


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _extra(obj: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise WorkflowFormatError(f"{key} must be a list")
    return value


def _instruction_from_json(obj: Any, where: str) -> InstructionStep:
    step = step_from_json(obj, where)
    if not isinstance(step, InstructionStep):
        raise WorkflowFormatError(f"{where} must be an instruction")
    return step


def _failed_from_json(obj: Any, i: int) -> FailedCall:
    where = f"failed[{i}]"
    if not isinstance(obj, Mapping):
        raise WorkflowFormatError(f"{where} must be an object")
    body = {k: v for k, v in obj.items() if k not in ("error", "parent")}
    call = step_from_json(body, where)
    if not isinstance(call, CallStep):
        raise WorkflowFormatError(f"{where} must be a call")
    try:
        return FailedCall(call=call, error=obj.get("error", ""), parent=obj.get("parent"))
    except WorkflowFormatError as exc:
        raise type(exc)(f"{where}: {exc.reason}") from None


def _failed_to_json(failed: FailedCall) -> dict[str, Any]:
    out = step_to_json(failed.call)
    # Every failed call's outcome is "failure": written only where it is not implied.
    del out["outcome"]
    out["error"] = failed.error
    if failed.parent is not None:
        out["parent"] = failed.parent
    return out
