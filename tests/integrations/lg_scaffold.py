"""Scripted chat models, tools and crews shared by the LangGraph tests and the benchmark.

The chat model is the shipped one (``integrations.langgraph.testing``: a LangChain
``BaseChatModel`` that accepts ``bind_tools``); scripts decide every tool call. Tools fail on
demand, like a flaky service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flaky_tools
from flaky_tools import FLAKY as FLAKY  # re-exported: the tests fail tools through it
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ToolErrorMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from integrations.langgraph import EpisodicMemoryNode
from integrations.langgraph.testing import ScriptedChatModel as ScriptedChatModel  # re-exported
from integrations.langgraph.testing import call as call  # re-exported

EXTRACT = "Extract the ingredients from the SDS file acme.pdf"
CLASSIFY = "Classify the extracted ingredients as PFAS or not"
EXTRACT_NEW = "Extract the ingredients from the SDS file beta.pdf"


product_extractor = tool(flaky_tools.product_extractor)
pfas_classifier = tool(flaky_tools.pfas_classifier)
write_report = tool(flaky_tools.write_report)


TOOLS = [product_extractor, pfas_classifier, write_report]


def on_tool_error(exc: Exception, request: Any) -> str:
    return f"{type(exc).__name__}: {exc}"


def extract_turn(file: str = "acme.pdf", prefix: str = "e") -> list[AIMessage]:
    return [
        call("product_extractor", {"file": file}, f"{prefix}1"),
        AIMessage(f"{file} contains PFOA and water."),
    ]


def classify_turn(prefix: str = "k") -> list[AIMessage]:
    """pfas_classifier fails once (flaky service), the model retries, then answers."""
    return [
        call("pfas_classifier", {"names": ["PFOA", "water"]}, f"{prefix}1"),
        call("pfas_classifier", {"names": ["PFOA", "water"]}, f"{prefix}2"),
        AIMessage("PFOA is a PFAS; water is not."),
    ]


def load_handoff_turn(coordinator: ScriptedChatModel, chemist: ScriptedChatModel) -> None:
    """Script a turn that hands classifying to a chemist sub-agent, whose first call fails.

    The coordinator calls ``product_extractor`` (``c1``) then ``ask_chemist`` (``c2``); the
    chemist's ``pfas_classifier`` fails once (``k1``), is retried (``k2``), then it calls
    ``write_report`` (``k3``) and answers "The chemist's answer.".
    """
    coordinator.load(
        [
            call("product_extractor", {"file": "acme.pdf"}, "c1"),
            call("ask_chemist", {"task": "classify"}, "c2"),
            AIMessage("PFOA is a PFAS."),
        ]
    )
    FLAKY.fail_once("pfas_classifier")
    chemist.load(
        [
            call("pfas_classifier", {"names": ["PFOA"]}, "k1"),
            call("pfas_classifier", {"names": ["PFOA"]}, "k2"),
            call("write_report", {"summary": "PFAS"}, "k3"),
            AIMessage("The chemist's answer."),
        ]
    )


def agent_crew(
    model: ScriptedChatModel,
    *,
    tools: Sequence[Any] = TOOLS,
    middleware: Sequence[AgentMiddleware] = (),
    name: str = "crew",
    **kwargs: Any,
) -> Any:
    """A ``create_agent`` crew; tool exceptions become error ToolMessages."""
    return create_agent(
        model,
        list(tools),
        system_prompt="You are a chemistry crew.",
        middleware=[*middleware, ToolErrorMiddleware(on_error=on_tool_error)],
        name=name,
        **kwargs,
    )


def react_crew(
    model: ScriptedChatModel, *, tools: Sequence[Any] = TOOLS, name: str = "react"
) -> Any:
    """A hand-built ReAct subgraph: model node, ``ToolNode(handle_tool_errors=True)``, loop."""
    bound = model.bind_tools(list(tools))

    def agent(state: MessagesState) -> dict:
        reply = bound.invoke(state["messages"])
        reply.name = name
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(list(tools), handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(name=name)


def with_memory(crew: Any, node: EpisodicMemoryNode, *, checkpointer: Any = True) -> Any:
    """``START -(commands?)-> crew -> episodic_memory -> END``, as the README shows."""
    builder = StateGraph(MessagesState)
    builder.add_node("crew", crew)
    builder.add_node("episodic_memory", node)
    builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
    builder.add_edge("crew", "episodic_memory")
    builder.add_edge("episodic_memory", END)
    return builder.compile(checkpointer=InMemorySaver() if checkpointer is True else checkpointer)


def without_memory(crew: Any) -> Any:
    """The same graph without the memory node (the benchmark's baseline)."""
    builder = StateGraph(MessagesState)
    builder.add_node("crew", crew)
    builder.add_edge(START, "crew")
    builder.add_edge("crew", END)
    return builder.compile(checkpointer=InMemorySaver())


def thread(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}
