"""The workflow model: immutable, typed, framework-neutral (``docs/workflow-json.md``).

A :class:`Workflow` is an ordered tree of steps. An :class:`InstructionStep` is natural-language
text from the user (or a delegating agent); a :class:`CallStep` is a tool call, whose sub-steps are
the calls a sub-agent made after a handoff. :meth:`Workflow.leaves` gives the leaf sequence that
retrieval and evaluation work on.

Failed calls and superseded (revised) instructions are not part of the step tree: they are kept as
retrospective provenance in :attr:`Workflow.failed` and :attr:`Workflow.revised`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeAlias

from provenance.errors import LimitError, WorkflowFormatError
from provenance.json_text import json_writer

__all__ = [
    "CallStep",
    "DEFAULT_SCOPE",
    "FailedCall",
    "InstructionStep",
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_JSON_BYTES",
    "MAX_STEPS",
    "MAX_TEXT_CHARS",
    "MAX_VALUE_DEPTH",
    "OUTCOMES",
    "Step",
    "Workflow",
    "walk_steps",
]

#: Size limits checked on construction; they keep one workflow inside what a store and an index
#: handle comfortably, and turn hostile inputs into a clear error instead of a stalled save.
MAX_STEPS = 20_000
MAX_DEPTH = 32
MAX_TEXT_CHARS = 100_000
MAX_ID_CHARS = 1_000
MAX_JSON_BYTES = 2_000_000
#: Deepest nesting of lists and objects in an args, output or extra value. Deeper values are
#: refused on construction: every walker of a value (redaction, mapping) stays far from
#: Python's recursion limit.
MAX_VALUE_DEPTH = 64

DEFAULT_SCOPE = "default"

#: The outcomes a workflow or a call can have (``None`` on either means unknown): a failed call
#: is ``"failure"``; a session that ended without being saved is ``"abandoned"``.
OUTCOMES: tuple[str, ...] = ("success", "failure", "abandoned")

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")
# JSON values must be strict JSON: no NaN or infinity, which other readers reject.
_json_strict = json_writer(allow_nan=False)


def _check_json(value: Any, what: str) -> None:
    try:
        text = _json_strict(value)
    except RecursionError:
        raise LimitError(f"{what} nests deeper than {MAX_VALUE_DEPTH} levels") from None
    except (TypeError, ValueError) as exc:
        raise WorkflowFormatError(f"{what} is not a JSON value: {exc}") from None
    # A value cannot nest deeper than it has brackets, so the walk runs only when it might.
    if text.count("[") + text.count("{") > MAX_VALUE_DEPTH:
        _check_depth(value, what)
    if text.isascii():
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise WorkflowFormatError(
                f"{_surrogate_path(value, what)} contains a lone surrogate, which is not UTF-8 text"
            ) from None
    if size > MAX_JSON_BYTES:
        raise LimitError(f"{what} is {size} bytes of JSON, over the limit {MAX_JSON_BYTES}")


def _check_depth(value: Any, what: str) -> None:
    # Iterative, so a hostile depth cannot exhaust the stack while it is being measured.
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth >= MAX_VALUE_DEPTH:
                raise LimitError(f"{what} nests deeper than {MAX_VALUE_DEPTH} levels")
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)


def _surrogate_path(value: Any, what: str) -> str:
    """Return where in ``value`` the first lone surrogate is, e.g. ``args['q'][2]``."""
    stack: list[tuple[Any, str]] = [(value, what)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _is_utf8(item):
                return path
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str) and not _is_utf8(key):
                    return f"{path} key {key!r}"
                stack.append((child, f"{path}[{key!r}]"))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
    return what


def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_text(value: Any, what: str, *, limit: int = MAX_TEXT_CHARS, empty: bool = False) -> None:
    if not isinstance(value, str):
        raise WorkflowFormatError(f"{what} must be a string, not {type(value).__name__}")
    if not empty and not value.strip():
        raise WorkflowFormatError(f"{what} must not be empty")
    if len(value) > limit:
        raise LimitError(f"{what} is {len(value)} characters, over the limit {limit}")
    if "\x00" in value:
        raise WorkflowFormatError(f"{what} contains a NUL character")
    if not _is_utf8(value):
        # A lone surrogate (e.g. from a JSON "\ud800" escape) cannot be stored as UTF-8.
        raise WorkflowFormatError(f"{what} contains a lone surrogate, which is not UTF-8 text")


def _check_optional_text(value: Any, what: str, *, limit: int = MAX_TEXT_CHARS) -> None:
    if value is not None:
        _check_text(value, what, limit=limit, empty=True)


def _check_id(value: Any, what: str) -> None:
    _check_text(value, what, limit=MAX_ID_CHARS)
    if _ID_FORBIDDEN.search(value):
        raise WorkflowFormatError(f"{what} {value!r} contains a control character")


def _check_time(value: Any, what: str) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise WorkflowFormatError(f"{what} must be an ISO 8601 string, not {type(value).__name__}")
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise WorkflowFormatError(f"{what} {value!r} is not an ISO 8601 timestamp") from None


def _check_extra(extra: Any, what: str) -> None:
    if not isinstance(extra, Mapping):
        raise WorkflowFormatError(f"{what} extra must be a mapping")
    _check_json(dict(extra), f"{what} extra")


def _check_outcome(value: Any, what: str) -> None:
    if value is not None and value not in OUTCOMES:
        raise WorkflowFormatError(
            f"{what} outcome must be one of {', '.join(OUTCOMES)} (or null); got {value!r}"
        )


def _check_finite(value: Any, what: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise WorkflowFormatError(f"{what} must be finite")


@dataclass(frozen=True)
class InstructionStep:
    """Natural-language text given by the user, with the steps that served it."""

    text: str
    """The instruction as the user wrote it."""
    steps: tuple[Step, ...] = ()
    """Ordered sub-steps: the calls made while serving the instruction."""
    id: str | None = None
    """Optional stable id, used by :attr:`revision_of` links."""
    revision_of: str | None = None
    """The id of an earlier instruction this one corrects (``prov:wasRevisionOf``)."""
    timestamp: str | None = None
    """ISO 8601 time the instruction was given."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Unknown Workflow JSON keys, kept for a lossless round trip."""

    kind: ClassVar[Literal["instruction"]] = "instruction"

    def __post_init__(self) -> None:
        _check_text(self.text, "instruction text")
        _check_steps(self, "instruction")
        _check_optional_text(self.id, "instruction id", limit=MAX_ID_CHARS)
        _check_optional_text(self.revision_of, "instruction revision_of", limit=MAX_ID_CHARS)
        _check_time(self.timestamp, "instruction timestamp")
        _check_extra(self.extra, "instruction")


