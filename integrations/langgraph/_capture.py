"""The run hierarchy as the one source of a LangGraph session's calls (docs/capture.md).

:class:`RunCapture` is a LangChain callback handler. It sees every tool run at every depth (tools
of a ``create_agent`` crew, sub-agents run inside tools, langgraph-supervisor and
langgraph-swarm agents whose messages never reach the parent graph, hand-built subgraphs,
streamed and async runs) with its run id, its parent run and the time it ran. It keeps the calls
of the runs in flight only: the :class:`~integrations.langgraph.EpisodicMemoryNode` *collects*
the calls made in its graph's run when the turn ends and writes them into the graph's
checkpointed state, so the session lives with the conversation (any worker, or a restarted
server, compiles the same workflow). Calls nobody collects are dropped when their root run ends.

One handler serves the process: :func:`install` registers it as a LangChain configure hook (the
mechanism LangChain's own tracers use), so every run gets it without a ``callbacks=`` step.

Each call is a JSON record (it is checkpointed)::

    {"id": ..., "name": ..., "args": {...}, "agent": ..., "parent": <id of the enclosing call>,
     "started": <ISO time>, "ended": <ISO time>, "output": ... | "error": ...,
     "order": <position among the model's tool calls>}

Attribution, read from the run hierarchy whatever the app keeps in its state: a call belongs to
the agent named by ``lc_agent_name``, else to the nearest enclosing graph node that is not an
agent loop's own step (``tools``, ``model`` ...); calls inside a tool run nest under it (a
sub-agent behind a tool is named by its graph's name); after a ``Command(goto=agent)`` handoff
(``transfer_to_<agent>`` as langgraph-supervisor and langgraph-swarm make them), that agent's
calls in the same run nest under the handoff.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from em_plugin.capture.trajectory import MAX_OUTPUT_CHARS
from integrations.langgraph._memory_messages import message_text

#: Nodes inside an agent's own loop (create_agent, create_react_agent, ToolNode): not agents.
AGENT_LOOP_NODES = frozenset({"tools", "model", "agent", "call_model", "__start__", "__end__"})
_HANDOFF_PREFIX = "transfer_to_"
#: Threads whose failed run is remembered until the memory reads it (oldest dropped first).
_MAX_FAILED = 1024

CallRecord = dict[str, Any]
"""One call, as JSON (see the module docstring)."""


def handoff_target(tool_name: str) -> str | None:
    """Return the agent a ``transfer_to_<agent>`` handoff tool hands over to, else ``None``."""
    if tool_name.startswith(_HANDOFF_PREFIX) and len(tool_name) > len(_HANDOFF_PREFIX):
        return tool_name[len(_HANDOFF_PREFIX) :]
    return None


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat()


@dataclass
class _Root:
    """What one root run (a graph invocation) has recorded so far."""

    runs: list[UUID] = field(default_factory=list)
    records: list[tuple[UUID, CallRecord]] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    order: dict[str, int] = field(default_factory=dict)  # model tool-call id -> position
    handoffs: dict[str, str] = field(default_factory=dict)  # agent -> handoff call id
    session: str | None = None  # the root run's thread id
    inputs: Any = None  # the root run's input
    started: str | None = None  # when the root run started


class RunCapture(BaseCallbackHandler):
    """Records the tool calls of the runs in flight, at every depth (see the module docstring).

    Args:
        None.

    Example:
        >>> capture = install()  # once per process; EpisodicMemoryNode does it
        >>> calls, started = capture.collect(config)  # in a node, when the turn ends
    """

    run_inline = True  # keep events in execution order, async runs too
    raise_error = False  # a recording problem must never break the host run
    # Events this capture never reads: skipped before any call (it serves every run). Not
    # ignore_agent: LangChain files tool events under it.
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self._parent: dict[UUID, UUID | None] = {}
        self._root_of: dict[UUID, UUID] = {}
        self._started: dict[UUID, str] = {}
        self._roots: dict[UUID, _Root] = {}
        self._tool_records: dict[UUID, CallRecord] = {}  # running tool run -> its record
        self._agent_of: dict[UUID, str] = {}  # runs inside a sub-agent that a tool started
        self._node_of: dict[UUID, str] = {}  # chain runs that are an agent's graph node
        self._positions = itertools.count()
        self._failed: OrderedDict[str, str] = OrderedDict()  # thread -> its failed run's error

    # -- reads -------------------------------------------------------------------------------

    def collect(self, config: Mapping[str, Any] | None) -> tuple[list[CallRecord], str | None]:
        """Take the calls made so far in the graph run that the calling node belongs to.

        Args:
            config: The calling node's run config (its ``callbacks`` name the node's run).

        Returns:
            The calls not collected before, in start order, and when the graph run started
            (``None`` outside a recorded run).
        """
        callbacks = (config or {}).get("callbacks")
        node_run = getattr(callbacks, "parent_run_id", None)
        with self._lock:
            graph_run = self._parent.get(node_run) if node_run is not None else None
            root_id = self._root_of.get(node_run) if node_run is not None else None
            root = self._roots.get(root_id) if root_id is not None else None
            if graph_run is None or root is None:
                return [], None
            taken: list[CallRecord] = []
            kept: list[tuple[UUID, CallRecord]] = []
            for run, record in root.records:
                if self._descends(run, graph_run):
                    taken.append(dict(record))
                else:
                    kept.append((run, record))
            root.records = kept
            return taken, self._started.get(graph_run)

    # -- callbacks ----------------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Link the run to its parent; name agent nodes and sub-agents started inside tools."""
        with self._lock:
            root = self._link(run_id, parent_run_id)
            if root is None:
                return
            self._started[run_id] = now()
            node = (metadata or {}).get("langgraph_node")
            name = kwargs.get("name")
            if isinstance(node, str) and node == name and node not in AGENT_LOOP_NODES:
                self._node_of[run_id] = node
            if parent_run_id is None:
                root.session = _session_of(metadata)
                root.inputs, root.started = inputs, self._started[run_id]
                return
            if parent_run_id in self._tool_records and name:
                self._agent_of[run_id] = str(name)  # a graph started inside a tool: a sub-agent
            elif parent_run_id in self._agent_of:
                self._agent_of[run_id] = self._agent_of[parent_run_id]

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Drop what a finished root run recorded (bounded memory)."""
        self._finish(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Note the failed root run's thread (the run raised), then drop what it recorded."""
        with self._lock:
            root = self._roots.get(run_id) if self._parent.get(run_id, run_id) is None else None
            # An interrupt or a cancellation is no failure of the crew.
            failed = isinstance(error, Exception) and not isinstance(error, GraphBubbleUp)
            if root is not None and root.session is not None and failed:
                self._failed[root.session] = f"{type(error).__name__}: {error}"[:MAX_OUTPUT_CHARS]
                self._failed.move_to_end(root.session)
                while len(self._failed) > _MAX_FAILED:
                    self._failed.popitem(last=False)
        self._finish(run_id)

    def run_failure(self, session: str) -> str | None:
        """Take the error of the thread's last run if it raised since the memory last looked.

        Args:
            session: The thread id.

        Returns:
            The error's message, or ``None``.
        """
        with self._lock:
            return self._failed.pop(session, None)

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Link the model run to its parent."""
        with self._lock:
            self._link(run_id, parent_run_id)

    def on_llm_start(
        self,
        serialized: Any,
        prompts: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Link the model run to its parent."""
        with self._lock:
            self._link(run_id, parent_run_id)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Remember the order of the tool calls the model asked for.

        Parallel calls finish in any order; the workflow keeps the model's.
        """
        ids = [
            call.get("id")
            for generations in getattr(response, "generations", None) or []
            for generation in generations
            for call in getattr(getattr(generation, "message", None), "tool_calls", None) or []
        ]
        with self._lock:
            root = self._root(run_id)
            if root is not None:
                for call_id in ids:
                    if isinstance(call_id, str) and call_id:
                        root.order[call_id] = next(self._positions)
        self._finish(run_id)  # a model called on its own is a root run: drop it

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Drop a failed model run that was a root run (bounded memory)."""
        self._finish(run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Record a call start, nested under the enclosing tool run or handoff."""
        name = (serialized or {}).get("name") or kwargs.get("name") or "unknown_tool"
        args = inputs if isinstance(inputs, Mapping) else {"input": input_str}
        started = now()
        with self._lock:
            root = self._link(run_id, parent_run_id)
            if root is None:
                return
            parent = self._enclosing_tool(parent_run_id)
            model_id = kwargs.get("tool_call_id")
            call_id = model_id if isinstance(model_id, str) and model_id else str(run_id)
            if call_id in root.ids:
                call_id = str(run_id)
            root.ids.add(call_id)
            agent = (metadata or {}).get("lc_agent_name") or self._enclosing_node(parent_run_id)
            if parent is not None and parent_run_id in self._agent_of:
                agent = self._agent_of[parent_run_id]
            if parent is None and agent is not None:
                handoff = root.handoffs.get(str(agent))
                if handoff is not None and handoff != call_id:
                    parent = handoff  # a Command(goto=agent) handoff earlier in the run
            record: CallRecord = {
                "id": call_id,
                "name": str(name),
                "args": _plain(dict(args)),
                "agent": str(agent) if agent else None,
                "parent": parent,
                "started": started,
                "order": root.order.get(model_id) if isinstance(model_id, str) else None,
            }
            self._tool_records[run_id] = record
            root.records.append((run_id, record))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a call end; a ``ToolMessage`` with ``status="error"`` is a failure."""
        try:
            self._tool_end(output, run_id)
        finally:
            self._finish(run_id)  # a tool called on its own is a root run: drop it

    def _tool_end(self, output: Any, run_id: UUID) -> None:
        ended = now()
        goto: str | None = None
        if isinstance(output, ToolMessage):
            if output.status == "error":
                self._end(run_id, ended, error=message_text(output))
                return
            value = output.artifact if isinstance(output.artifact, Mapping | list) else None
            output = value if value is not None else message_text(output)
        elif isinstance(output, Command):
            goto = _goto(output)
            output = _command_output(output, goto)
        record = self._end(run_id, ended, output=output)
        if record is None:
            return
        target = goto or handoff_target(record["name"])
        if target is not None:
            with self._lock:
                root = self._root(run_id)
                if root is not None:
                    root.handoffs[target] = record["id"]

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a failed call with the exception's type and message."""
        self._end(run_id, now(), error=f"{type(error).__name__}: {error}")
        self._finish(run_id)  # a tool called on its own is a root run: drop it

    # -- helpers ------------------------------------------------------------------------------

    def _end(
        self, run_id: UUID, ended: str, *, output: Any = None, error: str | None = None
    ) -> CallRecord | None:
        with self._lock:
            record = self._tool_records.pop(run_id, None)
            if record is None:
                return None
            record["ended"] = ended
            if error is not None:
                record["error"] = str(error)[:MAX_OUTPUT_CHARS]
            else:
                record["output"] = _plain(output, limit=MAX_OUTPUT_CHARS)
            return record

    def _link(self, run_id: UUID, parent_run_id: UUID | None) -> _Root | None:
        root_id = run_id if parent_run_id is None else self._root_of.get(parent_run_id)
        if root_id is None:
            return None  # its root started before this handler was installed: not recorded
        self._parent[run_id] = parent_run_id
        self._root_of[run_id] = root_id
        root = self._roots.get(root_id)
        if root is None:
            root = self._roots[root_id] = _Root()
        root.runs.append(run_id)
        return root

    def _root(self, run_id: UUID) -> _Root | None:
        root_id = self._root_of.get(run_id)
        return self._roots.get(root_id) if root_id is not None else None

    def _descends(self, run: UUID | None, ancestor: UUID) -> bool:
        while run is not None:
            if run == ancestor:
                return True
            run = self._parent.get(run)
        return False

    def _enclosing_tool(self, run_id: UUID | None) -> str | None:
        while run_id is not None:
            record = self._tool_records.get(run_id)
            if record is not None:
                return str(record["id"])
            run_id = self._parent.get(run_id)
        return None

    def _enclosing_node(self, run_id: UUID | None) -> str | None:
        while run_id is not None:
            node = self._node_of.get(run_id)
            if node is not None:
                return node
            run_id = self._parent.get(run_id)
        return None

    def _finish(self, run_id: UUID) -> None:
        with self._lock:
            if self._parent.get(run_id, run_id) is not None:
                return  # not a root run (or unknown)
            root = self._roots.pop(run_id, None)
            for run in root.runs if root is not None else (run_id,):
                self._parent.pop(run, None)
                self._root_of.pop(run, None)
                self._started.pop(run, None)
                self._tool_records.pop(run, None)
                self._agent_of.pop(run, None)
                self._node_of.pop(run, None)
        if root is not None:
            records = [record for _, record in root.records]
            self.finished(root.session, root.inputs, records, started=root.started)

    def finished(
        self,
        session: str | None,
        inputs: Any,
        records: list[CallRecord],
        *,
        started: str | None = None,
    ) -> None:
        """Called when a root run ends with the calls nobody collected (a hook for subclasses).

        Args:
            session: The root run's thread id, if any.
            inputs: The root run's input.
            records: Its uncollected calls, in start order.
            started: When the root run started.
        """


def _session_of(metadata: Mapping[str, Any] | None) -> str | None:
    value = (metadata or {}).get("thread_id")
    return str(value) if value not in (None, "") else None


def _goto(command: Command) -> str | None:
    goto = command.goto
    if isinstance(goto, list | tuple):
        goto = goto[0] if goto else None
    target = goto if isinstance(goto, str) else getattr(goto, "node", None)
    return str(target) if target else None


def _command_output(command: Command, goto: str | None) -> Any:
    # A handoff's result is the Command: record where it went and the tool message it added.
    messages = (command.update or {}).get("messages") if isinstance(command.update, dict) else None
    texts = [message_text(m) for m in messages or [] if isinstance(m, ToolMessage)]
    return {"goto": goto, "result": texts[-1] if texts else None}


def _plain(value: Any, *, limit: int | None = None) -> Any:
    """A JSON copy of a framework value (anything else becomes its text), cut at ``limit``."""
    try:
        plain = json.loads(json.dumps(value, default=_text, ensure_ascii=False))
    except (TypeError, ValueError):
        plain = str(value)
    if limit is None:
        return plain
    if isinstance(plain, str):
        return plain if len(plain) <= limit else plain[:limit] + "…"
    text = json.dumps(plain, ensure_ascii=False)
    return plain if len(text) <= limit else text[:limit] + "…"


def _text(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models (tool outputs, args)
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:  # noqa: BLE001 - fall back to text, a dump is a nicety
            pass
    return str(value)


_CAPTURE: RunCapture | None = None
_CAPTURE_LOCK = threading.Lock()


def install() -> RunCapture:
    """Return the process's :class:`RunCapture`, registering it on first use.

    It becomes an inheritable handler of every LangChain run in the process (a configure hook,
    as LangChain's tracers are), so no graph needs a ``callbacks=`` step.

    Returns:
        The handler.
    """
    global _CAPTURE
    with _CAPTURE_LOCK:
        if _CAPTURE is None:
            from langchain_core.tracers.context import register_configure_hook

            capture = RunCapture()
            register_configure_hook(
                ContextVar("episodic_memory_capture", default=capture), inheritable=True
            )
            _CAPTURE = capture
        return _CAPTURE
