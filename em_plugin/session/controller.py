"""The session controller: commands, autosave, suggestions — written once for sync and async.

Both integrations (LangGraph and BeeAI) drive one :class:`SessionController` per chat session.
The controller knows no framework: the integration feeds the session's
:class:`~em_plugin.capture.trajectory.Trajectory` and asks the controller what to answer.

API (what an integration calls)::

    controller = SessionController(memory, trajectory, policy)
    reply = controller.handle_command(user_text)      # "/save", "/suggest" -> reply; else None
    if reply is None:
        controller.begin_turn(user_text)               # records the instruction (guarded)
        ... run the crew, feeding trajectory.call_start / call_end / call_error (use guard())
        suffix = controller.suggestion_suffix(answer)  # "" or "\\n\\n" + suggestions
    block = controller.prompt_block()                  # "Relevant past workflows ..." (inject)
    # async: ahandle_command, asuggestion_suffix, aafter_turn, aprompt_block

Every decision is a *plan* (a generator of memory calls, see
:mod:`em_plugin.session.executor`), run by a thin sync or async executor; so the two paths can
never diverge. Rules:

- the crew's answer is never rewritten: suggestions come after ``"\\n\\n"``;
- ``/save`` compiles the whole session and saves it; saving the same session again makes a new
  version of its workflow (the id is ``session/<session_id>``; the earlier one stays readable as
  ``session/<session_id>@vN``, and a save with fewer steps keeps the stored one: docs/lifecycle.md);
- ``autosave="on_success"`` saves after every turn without a failed call; a
  ``judge(workflow, outcome) -> bool`` replaces that rule;
- each time suggestions are shown, ``memory.record_suggestions`` records them in the session's
  provenance; suggestions whose record cannot be written are not shown;
- each memory call is isolated on its own: with ``strict=False`` a failure is logged as a warning
  and the answer goes through unchanged; with ``strict=True`` it propagates;
- the memory work of one turn takes at most ``turn_budget`` seconds (see
  :class:`~em_plugin.session.policy.SessionPolicy`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from em_plugin.capture.trajectory import Instruction, Trajectory
from em_plugin.retrieval.reference import Match
from em_plugin.session.executor import Failure, MemoryCall, Plan, run_async, run_sync
from em_plugin.session.isolation import FaultIsolation
from em_plugin.session.policy import PolicyAttributes, SessionPolicy, TurnOutcome
from em_plugin.session.port import MemoryPort
from em_plugin.session.recall import prompt_block_text
from em_plugin.suggest.types import Suggestion, format_suggestions
from provenance.model import Workflow

__all__ = ["SEPARATOR", "SessionController", "append_text"]

logger = logging.getLogger("em_plugin.session")

#: What separates the crew's answer from the appended suggestions.
SEPARATOR = "\n\n"


def append_text(answer: str, suggestions_text: str) -> str:
    """Append suggestions to an answer, never rewriting it.

    Args:
        answer: The crew's answer.
        suggestions_text: The formatted suggestions; empty means nothing to add.

    Returns:
        ``answer`` unchanged, or ``answer + "\\n\\n" + suggestions_text``.
    """
    return answer + SEPARATOR + suggestions_text if suggestions_text else answer


class SessionController(PolicyAttributes):
    """The framework-neutral policy of one chat session (see the module docstring).

    Args:
        memory: The memory (a view of the session's scope).
        trajectory: The session's event log.
        policy: The session's settings (default: :class:`SessionPolicy`'s defaults).
        crew: The crew description's name, recorded on compiled workflows.
        log: The logger warnings go to.
        **overrides: :class:`SessionPolicy` fields replacing those of ``policy``.

    Raises:
        ConfigurationError: On invalid settings.
    """

    def __init__(
        self,
        memory: MemoryPort,
        trajectory: Trajectory,
        policy: SessionPolicy | None = None,
        *,
        crew: str | None = None,
        log: logging.Logger | None = None,
        **overrides: Any,
    ) -> None:
        base = policy if policy is not None else SessionPolicy()
        self.policy = replace(base, **overrides) if overrides else base
        self.memory = memory
        self.trajectory = trajectory
        self.crew = crew
        self.isolation = FaultIsolation(self.policy.strict, log or logger)
        self.last_suggestions: tuple[Suggestion, ...] = ()
        self.last_saved: Workflow | None = None

    @property
    def log(self) -> logging.Logger:
        """The logger warnings go to."""
        return self.isolation.log

    # -- fault isolation -----------------------------------------------------------------

    def guard(self, action: str) -> AbstractContextManager[None]:
        """Run a block so that, unless strict, its failure is logged instead of raised.

        Args:
            action: What the block does, for the warning ("recording a tool call").

        Returns:
            The context manager.
        """
        return self.isolation.guard(action)

    # -- executors -----------------------------------------------------------------------

    def _run(self, plan: Plan[Any]) -> Any:
        return run_sync(plan, self.memory, self.isolation, self.turn_budget)

    async def _arun(self, plan: Plan[Any]) -> Any:
        return await run_async(plan, self.memory, self.isolation, self.turn_budget)

    # -- public API: one plan each, two executors -----------------------------------------

    def command_of(self, text: str) -> str | None:
        """Return ``"save"`` or ``"suggest"`` when ``text`` is one of this session's commands."""
        return self.policy.command_of(text)

    def handle_command(self, text: str) -> str | None:
        """Answer a command without the crew.

        Args:
            text: The user message.

        Returns:
            The reply for ``/save`` or ``/suggest``; ``None`` when ``text`` is not a command.
        """
        result: str | None = self._run(self._command_plan(text))
        return result

    async def ahandle_command(self, text: str) -> str | None:
        """Async :meth:`handle_command`."""
        result: str | None = await self._arun(self._command_plan(text))
        return result

    def begin_turn(self, text: str) -> str | None:
        """Record the user's instruction (commands are skipped); failures are guarded.

        Returns:
            The instruction id, or ``None`` for commands and guarded failures.
        """
        with self.guard("recording the instruction"):
            return self.trajectory.instruction(text)
        return None

    def fail_turn(self, error: str | BaseException) -> None:
        """Record that the crew's run of this turn failed: the workflow's outcome is "failure".

        Call it where the framework reports the run's error, before re-raising it; failures
        to record are guarded like every memory call.

        Args:
            error: The error or its message.
        """
        with self.guard("recording the failed run"):
            self.trajectory.run_error(error)

    def after_turn(self, answer: str, *, record_answer: bool = True) -> str:
        """End a turn: autosave if the policy says so, then append suggestions.

        Args:
            answer: The crew's answer.
            record_answer: Also record it as the trajectory's final answer.

        Returns:
            ``answer`` unchanged, or with ``"\\n\\n"`` + suggestions appended.
        """
        return answer + self.suggestion_suffix(answer, record_answer=record_answer)

    async def aafter_turn(self, answer: str, *, record_answer: bool = True) -> str:
        """Async :meth:`after_turn`."""
        return answer + await self.asuggestion_suffix(answer, record_answer=record_answer)

    def suggestion_suffix(self, answer: str, *, record_answer: bool = True) -> str:
        """Like :meth:`after_turn` but return only what to append (``""`` or ``"\\n\\n..."``).

        Args:
            answer: The crew's answer.
            record_answer: Also record it as the trajectory's final answer.

        Returns:
            The suffix.
        """
        result: str = self._run(self._turn_plan(answer, record_answer))
        return result

    async def asuggestion_suffix(self, answer: str, *, record_answer: bool = True) -> str:
        """Async :meth:`suggestion_suffix`."""
        result: str = await self._arun(self._turn_plan(answer, record_answer))
        return result

    def prompt_block(self) -> str:
        """Return the "Relevant past workflows / suggested next tools" block for a system prompt.

        Returns:
            The block, or ``""`` when memory has nothing relevant (or failed, unless strict).
        """
        result: str = self._run(self._prompt_plan())
        return result

    async def aprompt_block(self) -> str:
        """Async :meth:`prompt_block`."""
        result: str = await self._arun(self._prompt_plan())
        return result

    # -- plans ----------------------------------------------------------------------------

    def _command_plan(self, text: str) -> Plan[str | None]:
        command = self.command_of(text)
        if command == "save":
            return (yield from self._save_plan())
        if command == "suggest":
            suggestions = yield from self._suggest_plan(self._compile(), record=True)
            text = format_suggestions(suggestions, limit=self.limit)
            return text or "No suggestions yet: nothing similar is in memory."
        return None

    def _save_plan(self) -> Plan[str]:
        workflow = self._compile()
        if workflow is None:
            return "Could not compile this session's workflow; nothing was saved."
        if not workflow.steps:
            return "Nothing to save yet: this session has no instructions."
        saved = yield MemoryCall("saving the workflow", "save", (workflow,))
        if isinstance(saved, Failure) and saved.overran:
            return (
                f"Saving {workflow.id} is taking longer than usual; it goes on in the background."
            )
        if isinstance(saved, Failure):
            return f"Could not save the workflow: {saved.reason}"
        assert isinstance(saved, Workflow)
        self.last_saved = saved
        leaves = len(saved.leaves())
        return (
            f"Saved workflow {saved.id} ({leaves} step{'s' if leaves != 1 else ''}) "
            f"in scope {saved.scope!r}."
        )

    def _turn_plan(self, answer: str, record_answer: bool) -> Plan[str]:
        if record_answer:
            with self.guard("recording the answer"):
                self.trajectory.final_answer(answer)
        workflow = self._compile()
        self.last_suggestions = ()
        if workflow is None or not workflow.steps:
            return ""
        if self._should_autosave(workflow, answer):
            saved = yield MemoryCall("autosaving the workflow", "save", (workflow,))
            if isinstance(saved, Workflow):
                self.last_saved = saved
        suggestions = yield from self._suggest_plan(workflow, record=True)
        self.last_suggestions = tuple(suggestions)
        text = format_suggestions(suggestions, limit=self.limit)
        return SEPARATOR + text if text else ""

    def _prompt_plan(self) -> Plan[str]:
        workflow = self._compile()
        if workflow is None or not workflow.steps:
            return ""
        # Each call is isolated on its own: a failed retrieval keeps the suggestions.
        found = yield MemoryCall("retrieving past workflows", "retrieve", (workflow,))
        matches: list[Match] = [] if isinstance(found, Failure) else list(_items(found))
        suggestions = yield from self._suggest_plan(workflow, record=False)
        return prompt_block_text(matches, suggestions, self.limit)

    def _suggest_plan(self, workflow: Workflow | None, *, record: bool) -> Plan[list[Suggestion]]:
        if workflow is None or not workflow.steps:
            return []
        found = yield MemoryCall(
            "suggesting next steps", "suggest", (workflow,), {"limit": self.limit}
        )
        if isinstance(found, Failure):
            return []
        suggestions = list(_items(found))
        if not suggestions or not record:
            return suggestions
        # Suggestions whose provenance cannot be recorded are not shown (each shown suggestion
        # must be traceable to the workflows behind it).
        recorded = yield MemoryCall(
            "recording suggestion provenance",
            "record_suggestions",
            (self.trajectory.session_id, suggestions),
        )
        return [] if isinstance(recorded, Failure) else suggestions

    # -- helpers --------------------------------------------------------------------------

    def _compile(self) -> Workflow | None:
        with self.guard("compiling the workflow"):
            return self.trajectory.compile(crew=self.crew)
        return None

    def _should_autosave(self, workflow: Workflow, answer: str) -> bool:
        if self.autosave != "on_success":
            return False
        events = self.trajectory.events
        instruction = next((e.text for e in reversed(events) if isinstance(e, Instruction)), None)
        outcome = TurnOutcome(
            instruction=instruction,
            answer=answer,
            failures=self.trajectory.turn_failures,
            calls=self.trajectory.turn_call_count,
        )
        if self.judge is None:
            return outcome.succeeded
        accepted = False
        with self.guard("asking the autosave judge"):
            accepted = bool(self.judge(workflow, outcome))
        return accepted


def _items(value: object) -> Iterator[Any]:
    return iter(value) if isinstance(value, Sequence | list | tuple) else iter(())