@dataclass(frozen=True)
class CallStep:
    """A tool or function call; a handoff's sub-steps are the sub-agent's calls."""

    name: str
    """The tool name."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """The call's arguments, a JSON object."""
    output: Any = None
    """The call's result, a JSON value or text; ``None`` when unknown."""
    agent: str | None = None
    """The agent that made the call."""
    steps: tuple[Step, ...] = ()
    """Ordered sub-steps (the sub-agent's calls after a handoff)."""
    id: str | None = None
    """Optional stable id, e.g. the framework's tool-call id."""
    started: str | None = None
    """ISO 8601 start time."""
    ended: str | None = None
    """ISO 8601 end time."""
    outcome: str | None = None
    """One of :data:`OUTCOMES`, ``None`` when unknown; a failed call's is ``"failure"``."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Unknown Workflow JSON keys, kept for a lossless round trip."""

    kind: ClassVar[Literal["call"]] = "call"

    def __post_init__(self) -> None:
        _check_text(self.name, "call name", limit=MAX_ID_CHARS)
        if _CONTROL.search(self.name):
            raise WorkflowFormatError(f"call name {self.name!r} contains a control character")
        if not isinstance(self.args, Mapping):
            raise WorkflowFormatError(
                f"call {self.name!r} args must be a JSON object, not {type(self.args).__name__}"
            )
        if not all(isinstance(k, str) for k in self.args):
            raise WorkflowFormatError(f"call {self.name!r} args keys must be strings")
        _check_json(dict(self.args), f"call {self.name!r} args")
        _check_json(self.output, f"call {self.name!r} output")
        _check_finite(self.output, f"call {self.name!r} output")
        _check_optional_text(self.agent, f"call {self.name!r} agent", limit=MAX_ID_CHARS)
        _check_optional_text(self.id, f"call {self.name!r} id", limit=MAX_ID_CHARS)
        _check_time(self.started, f"call {self.name!r} started")
        _check_time(self.ended, f"call {self.name!r} ended")
        _check_outcome(self.outcome, f"call {self.name!r}")
        _check_steps(self, f"call {self.name!r}")
        _check_extra(self.extra, f"call {self.name!r}")


