"""``EpisodicMemoryNode``: the node users add after their crew in a LangGraph graph."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import Command

from em_plugin.capture.trajectory import CallStart, Trajectory
from em_plugin.session import (
    DEFAULT_MAX_SESSIONS,
    SEPARATOR,
    MemoryPort,
    PolicyAttributes,
    PolicyOptions,
    SessionController,
    SessionPolicy,
    SessionRegistry,
)
from integrations.langgraph._context import (
    FRAMEWORK,
    logger,
    runtime_context,
    scope_of,
    thread_id_of,
)
from integrations.langgraph._memory_messages import (
    Kind,
    announce,
    is_memory_traffic,
    memory_kind,
    memory_message,
)
from integrations.langgraph._messages import (
    is_handoff,
    message_text,
    replay_events,
    trajectory_from_messages,
)
from integrations.langgraph._recorder import TrajectoryRecorder

DEFAULT_NAME = "episodic_memory"
#: The agent of calls made by an agent that has no name and no node name is known.
DEFAULT_AGENT = "crew"


class EpisodicMemoryNode(PolicyAttributes, Runnable[dict, dict | Command]):
    """A graph node that compiles the session, answers ``/save`` and shows suggestions.

    The suggestions follow the crew's unchanged answer as the memory's own message
    (:func:`reply_text` joins the two the way the user reads them). They are for the user only:
    when the next turn starts, the router sends it through this node first, which removes them
    (and earlier commands and replies) from the thread before handing over to the crew.

    Add it after the crew; route commands straight to it with :meth:`router` so that ``/save``
    never reaches the crew::

        node = EpisodicMemoryNode(memory)
        builder.add_node("crew", crew)
        builder.add_node("episodic_memory", node)
        builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
        builder.add_edge("crew", "episodic_memory")
        builder.add_edge("episodic_memory", END)

    The session is the run's ``thread_id``; the scope comes from the run's context or config
    (``scope``). The session's workflow is compiled from ``state[messages_key]``; when the crew
    hides its tool calls, from a :class:`TrajectoryRecorder` passed in the run's callbacks (which
    also supplies calls made inside tools, e.g. by a sub-agent behind a handoff tool).

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        messages_key: The state key holding the messages.
        save_command: The command that saves the session's workflow.
        suggest_command: The command that shows suggestions without running the crew.
        strict: Raise memory failures instead of logging a warning and passing the answer on.
        autosave: ``"off"`` or ``"on_success"`` (save after every turn without a failed call).
        judge: With ``autosave="on_success"``, decides which turns are saved.
        limit: How many suggestions to append.
        turn_budget: Seconds of memory work a turn may add (``None``: no limit).
        crew: The crew description's name, recorded on compiled workflows.
        handoff: Tells whether a tool name hands off to another agent (shared-message crews).
        name: The node's default name.
        max_sessions: How many sessions (threads) to keep open.

    Raises:
        ConfigurationError: On invalid settings (the message lists the valid choices).
    """

    def __init__(
        self,
        memory: MemoryPort,
        *,
        messages_key: str = "messages",
        crew: str | None = None,
        handoff: Callable[[str], bool] = is_handoff,
        name: str = DEFAULT_NAME,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        **options: Unpack[PolicyOptions],
    ) -> None:
        self.policy = SessionPolicy.from_options(options)
        self.sessions = SessionRegistry(
            memory, self.policy, framework=FRAMEWORK, log=logger, max_sessions=max_sessions
        )
        self.memory = memory
        self.messages_key = messages_key
        self.crew = crew
        self.handoff = handoff
        self.name = name
        self._crew_node: str | None = None
        self.recorder = TrajectoryRecorder(max_sessions=max_sessions)
        """Records the crew's runs at every depth once attached (:meth:`attach`)."""

    # -- routing -------------------------------------------------------------------------------

    def is_command(self, state: dict) -> bool:
        """Tell whether the last user message is one of this node's commands."""
        last = _last_human(_messages(state, self.messages_key))
        return last is not None and self.policy.command_of(message_text(last)) is not None

    def needs_cleanup(self, state: dict) -> bool:
        """Tell whether a new turn starts on a thread that still holds memory traffic."""
        messages = _messages(state, self.messages_key)
        if _last_human(messages) is None:
            return False
        return any(is_memory_traffic(m, self.policy.command_of) for m in messages[:-1])

    def router(self, crew_node: str, *, memory_node: str | None = None) -> Callable[[dict], str]:
        """Return a conditional-edge function: commands go to this node, the rest to the crew.

        A new turn on a thread that holds earlier suggestions or commands goes through this node
        first: it removes them from the thread and hands over to the crew, so the crew's model
        never reads them.

        Args:
            crew_node: The crew's node name.
            memory_node: This node's name in the graph (default: its ``name``).
        """
        target = memory_node or self.name or DEFAULT_NAME
        self._crew_node = crew_node

        def route(state: dict) -> str:
            if self.is_command(state) or self.needs_cleanup(state):
                return target
            return crew_node

        return route

    def attach(self, graph: Any) -> Any:
        """Return ``graph`` with this node's :attr:`recorder` in its callbacks.

        The recorder sees the crew's runs at every depth (sub-agents behind handoffs or tools,
        ``Command(goto=...)`` handoffs, agents whose messages never reach the state), so the
        captured workflow does not depend on what the crew keeps in its messages.

        Args:
            graph: The compiled graph holding this node.

        Returns:
            The same graph, configured with the recorder.
        """
        return graph.with_config(callbacks=[self.recorder])

    # -- Runnable ------------------------------------------------------------------------------

    def invoke(
        self, input: dict, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict | Command:
        """Run the node on the graph state (sync)."""
        handover = self._handover(input)
        if handover is not None:
            return handover
        try:
            return self._invoke(input, config)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            return self._isolate(exc)

    async def ainvoke(
        self, input: dict, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict | Command:
        """Run the node on the graph state (async)."""
        handover = self._handover(input)
        if handover is not None:
            return handover
        try:
            return await self._ainvoke(input, config)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            return self._isolate(exc)

    def _isolate(self, exc: Exception) -> dict:
        self.sessions.isolate("the episodic memory node", exc)
        return {}

    def _handover(self, state: dict) -> Command | None:
        """Before the crew (routed here for cleanup): drop memory traffic, go to the crew."""
        if self._crew_node is None or self.is_command(state) or not self.needs_cleanup(state):
            return None
        removals: list[RemoveMessage] = []
        try:
            messages = _messages(state, self.messages_key)
            removals = [
                RemoveMessage(id=m.id)
                for m in messages[:-1]
                if m.id and is_memory_traffic(m, self.policy.command_of)
            ]
        except Exception as exc:  # noqa: BLE001 - the crew must run whatever happens here
            self.sessions.isolate("removing earlier suggestions from the thread", exc)
        return Command(update={self.messages_key: removals}, goto=self._crew_node)

    def _invoke(self, input: dict, config: RunnableConfig | None) -> dict:
        prepared = self._prepare(input, config)
        if prepared is None:
            return {}
        controller, messages, command = prepared
        if command is not None:
            reply = _explain_lone_save(controller.handle_command(command), controller, messages)
            return self._reply(reply, "reply")
        answer = _final_answer(messages)
        if answer is None:
            return {}
        suffix = controller.suggestion_suffix(message_text(answer), record_answer=False)
        return self._reply(suffix.removeprefix(SEPARATOR), "suggestions")

    async def _ainvoke(self, input: dict, config: RunnableConfig | None) -> dict:
        prepared = self._prepare(input, config)
        if prepared is None:
            return {}
        controller, messages, command = prepared
        if command is not None:
            reply = await controller.ahandle_command(command)
            return self._reply(_explain_lone_save(reply, controller, messages), "reply")
        answer = _final_answer(messages)
        if answer is None:
            return {}
        suffix = await controller.asuggestion_suffix(message_text(answer), record_answer=False)
        return self._reply(suffix.removeprefix(SEPARATOR), "suggestions")

    # -- internals -----------------------------------------------------------------------------

    def _prepare(
        self, state: dict, config: RunnableConfig | None
    ) -> tuple[SessionController, list[BaseMessage], str | None] | None:
        messages = _messages(state, self.messages_key)
        if not messages:
            if self.strict:
                raise KeyError(f"state has no messages under {self.messages_key!r}")
            logger.warning("episodic memory: no messages under %r; skipped", self.messages_key)
            return None
        session_id = thread_id_of(config) or _first_id(messages)
        scope = scope_of(config, runtime_context(), self.memory)
        controller = self.sessions.get(session_id, scope=scope, crew=self.crew)
        # The checkpointed messages are the session's truth: rebuild its trajectory each turn.
        controller.trajectory = Trajectory(session_id, scope=scope, framework=FRAMEWORK)
        with controller.guard("compiling the session from its messages"):
            controller.trajectory = self._trajectory(messages, session_id, scope, config)
        last = messages[-1]
        command = None
        if isinstance(last, HumanMessage) and controller.command_of(message_text(last)):
            command = message_text(last)
        return controller, messages, command

    def _trajectory(
        self,
        messages: Sequence[BaseMessage],
        session_id: str,
        scope: str,
        config: RunnableConfig | None,
    ) -> Trajectory:
        recorder, recorded_session = _recorder_for(config, self.recorder)
        nested = recorder.nested_calls(recorded_session) if recorder and recorded_session else None
        trajectory = trajectory_from_messages(
            messages,
            session_id=session_id,
            scope=scope,
            handoff=self.handoff,
            nested=nested,
            default_agent=self._crew_node or DEFAULT_AGENT,
            agents=recorder.agents(recorded_session) if recorder and recorded_session else None,
        )
        if recorder is None or recorded_session is None or _has_calls(trajectory):
            return trajectory
        recorded = recorder.trajectory(recorded_session)
        if recorded is None or not _has_calls(recorded):
            return trajectory
        # The crew hid its tool calls (no ToolMessages in state): use the recorder's session.
        fallback = Trajectory(session_id, scope=scope, framework="langgraph")
        replay_events(fallback, recorded.events)
        return fallback

    def _reply(self, text: str | None, kind: Kind) -> dict:
        if not text:
            return {}
        if kind == "suggestions":
            announce(text)
        return {self.messages_key: [memory_message(text, kind)]}


def append_to_message(message: AIMessage, suffix: str) -> AIMessage:
    """Return a copy of ``message`` (same id, so ``add_messages`` replaces it) with ``suffix``.

    String content gets the suffix appended; content blocks get a new text block, so the crew's
    own blocks are never touched.
    """
    if isinstance(message.content, str):
        content: Any = message.content + suffix
    else:
        content = [*message.content, {"type": "text", "text": suffix}]
    return message.model_copy(update={"content": content})


def _has_calls(trajectory: Trajectory) -> bool:
    return any(isinstance(event, CallStart) for event in trajectory.events)


def _messages(state: Any, key: str) -> list[BaseMessage]:
    if isinstance(state, dict):
        value = state.get(key)
    else:
        value = getattr(state, key, None)
    return list(value) if isinstance(value, list | tuple) else []


def _final_answer(messages: Sequence[BaseMessage]) -> AIMessage | None:
    last = messages[-1]
    if isinstance(last, AIMessage) and not last.tool_calls and memory_kind(last) is None:
        return last
    return None


def _last_human(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    last = messages[-1] if messages else None
    return last if isinstance(last, HumanMessage) else None


def _first_id(messages: Sequence[BaseMessage]) -> str:
    first = next((m for m in messages if isinstance(m, HumanMessage)), messages[0])
    return first.id or "default"


def _recorder_for(
    config: RunnableConfig | None, own: TrajectoryRecorder
) -> tuple[TrajectoryRecorder | None, str | None]:
    callbacks = (config or {}).get("callbacks")
    handlers = getattr(callbacks, "handlers", callbacks) or []
    if not isinstance(handlers, list | tuple):
        handlers = []
    recorder = next((h for h in handlers if isinstance(h, TrajectoryRecorder)), None)
    if recorder is None:
        session = thread_id_of(config)
        if session is None or own.trajectory(session) is None:
            return None, None
        return own, session
    session = recorder.session_of_run(getattr(callbacks, "parent_run_id", None))
    if session is None:
        session = thread_id_of(config)
    return recorder, session


LONE_SAVE = (
    "Nothing to save yet: this run holds only the /save message. A session spans turns through "
    "the graph's checkpointed messages: compile the graph with a checkpointer (e.g. "
    "InMemorySaver()) and pass the same config {'configurable': {'thread_id': ...}} on every "
    "turn."
)
"""The answer to a ``/save`` that arrives with no earlier messages (no checkpointer)."""


def _explain_lone_save(
    reply: str | None, controller: SessionController, messages: Sequence[BaseMessage]
) -> str | None:
    # Without a checkpointer (or with a new thread_id) each run sees only its own messages, so
    # "/save" arrives alone: say what is missing instead of "this session has no instructions".
    lone = len(messages) == 1 and controller.command_of(message_text(messages[-1])) == "save"
    return LONE_SAVE if lone and reply and reply.startswith("Nothing to save yet") else reply
