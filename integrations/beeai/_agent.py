"""``EpisodicMemoryAgent``: the paper's EM agent in front of a BeeAI crew (Figure 1b).

The user talks to the EM agent. It forwards each instruction verbatim to the crew, follows the
crew's run tree at every depth, and answers with the crew's unchanged result followed by
``"\\n\\n"`` and the suggested next steps. ``/save`` and ``/suggest`` are answered without calling
the crew. It is a BeeAI agent itself, so it can be awaited, given middlewares, or handed off to.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Unpack, cast

from beeai_framework.agents import AgentMeta, AgentOptions, AgentOutput, BaseAgent
from beeai_framework.backend import AnyMessage, AssistantMessage, UserMessage
from beeai_framework.context import RunContext, RunMiddlewareType
from beeai_framework.emitter import Emitter
from beeai_framework.memory import BaseMemory, UnconstrainedMemory
from beeai_framework.runnable import Runnable, runnable_entry
from beeai_framework.workflows.agent import AgentWorkflow, AgentWorkflowInput
from pydantic import ConfigDict

from em_plugin.errors import ConfigurationError
from em_plugin.session import (
    DEFAULT_MAX_SESSIONS,
    SEPARATOR,
    MemoryPort,
    PolicyOptions,
    SessionController,
    SessionPolicy,
)
from em_plugin.session.integration import MemoryIntegration
from integrations.beeai._capture import CallRecorder, agent_name, instruction_text
from integrations.beeai._context import (
    SUGGESTIONS_EVENT,
    SuggestionsEvent,
    answer_message,
    logger,
    memory_session,
    workflow_answer,
)
from integrations.beeai._deployment import (
    answer_link,
    history_of,
    message_pairs,
)
from integrations.beeai._sanitize import MARK, clean_messages
from integrations.beeai._sessions import FRAMEWORK, UNSYNCED_SAVE, SessionViews
from integrations.beeai._tools import RecallWorkflowsTool
from integrations.beeai._wiring import WiringCheck


class EpisodicMemoryAgentOutput(AgentOutput):
    """The EM agent's answer: the crew's result + suggestions, and what it came from."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="allow")

    session_id: str
    """The session the turn belongs to."""
    crew_output: Any = None
    """The crew's own output, unchanged (``None`` when a command was answered)."""
    answer: str = ""
    """The crew's answer text, before the suggestions."""
    suggestions: list[Any] = []
    """The :class:`~em_plugin.suggest.types.Suggestion` objects shown this turn."""
    command: str | None = None
    """``"save"`` or ``"suggest"`` when the turn was a command."""


