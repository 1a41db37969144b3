"""Suggestions reach the user, never the crew's model: node and middleware, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_memory import make_memory
from lg_scaffold import (
    CLASSIFY,
    EXTRACT,
    ScriptedChatModel,
    agent_crew,
    classify_turn,
    extract_turn,
    react_crew,
    thread,
    with_memory,
)

from integrations.langgraph import EpisodicMemoryMiddleware, EpisodicMemoryNode, reply_text
from integrations.langgraph._memory_messages import memory_kind
from provenance.model import CallStep, InstructionStep, Workflow

MEMORY_WORDS = ("Suggested next steps", "/save", "Saved workflow")


def seeded_memory() -> Any:
    memory = make_memory()
    steps = (CallStep(name="product_extractor", args={}), CallStep(name="pfas_classifier", args={}))
    memory.save(Workflow(id="seed", steps=(InstructionStep(text=EXTRACT, steps=steps),)))
    return memory


def leaked(model: ScriptedChatModel) -> list[str]:
    texts = [m.text for request in model.seen for m in request if isinstance(m, BaseMessage)]
    return [t for t in texts if any(word in t for word in MEMORY_WORDS)]


def build(shape: str, model: ScriptedChatModel) -> Any:
    memory = seeded_memory()
    if shape == "middleware":
        return agent_crew(
            model, middleware=[EpisodicMemoryMiddleware(memory)], checkpointer=InMemorySaver()
        )
    crew = agent_crew(model) if shape == "node+create_agent" else react_crew(model)
    return with_memory(crew, EpisodicMemoryNode(memory))


async def invoke(graph: Any, text: str, config: dict[str, Any], use_async: bool) -> Any:
    inputs = {"messages": [HumanMessage(text)]}
    return await graph.ainvoke(inputs, config) if use_async else graph.invoke(inputs, config)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("shape", ["node+create_agent", "node+react", "middleware"])
def test_suggestions_are_shown_but_never_reach_the_model(shape: str, use_async: bool) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = build(shape, model)
    config = thread("clean")

    async def session() -> None:
        model.load(extract_turn())
        out = await invoke(graph, EXTRACT, config, use_async)
        shown = out["messages"][-1]
        assert memory_kind(shown) == "suggestions"
        assert "pfas_classifier" in shown.text
        crew_answer = out["messages"][-2]
        assert crew_answer.text == "acme.pdf contains PFOA and water."  # unchanged
        assert reply_text(out["messages"]) == crew_answer.text + "\n\n" + shown.text
        saved = await invoke(graph, "/save", config, use_async)
        assert reply_text(saved["messages"]).startswith("Saved workflow session/clean")
        model.load(classify_turn())
        await invoke(graph, CLASSIFY, config, use_async)

    asyncio.run(session())
    assert len(model.seen) == 5  # 2 model calls for the extract turn, 3 for the classify turn
    assert leaked(model) == []
    assert not any(m.text == "/save" for request in model.seen for m in request)
