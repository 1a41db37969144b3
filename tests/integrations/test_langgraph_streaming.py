"""Streaming shows the suggestions after the crew's answer, as their own chunk or event."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_scaffold import EXTRACT, ScriptedChatModel, agent_crew, extract_turn, thread, with_memory
from test_langgraph_context_clean import seeded_memory

from integrations.langgraph import SUGGESTIONS_EVENT, EpisodicMemoryMiddleware, EpisodicMemoryNode
from integrations.langgraph._memory_messages import memory_kind

ANSWER = "acme.pdf contains PFOA and water."
MODES = ["values", "updates", "messages", "custom", "debug"]


def build(shape: str, model: ScriptedChatModel) -> Any:
    if shape == "middleware":
        middleware = [EpisodicMemoryMiddleware(seeded_memory())]
        return agent_crew(model, middleware=middleware, checkpointer=InMemorySaver())
    return with_memory(agent_crew(model), EpisodicMemoryNode(seeded_memory()))


def suggestion_chunks(mode: str, chunks: list[Any]) -> list[int]:
    """Positions of the chunks that carry the suggestions."""
    found = []
    for index, chunk in enumerate(chunks):
        if mode == "messages":
            hit = memory_kind(chunk[0]) == "suggestions"
        elif mode == "custom":
            hit = isinstance(chunk, dict) and SUGGESTIONS_EVENT in chunk
        elif mode == "values":
            hit = memory_kind(chunk["messages"][-1]) == "suggestions"
        else:
            hit = "Suggested next steps" in str(chunk) and "episodic_memory" in str(chunk)
        if hit:
            found.append(index)
    return found


def answer_chunk(mode: str, chunks: list[Any]) -> int:
    for index, chunk in enumerate(chunks):
        if mode == "messages" and isinstance(chunk[0], AIMessage) and chunk[0].text == ANSWER:
            return index
        if mode in ("values", "updates", "debug") and ANSWER in str(chunk):
            return index
    return -1


@pytest.mark.parametrize("use_async", [False, True], ids=["stream", "astream"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", ["node", "middleware"])
def test_every_stream_mode_shows_the_suggestions_after_the_answer(
    shape: str, mode: str, use_async: bool
) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = build(shape, model)
    model.load(extract_turn())
    inputs = {"messages": [HumanMessage(EXTRACT)]}
    config = thread(f"{shape}-{mode}")

    async def collect() -> list[Any]:
        return [c async for c in graph.astream(inputs, config, stream_mode=mode)]

    chunks = (
        asyncio.run(collect())
        if use_async
        else list(graph.stream(inputs, config, stream_mode=mode))
    )
    found = suggestion_chunks(mode, chunks)
    assert found, f"no suggestions in {mode} chunks"
    if mode != "custom":
        assert answer_chunk(mode, chunks) < found[0]
    final = graph.get_state(config).values["messages"]
    assert memory_kind(final[-1]) == "suggestions"  # the final state still holds them


@pytest.mark.parametrize("shape", ["node", "middleware"])
def test_astream_events_has_a_suggestions_event_after_the_answer(shape: str) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = build(shape, model)
    model.load(extract_turn())

    async def collect() -> list[dict[str, Any]]:
        inputs = {"messages": [HumanMessage(EXTRACT)]}
        return [e async for e in graph.astream_events(inputs, thread(shape), version="v2")]

    events = asyncio.run(collect())
    custom = [
        i
        for i, e in enumerate(events)
        if e["event"] == "on_custom_event" and e["name"] == SUGGESTIONS_EVENT
    ]
    assert len(custom) == 1
    assert events[custom[0]]["data"]["text"].startswith("Suggested next steps")
    answered = next(
        i
        for i, e in enumerate(events)
        if e["event"] == "on_chat_model_end" and e["data"]["output"].text == ANSWER
    )
    assert answered < custom[0]
