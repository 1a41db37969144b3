"""Fault isolation: a failing store, embedder or LLM never breaks the BeeAI crew (strict=False).

Each fault is injected into a real component of a real EpisodicMemory: the store's graph backend
raises StoreError, the embedder raises, or the chat model behind the LLM suggester raises. With
``strict=False`` the crew's answer goes through unchanged and a warning is logged; with
``strict=True`` the run raises.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from beeai_framework.errors import FrameworkError
from beeai_support import EXTRACT, build_crew, make_memory

from em_plugin import SessionPolicy
from em_plugin.embedding import FakeEmbedder
from em_plugin.errors import SuggestionError
from integrations.beeai import EpisodicMemoryAgent, EpisodicMemoryMiddleware, crew_description
from integrations.beeai.testing import ScriptedChatModel
from provenance.errors import StoreError
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import WorkflowStore
from provenance.stores.base import GraphStore
from provenance.stores.embedded import OxigraphStore

GREETING = "Say hello to the new user"


class BreakableBackend(GraphStore):
    """An in-memory Oxigraph backend that raises StoreError while ``broken``."""

    def __init__(self) -> None:
        self.inner = OxigraphStore()
        self.broken = False

    def _check(self) -> None:
        if self.broken:
            raise StoreError("store is down (injected)")

    def replace_graphs(self, graphs: Any) -> None:
        self._check()
        self.inner.replace_graphs(graphs)

    def drop_graphs(self, names: Any) -> None:
        self._check()
        self.inner.drop_graphs(names)

    def graph_names(self) -> Any:
        self._check()
        return self.inner.graph_names()

    def read_graphs(self, names: Any) -> Any:
        self._check()
        return self.inner.read_graphs(names)

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return self.inner.query(*args, **kwargs)

    def close(self) -> None:
        self.inner.close()


class BreakableEmbedder(FakeEmbedder):
    """FakeEmbedder that raises while ``broken``."""

    broken = False

    def embed(self, texts: Any) -> np.ndarray:
        if self.broken:
            raise RuntimeError("embedding model crashed (injected)")
        return super().embed(texts)


class FailingChatModel(ScriptedChatModel):
    """A BeeAI chat model whose provider is unreachable."""

    async def _create(self, input: Any, run: Any) -> Any:
        raise ConnectionError("LLM provider unreachable (injected)")


def _seed() -> Workflow:
    return Workflow(
        id="seed/greeting",
        steps=(
            InstructionStep(GREETING),
            InstructionStep(EXTRACT, (CallStep("product_extractor", {"file": "x.pdf"}),)),
        ),
    )


def _faulty_memory(fault: str) -> tuple[Any, dict[str, Any]]:
    """A seeded memory with the fault armed; plus the session settings the fault needs."""
    if fault == "store":
        backend = BreakableBackend()
        memory = make_memory(store=WorkflowStore(backend))
        memory.save(_seed())
        backend.broken = True
        return memory, {"autosave": "on_success"}  # the turn's save hits the store
    if fault == "embedder":
        embedder = BreakableEmbedder(64)
        memory = make_memory(embedder=embedder)
        memory.save(_seed())
        embedder.broken = True
        return memory, {}
    crew = crew_description(build_crew().coordinator)
    memory = make_memory(
        llm=FailingChatModel(name="broken_llm"), raise_suggester_errors=True, crew_description=crew
    )
    memory.save(_seed())
    return memory, {}


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything it wraps (BeeAI wraps errors raised in listeners)."""
    found: list[BaseException] = []
    stack = [exc]
    while stack:
        current = stack.pop()
        if current is None or any(current is seen for seen in found):
            continue
        found.append(current)
        stack.extend([current.__cause__, current.__context__])  # type: ignore[list-item]
        stack.extend(getattr(current, "exceptions", ()))  # asyncio task groups
        if isinstance(current, FrameworkError):
            stack.append(current.get_cause())
    return found


