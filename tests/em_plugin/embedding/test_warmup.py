"""The embedder warms up in the background; the first turn waits for it once, within a bound."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from em_plugin.capture.trajectory import Trajectory
from em_plugin.embedding import FakeEmbedder
from em_plugin.embedding.warmup import Warmup
from em_plugin.memory import EpisodicMemory
from em_plugin.session import SessionController
from tests.em_plugin.session.test_session import TinyMemory, run_turn


class SlowModel:
    """A model that loads until released (as the default model loads for seconds)."""

    name = "slow-model"
    dimension = 64

    def __init__(self) -> None:
        self.release = threading.Event()
        self.loaded = threading.Event()
        self._fake = FakeEmbedder(64)

    def warm_up(self) -> None:
        self.release.wait(30)
        self.loaded.set()

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.loaded.wait(30)  # a turn before the load finishes would wait here, in its budget
        return self._fake.embed(texts)


def test_the_memory_warms_up_in_the_background() -> None:
    model = SlowModel()
    memory = EpisodicMemory(store="memory:", embedder=model)
    assert not memory.ready  # loading in the background: creating the memory did not wait
    model.release.set()
    assert memory.wait_ready() and memory.ready and model.loaded.is_set()
    memory.close()


def test_a_memory_opened_with_warm_up_false_loads_the_model_on_first_use() -> None:
    model = SlowModel()
    with EpisodicMemory(store="memory:", embedder=model, warm_up=False) as memory:
        assert memory.ready and memory.wait_ready()  # nothing started in the background
        assert not model.loaded.is_set()
    model.release.set()


class WarmingMemory(TinyMemory):
    """A memory port whose embedder is still warming up when the first turn ends."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = False
        self.order: list[str] = []

    def wait_ready(self) -> bool:
        self.order.append("wait_ready")
        self.ready = True
        return True

    def suggest(self, workflow, limit=3):  # type: ignore[no-untyped-def]
        self.order.append("suggest")
        return super().suggest(workflow, limit)

    async def asuggest(self, workflow, limit=3):  # type: ignore[no-untyped-def]
        return self.suggest(workflow, limit)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_turn_waits_for_the_warm_up_before_its_budget_starts(path: str) -> None:
    memory = WarmingMemory()
    seed = SessionController(memory, Trajectory("seed"))
    run_turn(seed, "Extract", [("extract", True), ("classify", True)])
    seed.handle_command("/save")
    memory.ready, memory.order = False, []
    controller = SessionController(memory, Trajectory("s1"), turn_budget=30)
    controller.begin_turn("Extract b.pdf")
    controller.trajectory.call_start("x1", "extract", {})
    controller.trajectory.call_end("x1", "ok")
    if path == "sync":
        suffix = controller.suggestion_suffix("done")
    else:
        suffix = asyncio.run(controller.asuggestion_suffix("done"))
    assert memory.order[:2] == ["wait_ready", "suggest"]
    assert suffix.endswith("1. Run classify")
    controller.suggestion_suffix("again")  # ready now: no second wait
    assert memory.order.count("wait_ready") == 1


def test_nothing_to_warm_is_ready_at_once() -> None:
    assert Warmup(FakeEmbedder(), wait=0).ready
    with EpisodicMemory(store="memory:", embedder=lambda texts: np.ones((len(texts), 8))) as m:
        assert m.ready and m.wait_ready()  # a user's callable is never called to warm it
