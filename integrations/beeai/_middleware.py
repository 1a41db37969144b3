"""``EpisodicMemoryMiddleware``: episodic memory for a BeeAI crew, as a run middleware.

Register it on one run (``await coordinator.run(text).middleware(mw)``) or on every run of the
coordinator (``RequirementAgent(..., middlewares=[mw])``). On each coordinator run (one turn) it

- answers ``/save`` and ``/suggest`` from the root run's ``start`` event by setting the event's
  output, which BeeAI returns in place of the run: the crew is not called;
- records the instruction and follows the run tree at every depth (:class:`CallRecorder`), so tool
  calls of sub-agents behind a ``HandoffTool`` nest under the handoff call;
- on the root run's ``success``, replaces the returned answer (``output[-1]``) by a copy followed by
  ``"\\n\\n"`` + suggestions, after autosaving if the policy says so; the crew's own message,
  which its memory may hold, is untouched, so the crew's model never reads the suggestions;
- streamed runs (``async for data, meta in agent.run(...)``) get the suggestions as their own
  ``episodic_memory_suggestions`` event (:class:`SuggestionsEvent`) after the answer.

The session is ``session_id`` in the run's context, else the serving deployment's conversation id
(:class:`~integrations.beeai.SessionMemoryManager`), else the session whose history the input
replays, else the constructor's ``session_id``, else the coordinator's memory (a script's one
conversation). With a store-backed memory every turn is journaled in the store
(:mod:`em_plugin.session.journal`), so another worker, or the server after a restart, continues
the same session. The memory's own text (suggestions, command replies) is cut from every model
input of the run, at every depth. Memory failures are logged, never raised, unless
``policy=SessionPolicy(strict=True)``.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any, Unpack

from beeai_framework.context import (
    RunContext,
    RunContextStartEvent,
    RunContextSuccessEvent,
    RunMiddlewareProtocol,
)
from beeai_framework.emitter import EmitterOptions, EventMeta
from beeai_framework.emitter.utils import create_internal_event_matcher

from em_plugin.session import (
    DEFAULT_MAX_SESSIONS,
    SEPARATOR,
    MemoryPort,
    PolicyOptions,
    SessionController,
    SessionPolicy,
)
from em_plugin.session.integration import CrewNameAlias, MemoryIntegration
from integrations.beeai._capture import CallRecorder, agent_name, run_instruction
from integrations.beeai._context import (
    SUGGESTIONS_EVENT,
    SuggestionsEvent,
    answer_message,
    explicit_session,
    logger,
    memory_session,
    reply_output,
    with_suffix,
    with_workflow_suffix,
    workflow_answer,
)
from integrations.beeai._deployment import (
    answer_link,
    deployment_session,
    history_of,
    message_pairs,
)
from integrations.beeai._sanitize import clean_messages
from integrations.beeai._sessions import FRAMEWORK, UNSYNCED_SAVE, SessionViews
from integrations.beeai._tools import RecallWorkflowsTool
from integrations.beeai._wiring import WIRING_FIX, unkeyed_server

#: Above the recorder's listeners: the turn is opened before any call is recorded.
_PRIORITY = 200


@dataclass
class _Turn:
    ctx: RunContext
    controller: SessionController | None = None
    recorder: CallRecorder | None = None
    command: bool = False
    shown: SuggestionsEvent | None = None
    conversation: list[tuple[str, str]] | None = None  # the input's messages, when it had some
    links: list[str] = field(default_factory=list)


class EpisodicMemoryMiddleware(
    SessionViews, CrewNameAlias, MemoryIntegration, RunMiddlewareProtocol
):
    """Episodic memory as a BeeAI run middleware (capture, ``/save``, suggestions).

    Example:
        >>> mw = EpisodicMemoryMiddleware(memory)
        >>> response = await coordinator.run("Where is order A-17?").middleware(mw)
        >>> response.last_message.text   # the crew's answer + "\\n\\n" + suggestions

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        policy: The session settings (:class:`~em_plugin.SessionPolicy`: ``strict``, i.e.
            memory failures fail the run instead of being logged; ``autosave``, ``judge``,
            ``limit``, ``turn_budget``, the two commands).
        crew_name: The crew's name on saved workflows (default: the coordinator's name;
            ``crew=`` before this release).
        max_sessions: How many sessions to keep open in this process.
        session_id: The session of runs whose context names none (default: per agent memory).
        scope: The scope of new sessions (default: ``scope`` in the run context, else the
            memory's).
        journal: Keep each session's capture in the memory's store (when the memory has one), so
            other workers and restarted servers continue it.
        **deprecated: The loose ``SessionPolicy`` keywords of the previous release
            (``strict=``, ``limit=``, ...) and ``crew=``; each warns.

    Raises:
        ConfigurationError: On invalid settings (the message lists the valid choices).
    """

    def __init__(
        self,
        memory: MemoryPort,
        *,
        policy: SessionPolicy | None = None,
        crew_name: str | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        session_id: str | None = None,
        scope: str | None = None,
        journal: bool = True,
        **deprecated: Unpack[PolicyOptions],
    ) -> None:
        self.open_sessions(
            memory, owner="EpisodicMemoryMiddleware", framework=FRAMEWORK, log=logger,
            policy=policy, crew_name=crew_name, max_sessions=max_sessions, journal=journal,
            deprecated_options=deprecated,
        )  # fmt: skip
        self.memory = memory
        self.session_id = session_id
        self.scope = scope
        self._turns: dict[str, _Turn] = {}  # root run id -> turn
        self._groups: dict[str, str] = {}  # run-tree id -> root run id
        self._lock = threading.Lock()
        # The server serving the first run without a session-keyed manager (see _wiring), and
        # whether its one warning was logged.
        self._unkeyed: str | None = None
        self._wiring_checked = self._wiring_warned = False

    # -- RunMiddlewareProtocol -------------------------------------------------------------

    def bind(self, ctx: RunContext) -> None:
        """Follow one root run (a turn); nested runs of a followed tree are ignored.

        Args:
            ctx: The run's context, before its ``start`` event.
        """
        with self._lock:
            # A sub-agent that carries this middleware too (or a handoff clone of one) binds it
            # again on its nested run: the root's recorder already follows that run.
            if ctx.run_id in self._turns or ctx.group_id in self._groups:
                return
            turn = _Turn(ctx)
            self._turns[ctx.run_id] = turn
            self._groups[ctx.group_id] = ctx.run_id
            check, self._wiring_checked = not self._wiring_checked, True
        if check:  # here, the caller's frames are on the stack (events run in their own tasks)
            self._unkeyed = unkeyed_server()

        async def on_root_event(data: Any, meta: EventMeta) -> None:
            await self._on_root_event(turn, data, meta)

        ctx.emitter.on(
            create_internal_event_matcher(["start", "success", "error", "finish"]),
            on_root_event,
            EmitterOptions(match_nested=False, is_blocking=True, priority=_PRIORITY),
        )

    def _check_wiring(self, ctx: RunContext) -> None:
        """Warn once when a server without a session-keyed manager serves runs naming no session."""
        if self._unkeyed is None or self._wiring_warned:
            return
        if explicit_session(ctx) or deployment_session():
            return
        self._wiring_warned = True
        logger.warning(WIRING_FIX.format(server=self._unkeyed))

    # -- the root run's events --------------------------------------------------------------

    async def _on_root_event(self, turn: _Turn, data: Any, meta: EventMeta) -> None:
        if meta.creator is not turn.ctx:
            return
        if meta.name == "finish":
            if turn.shown is not None:  # streamed runs see the suggestions after the answer
                with self.sessions.isolation.guard("emitting the suggestions event"):
                    await turn.ctx.emitter.emit(SUGGESTIONS_EVENT, turn.shown)
            if self.journal is not None and turn.controller is not None:
                with self.sessions.isolation.guard("journaling the turn"):
                    await asyncio.to_thread(self.journal.commit, turn.controller, links=turn.links)
            with self._lock:
                self._turns.pop(turn.ctx.run_id, None)
                self._groups.pop(turn.ctx.group_id, None)
            return
        try:
            if meta.name == "start":
                await self._on_start(turn, data)
            elif meta.name == "success" and not turn.command:
                await self._on_success(turn, data)
            elif meta.name == "error" and not turn.command and turn.controller is not None:
                # The run raised: the workflow's outcome becomes "failure"; BeeAI still raises
                # the error to the caller unchanged.
                turn.controller.fail_turn(data)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self.sessions.isolate(f"handling the BeeAI {meta.name} event", exc)

    async def _on_start(self, turn: _Turn, data: RunContextStartEvent) -> None:
        ctx = turn.ctx
        crew = self.crew_name or agent_name(ctx.instance) or getattr(ctx.instance, "name", None)
        run_input = data.input.get("input")
        if isinstance(run_input, list):
            # A client that replays the conversation may replay the memory's own text too.
            # The last user message is this turn's instruction (or command): it stays.
            history = history_of(run_input)
            cleaned = clean_messages(history, self._is_command)
            if cleaned is not None:
                data.input["input"] = run_input = cleaned + run_input[len(history) :]
            turn.conversation = message_pairs(run_input)
        self._check_wiring(ctx)
        controller, synced = await self.open_run(
            ctx,
            run_input,
            scope=self.scope,
            crew=crew,
            unnamed=lambda: self.session_id or memory_session(ctx),
        )
        turn.controller = controller
        text = run_instruction(data.input)
        if controller.command_of(text):
            turn.command = True
            reply = (
                await controller.ahandle_command(text)
                if synced or controller.command_of(text) != "save"
                else UNSYNCED_SAVE
            )
            # BeeAI returns a start event's output in place of running the agent or workflow.
            data.output = reply_output(ctx.instance, reply or "", data.input)
            return
        if text.strip():
            controller.begin_turn(text)
        turn.recorder = CallRecorder(
            controller.trajectory,
            self.sessions.isolate,
            skip=(RecallWorkflowsTool,),
            clean=lambda messages: clean_messages(messages, self._is_command),
        )
        turn.recorder.follow(ctx)

    def _is_command(self, text: str) -> bool:
        return self.policy.command_of(text) is not None

    async def _on_success(self, turn: _Turn, data: RunContextSuccessEvent) -> None:
        controller = turn.controller
        message = answer_message(data.output)
        answer = message.text if message is not None else workflow_answer(data.output)
        if controller is None or answer is None:
            return
        suffix = await controller.asuggestion_suffix(answer)
        # The success event's output is the object `await run` returns: its answer becomes a
        # copy with the suggestions, the crew's own message (or workflow state) stays untouched.
        with_suffix(data.output, suffix)
        with_workflow_suffix(data.output, suffix)
        if turn.conversation is not None:
            # The history a client replays next: this input and the crew's answer.
            turn.links.append(answer_link(turn.conversation, answer))
        if suffix:
            turn.shown = SuggestionsEvent(
                session_id=controller.trajectory.session_id,
                text=suffix.removeprefix(SEPARATOR),
                suggestions=list(controller.last_suggestions),
                state=getattr(data.output, "state", None),
            )
