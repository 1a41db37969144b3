"""EpisodicMemoryMiddleware on a real BeeAI crew: a coordinator with two HandoffTool sub-agents."""

from __future__ import annotations

import pytest
from beeai_framework.utils.asynchronous import run_sync
from beeai_support import (
    CLASSIFY,
    EXTRACT,
    EXTRACT_NEW,
    FLAKY,
    build_crew,
    leaf_names,
    make_memory,
)

from em_plugin import SessionPolicy
from em_plugin.errors import ConfigurationError
from em_plugin.suggest.types import format_suggestions
from integrations.beeai import EpisodicMemoryMiddleware
from provenance.model import CallStep, InstructionStep


async def test_captures_every_depth_and_drops_the_failed_call() -> None:
    mw = EpisodicMemoryMiddleware(make_memory())
    crew = build_crew()
    answer = crew.turn_extract(flaky=True)

    response = await crew.coordinator.run(EXTRACT).middleware(mw)

    assert response.last_message.text == answer  # empty memory: nothing to append
    workflow = mw.workflow()
    (instruction,) = workflow.steps
    assert isinstance(instruction, InstructionStep) and instruction.text == EXTRACT
    (handoff,) = instruction.steps
    assert isinstance(handoff, CallStep)
    assert (handoff.name, handoff.agent) == ("extractor", "coordinator")
    assert handoff.args == {"task": "Extract the ingredients of acme.pdf"}
    assert handoff.output == "PFOA, water"
    (call,) = handoff.steps
    assert (call.name, call.agent, call.args) == (
        "product_extractor",
        "extractor",
        {"file": "acme.pdf"},
    )
    assert '"ingredients"' in call.output
    (failed,) = workflow.failed
    assert failed.call.name == "product_extractor"
    assert failed.parent == "0.0"  # under the handoff call
    assert "TimeoutError" in failed.error
    assert FLAKY.calls == ["product_extractor", "product_extractor"]


async def test_two_turns_save_then_a_new_session_suggests_the_next_step() -> None:
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    crew = build_crew(middlewares=[mw])
    crew.turn_extract(flaky=True)
    await crew.coordinator.run(EXTRACT)
    crew.turn_classify()
    await crew.coordinator.run(CLASSIFY)
    calls_before = crew.model_calls()

    reply = await crew.coordinator.run("/save")

    assert crew.model_calls() == calls_before  # the crew was not called
    session_id = mw.sessions.session_ids[-1]
    assert reply.last_message.text.startswith(f"Saved workflow session/{session_id}")
    saved = memory.load(f"session/{session_id}")
    # The leaf sequence is the successful tool calls, in order; sub-agent calls are nested.
    assert leaf_names(saved) == FLAKY.succeeded == ["product_extractor", "pfas_classifier"]
    assert [(s.steps[0].name, s.steps[0].steps[0].name) for s in saved.steps] == [
        ("extractor", "product_extractor"),
        ("classifier", "pfas_classifier"),
    ]
    assert saved.framework == "beeai" and saved.session == session_id

    new_crew = build_crew(middlewares=[mw])  # a new conversation is a new session
    crew_answer = new_crew.turn_extract("beta.pdf")
    response = await new_crew.coordinator.run(EXTRACT_NEW)

    current = mw.workflow()
    assert current.session != session_id
    assert [m.workflow_id for m in memory.retrieve(current)] == [saved.id]
    shown = mw.suggestions()
    assert shown and shown[0].tool == "classifier"  # the handoff, at the user's level
    assert saved.id in {e.workflow_id for e in shown[0].evidence}
    assert response.last_message.text == crew_answer + "\n\n" + format_suggestions(shown)


async def test_suggest_command_reshows_suggestions_without_the_crew() -> None:
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    first = build_crew()
    first.turn_extract()
    await first.coordinator.run(EXTRACT).middleware(mw)
    first.turn_classify()
    await first.coordinator.run(CLASSIFY).middleware(mw)
    await first.coordinator.run("/save").middleware(mw)

    crew = build_crew()
    crew.turn_extract("beta.pdf")
    response = await crew.coordinator.run(EXTRACT_NEW).middleware(mw)
    calls = crew.model_calls()
    again = await crew.coordinator.run("/suggest").middleware(mw)

    assert crew.model_calls() == calls
    suffix = response.last_message.text.split("\n\n", 1)[1]
    assert again.last_message.text == suffix


