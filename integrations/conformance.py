"""The framework conformance kit: the crew-shape scenario every framework adapter must pass.

A framework adapter (``integrations/langgraph``, ``integrations/beeai``, or a new one) records a
crew's sessions into an :class:`~em_plugin.memory.EpisodicMemory` and shows its suggestions. This
module says, without naming any framework, what that must achieve on one scenario:

1. ``EXTRACT`` on thread ``t-1``: the extraction tool fails once (:data:`FLAKY`) and is retried;
2. ``CLASSIFY`` on ``t-1``, then ``/save`` (the session becomes workflow :data:`SAVED_ID`);
3. ``EXTRACT_NEW`` on a new thread ``t-2``, **streamed**: the memory's suggestions must show in
   the stream and cite the saved session;
4. ``CLASSIFY`` again on ``t-2``: the model's input must hold no memory traffic.

A framework author writes, per crew shape (supervisor, swarm, sub-agents as tools, subgraphs,
handoffs, workflows, unnamed agents…), a :class:`CrewHarness`: builds the crew with the
framework's real API around the tools below, scripts its models, and runs turns. The kit drives
the scenario (:func:`run_scenario`) and checks the promises (:data:`CHECKS`)::

    from integrations.conformance import Shape, run_conformance

    shape = Shape("my supervisor", expected=[...], failed=["product_extractor"],
                  build=MySupervisorCrew, user_tools=frozenset({...}))
    assert run_conformance(shape) == {}  # {check name: failure}

or one pytest test per check with :func:`outcome_of` (``tests/integrations/test_crew_shapes.py``
runs the LangGraph and BeeAI shapes so). The recipe is in docs/extending.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.types import Suggestion
from provenance.model import InstructionStep, Workflow

__all__ = [
    "CHECKS",
    "CLASSIFY",
    "EXTRACT",
    "EXTRACT_NEW",
    "FLAKY",
    "SAVED_ID",
    "Check",
    "ConformanceFailure",
    "CrewHarness",
    "Flaky",
    "Outcome",
    "Row",
    "Shape",
    "outcome_of",
    "pfas_classifier",
    "product_extractor",
    "rows",
    "run_conformance",
    "run_scenario",
    "write_report",
]

EXTRACT = "Extract the ingredients from the SDS file acme.pdf"
CLASSIFY = "Classify the extracted ingredients as PFAS or not"
EXTRACT_NEW = "Extract the ingredients from the SDS file beta.pdf"
SAVE = "/save"
#: The id the saved session of thread ``t-1`` gets.
SAVED_ID = "session/t-1"
#: Text that marks memory traffic (suggestions, commands, replies) in a model's input.
MEMORY_WORDS = ("Suggested next steps", "/save", "Saved workflow")

#: ``(depth, name, agent)`` per step, depth 0 being an instruction (agent ``"user"``).
Row = tuple[int, str, str | None]


# -- the tools ------------------------------------------------------------------------------


class Flaky:
    """Which tools fail on their next call (each listed name fails once), and what was called."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.calls: list[str] = []
        self.succeeded: list[str] = []

    def fail_once(self, name: str) -> None:
        """Make the next call of the tool ``name`` raise ``TimeoutError``."""
        self.pending.append(name)

    def check(self, name: str) -> None:
        """Record a call of ``name``.

        Raises:
            TimeoutError: When ``name`` was set to fail once.
        """
        self.calls.append(name)
        if name in self.pending:
            self.pending.remove(name)
            raise TimeoutError(f"{name}: upstream timeout")
        self.succeeded.append(name)

    def reset(self) -> None:
        """Forget pending failures and recorded calls."""
        self.pending.clear()
        self.calls.clear()
        self.succeeded.clear()


#: The scenario's tools fail through this (a harness calls ``FLAKY.fail_once`` in its script).
FLAKY = Flaky()


def product_extractor(file: str) -> str:
    """Extract the ingredient list from a safety data sheet (SDS) file."""
    FLAKY.check("product_extractor")
    return json.dumps({"file": file, "ingredients": ["PFOA", "water"]})


def pfas_classifier(names: list[str]) -> str:
    """Classify chemical names as PFAS or not."""
    FLAKY.check("pfas_classifier")
    return json.dumps({n: n.startswith("PF") for n in names})


def write_report(summary: str) -> str:
    """Write a short report."""
    FLAKY.check("write_report")
    return f"report: {summary}"


# -- the scenario ---------------------------------------------------------------------------


class CrewHarness(Protocol):
    """One crew, built with a framework's real API and wired to a memory, run turn by turn."""

    def script(self, text: str, tag: str) -> None:
        """Load the scripted models' answers for the coming turn ``text``.

        ``tag`` names the turn: ``"t-1"`` (the first session: make ``product_extractor`` fail
        once with :data:`FLAKY` and retry it), ``"t-2"`` and ``"t-2b"`` (the new thread). Call
        ids should include the tag, so that the turns' ids differ.
        """
        ...

    def turn(self, text: str, thread: str) -> None:
        """Run one user turn on a conversation thread (a session)."""
        ...

    def stream(self, text: str, thread: str) -> list[str]:
        """Run one turn streamed; return the texts of the memory's suggestion events."""
        ...

    def shown(self, thread: str) -> list[Suggestion]:
        """Return the suggestions the memory last showed on ``thread``."""
        ...

    def model_inputs(self) -> list[str]:
        """Return every message text the crew's models received."""
        ...

    def close(self) -> None:
        """Release what the harness holds (an event loop, say)."""
        ...


@dataclass
class Outcome:
    """What one run of the scenario produced."""

    saved: Workflow
    """The workflow ``/save`` stored for thread ``t-1``."""
    model_inputs: list[str]
    """Every message text the crew's models received."""
    streamed: list[str]
    """The suggestion events of the streamed turn."""
    suggestions: list[Suggestion]
    """The suggestions shown on thread ``t-2``."""