class EpisodicMemoryAgent(SessionViews, MemoryIntegration, BaseAgent[EpisodicMemoryAgentOutput]):
    """The EM agent: forwards instructions verbatim to a crew and appends suggestions.

    Example:
        >>> em = EpisodicMemoryAgent(coordinator, memory)
        >>> response = await em.run("Where is order A-17?")
        >>> response.last_message.text   # crew answer + "\\n\\n" + suggestions
        >>> await em.run("/save")

    Args:
        crew: The crew's entry point (usually the coordinating ``RequirementAgent``, or an
            ``AgentWorkflow``: each instruction becomes the workflow's input).
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        policy: The session settings (:class:`~em_plugin.SessionPolicy`: ``strict``,
            ``autosave``, ``judge``, ``limit``, ``turn_budget``, the two commands).
        crew_name: The crew's name on saved workflows (default: the crew agent's name).
        name: The EM agent's own name.
        description: The EM agent's description.
        max_sessions: How many sessions to keep open in this process.
        session_id: The session of runs whose context names none (default: a new id per agent);
            a run a BeeAI server serves is in its conversation's session instead
            (``docs/deploy.md``).
        scope: The scope of new sessions (default: ``scope`` in the run context, else the
            memory's).
        journal: Keep each session's capture in the memory's store (when the memory has one), so
            other workers and restarted servers continue it.
        middlewares: BeeAI middlewares for the EM agent's own runs.
        **deprecated: The loose ``SessionPolicy`` keywords of the previous release
            (``strict=``, ``limit=``, ...); each warns.

    Raises:
        ConfigurationError: On invalid settings (the message lists the valid choices).
    """

    def __init__(
        self,
        crew: Runnable[Any] | AgentWorkflow,
        memory: MemoryPort,
        *,
        policy: SessionPolicy | None = None,
        crew_name: str | None = None,
        name: str = "episodic_memory",
        description: str = "Forwards instructions to the crew and suggests next steps.",
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        session_id: str | None = None,
        scope: str | None = None,
        journal: bool = True,
        middlewares: list[RunMiddlewareType] | None = None,
        **deprecated: Unpack[PolicyOptions],
    ) -> None:
        if not isinstance(crew, Runnable | AgentWorkflow):
            raise ConfigurationError(
                f"crew must be a BeeAI agent, runnable or AgentWorkflow, not {type(crew).__name__}"
            )
        super().__init__(middlewares=middlewares)
        self.open_sessions(
            memory, owner="EpisodicMemoryAgent", framework=FRAMEWORK, log=logger, policy=policy,
            crew_name=crew_name or agent_name(crew) or _workflow_name(crew) or type(crew).__name__,
            max_sessions=max_sessions, journal=journal, deprecated_options=deprecated,
        )  # fmt: skip
        self.crew = crew
        self.episodic_memory = memory
        self.session_id = session_id or f"beeai-{uuid.uuid4().hex[:12]}"
        self.scope = scope
        self._name = name
        self._description = description
        self._own_memory: BaseMemory = UnconstrainedMemory()
        self._wiring = WiringCheck(logger)  # shared with the clones a server makes per request

    @runnable_entry
    async def run(
        self, input: str | list[AnyMessage], /, **kwargs: Unpack[AgentOptions]
    ) -> EpisodicMemoryAgentOutput:
        """Run one turn: answer a command, or forward the instruction to the crew.

        Args:
            input: The user's instruction (text, or messages whose last user message is it).
            **kwargs: Agent options, passed to the crew unchanged.

        Returns:
            The crew's answer followed by ``"\\n\\n"`` and the suggestions.
        """
        ctx = RunContext.get()
        conversation: list[tuple[str, str]] | None = None
        if isinstance(input, list):  # a replayed history may carry the memory's own text
            history = history_of(input)
            cleaned = clean_messages(history, self._is_command)
            if cleaned is not None:
                input = cleaned + input[len(history) :]
            conversation = message_pairs(input)
        controller, synced = await self.open_run(
            ctx,
            input,
            scope=self.scope,
            crew=self.crew_name,
            unnamed=lambda: self._unnamed_session(ctx),
        )
        text = instruction_text(input)
        command = controller.command_of(text)
        if command is not None:
            if synced or command != "save":
                reply = await controller.ahandle_command(text) or ""
            else:
                reply = UNSYNCED_SAVE
            await self._commit(controller)
            return self._output(controller, reply, command=command)
        if text.strip():
            controller.begin_turn(text)
        recorder = CallRecorder(
            controller.trajectory,
            self.sessions.isolate,
            skip=(RecallWorkflowsTool,),
            clean=lambda messages: clean_messages(messages, self._is_command),
        )
        try:
            crew_output = await self._run_crew(input, text, recorder, kwargs)
        except BaseException as exc:
            if isinstance(exc, Exception):  # a cancelled turn did not fail
                controller.fail_turn(exc)  # guarded; the error still reaches the user unchanged
            await self._commit(controller)  # the failed calls are part of the session
            raise
        message = answer_message(crew_output)
        answer = message.text if message is not None else _text(crew_output)
        suffix = ""
        try:
            suffix = await controller.asuggestion_suffix(answer)
            if suffix:  # streamed runs see the suggestions as their own event
                await ctx.emitter.emit(
                    SUGGESTIONS_EVENT,
                    SuggestionsEvent(
                        session_id=controller.trajectory.session_id,
                        text=suffix.removeprefix(SEPARATOR),
                        suggestions=list(controller.last_suggestions),
                        state=getattr(crew_output, "state", None),
                    ),
                )
        except Exception as exc:  # noqa: BLE001 - raised only in strict mode, or by a bug in the glue
            self.sessions.isolate("suggesting next steps", exc)
        # The history a client replays next (chat completions, A2A): this input and the answer.
        links = [answer_link(conversation, answer)] if conversation is not None else []
        await self._commit(controller, links)
        return self._output(controller, answer + suffix, crew_output=crew_output, answer=answer)

    async def _run_crew(
        self, input: str | list[AnyMessage], text: str, recorder: CallRecorder, kwargs: Any
    ) -> Any:
        if isinstance(self.crew, AgentWorkflow):
            # The instruction is the workflow's input; its agents run it step by step.
            prompts = [AgentWorkflowInput(prompt=text)]
            return await self.crew.run(prompts).middleware(recorder.follow)
        crew_input: Any = input
        if isinstance(input, str) and not isinstance(self.crew, BaseAgent):
            crew_input = [UserMessage(input)]  # plain runnables take messages only
        options = cast(dict[str, Any], kwargs)  # agent options, passed through unchanged
        return await self.crew.run(crew_input, **options).middleware(recorder.follow)

    def _is_command(self, text: str) -> bool:
        return self.policy.command_of(text) is not None

    def _unnamed_session(self, ctx: RunContext) -> str:
        """The session of a run that names none: the constructor's, unless a server serves it.

        BeeAI's servers clone the agent per request, and the clones share the constructor's id:
        it would make every conversation one session. A served run gets the session of its
        conversation buffer (the crew's memory, as the middleware does) instead, and a server
        that does not name its conversations to the memory (no ``SessionMemoryManager``) gets one
        warning naming the fix.
        """
        serving = self._wiring.serving()
        if serving is None:
            return self.session_id
        if not serving.keyed:
            self._wiring.warn(serving.server)
        return memory_session(ctx)

    async def _commit(self, controller: SessionController, links: list[str] | None = None) -> None:
        if self.journal is not None:
            with self.sessions.isolation.guard("journaling the turn"):
                await asyncio.to_thread(self.journal.commit, controller, links=links or [])

    def _output(
        self,
        controller: SessionController,
        text: str,
        *,
        command: str | None = None,
        crew_output: Any = None,
        answer: str | None = None,
    ) -> EpisodicMemoryAgentOutput:
        # The whole text is the memory's: a replay of it never reaches the crew's model whole.
        meta = {MARK: "reply"} if command is not None else {MARK: "suggestions"}
        return EpisodicMemoryAgentOutput(
            output=[AssistantMessage(text, meta)],
            session_id=controller.trajectory.session_id,
            crew_output=crew_output,
            answer=text if answer is None else answer,
            suggestions=[] if command == "save" else list(controller.last_suggestions),
            command=command,
        )

    def _create_emitter(self) -> Emitter:
        return Emitter.root().child(namespace=["agent", "episodic_memory"], creator=self)

    @property
    def memory(self) -> BaseMemory:
        """The crew's conversation memory (the EM agent keeps none of its own)."""
        crew_memory = getattr(self.crew, "memory", None)
        return crew_memory if isinstance(crew_memory, BaseMemory) else self._own_memory

    @memory.setter
    def memory(self, memory: BaseMemory) -> None:
        if isinstance(self.crew, BaseAgent):
            self.crew.memory = memory
        else:
            self._own_memory = memory

    @property
    def meta(self) -> AgentMeta:
        """The EM agent's name and description; its tools are the crew's."""
        crew_meta = getattr(self.crew, "meta", None)
        tools = list(getattr(crew_meta, "tools", []) or [])
        return AgentMeta(name=self._name, description=self._description, tools=tools)

    async def clone(self) -> EpisodicMemoryAgent:
        """Return an EM agent over a clone of the crew, sharing the memory and the sessions."""
        crew = self.crew
        clone_crew = getattr(crew, "clone", None)
        if callable(clone_crew):
            crew = await clone_crew()
        twin = object.__new__(type(self))
        # Everything but the crew, the middleware list and the (cached) emitter is shared.
        twin.__dict__.update({k: v for k, v in self.__dict__.items() if k != "emitter"})
        twin.crew = crew
        twin._middlewares = list(self._middlewares)
        return twin


def _text(output: Any) -> str:
    answer = workflow_answer(output)
    if answer is not None:
        return answer
    last = getattr(output, "last_message", None)
    return getattr(last, "text", "") if last is not None else ""


def _workflow_name(crew: object) -> str | None:
    if isinstance(crew, AgentWorkflow):
        return crew.workflow.name
    return None
