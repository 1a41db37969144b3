"""``EpisodicMemoryMiddleware``: episodic memory for LangChain ``create_agent`` agents.

Hooks used (LangChain 1.x ``AgentMiddleware``):

- ``wrap_tool_call`` / ``awrap_tool_call`` record every tool call (with its result or error) in
  the private, checkpointed state key ``episodic_trace``, as the session record every integration
  stores (:mod:`em_plugin.session.turns`), tagged with the turn's HumanMessage id.
  A sub-agent that runs inside a tool and carries an ``EpisodicMemoryMiddleware`` too records its
  calls *under* that tool call (a context variable links them), so handoffs nest;
- ``before_agent`` answers ``/save`` and ``/suggest`` and jumps to the end (the model is not
  called);
- ``after_agent`` shows the suggestions after the final answer, as the memory's own message;
- ``wrap_model_call`` strips the memory's messages (suggestions, commands, replies) from every
  model request, so the agent's model never reads them;
- with ``inject=True``, ``wrap_model_call`` adds a short "Relevant past workflows / suggested next
  tools" block to the system prompt (recomputed only when the turn's calls change).

Place it *before* ``ToolErrorMiddleware`` / ``ToolRetryMiddleware`` in the list (outermost), so it
sees handled errors as ``ToolMessage(status="error")``.
"""

from __future__ import annotations

import contextvars
import operator
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired, Unpack

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command

from em_plugin.capture.trajectory import Trajectory, is_command
from em_plugin.session import (
    DEFAULT_MAX_SESSIONS,
    SEPARATOR,
    MemoryPort,
    PolicyOptions,
    SessionController,
    SessionPolicy,
)
from em_plugin.session.integration import CrewNameAlias, MemoryIntegration
from integrations.langgraph._capture import RunCapture, install, now
from integrations.langgraph._context import (
    logger,
    runtime_context,
    scope_of,
    thread_id_of,
)
from integrations.langgraph._memory_messages import (
    announce,
    crew_view,
    memory_kind,
    memory_message,
)
from integrations.langgraph._messages import message_text
from integrations.langgraph._trace import (
    TRACE_KEY,
    CallTree,
    current_config,
    first_human_id,
    trace_entry,
    trace_fragment,
    trajectory_from_trace,
)

# The children list of the tool call currently running in this context (None at top level).
_ENCLOSING: contextvars.ContextVar[list[CallTree] | None] = contextvars.ContextVar(
    "episodic_memory_enclosing_call", default=None
)


class EpisodicAgentState(AgentState):
    """``AgentState`` plus the private trace of tool calls."""

    # The reducer must be the *last* Annotated item: LangGraph only looks there.

    episodic_trace: NotRequired[Annotated[list[dict[str, Any]], PrivateStateAttr, operator.add]]


