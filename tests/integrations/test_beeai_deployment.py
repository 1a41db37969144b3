"""BeeAI sessions as deployments see them, in process: ids, the journal, a clean model context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.backend import AssistantMessage, UserMessage
from beeai_framework.workflows.agent import AgentWorkflow, AgentWorkflowInput
from beeai_support import CLASSIFY, EXTRACT, build_crew, make_memory, pfas_classifier

from em_plugin.session.journal import SessionJournal
from integrations.beeai import EpisodicMemoryMiddleware, SessionMemoryManager
from integrations.beeai._deployment import deployment_session
from integrations.beeai._sanitize import clean_messages, strip_suggestions
from integrations.beeai.testing import ScriptedChatModel, call, final
from provenance.errors import StoreError
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store

SHOWN = "\n\nSuggested next steps (from 1 similar past workflow):\n1. Call classifier"


def seeded(store: Any = None) -> Any:
    memory = make_memory(store=store if store is not None else open_store("memory:"))
    steps = (CallStep(name="extractor", args={}), CallStep(name="classifier", args={}))
    memory.save(Workflow(id="seed", steps=(InstructionStep(text=EXTRACT, steps=steps),)))
    return memory


def model_texts(crew: Any) -> list[str]:
    return [m.text for model in crew.models for c in model.calls for m in c.messages]


async def test_the_deployments_conversation_id_wins_over_the_constructors() -> None:
    memory = seeded()
    mw = EpisodicMemoryMiddleware(memory, session_id="script")
    crew = build_crew(middlewares=[mw])
    manager = SessionMemoryManager()
    await manager.set("ctx-7", crew.coordinator.memory)  # what BeeAI's servers do per request
    assert deployment_session() == "ctx-7"
    crew.turn_extract()
    await crew.coordinator.run(EXTRACT)
    assert mw.sessions.session_ids == ("ctx-7",) and mw.workflow("ctx-7").session == "ctx-7"
    explicit = await crew.coordinator.run("/save").context({"session_id": "ticket-1"})
    assert explicit.last_message.text.startswith("Nothing to save yet")  # the run's own id wins


async def test_another_process_on_the_store_continues_the_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    memory = seeded(open_store(str(store)))
    crew = build_crew(middlewares=[EpisodicMemoryMiddleware(memory)])
    crew.turn_extract(flaky=True)
    await crew.coordinator.run(EXTRACT).context({"session_id": "conv"})
    first = EpisodicMemoryMiddleware(memory).workflow("conv")  # a fresh middleware: the journal
    memory.store.close()
    restarted = seeded(open_store(str(store)))  # the server restarted
    crew = build_crew(middlewares=[EpisodicMemoryMiddleware(restarted)])
    crew.turn_classify()
    await crew.coordinator.run(CLASSIFY).context({"session_id": "conv"})
    reply = await crew.coordinator.run("/save").context({"session_id": "conv"})
    assert reply.last_message.text.startswith("Saved workflow session/conv (")
    saved = restarted.load("session/conv")
    assert saved.steps[0] == first.steps[0]  # same steps, ids, times and nesting
    assert [s.text for s in saved.steps] == [EXTRACT, CLASSIFY]
    assert [f.call.name for f in saved.failed] == ["product_extractor"]
    (handoff,) = saved.steps[0].steps
    assert [c.name for c in handoff.steps] == ["product_extractor"]
    assert handoff.started <= handoff.steps[0].started <= handoff.steps[0].ended <= handoff.ended
    assert SessionJournal(restarted.store.backend).unsaved() == []


async def test_a_replayed_history_reaches_no_model_with_the_memorys_text() -> None:
    mw = EpisodicMemoryMiddleware(seeded(), session_id="replay")
    crew = build_crew(middlewares=[mw])
    answer = crew.turn_extract()
    shown = (await crew.coordinator.run(EXTRACT)).last_message
    assert shown.text.startswith(answer + "\n\nSuggested next steps")
    await crew.coordinator.run("/save")
    crew.turn_classify()
    history = [
        UserMessage(EXTRACT),
        shown,  # the marked copy, as a Responses server stores it
        UserMessage("/save"),
        AssistantMessage("Saved workflow session/replay (2 steps) in scope 'default'."),
        UserMessage("Did that work?"),
        AssistantMessage(answer + SHOWN),  # text only, as a chat-completions client sends it
        UserMessage(CLASSIFY),
    ]
    await crew.coordinator.run(history)
    texts = model_texts(crew)
    assert any(answer in t for t in texts)  # the history reached the models (and sub-agents)
    assert not [t for t in texts if "Suggested" in t or "/save" in t or "Saved workflow" in t]


def test_cleaning_keeps_what_is_not_the_memorys() -> None:
    never = {"/save"}.__contains__
    plain = [UserMessage("Suggested next steps: none"), AssistantMessage("ok\n\nSuggested x")]
    assert clean_messages(plain, never) is None
    assert strip_suggestions("a\n\nSuggested next steps:\n1. b [tool]\n2. c") == "a"
    assert strip_suggestions("a\n\nSuggested next steps are below") == (
        "a\n\nSuggested next steps are below"
    )


async def test_agent_workflow_state_final_answer_shows_the_suggestions() -> None:
    memory = seeded()
    steps = (CallStep(name="pfas_classifier", args={}), CallStep(name="write_report", args={}))
    memory.save(Workflow(id="seed2", steps=(InstructionStep(text=CLASSIFY, steps=steps),)))
    model = ScriptedChatModel(
        [call("pfas_classifier", names=["PFOA"]), final("PFOA is a PFAS.")], name="m"
    )
    workflow = AgentWorkflow(name="chemistry")
    workflow.add_agent(RequirementAgent(llm=model, tools=[pfas_classifier]))
    mw = EpisodicMemoryMiddleware(memory, session_id="wf")
    response = await workflow.run([AgentWorkflowInput(prompt=CLASSIFY)]).middleware(mw)
    assert response.state.final_answer.startswith("PFOA is a PFAS.\n\nSuggested next steps")
    assert response.result.final_answer == response.state.final_answer


async def test_save_is_refused_while_the_journal_cannot_be_read(monkeypatch: Any) -> None:
    memory = seeded()
    crew = build_crew(middlewares=[EpisodicMemoryMiddleware(memory)])
    crew.turn_extract()
    await crew.coordinator.run(EXTRACT).context({"session_id": "s"})
    await crew.coordinator.run("/save").context({"session_id": "s"})
    kept = memory.load("session/s")

    def unreadable(*args: Any) -> Any:
        raise StoreError("the store went away")

    monkeypatch.setattr(SessionJournal, "head", unreadable)
    other = build_crew(middlewares=[EpisodicMemoryMiddleware(memory)])  # another worker
    other.turn_classify()
    await other.coordinator.run(CLASSIFY).context({"session_id": "s"})  # the crew still answers
    reply = await other.coordinator.run("/save").context({"session_id": "s"})
    assert reply.last_message.text.startswith("Could not read this session's journal")
    assert memory.load("session/s") == kept


def test_a_streamed_responses_request_with_suggestions_completes(monkeypatch: Any) -> None:
    """BeeAI's OpenAI-compatible server streams a ``RequirementAgent`` run and reads
    ``data.state`` of every event it yields, the suggestions event too (it failed the stream)."""
    import uvicorn
    from beeai_framework.adapters.openai.serve.server import OpenAIServer, OpenAIServerConfig
    from starlette.testclient import TestClient

    crew = build_crew(middlewares=[EpisodicMemoryMiddleware(seeded())])
    crew.turn_extract()
    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, *args, **kwargs: apps.append(app))
    config = OpenAIServerConfig(host="127.0.0.1", api="responses")
    OpenAIServer(config=config, memory_manager=SessionMemoryManager()).register(
        crew.coordinator
    ).serve()
    body = {"model": "coordinator", "input": EXTRACT, "conversation": "c-1", "stream": True}
    with TestClient(apps[0]) as client, client.stream("POST", "/responses", json=body) as response:
        assert response.status_code == 200
        events = [line for line in response.iter_lines() if line.startswith("event:")]
    assert events[-1] == "event: response.completed"
    assert "event: error" not in events and "event: response.failed" not in events
