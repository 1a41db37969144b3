"""Session policy shared by the integrations: commands, autosave, suggestions, fault isolation.

Both integrations (LangGraph and BeeAI) drive one :class:`SessionController` per chat session and
turn. The controller knows no framework: the integration feeds the session's
:class:`~em_plugin.capture.trajectory.Trajectory` and asks the controller what to answer.

API (what an integration calls)::

    policy = SessionPolicy(strict=False, autosave="off")   # validated on construction
    controller = SessionController(memory, trajectory, policy)  # or keyword overrides
    reply = controller.handle_command(user_text)      # "/save", "/suggest" -> reply; else None
    if reply is None:
        controller.begin_turn(user_text)               # records the instruction (guarded)
        ... run the crew, feeding trajectory.call_start / call_end / call_error (use guard())
        answer = controller.after_turn(crew_answer)    # crew_answer + "\\n\\n" + suggestions
    # async twins: ahandle_command, aafter_turn, asuggestion_suffix, aprompt_block
    suffix = controller.suggestion_suffix(crew_answer) # "" or "\\n\\n" + suggestions (for
                                                       # answers kept as content blocks)
    block = controller.prompt_block()                  # "Relevant past workflows ..." (inject)
    with controller.guard("recording a tool call"):    # strict=False: log a warning, go on
        trajectory.call_start(...)
    text = recall_text(memory, "query", scope="alice") # the recall tool's answer

Rules:

- the crew's answer is never rewritten: suggestions are appended after ``"\\n\\n"``;
- ``/save`` compiles the whole session and saves it; saving the same session again replaces its
  earlier workflow (the id is ``session/<session_id>``);
- ``autosave="on_success"`` saves after every turn without a failed call (H-EPM's online update);
  a ``judge(workflow, outcome) -> bool`` replaces that rule;
- each time suggestions are shown, ``memory.record_suggestions`` records a suggestion activity in
  the session's retrospective provenance, citing the memory workflows behind them; suggestions
  whose record cannot be written are not shown;
- with ``strict=False`` (the default) a failing store, embedder, LLM or inconsistent trajectory
  never breaks the host: the failure is logged as a warning and the answer goes through unchanged;
  with ``strict=True`` the error propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from em_plugin.capture.trajectory import Instruction, Trajectory
from em_plugin.errors import ConfigurationError
from em_plugin.session.recall import prompt_block_text, recall_text
from em_plugin.suggest.types import Suggestion, format_suggestions
from provenance.model import Workflow

__all__ = [
    "AUTOSAVE_CHOICES",
    "SEPARATOR",
    "PolicyAttributes",
    "SessionController",
    "SessionPolicy",
    "TurnOutcome",
    "append_text",
    "recall_text",
]

logger = logging.getLogger("em_plugin.session")

#: What separates the crew's answer from the appended suggestions (DESIGN §1).
SEPARATOR = "\n\n"

Autosave = Literal["off", "on_success"]
AUTOSAVE_CHOICES: tuple[str, ...] = ("off", "on_success")


@dataclass(frozen=True)
class TurnOutcome:
    """What a judge sees about the turn that just ended."""

    instruction: str | None
    """The turn's instruction text (``None`` when the turn had none)."""
    answer: str
    """The crew's answer, before suggestions."""
    failures: tuple[str, ...]
    """Error messages of the calls that failed during the turn."""
    calls: int
    """How many calls the turn started."""

    @property
    def succeeded(self) -> bool:
        """True when no call failed during the turn."""
        return not self.failures


Judge = Callable[[Workflow, TurnOutcome], bool]


def append_text(answer: str, suggestions_text: str) -> str:
    """Append suggestions to an answer, never rewriting it.

    Args:
        answer: The crew's answer.
        suggestions_text: The formatted suggestions; empty means nothing to add.

    Returns:
        ``answer`` unchanged, or ``answer + "\\n\\n" + suggestions_text``.
    """
    return answer + SEPARATOR + suggestions_text if suggestions_text else answer


