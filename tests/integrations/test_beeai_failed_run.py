"""A crew run that raises: the error reaches the user unchanged, the next /save says "failure"."""

from __future__ import annotations

import pytest
from beeai_framework.errors import FrameworkError
from beeai_support import build_crew, make_memory

from integrations.beeai import EpisodicMemoryAgent, EpisodicMemoryMiddleware


@pytest.mark.parametrize("front", ["middleware", "agent"])
async def test_a_failed_run_is_saved_with_outcome_failure(front: str) -> None:
    memory = make_memory()
    crew = build_crew()  # no script: the coordinator's model raises "script exhausted"

    async def turn(text: str) -> object:
        # A fresh front-end per turn, like another worker: the failure travels in the journal.
        if front == "middleware":
            mw = EpisodicMemoryMiddleware(memory, session_id="chat-1")
            return await crew.coordinator.run(text).middleware(mw)
        return await EpisodicMemoryAgent(crew.coordinator, memory, session_id="chat-1").run(text)

    with pytest.raises(FrameworkError) as caught:
        await turn("Write a report on acme.pdf")
    assert "script exhausted" in caught.value.explain()

    await turn("/save")
    [workflow_id] = memory.ids()
    workflow = memory.load(workflow_id)
    assert workflow.outcome == "failure"
    assert [s.text for s in workflow.steps] == ["Write a report on acme.pdf"]