class EpisodicMemoryMiddleware(CrewNameAlias, MemoryIntegration, AgentMiddleware):
    """Episodic memory for ``create_agent``: capture, ``/save``, suggestions, optional injection.

    Example:
        >>> agent = create_agent(model, tools, middleware=[
        ...     EpisodicMemoryMiddleware(memory, inject=True), ToolErrorMiddleware(...)],
        ...     checkpointer=InMemorySaver())

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        policy: The session settings (:class:`~em_plugin.SessionPolicy`: ``strict``,
            ``autosave``, ``judge``, ``limit``, ``turn_budget``, the two commands).
        crew_name: The crew's name, recorded on saved workflows (``crew=`` before this release).
        max_sessions: How many sessions (threads) to keep open.
        inject: Also put "Relevant past workflows / suggested next tools" in the system prompt.
        **deprecated: The loose ``SessionPolicy`` keywords of the previous release
            (``strict=``, ``limit=``, ...) and ``crew=``; each warns.

    Raises:
        ConfigurationError: On invalid settings.
    """

    state_schema = EpisodicAgentState

    def __init__(
        self,
        memory: MemoryPort,
        *,
        policy: SessionPolicy | None = None,
        crew_name: str | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        inject: bool = False,
        **deprecated: Unpack[PolicyOptions],
    ) -> None:
        super().__init__()
        self.open_sessions(
            memory, owner="EpisodicMemoryMiddleware", framework="langgraph", log=logger,
            policy=policy, crew_name=crew_name, max_sessions=max_sessions,
            deprecated_options=deprecated,
        )  # fmt: skip
        self.memory = memory
        self.inject = inject
        self.tools = []
        self.capture: RunCapture = install()
        """The process's capture of the run hierarchy: it tells which threads' runs raised."""
        self._blocks: OrderedDict[tuple[str, str, int], str] = OrderedDict()
        self._blocks_lock = threading.Lock()

    # -- session -------------------------------------------------------------------------------

    def _controller(self, state: Mapping[str, Any], runtime: Any) -> SessionController:
        config = current_config()
        messages = list(state.get("messages") or [])
        session_id = (
            thread_id_of(config)
            or getattr(getattr(runtime, "execution_info", None), "thread_id", None)
            or first_human_id(messages)
        )
        context = getattr(runtime, "context", None) if runtime is not None else None
        scope = scope_of(config, context or runtime_context(), self.memory)
        controller = self.sessions.get(str(session_id), scope=scope, crew=self.crew_name)
        # The checkpointed state is the session's truth: rebuild its trajectory each time.
        controller.trajectory = Trajectory(str(session_id), scope=scope, framework="langgraph")
        with controller.guard("compiling the session from the agent state"):
            controller.trajectory = trajectory_from_trace(
                messages, state.get(TRACE_KEY) or [], session_id=session_id, scope=scope
            )
        # The thread's previous run raised: when this turn is a command, that run was the
        # last; a new instruction since supersedes it.
        failure = self.capture.run_failure(str(session_id))
        if failure is not None and self._command(state) is not None:
            controller.fail_turn(failure)
        return controller

    def _command(self, state: Mapping[str, Any]) -> str | None:
        if _ENCLOSING.get() is not None:
            return None  # a sub-agent inside a tool call: the outer agent owns the session
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        if not isinstance(last, HumanMessage):
            return None
        text = message_text(last).strip()
        return text if self.policy.command_of(text) is not None else None

    def _isolate(self, action: str, exc: Exception) -> None:
        self.sessions.isolate(action, exc)

    # -- before_agent: commands -------------------------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Answer ``/save`` and ``/suggest`` without calling the model."""
        command = self._command(state)
        if command is None:
            return None
        try:
            reply = self._controller(state, runtime).handle_command(command)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate("handling a command", exc)
            reply = f"Episodic memory is unavailable: {type(exc).__name__}: {exc}"
        return {"messages": [memory_message(reply or "", "reply")], "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`before_agent`."""
        command = self._command(state)
        if command is None:
            return None
        try:
            reply = await self._controller(state, runtime).ahandle_command(command)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate("handling a command", exc)
            reply = f"Episodic memory is unavailable: {type(exc).__name__}: {exc}"
        return {"messages": [memory_message(reply or "", "reply")], "jump_to": "end"}

    # -- after_agent: suggestions ------------------------------------------------------------

    def _final(self, state: Mapping[str, Any]) -> AIMessage | None:
        if _ENCLOSING.get() is not None:
            return None
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        if human is None or is_command(message_text(human)):
            return None  # the /save turn (before_agent jumped here) gets no suggestions
        if isinstance(last, AIMessage) and not last.tool_calls and memory_kind(last) is None:
            return last
        return None

    def after_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Show suggestions after the final answer, as the memory's own message."""
        answer = self._final(state)
        if answer is None:
            return None
        try:
            controller = self._controller(state, runtime)
            suffix = controller.suggestion_suffix(message_text(answer), record_answer=False)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate("suggesting next steps", exc)
            return None
        return _suggestions_update(suffix)

    async def aafter_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        answer = self._final(state)
        if answer is None:
            return None
        try:
            controller = self._controller(state, runtime)
            suffix = await controller.asuggestion_suffix(message_text(answer), record_answer=False)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate("suggesting next steps", exc)
            return None
        return _suggestions_update(suffix)

    # -- wrap_tool_call: capture -------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Record the call (and the calls nested inside it) in the agent's state."""
        enclosing = _ENCLOSING.get()
        children: list[CallTree] = []
        started = now()
        token = _ENCLOSING.set(children)
        try:
            result = handler(request)
        except Exception as exc:
            _ENCLOSING.reset(token)
            if enclosing is not None:
                enclosing.append(trace_entry(request, None, exc, children, started=started))
            raise
        _ENCLOSING.reset(token)
        return self._recorded(request, result, children, enclosing, started)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_tool_call`."""
        enclosing = _ENCLOSING.get()
        children: list[CallTree] = []
        started = now()
        token = _ENCLOSING.set(children)
        try:
            result = await handler(request)
        except Exception as exc:
            _ENCLOSING.reset(token)
            if enclosing is not None:
                enclosing.append(trace_entry(request, None, exc, children, started=started))
            raise
        _ENCLOSING.reset(token)
        return self._recorded(request, result, children, enclosing, started)

    def _recorded(
        self,
        request: Any,
        result: Any,
        children: list[CallTree],
        enclosing: list[CallTree] | None,
        started: str,
    ) -> Any:
        try:
            entry = trace_entry(request, result, None, children, started=started)
            if enclosing is not None:
                enclosing.append(entry)  # the outer agent's call holds it; this state stays clean
                return result
            fragment = trace_fragment(entry)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self._isolate("recording a tool call", exc)
            return result
        if isinstance(result, ToolMessage):
            return Command(update={"messages": [result], TRACE_KEY: [fragment]})
        if isinstance(result, Command) and isinstance(result.update, dict):
            return Command(
                graph=result.graph,
                update={**result.update, TRACE_KEY: [fragment]},
                resume=result.resume,
                goto=result.goto,
            )
        return result

    # -- wrap_model_call: injection ----------------------------------------------------------

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Strip the memory's messages from the model's input.

        With ``inject=True``, also add the memory block to the system prompt.
        """
        request = self._clean(request)
        if not self.inject or _ENCLOSING.get() is not None:
            return handler(request)
        return handler(self._with_block(request, self._block(request, None)))

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of :meth:`wrap_model_call`."""
        request = self._clean(request)
        if not self.inject or _ENCLOSING.get() is not None:
            return await handler(request)
        key = self._block_key(request)
        block = self._cached(key)
        if block is None:
            try:
                block = await self._controller(request.state, request.runtime).aprompt_block()
            except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
                self._isolate("retrieving past workflows", exc)
                block = ""
            self._remember(key, block)
        return await handler(self._with_block(request, block))

    def _clean(self, request: Any) -> Any:
        # Suggestions, commands and their replies are for the user: the model never reads them.
        messages = list(request.messages)
        kept = crew_view(messages, self.policy.command_of)
        return request if len(kept) == len(messages) else request.override(messages=kept)

    def _block(self, request: Any, _: Any) -> str:
        key = self._block_key(request)
        block = self._cached(key)
        if block is None:
            try:
                block = self._controller(request.state, request.runtime).prompt_block()
            except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
                self._isolate("retrieving past workflows", exc)
                block = ""
            self._remember(key, block)
        return block

    def _block_key(self, request: Any) -> tuple[str, str, int]:
        # The block changes as the turn's calls accumulate: key it by the calls so far.
        state = request.state if isinstance(request.state, Mapping) else {}
        messages = state.get("messages") or []
        human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        turn = (human.id or "") if human is not None else ""
        calls = len(state.get(TRACE_KEY) or [])
        return (thread_id_of(current_config()) or "", turn, calls)

    def _cached(self, key: tuple[str, str, int]) -> str | None:
        with self._blocks_lock:
            return self._blocks.get(key)

    def _remember(self, key: tuple[str, str, int], block: str) -> None:
        with self._blocks_lock:
            self._blocks[key] = block
            while len(self._blocks) > 256:
                self._blocks.popitem(last=False)

    @staticmethod
    def _with_block(request: Any, block: str) -> Any:
        if not block:
            return request
        system = request.system_message
        if system is None:
            message = SystemMessage(block)
        elif isinstance(system.content, str):
            message = SystemMessage(system.content + "\n\n" + block)
        else:
            message = SystemMessage([*system.content, {"type": "text", "text": block}])
        return request.override(system_message=message)


def _suggestions_update(suffix: str) -> dict[str, Any] | None:
    text = suffix.removeprefix(SEPARATOR)
    if not text:
        return None
    announce(text)
    return {"messages": [memory_message(text, "suggestions")]}
