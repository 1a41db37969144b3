"""The Chemist crew of the paper's Figure 2, built on LangGraph and on BeeAI, with episodic memory.

Both crews have the same shape: a coordinator (the "Chemist Agent") whose tools hand off to one
sub-agent per domain tool, each sub-agent with its single tool (:mod:`integrations.demo.pfas`). The
memory sits in front, as in the paper's Figure 1a:

- LangGraph: a graph ``START -> crew -> episodic_memory -> END`` whose ``crew`` node is the
  coordinator (``create_agent``); each handoff tool runs its sub-agent (another ``create_agent``
  graph), whose nested tool runs the memory captures from the run hierarchy
  (:func:`~integrations.langgraph.with_episodic_memory` wires it); ``/save`` goes straight to
  the :class:`~integrations.langgraph.EpisodicMemoryNode`. A
  checkpointer keeps each ``thread_id`` as one chat session.
- BeeAI: a ``RequirementAgent`` coordinator with a ``HandoffTool`` per ``RequirementAgent``
  sub-agent, behind the :class:`~integrations.beeai.EpisodicMemoryAgent`.

The chat model is the offline router model unless one is given (see :mod:`._llm_env`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from em_plugin.session import SessionPolicy
from em_plugin.suggest.crew import AgentDescription
from integrations.demo.pfas import COORDINATOR, CREW_DESCRIPTION, SUB_AGENTS, TITLES, TOOLS

__all__ = [
    "BeeAICrew",
    "LangGraphCrew",
    "beeai_tools",
    "build_beeai_crew",
    "build_langgraph_crew",
    "demo_turn_budget",
    "langchain_tools",
]


def langchain_tools() -> list[Any]:
    """The four PFAS tools as LangChain tools (errors reported to the agent, not raised)."""
    return [_langchain_tool(name) for name in TOOLS]


def beeai_tools() -> list[Any]:
    """The four PFAS tools as BeeAI tools returning JSON."""
    return [_beeai_tool(name) for name in TOOLS]


def demo_turn_budget() -> float | None:
    """The demo's turn budget: ``$EM_PLUGIN_TURN_BUDGET`` when set, else none.

    The demo replays scripted sessions to show what memory suggests; a loaded machine must not
    change what it prints (a turn cut short by the budget shows no suggestions).
    """
    import os

    from em_plugin.config import TURN_BUDGET_ENV, turn_budget

    return turn_budget() if os.environ.get(TURN_BUDGET_ENV, "").strip() else None


def _prompt(agent: AgentDescription) -> str:
    return f"You are the {TITLES.get(agent.name, agent.name)}. {agent.role}. {agent.description}"


def _description(tool: str) -> str:
    return inspect.getdoc(TOOLS[tool]) or tool


# ---------------------------------------------------------------------------------- LangGraph


@dataclass
class LangGraphCrew:
    """The compiled LangGraph crew and what it needs per call."""

    graph: Any
    """The compiled graph (``START -> crew -> episodic_memory -> END``, checkpointed)."""
    node: Any
    """The :class:`~integrations.langgraph.EpisodicMemoryNode`."""

    def config(self, session_id: str) -> dict[str, Any]:
        """The run config of one chat session (its thread)."""
        return {"configurable": {"thread_id": session_id}}

    def ask(self, text: str, session_id: str) -> str:
        """Send one user message in a session; return the answer (crew result + suggestions).

        Args:
            text: An instruction or a command such as ``/save``.
            session_id: The chat session (the LangGraph ``thread_id``).

        Returns:
            The last message's text.
        """
        from langchain_core.messages import HumanMessage

        from integrations.langgraph import reply_text

        state = self.graph.invoke({"messages": [HumanMessage(text)]}, self.config(session_id))
        return reply_text(state["messages"])  # the crew's answer, then the memory's suggestions


def build_langgraph_crew(
    memory: Any,
    *,
    model: Any = None,
    router: Any = None,
    checkpointer: Any = None,
    limit: int = 3,
) -> LangGraphCrew:
    """Build the Chemist crew on LangGraph with the episodic memory node.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        model: A LangChain chat model for every agent (default: the offline router model).
        router: The :class:`~integrations.demo.router.OfflineRouter` of the default model.
        checkpointer: A LangGraph checkpointer (default: an in-memory one).
        limit: How many suggestions to append.

    Returns:
        The crew.

    Raises:
        ConfigurationError: Neither ``model`` nor ``router`` is given.
    """
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from integrations.demo._llm_env import LLMSpec, langchain_chat_model
    from integrations.langgraph import EpisodicMemoryNode, with_episodic_memory

    model = model if model is not None else langchain_chat_model(LLMSpec(), router)
    handoffs = []
    for agent in SUB_AGENTS:
        tools = [_langchain_tool(tool.name) for tool in agent.tools]
        # checkpointer=False: a sub-agent starts fresh at every handoff, with only its task.
        sub_agent = create_agent(
            model, tools, system_prompt=_prompt(agent), name=agent.name, checkpointer=False
        )
        handoffs.append(_langchain_handoff(agent, sub_agent))
    coordinator = create_agent(
        model, handoffs, system_prompt=_prompt(COORDINATOR), name=COORDINATOR.name
    )
    policy = SessionPolicy(limit=limit, turn_budget=demo_turn_budget())
    node = EpisodicMemoryNode(memory, policy=policy, crew_name=CREW_DESCRIPTION.name)
    graph = with_episodic_memory(coordinator, node).compile(
        checkpointer=checkpointer or InMemorySaver(), name=CREW_DESCRIPTION.name
    )
    return LangGraphCrew(graph=graph, node=node)


def _langchain_tool(name: str) -> Any:
    from langchain_core.tools import StructuredTool, ToolException

    function = TOOLS[name]

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (ValueError, KeyError, OSError) as exc:
            # A ToolException becomes an error ToolMessage the agent reads, as with real LLMs,
            # instead of aborting the crew (create_agent re-raises other exceptions).
            raise ToolException(str(exc)) from exc

    return StructuredTool.from_function(
        run, name=name, description=_description(name), handle_tool_error=True
    )


def _langchain_handoff(agent: AgentDescription, sub_agent: Any) -> Any:
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field

    from integrations.langgraph._messages import message_text

    class Handoff(BaseModel):
        task: str = Field(description="The sub-task for this agent, with the data it needs.")

    def delegate(task: str, config: RunnableConfig) -> str:
        # The config carries the run's callbacks, so the sub-agent's tool runs nest under this
        # handoff call in the run hierarchy the memory captures.
        state = sub_agent.invoke({"messages": [HumanMessage(task)]}, config)
        return message_text(state["messages"][-1])

    # Real types, not the postponed strings: LangChain reads them (get_type_hints) to inject the
    # config, and RunnableConfig is imported here, not at module level.
    delegate.__annotations__ = {"task": str, "config": RunnableConfig, "return": str}

    return StructuredTool.from_function(
        delegate, name=agent.name, description=agent.description, args_schema=Handoff
    )


# -------------------------------------------------------------------------------------- BeeAI


@dataclass
class BeeAICrew:
    """The BeeAI crew behind its episodic-memory agent."""

    agent: Any
    """The :class:`~integrations.beeai.EpisodicMemoryAgent` the user talks to."""
    coordinator: Any
    """The coordinating ``RequirementAgent`` (the Chemist Agent)."""

    async def ask(self, text: str, session_id: str) -> Any:
        """Send one user message in a session.

        Args:
            text: An instruction or a command such as ``/save``.
            session_id: The chat session.

        Returns:
            The EM agent's output: ``last_message.text`` is the answer (crew result +
            suggestions), ``suggestions`` the :class:`~em_plugin.suggest.types.Suggestion` objects.
        """
        return await self.agent.run(text).context({"session_id": session_id})


def build_beeai_crew(
    memory: Any,
    *,
    model: Any = None,
    router: Any = None,
    limit: int = 3,
    journal: bool = True,
) -> BeeAICrew:
    """Build the Chemist crew on BeeAI behind the episodic-memory agent.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        model: A BeeAI ``ChatModel`` for every agent (default: the offline router model).
        router: The :class:`~integrations.demo.router.OfflineRouter` of the default model.
        limit: How many suggestions to append.
        journal: Keep each session's turns in the memory's store, so a later process with the
            same session id continues the conversation (False: the session lives in this
            process only, as a LangGraph graph on an in-memory checkpointer).

    Returns:
        The crew; one crew is one conversation of the coordinator.

    Raises:
        ConfigurationError: Neither ``model`` nor ``router`` is given.
    """
    from beeai_framework.agents.requirement import RequirementAgent
    from beeai_framework.tools.handoff import HandoffTool

    from integrations.beeai import EpisodicMemoryAgent
    from integrations.demo._llm_env import LLMSpec, beeai_chat_model

    def llm() -> Any:
        return model if model is not None else beeai_chat_model(LLMSpec(), router)

    sub_agents = [
        RequirementAgent(
            llm=llm(),
            tools=[_beeai_tool(tool.name) for tool in agent.tools],
            name=agent.name,
            description=agent.description,
            role=agent.role,
            instructions=agent.description,
        )
        for agent in SUB_AGENTS
    ]
    coordinator = RequirementAgent(
        llm=llm(),
        tools=[HandoffTool(sub_agent) for sub_agent in sub_agents],
        name=COORDINATOR.name,
        description=COORDINATOR.description,
        role=COORDINATOR.role,
        instructions=COORDINATOR.description,
    )
    agent = EpisodicMemoryAgent(
        coordinator,
        memory,
        policy=SessionPolicy(limit=limit, turn_budget=demo_turn_budget()),
        crew_name=CREW_DESCRIPTION.name,
        journal=journal,
    )
    return BeeAICrew(agent=agent, coordinator=coordinator)


def _beeai_tool(name: str) -> Any:
    from beeai_framework.tools import JSONToolOutput, tool
    from beeai_framework.tools.tool import get_input_schema

    function: Callable[..., Any] = TOOLS[name]

    def run(**kwargs: Any) -> JSONToolOutput[Any]:
        # Omitted optional arguments arrive as None; leave them to the function's defaults.
        return JSONToolOutput(function(**{k: v for k, v in kwargs.items() if v is not None}))

    return tool(
        run,
        name=name,
        description=_description(name),
        input_schema=get_input_schema(function, name=name),
    )
