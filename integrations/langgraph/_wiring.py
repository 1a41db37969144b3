"""``with_episodic_memory``: a crew with the memory, wired for the common case in one call."""

from __future__ import annotations

from typing import Any, Unpack

from langgraph.graph import END, START, MessagesState, StateGraph

from em_plugin.errors import ConfigurationError
from em_plugin.session import MemoryPort, PolicyOptions, SessionPolicy
from em_plugin.session.policy import resolve_policy
from integrations.langgraph._node import DEFAULT_NAME, EpisodicMemoryNode

_KEYWORDS = ("crew_node", "crew_name", "policy", "state_schema")


def with_episodic_memory(
    crew: Any,
    memory: MemoryPort | EpisodicMemoryNode,
    *,
    policy: SessionPolicy | None = None,
    crew_name: str | None = None,
    crew_node: str = "crew",
    state_schema: type[Any] = MessagesState,
    **deprecated: Unpack[PolicyOptions],
) -> StateGraph:
    """Return ``START -(commands?)-> crew -> episodic_memory -> END``, ready to compile.

    Capture needs nothing else: the node collects every call of each turn, at every depth, from
    the run hierarchy and keeps the session in the graph's checkpointed state. Compile the
    result with a checkpointer (``.compile(checkpointer=InMemorySaver())``), or hand it to the
    LangGraph API server as it is (the server compiles it with its own).

    Args:
        crew: The crew: a compiled graph (``create_agent(...)``, a supervisor, a swarm, a
            subgraph) or a node function.
        memory: The :class:`~em_plugin.memory.EpisodicMemory`, or an
            :class:`EpisodicMemoryNode` already configured.
        policy: The node's session settings (:class:`~em_plugin.SessionPolicy`), when
            ``memory`` is a memory.
        crew_name: The crew description's name, recorded on compiled workflows.
        crew_node: The crew's node name.
        state_schema: The graph's state (``MessagesState`` or a subclass of it).
        **deprecated: The loose ``SessionPolicy`` keywords of the previous release
            (``limit=``, ``autosave=``, ...); each warns.

    Returns:
        The graph builder; its memory node is named after the node (``episodic_memory``).

    Raises:
        ConfigurationError: When settings are given with a ready node, ``policy=`` together
            with a loose keyword, or on invalid settings.
    """
    if isinstance(memory, EpisodicMemoryNode):
        if deprecated or policy is not None or crew_name is not None:
            raise ConfigurationError(
                "with_episodic_memory: pass the settings to EpisodicMemoryNode(...), or pass "
                "the memory and the settings here, not both"
            )
        node = memory
    else:
        resolved = resolve_policy(
            "with_episodic_memory", policy, deprecated, valid=_KEYWORDS, stacklevel=3
        )
        node = EpisodicMemoryNode(memory, policy=resolved, crew_name=crew_name)
    memory_node = node.name or DEFAULT_NAME
    builder = StateGraph(state_schema)
    builder.add_node(crew_node, crew)
    builder.add_node(memory_node, node, input_schema=node.state_schema)
    builder.add_conditional_edges(START, node.router(crew_node), [crew_node, memory_node])
    builder.add_edge(crew_node, memory_node)
    builder.add_edge(memory_node, END)
    return builder
