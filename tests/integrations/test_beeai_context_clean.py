"""BeeAI: suggestions reach the user (and streamed runs, as their own event), never a model."""

from __future__ import annotations

from typing import Any

from beeai_support import CLASSIFY, EXTRACT, build_crew, make_memory

from integrations.beeai import (
    SUGGESTIONS_EVENT,
    EpisodicMemoryAgent,
    EpisodicMemoryMiddleware,
    SuggestionsEvent,
)
from provenance.model import CallStep, InstructionStep, Workflow


def seeded() -> Any:
    memory = make_memory()
    steps = (CallStep(name="extractor", args={}), CallStep(name="classifier", args={}))
    memory.save(Workflow(id="seed", steps=(InstructionStep(text=EXTRACT, steps=steps),)))
    return memory


def model_texts(crew: Any) -> list[str]:
    return [str(m.content) for model in crew.models for c in model.calls for m in c.messages]


async def test_middleware_suggestions_stay_out_of_the_crews_memory_and_model() -> None:
    mw = EpisodicMemoryMiddleware(seeded(), session_id="clean")
    crew = build_crew(middlewares=[mw])
    crew.turn_extract()
    events = [(meta.name, data) async for data, meta in crew.coordinator.run(EXTRACT)]
    assert [name for name, _ in events][-2:] == ["success", SUGGESTIONS_EVENT]  # after it
    shown = events[-1][1]
    assert isinstance(shown, SuggestionsEvent) and shown.session_id == "clean"
    assert [s.tool for s in shown.suggestions][0] == "classifier"
    answer = crew.turn_classify()
    returned = await crew.coordinator.run(CLASSIFY)
    assert returned.last_message.text.startswith(answer + "\n\nSuggested next steps")
    assert returned.state.answer.text == answer  # the crew's own message is untouched
    await crew.coordinator.run("/save")
    crew.turn_plain()
    await crew.coordinator.run("thanks")
    texts = model_texts(crew)
    assert texts and not [t for t in texts if "Suggested next steps" in t or "/save" in t]
    assert not [m for m in crew.coordinator.memory.messages if "Suggested" in str(m.content)]


async def test_em_agent_streams_the_suggestions_and_keeps_the_crew_clean() -> None:
    crew = build_crew()
    em = EpisodicMemoryAgent(crew.coordinator, seeded(), session_id="em")
    crew.turn_extract()
    events = [(meta.name, data) async for data, meta in em.run(EXTRACT)]
    assert [name for name, _ in events] == [SUGGESTIONS_EVENT]
    assert [s.tool for s in events[0][1].suggestions][0] == "classifier"
    answer = crew.turn_classify()
    output = await em.run(CLASSIFY)
    assert output.answer == answer
    assert output.last_message.text.startswith(answer + "\n\nSuggested next steps")
    assert not [t for t in model_texts(crew) if "Suggested next steps" in t]
