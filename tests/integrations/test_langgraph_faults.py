"""Fault isolation: a failing store, embedder or LLM never breaks the host graph or agent."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_scaffold import (
    CLASSIFY,
    EXTRACT,
    EXTRACT_NEW,
    FLAKY,
    ScriptedChatModel,
    agent_crew,
    classify_turn,
    extract_turn,
    thread,
    with_memory,
)

from em_plugin import SessionPolicy
from em_plugin.embedding import CallableEmbedder, FakeEmbedder
from em_plugin.errors import EmbedderError, SuggestionError
from em_plugin.memory import EpisodicMemory
from integrations.langgraph import EpisodicMemoryMiddleware, EpisodicMemoryNode, reply_text
from provenance.errors import StoreError

CREW_ANSWER = "beta.pdf contains PFOA and water."


class BrokenChatModel(GenericFakeChatModel):
    """A chat model whose provider is down."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise ConnectionError("LLM provider unreachable")


class Faults:
    """Builds a memory for one fault kind and switches the fault on after seeding."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.broken = False
        fake = FakeEmbedder(64)

        def embed(texts: list[str]) -> Any:
            if self.broken:
                raise RuntimeError("embedding service down")
            return fake.embed(texts)

        if kind == "embedder":
            self.memory = EpisodicMemory(store="memory:", embedder=CallableEmbedder(embed, "svc"))
        elif kind == "llm":
            # The memory's own fallback is off (strict) so that the failure reaches the plugin.
            self.memory = EpisodicMemory(
                store="memory:",
                embedder=fake,
                llm=BrokenChatModel(messages=iter([])),
                raise_suggester_errors=True,
            )
        else:
            self.memory = EpisodicMemory(store="memory:", embedder=fake)
        self.error = {"store": StoreError, "embedder": EmbedderError, "llm": SuggestionError}[kind]

    def seed(self) -> None:
        """Save one session directly (the LLM suggester is not involved in saving)."""
        from provenance.model import CallStep, InstructionStep, Workflow

        self.memory.save(
            Workflow(
                id="session/seed",
                steps=(
                    InstructionStep(EXTRACT, steps=(CallStep("product_extractor", {"file": "a"}),)),
                    InstructionStep(CLASSIFY, steps=(CallStep("pfas_classifier", {"names": []}),)),
                ),
            )
        )

    def break_it(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.broken = True
        if self.kind != "store":
            return
        store = self.memory.store

        def boom(*args: Any, **kwargs: Any) -> Any:
            raise StoreError("disk full")

        for name in ("save", "save_many", "load", "iter_workflows", "delete"):
            monkeypatch.setattr(store, name, boom)
        for name in ("replace_graphs", "read_graphs", "query", "select"):
            monkeypatch.setattr(store.backend, name, boom)

    def script(self, model: ScriptedChatModel) -> None:
        if self.kind == "embedder":
            # A turn answered without tools is an instruction leaf: retrieval must embed it.
            model.load([AIMessage(CREW_ANSWER)])
        else:
            model.load(extract_turn("beta.pdf"))


FAULTS = ["store", "embedder", "llm"]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("kind", FAULTS)
def test_node_passes_the_answer_through_and_logs_a_warning(kind, monkeypatch, caplog) -> None:
    faults = Faults(kind)
    faults.seed()
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(
        agent_crew(model),
        EpisodicMemoryNode(faults.memory, policy=SessionPolicy(autosave="on_success")),
    )
    faults.break_it(monkeypatch)
    faults.script(model)
    with caplog.at_level(logging.WARNING):
        out = graph.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread(f"f-{kind}"))
    assert reply_text(out["messages"]) == CREW_ANSWER  # unchanged: nothing was appended
    assert any("episodic memory" in w and "failed" in w for w in _warnings(caplog))
    # /save reports the failure instead of crashing (saving embeds instructions: the embedder
    # fault breaks it too; a broken LLM does not matter for saving)
    reply = graph.invoke({"messages": [HumanMessage("/save")]}, thread(f"f-{kind}"))
    text = reply_text(reply["messages"])
    assert text.startswith("Saved" if kind == "llm" else "Could not save the workflow")
    faults.memory.close()


@pytest.mark.parametrize("kind", FAULTS)
def test_node_strict_mode_raises(kind, monkeypatch) -> None:
    faults = Faults(kind)
    faults.seed()
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(
        agent_crew(model),
        EpisodicMemoryNode(faults.memory, policy=SessionPolicy(strict=True, autosave="on_success")),
    )
    faults.break_it(monkeypatch)
    faults.script(model)
    with pytest.raises(faults.error):
        graph.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread(f"s-{kind}"))
    faults.memory.close()


@pytest.mark.parametrize("kind", FAULTS)
def test_middleware_isolates_faults(kind, monkeypatch, caplog) -> None:
    faults = Faults(kind)
    faults.seed()
    model = ScriptedChatModel(messages=iter([]))
    middleware = EpisodicMemoryMiddleware(
        faults.memory, policy=SessionPolicy(autosave="on_success"), inject=True
    )
    agent = agent_crew(model, middleware=[middleware], checkpointer=InMemorySaver())
    faults.break_it(monkeypatch)
    faults.script(model)
    with caplog.at_level(logging.WARNING):
        out = agent.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread(f"m-{kind}"))
    assert reply_text(out["messages"]) == CREW_ANSWER
    assert any("failed" in w for w in _warnings(caplog))

    strict = agent_crew(
        model,
        middleware=[EpisodicMemoryMiddleware(faults.memory, policy=SessionPolicy(strict=True))],
        checkpointer=InMemorySaver(),
    )
    faults.script(model)
    with pytest.raises(faults.error):
        strict.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread(f"ms-{kind}"))
    faults.memory.close()


def test_memory_level_llm_fallback_keeps_suggestions(caplog) -> None:
    """Without strict, the memory itself falls back to deterministic suggestions."""
    memory = EpisodicMemory(
        store="memory:", embedder=FakeEmbedder(64), llm=BrokenChatModel(messages=iter([]))
    )
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory))
    model.load(extract_turn())
    graph.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("llm-1"))
    FLAKY.fail_once("pfas_classifier")
    model.load(classify_turn())
    graph.invoke({"messages": [HumanMessage(CLASSIFY)]}, thread("llm-1"))
    graph.invoke({"messages": [HumanMessage("/save")]}, thread("llm-1"))
    model.load(extract_turn("beta.pdf"))
    with caplog.at_level(logging.WARNING):
        out = graph.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread("llm-2"))
    head, _, tail = reply_text(out["messages"]).partition("\n\n")
    assert head == CREW_ANSWER
    assert "pfas_classifier" in tail
    memory.close()
