"""``EpisodicMemoryNode``: the node users add after their crew in a LangGraph graph."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.types import Command

from em_plugin._deprecation import deprecated
from em_plugin.session import (
    DEFAULT_MAX_SESSIONS,
    SEPARATOR,
    MemoryPort,
    PolicyOptions,
    SessionController,
    SessionPolicy,
)
from em_plugin.session.integration import CrewNameAlias, MemoryIntegration
from integrations.langgraph._capture import RunCapture, install
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
from integrations.langgraph._messages import message_text
from integrations.langgraph._turns import (
    CAPTURE_KEY,
    EpisodicMemoryState,
    TurnEntry,
    failed_run_entry,
    input_schema,
    previous_run_walk,
    trajectory_from_turns,
    turn_entry,
)

DEFAULT_NAME = "episodic_memory"


class EpisodicMemoryNode(CrewNameAlias, MemoryIntegration, Runnable[dict, dict | Command]):
    """A graph node that keeps the session with the thread, answers ``/save`` and suggests.

    When a turn ends it collects the turn's calls from the run hierarchy (every depth: sub-agents
    behind tools, supervisor and swarm agents, subgraphs; nothing to attach) and appends them to
    the graph's checkpointed state (the private channel ``episodic_capture``, added to the graph
    with this node). The session is compiled from the thread alone, so any worker of a LangGraph
    server, or a restarted one, compiles the same workflow.

    The suggestions follow the crew's unchanged answer as the memory's own message
    (:func:`reply_text` joins the two the way the user reads them). They are for the user only:
    when the next turn starts, the router sends it through this node first, which removes them
    (and earlier commands and replies) from the thread before handing over to the crew.

    :func:`~integrations.langgraph.with_episodic_memory` wires it for the common case; in a
    custom graph, add it after the crew and route commands straight to it with :meth:`router`::

        node = EpisodicMemoryNode(memory)
        builder.add_node("crew", crew)
        builder.add_node("episodic_memory", node)
        builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
        builder.add_edge("crew", "episodic_memory")
        builder.add_edge("episodic_memory", END)

    The session is the run's ``thread_id`` (recorded as the workflow's session); the scope comes
    from the run's context or config (``scope``). With a messages key other than ``messages``,
    add the node with ``input_schema=node.state_schema``.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        policy: The session settings (:class:`~em_plugin.SessionPolicy`: ``strict``,
            ``autosave``, ``judge``, ``limit``, ``turn_budget``, the two commands).
        crew_name: The crew's name, recorded on saved workflows (``crew=`` before this release).
        name: The node's default name.
        max_sessions: How many sessions' controllers (last suggestions) to keep in this
            process; the sessions themselves live in the thread.
        messages_key: The state key holding the messages.
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
        name: str = DEFAULT_NAME,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        messages_key: str = "messages",
        **deprecated: Unpack[PolicyOptions],
    ) -> None:
        self.open_sessions(
            memory, owner="EpisodicMemoryNode", framework=FRAMEWORK, log=logger, policy=policy,
            crew_name=crew_name, max_sessions=max_sessions, deprecated_options=deprecated,
        )  # fmt: skip
        self.memory = memory
        self.messages_key = messages_key
        self.name = name
        self._crew_node: str | None = None
        self.capture: RunCapture = install()
        """The process's capture of the run hierarchy (shared by every node)."""

    def __call__(
        self, state: EpisodicMemoryState, config: RunnableConfig | None = None
    ) -> dict | Command:
        # The annotation is how ``add_node`` learns this node's input schema, and so adds the
        # session's private channel to the graph.
        return self.invoke(dict(state), config)

    @property
    def state_schema(self) -> type[Any]:
        """The node's input schema: the messages and the session's private channel."""
        return input_schema(self.messages_key)

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

    def attach(self, graph: Any) -> Any:
        """Deprecated: return ``graph`` unchanged (capture needs no attach step any more).

        The last release's node recorded the crew through a callback handler that ``attach``
        added to the graph; the node now reads the run hierarchy itself, on every graph. Warns
        :class:`DeprecationWarning`; removed in the next release.

        Args:
            graph: The compiled graph holding this node.

        Returns:
            The same graph.
        """
        deprecated(
            "EpisodicMemoryNode.attach(graph)",
            "the graph as it is (the node captures the crew's runs without it)",
        )
        return graph

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

    # -- Runnable ------------------------------------------------------------------------------

    def invoke(
        self, input: dict, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict | Command:
        """Run the node on the graph state (sync)."""
        handover = self._handover(input)
        if handover is not None:
            return handover
        entries, checked = self._entries(input, config, self._failed_run(input, config))
        try:
            return _with_entry(self._invoke(input, config, entries, checked), entries)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate(exc)
            return _with_entry({}, entries)

    async def ainvoke(
        self, input: dict, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict | Command:
        """Run the node on the graph state (async)."""
        handover = self._handover(input)
        if handover is not None:
            return handover
        entries, checked = self._entries(input, config, await self._afailed_run(input, config))
        try:
            return _with_entry(await self._ainvoke(input, config, entries, checked), entries)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate(exc)
            return _with_entry({}, entries)

    def _isolate(self, exc: Exception) -> None:
        self.sessions.isolate("the episodic memory node", exc)

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

    def _entries(
        self, state: dict, config: RunnableConfig | None, failed: TurnEntry | bool
    ) -> tuple[list[TurnEntry], bool]:
        """This turn's entries, and whether the thread's checkpoints were read.

        The entries: the previous run's when it raised (``failed``), then this turn's calls
        from the run hierarchy (none for a command turn). ``failed`` is ``False`` when the
        checkpoints could not be read (no checkpointer): the failure this process saw, if
        any, is then used (see ``_prepare``).
        """
        entries = [failed] if isinstance(failed, dict) else []
        try:
            calls, started = self.capture.collect(config)
            instruction = _instruction(_messages(state, self.messages_key), self.policy)
            if instruction is not None:
                entries.append(turn_entry(instruction, calls, started))
        except Exception as exc:  # noqa: BLE001 - the crew's answer goes through regardless
            self.sessions.isolate("collecting the turn's calls", exc)
        return entries, failed is not False

    def _failed_run(self, state: dict, config: RunnableConfig | None) -> TurnEntry | bool:
        """The previous run's entry if it raised, read from the thread's checkpoints.

        ``True`` when it did not, ``False`` when they cannot be read.
        """
        try:
            found = previous_run_walk(config)
            if found is None:
                return False
            saver, walk = found
            wanted = next(walk)
            try:
                while True:
                    wanted = walk.send(saver.get_tuple(wanted))
            except StopIteration as done:
                return self._failure_entry(state, done.value)
        except Exception as exc:  # noqa: BLE001 - the crew's answer goes through regardless
            self.sessions.isolate("reading the thread's previous run", exc)
            return False

    async def _afailed_run(self, state: dict, config: RunnableConfig | None) -> TurnEntry | bool:
        """Async :meth:`_failed_run` (async checkpointers refuse sync reads on the loop)."""
        try:
            found = previous_run_walk(config)
            if found is None:
                return False
            saver, walk = found
            wanted = next(walk)
            try:
                while True:
                    wanted = walk.send(await saver.aget_tuple(wanted))
            except StopIteration as done:
                return self._failure_entry(state, done.value)
        except Exception as exc:  # noqa: BLE001 - the crew's answer goes through regardless
            self.sessions.isolate("reading the thread's previous run", exc)
            return False

    def _failure_entry(self, state: dict, previous: Any) -> TurnEntry | bool:
        entry = failed_run_entry(
            previous,
            _turns(state),
            messages_key=self.messages_key,
            command_of=self.policy.command_of,
        )
        return True if entry is None else entry

    def _invoke(
        self, input: dict, config: RunnableConfig | None, entries: list[TurnEntry], checked: bool
    ) -> dict:
        prepared = self._prepare(input, config, entries, checked)
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

    async def _ainvoke(
        self, input: dict, config: RunnableConfig | None, entries: list[TurnEntry], checked: bool
    ) -> dict:
        prepared = self._prepare(input, config, entries, checked)
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
        self,
        state: dict,
        config: RunnableConfig | None,
        entries: list[TurnEntry],
        checked: bool,
    ) -> tuple[SessionController, list[BaseMessage], str | None] | None:
        messages = _messages(state, self.messages_key)
        if not messages:
            if self.strict:
                raise KeyError(f"state has no messages under {self.messages_key!r}")
            logger.warning("episodic memory: no messages under %r; skipped", self.messages_key)
            return None
        session_id = thread_id_of(config) or _first_id(messages)
        scope = scope_of(config, runtime_context(), self.memory)
        controller = self.sessions.get(session_id, scope=scope, crew=self.crew_name)
        turns = [*_turns(state), *entries]
        with controller.guard("compiling the session from the thread"):
            controller.trajectory = trajectory_from_turns(
                messages, turns, session_id=session_id, scope=scope
            )
        last = messages[-1]
        command = None
        if isinstance(last, HumanMessage) and controller.command_of(message_text(last)):
            command = message_text(last)
        # The thread's previous run raised before reaching this node. Read from the thread's
        # checkpoints, it is an entry of the turns (any worker, a restarted server); without a
        # checkpointer, this process's capture saw it: when this turn is a command, that run
        # was the last (a new instruction answered since supersedes it).
        failure = self.capture.run_failure(session_id)
        if failure is not None and command is not None and not checked:
            controller.fail_turn(failure)
        return controller, messages, command

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


def _with_entry(update: dict, entries: list[TurnEntry]) -> dict:
    return {**update, CAPTURE_KEY: entries} if entries else update


def _turns(state: Any) -> list[TurnEntry]:
    value = state.get(CAPTURE_KEY) if isinstance(state, dict) else getattr(state, CAPTURE_KEY, None)
    return [t for t in value or [] if isinstance(t, dict)]


def _instruction(messages: Sequence[BaseMessage], policy: SessionPolicy) -> HumanMessage | None:
    """The user message that opened this turn, unless it is a command."""
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    if human is None or policy.command_of(message_text(human)) is not None:
        return None
    return human if message_text(human).strip() else None
