"""EpisodicMemoryAgent, the paper's EM agent, in front of a real BeeAI crew."""

from __future__ import annotations

import pytest
from beeai_framework.backend import UserMessage
from beeai_framework.tools.handoff import HandoffTool
from beeai_framework.utils.asynchronous import run_sync
from beeai_support import (
    CLASSIFY,
    EXTRACT,
    EXTRACT_NEW,
    build_crew,
    leaf_names,
    make_memory,
)

from em_plugin import SessionPolicy
from em_plugin.errors import ConfigurationError
from em_plugin.suggest.types import format_suggestions
from integrations.beeai import EpisodicMemoryAgent
from integrations.beeai.testing import ScriptedChatModel, call, final


def _user_texts(crew) -> list[str]:
    first_call = crew.coordinator_llm.calls[-1]
    return [m.text for m in first_call.messages if isinstance(m, UserMessage)]


async def _saved_session(memory) -> str:
    em = EpisodicMemoryAgent(_crew_with(EXTRACT, CLASSIFY).coordinator, memory)
    await em.run(EXTRACT)
    await em.run(CLASSIFY)
    await em.run("/save")
    return em.workflow().id


def _crew_with(*instructions: str):
    crew = build_crew()
    for text in instructions:
        crew.turn_extract() if text == EXTRACT else crew.turn_classify()
    return crew


async def test_forwards_verbatim_and_appends_suggestions_to_the_unchanged_answer() -> None:
    memory = make_memory()
    saved_id = await _saved_session(memory)
    crew = build_crew()
    crew_answer = crew.turn_extract("beta.pdf")
    em = EpisodicMemoryAgent(crew.coordinator, memory)

    response = await em.run(EXTRACT_NEW)

    assert f"Your task: {EXTRACT_NEW}" in _user_texts(crew)  # verbatim, no hint injected
    assert response.crew_output.last_message.text == crew_answer  # the crew's result untouched
    assert response.answer == crew_answer
    assert (
        response.suggestions and response.suggestions[0].tool == "classifier"
    )  # the handoff the user can ask for
    assert saved_id in {e.workflow_id for e in response.suggestions[0].evidence}
    assert response.last_message.text == crew_answer + "\n\n" + format_suggestions(
        response.suggestions
    )


async def test_save_and_suggest_do_not_call_the_crew() -> None:
    memory = make_memory()
    crew = build_crew()
    crew.turn_extract(flaky=True)
    crew.turn_classify()
    em = EpisodicMemoryAgent(crew.coordinator, memory, session_id="s-1")
    await em.run(EXTRACT)
    await em.run(CLASSIFY)
    calls = crew.model_calls()

    saved = await em.run("/save")
    suggested = await em.run("/suggest")

    assert crew.model_calls() == calls
    assert saved.command == "save" and suggested.command == "suggest"
    assert saved.last_message.text.startswith("Saved workflow session/s-1 (2 steps)")
    assert suggested.last_message.text  # a reply, even when memory has nothing similar
    stored = memory.load("session/s-1")
    assert leaf_names(stored) == ["product_extractor", "pfas_classifier"]
    assert [s.steps[0].steps[0].agent for s in stored.steps] == ["extractor", "classifier"]


async def test_saving_the_same_session_again_replaces_it() -> None:
    memory = make_memory()
    crew = build_crew()
    crew.turn_extract()
    crew.turn_classify()
    em = EpisodicMemoryAgent(crew.coordinator, memory, session_id="s-2")
    await em.run(EXTRACT)
    await em.run("/save")
    await em.run(CLASSIFY)
    await em.run("/save")

    assert list(memory.ids()) == ["session/s-2"]
    assert leaf_names(memory.load("session/s-2")) == ["product_extractor", "pfas_classifier"]


def test_sync_invocation_works() -> None:
    memory = make_memory()
    crew = build_crew()
    answer = crew.turn_report()
    em = EpisodicMemoryAgent(crew.coordinator, memory)

    response = run_sync(em.run("Write a report"))
    reply = run_sync(em.run("/save"))

    assert response.last_message.text == answer
    assert reply.command == "save"
    assert leaf_names(memory.load(em.workflow().id)) == ["write_report"]


async def test_message_input_and_handoff_to_the_em_agent() -> None:
    """The EM agent is a BeeAI agent: it takes messages and can sit behind a handoff."""
    memory = make_memory()
    crew = build_crew()
    answer = crew.turn_report()
    em = EpisodicMemoryAgent(crew.coordinator, memory, name="assistant")
    front_llm = ScriptedChatModel(
        [call("assistant", task="Write a report"), final("Done: report written.")], name="front"
    )
    from beeai_framework.agents.requirement import RequirementAgent

    front = RequirementAgent(llm=front_llm, tools=[HandoffTool(em)], name="front")
    response = await front.run("Please write a report")

    assert response.last_message.text == "Done: report written."
    assert leaf_names(em.workflow()) == ["write_report"]
    assert em.workflow().steps[0].text == "Write a report"
    assert crew.answers == [answer]


def test_bad_settings_fail_at_construction() -> None:
    memory = make_memory()
    with pytest.raises(ConfigurationError, match="crew must be a BeeAI agent"):
        EpisodicMemoryAgent("not a crew", memory)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="'off', 'on_success'"):
        EpisodicMemoryAgent(
            build_crew().coordinator, memory, policy=SessionPolicy(autosave="always")
        )