INJECTED = {"store": StoreError, "embedder": RuntimeError, "llm": SuggestionError}


async def _run(front: str, memory: Any, strict: bool, options: dict[str, Any]) -> tuple[Any, str]:
    crew = build_crew()
    answer = crew.turn_plain("Hello! I am the chemistry crew.")
    if front == "middleware":
        mw = EpisodicMemoryMiddleware(memory, policy=SessionPolicy(strict=strict, **options))
        response = await crew.coordinator.run(GREETING + " please").middleware(mw)
    else:
        em = EpisodicMemoryAgent(
            crew.coordinator, memory, policy=SessionPolicy(strict=strict, **options)
        )
        response = await em.run(GREETING + " please")
    return response, answer


def test_the_seeded_memory_would_suggest_something() -> None:
    """Without a fault the same turn gets suggestions: the faults below really remove them."""
    import asyncio

    memory = make_memory()
    memory.save(_seed())
    response, answer = asyncio.run(_run("middleware", memory, False, {}))
    assert response.last_message.text.startswith(answer + "\n\nSuggested next steps")


@pytest.mark.parametrize("front", ["middleware", "agent"])
@pytest.mark.parametrize("fault", ["store", "embedder", "llm"])
async def test_fault_is_logged_and_the_answer_goes_through_unchanged(
    front: str, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory, options = _faulty_memory(fault)
    with caplog.at_level(logging.WARNING):
        response, answer = await _run(front, memory, False, options)

    assert response.last_message.text == answer
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "episodic memory" in r.getMessage() and "unchanged" in r.getMessage() for r in warnings
    ), [r.getMessage() for r in warnings]
    assert any(isinstance(r.exc_info[1], INJECTED[fault]) for r in warnings if r.exc_info)


@pytest.mark.parametrize("front", ["middleware", "agent"])
@pytest.mark.parametrize("fault", ["store", "embedder", "llm"])
async def test_strict_mode_raises(front: str, fault: str) -> None:
    memory, options = _faulty_memory(fault)
    with pytest.raises(Exception) as caught:
        await _run(front, memory, True, options)
    assert any(isinstance(e, INJECTED[fault]) for e in _causes(caught.value))


@pytest.mark.parametrize("front", ["middleware", "agent"])
async def test_save_command_with_a_broken_store_replies_instead_of_failing(
    front: str, caplog: pytest.LogCaptureFixture
) -> None:
    backend = BreakableBackend()
    memory = make_memory(store=WorkflowStore(backend))
    crew = build_crew()
    crew.turn_report()
    if front == "middleware":
        mw = EpisodicMemoryMiddleware(memory)
        await crew.coordinator.run("Write a report").middleware(mw)
        backend.broken = True
        with caplog.at_level(logging.WARNING):
            reply = await crew.coordinator.run("/save").middleware(mw)
    else:
        em = EpisodicMemoryAgent(crew.coordinator, memory)
        await em.run("Write a report")
        backend.broken = True
        with caplog.at_level(logging.WARNING):
            reply = await em.run("/save")

    # The session lives in the store's journal: unreadable, it is not saved from a partial copy.
    assert reply.last_message.text.startswith("Could not read this session's journal")
    assert "reading the session journal failed" in caplog.text


async def test_a_failing_recorder_never_breaks_the_crew(caplog: pytest.LogCaptureFixture) -> None:
    """A trajectory that rejects events (here: every call start) is isolated like memory."""
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    crew = build_crew(middlewares=[mw])
    answer = crew.turn_extract()
    crew.turn_report()
    await crew.coordinator.run(EXTRACT)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("trajectory rejected the event (injected)")

    mw.session().trajectory.call_start = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        response = await crew.coordinator.run("Write a report")

    assert crew.answers[0] == answer
    assert response.last_message.text.startswith("Report written.")
    assert "recording a BeeAI start event failed" in caplog.text
