"""A hanging embedder costs a turn at most its time budget: the crew's answer goes out
unchanged with a warning (LangGraph node, LangGraph middleware, BeeAI middleware)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from beeai_support import EXTRACT as BEE_EXTRACT
from beeai_support import build_crew
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_scaffold import EXTRACT, ScriptedChatModel, agent_crew, extract_turn, thread, with_memory

from em_plugin import SessionPolicy
from em_plugin.embedding import CallableEmbedder, FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.beeai import EpisodicMemoryMiddleware as BeeMiddleware
from integrations.langgraph import EpisodicMemoryMiddleware, EpisodicMemoryNode, reply_text
from provenance.model import CallStep, InstructionStep, Workflow

BUDGET = 0.3
POLICY = SessionPolicy(turn_budget=BUDGET)
ANSWER = "acme.pdf contains PFOA and water."


class Hang:
    """An embedder that hangs (until released) once switched on."""

    def __init__(self) -> None:
        self.on = False
        self.release = threading.Event()
        self.fake = FakeEmbedder(64)

    def embed(self, texts: list[str]) -> Any:
        if self.on:
            self.release.wait(30)
        return self.fake.embed(texts)


@pytest.fixture
def hang() -> Iterator[Hang]:
    hang = Hang()
    yield hang
    hang.release.set()  # the abandoned work finishes in the background


def hanging_memory(hang: Hang) -> EpisodicMemory:
    memory = EpisodicMemory(store="memory:", embedder=CallableEmbedder(hang.embed, "hang"))
    steps = (CallStep(name="product_extractor", args={}), CallStep(name="pfas_classifier", args={}))
    seed = "Extract the ingredients from last year's SDS file"  # the turn's text is new
    memory.save(Workflow(id="seed", steps=(InstructionStep(text=seed, steps=steps),)))
    hang.on = True
    return memory


def budget_warning(caplog: pytest.LogCaptureFixture) -> bool:
    return any("exceeded the turn budget of 0.3 s" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("shape", ["node", "middleware"])
def test_langgraph_turn_keeps_to_the_budget(shape: str, hang: Hang, caplog) -> None:
    memory = hanging_memory(hang)
    model = ScriptedChatModel(messages=iter([]))
    if shape == "node":
        graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory, policy=POLICY))
    else:
        middleware = [EpisodicMemoryMiddleware(memory, policy=POLICY)]
        graph = agent_crew(model, middleware=middleware, checkpointer=InMemorySaver())
    model.load(extract_turn())
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        out = graph.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("budget"))
    elapsed = time.monotonic() - started
    assert reply_text(out["messages"]) == ANSWER  # unchanged, no suggestions
    assert elapsed < 3.0, elapsed
    assert budget_warning(caplog)


async def test_beeai_turn_keeps_to_the_budget(hang: Hang, caplog) -> None:
    memory = hanging_memory(hang)
    mw = BeeMiddleware(memory, policy=POLICY)
    crew = build_crew(middlewares=[mw])
    answer = crew.turn_extract()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        response = await crew.coordinator.run(BEE_EXTRACT)
    elapsed = time.monotonic() - started
    hang.release.set()
    assert response.last_message.text == answer
    assert elapsed < 3.0, elapsed
    assert budget_warning(caplog)