@dataclass(frozen=True)
class Shape:
    """One crew shape: how to build its harness and what its session must capture."""

    name: str
    """A short description, e.g. ``"langgraph-supervisor"``."""
    expected: list[Row]
    """The saved workflow's steps (:func:`rows`)."""
    failed: list[str]
    """The tools of the failed calls the saved workflow records."""
    build: Callable[[EpisodicMemory], CrewHarness]
    """Builds the crew, wired to the given memory."""
    user_tools: frozenset[str] = frozenset()
    """The tools of the agent the user talks to (suggestions may name only these)."""


def run_scenario(harness: CrewHarness, memory: EpisodicMemory) -> Outcome:
    """Drive the scenario (see the module doc) on a harness wired to ``memory``."""
    for text in (EXTRACT, CLASSIFY):
        harness.script(text, "t-1")
        harness.turn(text, "t-1")
    harness.turn(SAVE, "t-1")
    harness.script(EXTRACT_NEW, "t-2")
    streamed = harness.stream(EXTRACT_NEW, "t-2")
    shown = harness.shown("t-2")
    # One more turn on the new thread: its model input must not hold the suggestions just shown.
    harness.script(CLASSIFY, "t-2b")
    harness.turn(CLASSIFY, "t-2")
    return Outcome(memory.load(SAVED_ID), harness.model_inputs(), streamed, shown)


def outcome_of(shape: Shape) -> Outcome:
    """Run a shape's scenario on a fresh in-memory memory (fake embedder) and close both."""
    FLAKY.reset()
    memory = EpisodicMemory(store="memory:", embedder=FakeEmbedder(64))
    try:
        harness = shape.build(memory)
        try:
            return run_scenario(harness, memory)
        finally:
            harness.close()
    finally:
        memory.close()
        FLAKY.reset()


def rows(workflow: Workflow) -> list[Row]:
    """The workflow's steps, depth first; parallel siblings keep the recorded order."""
    return [
        (path.count("."), s.text, "user")
        if isinstance(s, InstructionStep)
        else (path.count("."), s.name, s.agent)
        for path, s in workflow.walk()
    ]


# -- the checks -----------------------------------------------------------------------------


class ConformanceFailure(AssertionError):
    """An adapter broke a promise of the scenario; the message says which."""


@dataclass(frozen=True)
class Check:
    """One named promise, checked on a shape's outcome."""

    name: str
    run: Callable[[Shape, Outcome], None]

    def __call__(self, shape: Shape, outcome: Outcome) -> None:
        """Check the promise.

        Raises:
            ConformanceFailure: When the outcome breaks it.
        """
        self.run(shape, outcome)


def _expect(ok: bool, message: str, detail: object) -> None:
    if not ok:
        raise ConformanceFailure(f"{message}: {detail!r}")


def check_capture_exact(shape: Shape, outcome: Outcome) -> None:
    """The saved workflow holds the instructions and calls, nested under who made them."""
    _expect(rows(outcome.saved) == shape.expected, "captured steps differ", rows(outcome.saved))


def check_failed_calls_kept(shape: Shape, outcome: Outcome) -> None:
    """A call that failed and was retried is kept as a failed call, not as a step."""
    failed = [f.call.name for f in outcome.saved.failed]
    _expect(failed == shape.failed, "failed calls differ", failed)


def check_model_context_clean(shape: Shape, outcome: Outcome) -> None:
    """No model ever sees memory traffic (suggestions, ``/save``, its reply)."""
    leaked = [t for t in outcome.model_inputs if any(w in t for w in MEMORY_WORDS)]
    _expect(not leaked, "memory traffic reached a model", leaked)


def check_streaming_shows_suggestions(shape: Shape, outcome: Outcome) -> None:
    """A streamed turn carries the suggestions as their own event."""
    ok = bool(outcome.streamed) and all(
        t.startswith("Suggested next steps") for t in outcome.streamed
    )
    _expect(ok, "the stream shows no suggestions", outcome.streamed)


def check_cites_saved_workflow(shape: Shape, outcome: Outcome) -> None:
    """The new thread's suggestions cite the saved session as evidence."""
    cited = [e.workflow_id for s in outcome.suggestions for e in s.evidence]
    _expect(SAVED_ID in cited, f"no suggestion cites {SAVED_ID}", cited)


def check_user_level_suggestions(shape: Shape, outcome: Outcome) -> None:
    """Suggestions name only tools the agent the user talks to can call."""
    tools = [s.tool for s in outcome.suggestions]
    ok = all(t is None or t in shape.user_tools for t in tools)
    _expect(ok, "a suggestion names a sub-agent's internal tool", tools)


#: Every check, in a stable order.
CHECKS: tuple[Check, ...] = tuple(
    Check(function.__name__.removeprefix("check_"), function)
    for function in (
        check_capture_exact,
        check_failed_calls_kept,
        check_model_context_clean,
        check_streaming_shows_suggestions,
        check_cites_saved_workflow,
        check_user_level_suggestions,
    )
)


def run_conformance(shape: Shape, checks: Sequence[Check] = CHECKS) -> dict[str, str]:
    """Run a shape's scenario once and every check on it.

    Args:
        shape: The crew shape under test.
        checks: The checks to run (all by default).

    Returns:
        ``{check name: failure message}``, empty when the adapter passes.
    """
    outcome = outcome_of(shape)
    failures: dict[str, str] = {}
    for check in checks:
        try:
            check(shape, outcome)
        except ConformanceFailure as exc:
            failures[check.name] = str(exc)
    return failures
