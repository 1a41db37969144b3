"""Prompts of the LLM suggester (docs/suggestions.md) and the parser of its numbered answer.

Two prompts, as in the paper: with retrieved workflows, the current workflow and the retrieved
ones (their steps after the matched part marked ``next:``) and a request for the most likely
next steps; with nothing retrieved, the crew description (agents, roles, tools) and a request for
next steps the crew could do. Both ask for a numbered list, one instruction per line, with the
tool in square brackets, and say not to carry the steps out (the paper saw LLMs start solving
suggested tasks when the prompt let them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from em_plugin.errors import SuggestionError
from em_plugin.suggest.crew import CrewDescription
from provenance.model import CallStep, InstructionStep, Workflow

__all__ = [
    "FALLBACK_PROMPT",
    "RETRIEVED_PROMPT",
    "SYSTEM_PROMPT",
    "ParsedStep",
    "fallback_prompt",
    "parse_numbered",
    "retrieved_prompt",
    "workflow_text",
]

SYSTEM_PROMPT = (
    "You suggest what a user could ask an AI agent crew to do next. You never carry out the "
    "steps and never answer them; you only list them."
)

RETRIEVED_PROMPT = """\
The user is working with the crew on this workflow so far:
{current}

Similar workflows from memory, most similar first. Steps marked "next:" came after the part \
that matches the current workflow:
{retrieved}

List the {limit} most likely next steps for the current workflow, most likely first. Answer with \
a numbered list only ("1. ..."), one step per line, each written as an instruction the user \
could give. When a step uses a tool, end its line with the tool name in square brackets, \
e.g. [tool_name]."""

FALLBACK_PROMPT = """\
The user is working with this crew:
{crew}

Workflow so far:
{current}

Nothing similar is in memory yet. Suggest the {limit} most useful next steps this crew could do \
for the user, most useful first. Answer with a numbered list only ("1. ..."), one step per \
line, each written as an instruction the user could give. When a step uses a tool, end its line \
with the tool name in square brackets, e.g. [tool_name]."""

_MAX_TEXT = 300
_MAX_ARGS = 160
_MAX_LINES = 60
_NUMBERED = re.compile(r"^\s*(?:\*\*)?(\d{1,2})[.)](?:\*\*)?\s+(.+?)\s*$")
_WORD = re.compile(r"[^\W\d_]{2,}")
#: A usable step has at least this many words of letters (``"1. 1.1.1.1"`` is garbled).
MIN_WORDS = 2
#: Longer steps are an essay, not an instruction: dropped.
MAX_STEP = 300
_TOOL = re.compile(r"\s*[\[`(]\s*([A-Za-z_][\w.\-/:]*)\s*[\]`)]\s*\.?$")


@dataclass(frozen=True)
class ParsedStep:
    """One line of the model's numbered answer."""

    text: str
    """The suggested instruction, without the tool marker."""
    tool: str | None
    """The tool named in brackets, when it is a known tool."""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call_line(step: CallStep) -> str:
    args = json.dumps(dict(step.args), ensure_ascii=False, default=str) if step.args else ""
    return f"call {step.name}{' ' + _clip(args, _MAX_ARGS) if args else ''}"


def workflow_text(workflow: Workflow, *, next_from: int | None = None) -> str:
    """Render a workflow as indented lines for a prompt.

    Args:
        workflow: The workflow.
        next_from: Leaf position from which leaves are marked ``next:`` (a retrieved workflow's
            continuation); ``None`` marks nothing.

    Returns:
        One line per step (instructions quoted, calls with their args), at most 60 lines.
    """
    lines: list[str] = []
    leaf = 0
    for path, step in workflow.walk():
        marker = ""
        if not step.steps:
            marker = "next: " if next_from is not None and leaf >= next_from else ""
            leaf += 1
        if isinstance(step, InstructionStep):
            body = f'instruction "{_clip(step.text, _MAX_TEXT)}"'
        else:
            body = _call_line(step)
        lines.append(f"{'  ' * (path.count('.') + 1)}- {marker}{body}")
    if len(lines) > _MAX_LINES:
        lines = lines[: _MAX_LINES // 2] + ["  ..."] + lines[-_MAX_LINES // 2 :]
    return "\n".join(lines) if lines else "  (no steps yet)"


def retrieved_prompt(
    current: Workflow, retrieved: Sequence[tuple[Workflow, int, float]], limit: int
) -> str:
    """The prompt with retrieved workflows.

    Args:
        current: The current workflow.
        retrieved: ``(workflow, first continuation leaf, similarity)`` per retrieved workflow.
        limit: How many steps to ask for.
    """
    blocks = [
        f"{i}. {w.title or w.id} (similarity {score:.2f})\n{workflow_text(w, next_from=nxt)}"
        for i, (w, nxt, score) in enumerate(retrieved, start=1)
    ]
    return RETRIEVED_PROMPT.format(
        current=workflow_text(current), retrieved="\n\n".join(blocks), limit=limit
    )


def fallback_prompt(current: Workflow, crew: CrewDescription, limit: int) -> str:
    """The prompt with the crew description (nothing retrieved)."""
    return FALLBACK_PROMPT.format(crew=crew.to_text(), current=workflow_text(current), limit=limit)


def parse_numbered(answer: str, known_tools: Collection[str] = ()) -> list[ParsedStep]:
    """Parse a numbered list answer.

    Args:
        answer: The model's text.
        known_tools: Tools a bracketed name may refer to; an unknown name stays in the text and
            the step gets no tool. Empty: every bracketed name is accepted.

    Returns:
        The steps, in the answer's order, duplicates removed; lines longer than
        :data:`MAX_STEP` characters, or (without a known tool) with fewer than
        :data:`MIN_WORDS` words of letters, are skipped.

    Raises:
        SuggestionError: When the answer holds no usable numbered line.
    """
    steps: list[ParsedStep] = []
    seen: set[str] = set()
    for line in answer.splitlines():
        found = _NUMBERED.match(line)
        if found is None:
            continue
        text, tool = found.group(2).strip(), None
        marker = _TOOL.search(text)
        if marker is not None and (not known_tools or marker.group(1) in known_tools):
            tool = marker.group(1)
            text = text[: marker.start()].rstrip(" -:")
        text = text.strip().strip("*").strip() or (f"Call {tool}" if tool else "")
        if len(text) > MAX_STEP or (not tool and len(_WORD.findall(text)) < MIN_WORDS):
            continue  # over-long or garbled: not an instruction a user could give
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            steps.append(ParsedStep(text, tool))
    if not steps:
        raise SuggestionError(
            f"the chat model's answer has no usable numbered list (empty, garbled, over-long or "
            f"off-format): {answer[:200]!r}"
        )
    return steps
