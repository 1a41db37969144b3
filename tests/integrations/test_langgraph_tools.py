"""Crew descriptions from LangGraph tools, the fallback they feed, and the recall tool's faults."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_memory import make_memory
from lg_scaffold import (
    EXTRACT,
    TOOLS,
    ScriptedChatModel,
    agent_crew,
    call,
    extract_turn,
    react_crew,
    thread,
    with_memory,
)

from em_plugin.errors import EmbedderError
from em_plugin.suggest.crew import CrewDescription
from integrations.langgraph import (
    EpisodicMemoryNode,
    crew_description,
    recall_workflows_tool,
    reply_text,
)
from integrations.langgraph._tools import tools_of


@pytest.mark.parametrize("build", [agent_crew, react_crew])
def test_tools_of_a_compiled_graph(build) -> None:
    graph = build(ScriptedChatModel(messages=iter([])))
    assert [t.name for t in tools_of(graph)] == [t.name for t in TOOLS]


def test_crew_description_from_a_graph_or_a_list() -> None:
    graph = agent_crew(ScriptedChatModel(messages=iter([])))
    crew = crew_description(graph, name="chem", description="Checks SDS files.", agent="crew")
    assert isinstance(crew, CrewDescription)
    assert crew.tool_names == ("product_extractor", "pfas_classifier", "write_report")
    assert crew.tool("pfas_classifier").description == "Classify chemical names as PFAS or not."
    assert crew_description(TOOLS[:1]).tool_names == ("product_extractor",)


def test_an_empty_memory_falls_back_on_the_crew_description() -> None:
    model = ScriptedChatModel(messages=iter([]))
    crew = agent_crew(model)
    memory = make_memory(crew_description=crew_description(crew, name="chem"))
    graph = with_memory(crew, EpisodicMemoryNode(memory, crew_name="chem"))
    model.load(extract_turn())
    answer = reply_text(
        graph.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("fb"))["messages"]
    )
    head, _, tail = answer.partition("\n\n")
    assert head == "acme.pdf contains PFOA and water."
    assert tail.startswith("Suggested next steps (from the crew's tools):")
    assert "pfas_classifier" in tail and "write_report" in tail
    memory.close()


def test_recall_tool_isolates_memory_failures(monkeypatch, caplog) -> None:
    memory = make_memory()

    def broken(*args, **kwargs):
        raise EmbedderError("embedding service down")

    monkeypatch.setattr(memory, "retrieve", broken)
    model = ScriptedChatModel(messages=iter([]))
    agent = agent_crew(model, tools=[recall_workflows_tool(memory)], checkpointer=InMemorySaver())
    model.load([call("recall_workflows", {"query": "anything"}, "q"), AIMessage("fine")])
    with caplog.at_level(logging.WARNING):
        out = agent.invoke({"messages": [HumanMessage("look it up")]}, thread("rt"))
    tool_text = next(m.text for m in out["messages"] if m.type == "tool")
    assert tool_text == "Episodic memory is unavailable right now (EmbedderError)."
    assert reply_text(out["messages"]) == "fine"
    assert "recall failed" in caplog.text

    from langchain.agents import create_agent

    strict = create_agent(model, [recall_workflows_tool(memory, strict=True)])  # no error handler
    model.load([call("recall_workflows", {"query": "anything"}, "s"), AIMessage("never")])
    with pytest.raises(EmbedderError):
        strict.invoke({"messages": [HumanMessage("look it up")]})
    memory.close()