async def test_session_and_scope_come_from_the_run_context() -> None:
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    crew = build_crew()
    crew.turn_report()
    context = {"session_id": "ticket-42", "scope": "alice"}
    await crew.coordinator.run("Write a report").middleware(mw).context(context)
    reply = await crew.coordinator.run("/save").middleware(mw).context(context)

    assert "session/ticket-42" in reply.last_message.text
    workflow = mw.workflow("ticket-42")
    assert (workflow.id, workflow.scope, workflow.session) == (
        "session/ticket-42",
        "alice",
        "ticket-42",
    )
    assert memory.with_scope("alice").load("session/ticket-42").scope == "alice"
    assert "session/ticket-42" not in memory.ids()


async def test_subagents_carrying_the_middleware_do_not_open_sessions() -> None:
    mw = EpisodicMemoryMiddleware(make_memory())
    crew = build_crew(middlewares=[mw], sub_middlewares=[mw])
    crew.turn_extract()
    crew.turn_classify()
    await crew.coordinator.run(EXTRACT)
    await crew.coordinator.run(CLASSIFY)

    assert len(mw.sessions.session_ids) == 1
    assert leaf_names(mw.workflow()) == ["product_extractor", "pfas_classifier"]


async def test_a_turn_without_tools_is_an_instruction_leaf() -> None:
    mw = EpisodicMemoryMiddleware(make_memory())
    crew = build_crew()
    answer = crew.turn_plain("Hello, I am the chemistry crew.")
    response = await crew.coordinator.run("Who are you?").middleware(mw)

    assert response.last_message.text == answer
    assert leaf_names(mw.workflow()) == ["Who are you?"]


def test_sync_invocation_works() -> None:
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    crew = build_crew(middlewares=[mw])
    answer = crew.turn_report()

    response = run_sync(crew.coordinator.run("Write a report"))
    reply = run_sync(crew.coordinator.run("/save"))

    assert response.last_message.text == answer
    assert "Saved workflow" in reply.last_message.text
    assert mw.save().startswith("Saved workflow")  # the sync API, outside the loop
    assert leaf_names(memory.load(mw.workflow().id)) == ["write_report"]


async def test_autosave_on_success_saves_each_clean_turn_and_replaces_it() -> None:
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory, policy=SessionPolicy(autosave="on_success"))
    crew = build_crew(middlewares=[mw])
    crew.turn_extract(flaky=True)
    await crew.coordinator.run(EXTRACT)
    workflow_id = mw.workflow().id
    assert workflow_id not in memory.ids()  # a call failed: not saved

    crew.turn_classify()
    await crew.coordinator.run(CLASSIFY)
    crew.turn_report()
    await crew.coordinator.run("Write a report")

    assert list(memory.ids()) == [workflow_id]  # one workflow, replaced
    assert leaf_names(memory.load(workflow_id)) == [
        "product_extractor",
        "pfas_classifier",
        "write_report",
    ]


async def test_autosave_judge_decides() -> None:
    memory = make_memory()
    seen = []

    def judge(workflow, outcome) -> bool:
        seen.append((outcome.instruction, outcome.failures))
        return bool(outcome.failures)  # a judge may accept any turn, even a failed one

    mw = EpisodicMemoryMiddleware(memory, policy=SessionPolicy(autosave="on_success", judge=judge))
    crew = build_crew(middlewares=[mw])
    crew.turn_extract(flaky=True)
    await crew.coordinator.run(EXTRACT)

    assert seen and seen[0][0] == EXTRACT and "TimeoutError" in seen[0][1][0]
    assert mw.workflow().id in memory.ids()


async def test_suggestions_are_recorded_as_provenance() -> None:
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    first = build_crew(middlewares=[mw])
    first.turn_extract()
    await first.coordinator.run(EXTRACT)
    first.turn_classify()
    await first.coordinator.run(CLASSIFY)
    await first.coordinator.run("/save")
    saved_id = mw.workflow().id

    crew = build_crew(middlewares=[mw])
    crew.turn_extract("beta.pdf")
    await crew.coordinator.run(EXTRACT_NEW)

    session = mw.workflow().session
    shown = mw.suggestions()
    rows = memory.store.query("suggestion-sources", {"session": session}).dicts()
    assert rows, "no suggestion activity was recorded"
    assert {str(r["workflow"]) for r in rows} == {saved_id}
    assert [str(r["tool"]) for r in rows if int(r["rank"]) == 1] == [shown[0].tool]


def test_bad_settings_fail_at_construction() -> None:
    memory = make_memory()
    with pytest.raises(ConfigurationError, match="'off', 'on_success'"):
        EpisodicMemoryMiddleware(memory, policy=SessionPolicy(autosave="sometimes"))
    with pytest.raises(ConfigurationError, match="limit"):
        EpisodicMemoryMiddleware(memory, policy=SessionPolicy(limit=0))
    with pytest.raises(ConfigurationError, match="memory is required"):
        EpisodicMemoryMiddleware(None)