Step: TypeAlias = InstructionStep | CallStep


def _check_steps(owner: Any, what: str) -> None:
    steps = owner.steps
    if isinstance(steps, list):
        # Accept lists for convenience but store tuples, so the tree stays immutable.
        object.__setattr__(owner, "steps", tuple(steps))
        steps = owner.steps
    if not isinstance(steps, tuple):
        raise WorkflowFormatError(f"{what} steps must be a sequence, not {type(steps).__name__}")
    for i, step in enumerate(steps):
        if not isinstance(step, InstructionStep | CallStep):
            raise WorkflowFormatError(
                f"{what} step {i} must be an InstructionStep or CallStep, not {type(step).__name__}"
            )


@dataclass(frozen=True)
class FailedCall:
    """A tool call that failed; kept as retrospective provenance, never in the step tree.

    Its call's outcome is ``"failure"``: a call given with no outcome gets it, any other
    outcome is an error.
    """

    call: CallStep
    """The call as it was attempted (its ``outcome`` is ``"failure"``)."""
    error: str
    """The error message the tool raised or returned."""
    parent: str | None = None
    """Path (see :meth:`Workflow.walk`) of the step it was made under; ``None`` at top level."""

    def __post_init__(self) -> None:
        if not isinstance(self.call, CallStep):
            raise WorkflowFormatError("failed call must hold a CallStep")
        if self.call.outcome is None:
            object.__setattr__(self, "call", dataclasses.replace(self.call, outcome="failure"))
        elif self.call.outcome != "failure":
            raise WorkflowFormatError(
                f"failed call {self.call.name!r} outcome must be 'failure' (or null); "
                f"got {self.call.outcome!r}"
            )
        _check_text(self.error, f"failed call {self.call.name!r} error", empty=True)
        _check_optional_text(self.parent, "failed call parent", limit=MAX_ID_CHARS)


def walk_steps(steps: Sequence[Step], *, prefix: str = "") -> Iterator[tuple[str, Step]]:
    """Yield ``(path, step)`` for steps and everything under them, depth-first, left to right.

    The one walk of a step tree: :meth:`Workflow.walk` is this over a workflow's steps; a failed
    call's or a revised instruction's sub-steps are walked the same way.

    Args:
        steps: The top-level steps of the tree.
        prefix: Put before every path, e.g. ``"f0."`` for the sub-steps of the first failed call.

    Returns:
        An iterator of ``(path, step)``; a path is the dotted 0-based position after ``prefix``.
    """
    stack: list[tuple[str, Step]] = [(f"{prefix}{i}", s) for i, s in enumerate(steps)]
    stack.reverse()
    pop, extend = stack.pop, stack.extend
    while stack:
        path, step = pop()
        yield path, step
        children = step.steps
        # Most steps are leaves: every save walks each tree several times (mapping, index,
        # redaction), so the leaves skip building an empty child list.
        if children:
            extend([(f"{path}.{i}", children[i]) for i in range(len(children) - 1, -1, -1)])


