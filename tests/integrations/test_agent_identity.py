"""Every call has an agent, even when the app names none (LangGraph node and middleware)."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_memory import make_memory
from lg_scaffold import (
    EXTRACT,
    ScriptedChatModel,
    extract_turn,
    on_tool_error,
    product_extractor,
    thread,
    with_memory,
)

from integrations.langgraph import EpisodicMemoryMiddleware, EpisodicMemoryNode


def unnamed_agent(model: ScriptedChatModel, **kwargs: object) -> object:
    middleware = [*kwargs.pop("middleware", []), ToolErrorMiddleware(on_error=on_tool_error)]
    return create_agent(model, [product_extractor], middleware=middleware, **kwargs)


def test_middleware_names_an_unnamed_agent_by_its_place() -> None:
    model = ScriptedChatModel(messages=iter([]))
    middleware = EpisodicMemoryMiddleware(make_memory())
    agent = unnamed_agent(model, middleware=[middleware], checkpointer=InMemorySaver())
    model.load(extract_turn())
    agent.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("top"))
    (call,) = middleware.sessions.find("top").trajectory.compile().leaves()
    assert (call.name, call.agent) == ("product_extractor", "agent")


def test_node_names_an_unnamed_crew_by_its_graph_node() -> None:
    model = ScriptedChatModel(messages=iter([]))
    memory = make_memory()
    node = EpisodicMemoryNode(memory)
    graph = with_memory(unnamed_agent(model), node)
    model.load(extract_turn())
    graph.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("n"))
    graph.invoke({"messages": [HumanMessage("/save")]}, thread("n"))
    (call,) = memory.load("session/n").leaves()
    assert (call.name, call.agent) == ("product_extractor", "crew")
