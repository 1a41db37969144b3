"""``/save`` without a checkpointer names what is missing: a checkpointer and a thread_id."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from em_plugin import EpisodicMemory
from em_plugin.embedding import FakeEmbedder
from integrations.langgraph import EpisodicMemoryNode
from integrations.langgraph._node import LONE_SAVE


def _graph(checkpointer: InMemorySaver | None):
    memory = EpisodicMemory(store="memory:", embedder=FakeEmbedder())
    node = EpisodicMemoryNode(memory)

    def crew(state: MessagesState) -> dict:
        return {"messages": [("ai", "Extracted 3 ingredients.")]}

    builder = StateGraph(MessagesState)
    builder.add_node("crew", crew)
    builder.add_node("episodic_memory", node)
    builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
    builder.add_edge("crew", "episodic_memory")
    builder.add_edge("episodic_memory", END)
    return builder.compile(checkpointer=checkpointer), memory


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_save_without_a_checkpointer_names_what_is_missing(asynchronous: bool) -> None:
    graph, memory = _graph(None)
    graph.invoke({"messages": [("user", "Extract all ingredients from acme.txt")]})
    request = {"messages": [("user", "/save")]}
    state = await graph.ainvoke(request) if asynchronous else graph.invoke(request)
    reply = state["messages"][-1].content
    assert reply == LONE_SAVE
    assert "checkpointer" in reply and "thread_id" in reply
    assert len(memory.ids()) == 0


def test_save_with_a_checkpointer_saves() -> None:
    graph, memory = _graph(InMemorySaver())
    session = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [("user", "Extract all ingredients from acme.txt")]}, session)
    reply = graph.invoke({"messages": [("user", "/save")]}, session)["messages"][-1].content
    assert reply.startswith("Saved workflow session/t1")
    assert memory.ids() == ["session/t1"]