@dataclass(frozen=True)
class Workflow:
    """A saved workflow: ordered steps plus metadata (scope, session, times, source)."""

    id: str
    """Stable workflow id; saving an existing id replaces that workflow."""
    steps: tuple[Step, ...] = ()
    """Ordered top-level steps."""
    title: str | None = None
    """Human-readable title."""
    scope: str = DEFAULT_SCOPE
    """Tenant / agent / user scope; retrieval never crosses scopes."""
    session: str | None = None
    """The chat session (e.g. LangGraph ``thread_id``) the workflow came from."""
    created: str | None = None
    """ISO 8601 creation time."""
    framework: str | None = None
    """Source framework, e.g. ``"langgraph"`` or ``"beeai"``."""
    crew: str | None = None
    """Reference to the crew description (its name)."""
    source: str | None = None
    """Where the workflow came from (dataset, license, ``synthetic:...``)."""
    split: str | None = None
    """Evaluation split, ``"train"`` or ``"test"``, when it belongs to a benchmark file."""
    outcome: str | None = None
    """How the run ended, one of :data:`OUTCOMES`; ``None`` when unknown."""
    failed: tuple[FailedCall, ...] = ()
    """Failed calls (retrospective provenance only)."""
    revised: tuple[InstructionStep, ...] = ()
    """Instructions that later ones revised (retrospective provenance only)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Unknown Workflow JSON keys, kept for a lossless round trip."""

    def __post_init__(self) -> None:
        _check_id(self.id, "workflow id")
        _check_steps(self, f"workflow {self.id!r}")
        _check_optional_text(self.title, "workflow title")
        _check_id(self.scope, "workflow scope")
        for name in ("session", "framework", "crew", "source", "split"):
            _check_optional_text(getattr(self, name), f"workflow {name}", limit=MAX_ID_CHARS)
        _check_time(self.created, "workflow created")
        _check_outcome(self.outcome, "workflow")
        for name, kind in (("failed", FailedCall), ("revised", InstructionStep)):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
                value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, kind) for v in value):
                raise WorkflowFormatError(f"workflow {name} must be a sequence of {kind.__name__}")
        _check_extra(self.extra, "workflow")
        count = 0
        for path, _ in self.walk():
            count += 1
            if count > MAX_STEPS:
                raise LimitError(f"workflow {self.id!r} has more than {MAX_STEPS} steps")
            if path.count(".") >= MAX_DEPTH:
                raise LimitError(f"workflow {self.id!r} nests deeper than {MAX_DEPTH} levels")

    def walk(self) -> Iterator[tuple[str, Step]]:
        """Yield ``(path, step)`` depth-first, left to right (see :func:`walk_steps`).

        A path is the dotted 0-based position, e.g. ``"1.0"`` is the first sub-step of the second
        top-level step; its depth is ``path.count(".")`` and its parent's path
        ``path.rpartition(".")[0]``.
        """
        return walk_steps(self.steps)

    def ancestors(self, path: str) -> tuple[Step, ...]:
        """Return the steps above the step at a dotted path, outermost first.

        Raises:
            KeyError: When no step has that path.
        """
        parts = path.split(".")
        above = tuple(self.step_at(".".join(parts[:n])) for n in range(1, len(parts)))
        self.step_at(path)
        return above

    def leaves(self) -> list[Step]:
        """Return the leaf sequence ``S(W)``: steps with no sub-steps, depth-first."""
        return [step for _, step in self.walk() if not step.steps]

    def leaf_paths(self) -> list[str]:
        """Return the paths of :meth:`leaves`, in the same order."""
        return [path for path, step in self.walk() if not step.steps]

    def step_at(self, path: str) -> Step:
        """Return the step at a dotted path.

        Raises:
            KeyError: When no step has that path.
        """
        steps: tuple[Step, ...] = self.steps
        step: Step | None = None
        try:
            for part in path.split("."):
                step = steps[int(part)]
                steps = step.steps
        except (ValueError, IndexError):
            raise KeyError(path) from None
        if step is None:
            raise KeyError(path)
        return step

    def replace(self, **changes: Any) -> Workflow:
        """Return a copy with the given fields changed."""
        return dataclasses.replace(self, **changes)

    def prefix(self, n: int) -> Workflow:
        """Return the minimal sub-tree holding the first ``n`` leaves (docs/workflow-json.md)."""
        return self.replace(steps=_prefix(self.steps, n)[0], failed=(), revised=())


def _prefix(steps: tuple[Step, ...], n: int) -> tuple[tuple[Step, ...], int]:
    out: list[Step] = []
    for step in steps:
        if n <= 0:
            break
        if not step.steps:
            out.append(step)
            n -= 1
            continue
        kept, n = _prefix(step.steps, n)
        out.append(dataclasses.replace(step, steps=kept))
    return tuple(out), n
