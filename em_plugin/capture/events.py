"""Trajectory events and the two text rules of the compiler: commands and revision cues.

See :mod:`em_plugin.capture.trajectory` for how integrations use them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "DEFAULT_IGNORED_TOOLS",
    "CallEnd",
    "CallError",
    "CallStart",
    "FinalAnswer",
    "Instruction",
    "RunError",
    "TrajectoryEvent",
    "is_command",
    "looks_like_revision",
    "session_workflow_id",
]

#: Tools that carry an agent's reasoning or its answer, not work: never workflow steps.
# The recall tool is the memory looking at itself, not work done for the user: never a step.
DEFAULT_IGNORED_TOOLS: frozenset[str] = frozenset({"think", "final_answer", "recall_workflows"})

_COMMAND = re.compile(r"^/[A-Za-z][A-Za-z0-9_-]*(?:\s.*)?$", re.DOTALL)
_REVISION = re.compile(
    r"^\s*(?:actually|correction|scratch that|i meant|sorry[,!]?\s+i meant|no[,.!:;]|wait[,.!])"
    r"|\binstead\b"
    r"|\brather than\b",
    re.IGNORECASE,
)


def is_command(text: str) -> bool:
    """Tell whether a user message is a command (``/save``, ``/suggest 5`` …), not an instruction.

    A command is a slash followed by a word at the very start; ``/tmp/file.pdf`` is not one.

    Args:
        text: The user message.

    Returns:
        True for commands.
    """
    return isinstance(text, str) and _COMMAND.match(text.strip()) is not None


def looks_like_revision(text: str) -> bool:
    """Tell whether an instruction corrects the previous one (TME-style revision cues).

    Args:
        text: The instruction.

    Returns:
        True when it starts with "actually", "no,", "correction", "scratch that", "I meant",
        "wait," or says "instead" / "rather than".
    """
    return _REVISION.search(text) is not None


def session_workflow_id(session_id: str) -> str:
    """Return the default workflow id of a session (saving the session again replaces it)."""
    return f"session/{session_id}"


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    """The user gave an instruction."""

    id: str
    """Instruction id, ``i1``, ``i2`` … in session order."""
    text: str
    """The instruction text."""
    timestamp: str | None = None
    """ISO 8601 time."""
    revision_of: str | None = None
    """The id of the earlier instruction this one corrects."""


@dataclass(frozen=True)
class CallStart:
    """A tool (or handoff) call started."""

    call_id: str
    """Framework call id, unique in the session."""
    name: str
    """Tool name."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """JSON arguments."""
    agent: str | None = None
    """The agent that made the call."""
    parent_call_id: str | None = None
    """The handoff call this call was made under, if any."""
    timestamp: str | None = None
    """ISO 8601 time."""


@dataclass(frozen=True)
class CallEnd:
    """A call returned."""

    call_id: str
    """The call's id."""
    output: Any = None
    """The JSON (or text) result."""
    timestamp: str | None = None
    """ISO 8601 time."""


@dataclass(frozen=True)
class CallError:
    """A call failed."""

    call_id: str
    """The call's id."""
    error: str
    """The error message."""
    timestamp: str | None = None
    """ISO 8601 time."""


@dataclass(frozen=True)
class FinalAnswer:
    """The crew answered the current instruction."""

    text: str
    """The answer text, before any suggestions were appended."""
    timestamp: str | None = None
    """ISO 8601 time."""


@dataclass(frozen=True)
class RunError:
    """The crew's run of the current instruction failed (it raised instead of answering)."""

    error: str
    """The error message."""
    timestamp: str | None = None
    """ISO 8601 time."""


TrajectoryEvent: TypeAlias = Instruction | CallStart | CallEnd | CallError | FinalAnswer | RunError
