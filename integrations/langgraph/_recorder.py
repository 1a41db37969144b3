"""A callback handler that records tool runs at every depth (the fallback capture path).

Graph state shows a crew's tool calls only when the crew shares its ``messages``. A crew that is
run inside a node and returns only its answer ("sealed"), or a tool that runs a sub-agent, hides
them; callbacks still see every tool run, with its run id and its parent run. Pass the recorder
with the run (``graph.invoke(..., {"callbacks": [recorder]})`` or ``graph.with_config``) and
:class:`~integrations.langgraph.EpisodicMemoryNode` finds it in its config.

Each root run belongs to a session (its ``thread_id``, or the root run id without one). A tool run
nested inside another tool run (a sub-agent behind a handoff tool) becomes a sub-call of it.

Agents are read from the run hierarchy, whatever the app keeps in its state: a tool run belongs to
the agent named by ``lc_agent_name``, else to the nearest enclosing graph node that is not an
agent loop's own step (``tools``, ``model``, ...), i.e. the agent's node or subgraph. A
``Command(goto=...)`` handoff (``transfer_to_<agent>``, as langgraph-supervisor and
langgraph-swarm make) is the step under which that agent's later calls in the turn nest.
Calls keep the model's tool-call id when it is new in the session, so the messages in state and
the callbacks name the same call.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage, ToolMessage, convert_to_messages
from langgraph.types import Command

from em_plugin.capture.trajectory import CallEnd, CallError, CallStart, Trajectory, TrajectoryEvent
from em_plugin.errors import ConfigurationError
from integrations.langgraph._messages import message_text

#: Nodes inside an agent's own loop (create_agent, create_react_agent, ToolNode): not agents.
AGENT_LOOP_NODES = frozenset({"tools", "model", "agent", "call_model", "__start__", "__end__"})
_HANDOFF_PREFIX = "transfer_to_"


def handoff_target(tool_name: str) -> str | None:
    """Return the agent a ``transfer_to_<agent>`` handoff tool hands over to, else ``None``."""
    if tool_name.startswith(_HANDOFF_PREFIX) and len(tool_name) > len(_HANDOFF_PREFIX):
        return tool_name[len(_HANDOFF_PREFIX) :]
    return None


def _command_output(command: Command) -> Any:
    # A handoff's result is the Command; record where it went and the tool message it added.
    goto = command.goto
    target = goto if isinstance(goto, str) else getattr(goto, "node", None)
    messages = (command.update or {}).get("messages") if isinstance(command.update, dict) else None
    texts = [message_text(m) for m in messages or [] if isinstance(m, ToolMessage)]
    return {"goto": target, "result": texts[-1] if texts else None}


@dataclass
class _Session:
    trajectory: Trajectory
    tool_call_ids: dict[str, str | None] = field(default_factory=dict)  # call id -> model id


class TrajectoryRecorder(BaseCallbackHandler):
    """Records instructions and nested tool runs per session from LangChain callbacks.

    Args:
        max_sessions: How many sessions to keep; the least recently used are dropped.

    Example:
        >>> recorder = TrajectoryRecorder()
        >>> graph.invoke(inputs, {"callbacks": [recorder], "configurable": {"thread_id": "t1"}})
    """

    run_inline = True  # keep events in execution order, async runs too
    raise_error = False  # a recording problem must never break the host run

    def __init__(self, *, max_sessions: int = 256) -> None:
        super().__init__()
        if not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigurationError(f"max_sessions must be an integer >= 1, got {max_sessions!r}")
        self.max_sessions = max_sessions
        self._lock = threading.RLock()
        # Links of runs in flight, dropped when their root run ends.
        self._parent: dict[UUID, UUID | None] = {}
        self._root_of: dict[UUID, UUID] = {}
        self._tool_runs: set[UUID] = set()
        self._call_of: dict[UUID, str] = {}  # tool run -> its call id in the trajectory
        self._agent_of: dict[UUID, str] = {}  # runs inside a sub-agent that a tool started
        self._node_of: dict[UUID, str] = {}  # chain runs that are an agent's graph node
        self._handoffs: dict[UUID, dict[str, str]] = {}  # root run -> agent -> handoff call id
        self._handoff_runs: dict[UUID, str] = {}  # running handoff tool run -> target agent
        self._root_session: dict[UUID, str] = {}
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    # -- reads -------------------------------------------------------------------------------

    def trajectory(self, session_id: str) -> Trajectory | None:
        """Return the recorded trajectory of a session, if any."""
        with self._lock:
            session = self._sessions.get(session_id)
            return session.trajectory if session is not None else None

    def session_of_run(self, run_id: UUID | None) -> str | None:
        """Return the session of a run that is still in flight (e.g. the calling node's run)."""
        with self._lock:
            root = self._root_of.get(run_id) if run_id is not None else None
            return self._root_session.get(root) if root is not None else None

    def nested_calls(self, session_id: str) -> dict[str, list[list[TrajectoryEvent]]]:
        """Group the events of calls made inside other calls by the outermost call's tool-call id.

        Returns:
            For each model tool-call id, one group per successful top-level run with that id (in
            run order; models may reuse ids across turns), holding the events of the calls nested
            in it. Direct children have no parent (the caller re-roots them); deeper ones keep
            theirs.
        """
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return {}
            events = session.trajectory.events
            tool_call_ids = dict(session.tool_call_ids)
        top_of: dict[str, str] = {}
        groups: dict[str, list[TrajectoryEvent]] = {}  # top-level call id -> nested events
        succeeded: list[str] = []
        for event in events:
            if isinstance(event, CallStart):
                if event.parent_call_id is None:
                    top_of[event.call_id] = event.call_id
                    groups[event.call_id] = []
                    continue
                top = top_of.get(event.parent_call_id)
                if top is None:
                    continue
                top_of[event.call_id] = top
                parent = None if event.parent_call_id == top else event.parent_call_id
                groups[top].append(dataclasses.replace(event, parent_call_id=parent))
            elif isinstance(event, CallEnd | CallError):
                top = top_of.get(event.call_id)
                if top is None:
                    continue
                if top != event.call_id:
                    groups[top].append(event)
                elif isinstance(event, CallEnd):
                    succeeded.append(top)
        grouped: dict[str, list[list[TrajectoryEvent]]] = {}
        for top in succeeded:
            key = tool_call_ids.get(top)
            if key is not None:
                grouped.setdefault(key, []).append(groups[top])
        return grouped

    def agents(self, session_id: str) -> dict[str, str]:
        """Return, per model tool-call id, the agent the run hierarchy attributes the call to."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return {}
            events = session.trajectory.events
            model_ids = dict(session.tool_call_ids)
        return {
            model_ids[e.call_id]: e.agent  # type: ignore[misc]
            for e in events
            if isinstance(e, CallStart) and e.agent and model_ids.get(e.call_id)
        }

    def forget(self, session_id: str) -> None:
        """Drop a session's recording."""
        with self._lock:
            self._sessions.pop(session_id, None)

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
        """Link the run to its parent; a root run opens a turn with the user's instruction."""
        with self._lock:
            self._link(run_id, parent_run_id)
            node = (metadata or {}).get("langgraph_node")
            name = kwargs.get("name")
            if isinstance(node, str) and node == name and node not in AGENT_LOOP_NODES:
                self._node_of[run_id] = node
            if parent_run_id is not None:
                # A graph started inside a tool is a sub-agent: its name names the agent.
                if parent_run_id in self._tool_runs and kwargs.get("name"):
                    self._agent_of[run_id] = str(kwargs["name"])
                elif parent_run_id in self._agent_of:
                    self._agent_of[run_id] = self._agent_of[parent_run_id]
                return
            session_id = str((metadata or {}).get("thread_id") or run_id)
            self._root_session[run_id] = session_id
            session = self._session(session_id)
        text = _last_human_text(inputs)
        if text and text.strip():
            session.trajectory.instruction(text)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the links of a finished root run (bounded memory)."""
        self._finish_run(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the links of a failed root run."""
        self._finish_run(run_id)

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
        """Record a call start, nested under the nearest enclosing tool run or handoff."""
        name = (serialized or {}).get("name") or kwargs.get("name") or "unknown_tool"
        args = inputs if isinstance(inputs, Mapping) else {"input": input_str}
        with self._lock:
            self._link(run_id, parent_run_id)
            session = self._session_of(run_id)
            if session is None:
                return
            parent_call = self._enclosing_tool(parent_run_id)
            self._tool_runs.add(run_id)
            model_id = kwargs.get("tool_call_id")
            call_id = str(run_id)
            if isinstance(model_id, str) and model_id and not session.trajectory.has_call(model_id):
                call_id = model_id
            self._call_of[run_id] = call_id
            session.tool_call_ids[call_id] = model_id
            agent = (metadata or {}).get("lc_agent_name") or self._enclosing_node(parent_run_id)
            if parent_call is not None and parent_run_id in self._agent_of:
                agent = self._agent_of[parent_run_id]
            root = self._root_of.get(run_id)
            if parent_call is None and root is not None and agent is not None:
                # A Command(goto=agent) handoff earlier in the turn: the agent's calls nest in it.
                handoff = self._handoffs.get(root, {}).get(agent)
                if handoff is not None and handoff != call_id:
                    parent_call = handoff
            target = handoff_target(name)
            if target is not None:
                self._handoff_runs[run_id] = target
        session.trajectory.call_start(call_id, name, args, agent=agent, parent_call_id=parent_call)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a call end; a ``ToolMessage`` with ``status="error"`` is a failure."""
        running = self._running(run_id)
        if running is None:
            return
        trajectory, call_id = running
        if isinstance(output, ToolMessage):
            if output.status == "error":
                trajectory.call_error(call_id, message_text(output))
                return
            output = output.artifact if output.artifact is not None else message_text(output)
        elif isinstance(output, Command):
            output = _command_output(output)
        trajectory.call_end(call_id, output)
        with self._lock:
            target = self._handoff_runs.pop(run_id, None)
            root = self._root_of.get(run_id)
            if target is not None and root is not None:
                self._handoffs.setdefault(root, {})[target] = call_id

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a failed call with the exception's type and message."""
        running = self._running(run_id)
        with self._lock:
            self._handoff_runs.pop(run_id, None)
        if running is not None:
            trajectory, call_id = running
            trajectory.call_error(call_id, f"{type(error).__name__}: {error}")

    # -- helpers ------------------------------------------------------------------------------

    def _link(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        self._parent[run_id] = parent_run_id
        if parent_run_id is None:
            self._root_of[run_id] = run_id
        elif parent_run_id in self._root_of:
            self._root_of[run_id] = self._root_of[parent_run_id]

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            session = _Session(Trajectory(session_id, framework="langgraph"))
            self._sessions[session_id] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session_id)
        return session

    def _session_of(self, run_id: UUID) -> _Session | None:
        root = self._root_of.get(run_id)
        session_id = self._root_session.get(root) if root is not None else None
        return self._sessions.get(session_id) if session_id is not None else None

    def _running(self, run_id: UUID) -> tuple[Trajectory, str] | None:
        with self._lock:
            session = self._session_of(run_id)
            call_id = self._call_of.get(run_id)
        if session is None or call_id is None or not session.trajectory.is_running(call_id):
            return None
        return session.trajectory, call_id

    def _enclosing_tool(self, run_id: UUID | None) -> str | None:
        while run_id is not None:
            if run_id in self._tool_runs:
                return self._call_of.get(run_id, str(run_id))
            run_id = self._parent.get(run_id)
        return None

    def _enclosing_node(self, run_id: UUID | None) -> str | None:
        while run_id is not None:
            node = self._node_of.get(run_id)
            if node is not None:
                return node
            run_id = self._parent.get(run_id)
        return None

    def _finish_run(self, run_id: UUID) -> None:
        with self._lock:
            if self._parent.get(run_id, run_id) is not None:
                return  # not a root run (or unknown)
            self._root_session.pop(run_id, None)
            for run in [r for r, root in self._root_of.items() if root == run_id]:
                self._root_of.pop(run, None)
                self._parent.pop(run, None)
                self._tool_runs.discard(run)
                self._agent_of.pop(run, None)
                self._node_of.pop(run, None)
                self._call_of.pop(run, None)
                self._handoff_runs.pop(run, None)
            self._handoffs.pop(run_id, None)


def _last_human_text(inputs: Any) -> str | None:
    if not isinstance(inputs, Mapping):
        return None
    raw = inputs.get("messages")
    if not raw:
        return None
    try:
        messages = convert_to_messages(raw)
    except Exception:  # noqa: BLE001 - not a message list: no instruction to record
        return None
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return None