@dataclass(frozen=True)
class SessionPolicy:
    """The memory settings of a session, validated on construction.

    Every integration builds one from its keyword arguments and hands it to the
    :class:`SessionController` of each session it serves.

    Args:
        strict: Raise memory failures instead of logging them.
        autosave: ``"off"`` (save on ``/save`` only) or ``"on_success"``.
        judge: Decides, with ``autosave="on_success"``, whether a turn's workflow is saved.
        save_command: The command that saves the session.
        suggest_command: The command that shows suggestions for the session so far.
        limit: How many suggestions to show.

    Raises:
        ConfigurationError: On an unknown autosave mode, a judge without autosave, bad
            commands or a limit below 1 (the message lists the valid choices).
    """

    strict: bool = False
    autosave: Autosave = "off"
    judge: Judge | None = None
    save_command: str = "/save"
    suggest_command: str = "/suggest"
    limit: int = 3

    def __post_init__(self) -> None:
        if self.autosave not in AUTOSAVE_CHOICES:
            choices = ", ".join(map(repr, AUTOSAVE_CHOICES))
            raise ConfigurationError(f"autosave must be one of {choices}; got {self.autosave!r}")
        if self.judge is not None and not callable(self.judge):
            raise ConfigurationError("judge must be a callable (workflow, outcome) -> bool")
        if self.judge is not None and self.autosave != "on_success":
            raise ConfigurationError(
                "a judge needs autosave='on_success' (it decides what to save)"
            )
        for name in ("save_command", "suggest_command"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.startswith("/") or len(value.split()) != 1:
                raise ConfigurationError(
                    f"{name} must be one word starting with '/', got {value!r}"
                )
        if self.save_command == self.suggest_command:
            raise ConfigurationError("save_command and suggest_command must differ")
        if not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigurationError(f"limit must be an integer >= 1, got {self.limit!r}")

    def command_of(self, text: str) -> str | None:
        """Return ``"save"`` or ``"suggest"`` when ``text`` starts with one of the commands."""
        if not isinstance(text, str):
            return None
        word = text.strip().split(maxsplit=1)[0] if text.strip() else ""
        if word == self.save_command:
            return "save"
        if word == self.suggest_command:
            return "suggest"
        return None


class PolicyAttributes:
    """Read-only ``strict``, ``autosave``, ... attributes delegating to ``self.policy``.

    Mixed into :class:`SessionController` and the integrations' public classes, which keep
    their settings in one :class:`SessionPolicy`.
    """

    policy: SessionPolicy

    @property
    def strict(self) -> bool:
        """Raise memory failures instead of logging them."""
        return self.policy.strict

    @property
    def autosave(self) -> Autosave:
        """``"off"`` or ``"on_success"``."""
        return self.policy.autosave

    @property
    def judge(self) -> Judge | None:
        """With ``autosave="on_success"``, decides whether a turn's workflow is saved."""
        return self.policy.judge

    @property
    def save_command(self) -> str:
        """The command that saves the session."""
        return self.policy.save_command

    @property
    def suggest_command(self) -> str:
        """The command that shows suggestions for the session so far."""
        return self.policy.suggest_command

    @property
    def limit(self) -> int:
        """How many suggestions to show."""
        return self.policy.limit


class SessionController(PolicyAttributes):
    """The framework-neutral policy of one chat session (see the module docstring).

    Args:
        memory: An :class:`~em_plugin.memory.EpisodicMemory` (or anything with its methods).
        trajectory: The session's event log.
        policy: The session's settings (default: :class:`SessionPolicy`'s defaults).
        crew: The crew description's name, recorded on compiled workflows.
        log: The logger warnings go to.
        **overrides: :class:`SessionPolicy` fields (``strict``, ``autosave``, ``judge``,
            ``save_command``, ``suggest_command``, ``limit``) replacing those of ``policy``.

    Raises:
        ConfigurationError: On an unknown autosave mode, a judge without autosave, bad
            commands or a limit below 1.
    """

    def __init__(
        self,
        memory: Any,
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
        self.log = log or logger
        self.last_suggestions: tuple[Suggestion, ...] = ()
        self.last_saved: Workflow | None = None

    # -- fault isolation -----------------------------------------------------------------

    @contextlib.contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """Run a block so that, unless strict, its failure is logged instead of raised.

        Args:
            action: What the block does, for the warning ("saving the workflow").
        """
        try:
            yield
        except Exception as exc:
            self._failed(action, exc)

    def _failed(self, action: str, exc: BaseException) -> None:
        if self.strict:
            raise exc
        self.log.warning(
            "episodic memory: %s failed (%s: %s); the crew's answer is unchanged",
            action,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )

    # -- commands ------------------------------------------------------------------------

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
        command = self.command_of(text)
        if command == "save":
            return self._save_reply(lambda wf: self.memory.save(wf))
        if command == "suggest":
            suggestions = self._suggest(lambda wf: self.memory.suggest(wf, limit=self.limit))
            return self._suggest_reply(self._record(suggestions))
        return None

    async def ahandle_command(self, text: str) -> str | None:
        """Async twin of :meth:`handle_command`."""
        command = self.command_of(text)
        if command == "save":
            workflow = self._compile()
            if workflow is None or not workflow.steps:
                return self._save_reply(lambda wf: wf)
            try:
                saved = await self.memory.asave(workflow)
            except Exception as exc:
                self._failed("saving the workflow", exc)
                return f"Could not save the workflow: {type(exc).__name__}: {exc}"
            return self._saved(saved)
        if command == "suggest":
            workflow = self._compile()
            suggestions: list[Suggestion] = []
            if workflow is not None and workflow.steps:
                try:
                    suggestions = list(await self.memory.asuggest(workflow, limit=self.limit))
                except Exception as exc:
                    self._failed("suggesting next steps", exc)
            return self._suggest_reply(await self._arecord(suggestions))
        return None

    def _save_reply(self, save: Callable[[Workflow], Workflow]) -> str:
        workflow = self._compile()
        if workflow is None:
            return "Could not compile this session's workflow; nothing was saved."
        if not workflow.steps:
            return "Nothing to save yet: this session has no instructions."
        try:
            saved = save(workflow)
        except Exception as exc:
            self._failed("saving the workflow", exc)
            return f"Could not save the workflow: {type(exc).__name__}: {exc}"
        return self._saved(saved)

    def _saved(self, saved: Workflow) -> str:
        self.last_saved = saved
        leaves = len(saved.leaves())
        return (
            f"Saved workflow {saved.id} ({leaves} step{'s' if leaves != 1 else ''}) "
            f"in scope {saved.scope!r}."
        )

    def _suggest_reply(self, suggestions: Sequence[Suggestion]) -> str:
        text = format_suggestions(suggestions, limit=self.limit)
        return text or "No suggestions yet: nothing similar is in memory."

    # -- turns -----------------------------------------------------------------------------

    def begin_turn(self, text: str) -> str | None:
        """Record the user's instruction (commands are skipped); failures are guarded.

        Returns:
            The instruction id, or ``None`` for commands and guarded failures.
        """
        with self.guard("recording the instruction"):
            return self.trajectory.instruction(text)
        return None

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
        """Async twin of :meth:`after_turn`."""
        return answer + await self.asuggestion_suffix(answer, record_answer=record_answer)

    def suggestion_suffix(self, answer: str, *, record_answer: bool = True) -> str:
        """Like :meth:`after_turn` but return only what to append (``""`` or ``"\\n\\n..."``).

        Integrations whose answers are content blocks append the suffix as a new block.
        """
        workflow = self._end_turn(answer, record_answer)
        if workflow is None or not workflow.steps:
            return ""
        if self._should_autosave(workflow, answer):
            with self.guard("autosaving the workflow"):
                self.last_saved = self.memory.save(workflow)
        suggestions = self._suggest(lambda wf: self.memory.suggest(wf, limit=self.limit), workflow)
        return self._suffix(self._record(suggestions))

    async def asuggestion_suffix(self, answer: str, *, record_answer: bool = True) -> str:
        """Async twin of :meth:`suggestion_suffix`."""
        workflow = self._end_turn(answer, record_answer)
        if workflow is None or not workflow.steps:
            return ""
        if self._should_autosave(workflow, answer):
            try:
                self.last_saved = await self.memory.asave(workflow)
            except Exception as exc:
                self._failed("autosaving the workflow", exc)
        suggestions: list[Suggestion] = []
        try:
            suggestions = list(await self.memory.asuggest(workflow, limit=self.limit))
        except Exception as exc:
            self._failed("suggesting next steps", exc)
        return self._suffix(await self._arecord(suggestions))

    def _end_turn(self, answer: str, record_answer: bool) -> Workflow | None:
        if record_answer:
            with self.guard("recording the answer"):
                self.trajectory.final_answer(answer)
        return self._compile()

    def _suffix(self, suggestions: Sequence[Suggestion]) -> str:
        self.last_suggestions = tuple(suggestions)
        text = format_suggestions(suggestions, limit=self.limit)
        return SEPARATOR + text if text else ""

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

    # -- suggestions -------------------------------------------------------------------------

    def _compile(self) -> Workflow | None:
        with self.guard("compiling the workflow"):
            return self.trajectory.compile(crew=self.crew)
        return None

    def _suggest(
        self, suggest: Callable[[Workflow], Sequence[Suggestion]], workflow: Workflow | None = None
    ) -> list[Suggestion]:
        workflow = workflow if workflow is not None else self._compile()
        if workflow is None or not workflow.steps:
            return []
        with self.guard("suggesting next steps"):
            return list(suggest(workflow))
        return []

    def _record(self, suggestions: Sequence[Suggestion]) -> list[Suggestion]:
        """Record the suggestions' provenance; return what may be shown.

        Suggestions whose provenance cannot be recorded are not shown, so that every shown
        suggestion can later be traced to the workflows behind it.
        """
        if not suggestions:
            return []
        with self.guard("recording suggestion provenance"):
            self.memory.record_suggestions(self.trajectory.session_id, list(suggestions))
            return list(suggestions)
        return []

    async def _arecord(self, suggestions: Sequence[Suggestion]) -> list[Suggestion]:
        if not suggestions:
            return []
        record = getattr(self.memory, "arecord_suggestions", None)
        try:
            if record is not None:
                await record(self.trajectory.session_id, list(suggestions))
            else:
                await asyncio.to_thread(
                    self.memory.record_suggestions, self.trajectory.session_id, list(suggestions)
                )
        except Exception as exc:
            self._failed("recording suggestion provenance", exc)
            return []
        return list(suggestions)

    def prompt_block(self) -> str:
        """Return the "Relevant past workflows / suggested next tools" block for a system prompt.

        Returns:
            The block, or ``""`` when memory has nothing relevant (or failed, unless strict).
        """
        workflow = self._compile()
        if workflow is None or not workflow.steps:
            return ""
        matches: list[Any] = []
        with self.guard("retrieving past workflows"):
            matches = list(self.memory.retrieve(workflow))
        suggestions = self._suggest(lambda wf: self.memory.suggest(wf, limit=self.limit), workflow)
        return prompt_block_text(matches, suggestions, self.limit)

    async def aprompt_block(self) -> str:
        """Async twin of :meth:`prompt_block`."""
        workflow = self._compile()
        if workflow is None or not workflow.steps:
            return ""
        matches: list[Any] = []
        suggestions: list[Suggestion] = []
        try:
            matches = list(await self.memory.aretrieve(workflow))
            suggestions = list(await self.memory.asuggest(workflow, limit=self.limit))
        except Exception as exc:
            self._failed("retrieving past workflows", exc)
        return prompt_block_text(matches, suggestions, self.limit)
