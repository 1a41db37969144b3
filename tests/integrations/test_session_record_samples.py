"""One session record in LangGraph: what the node and the middleware store, and what the previous
release stored, compile to the workflow that release compiled.

``tests/data/sessions/`` holds a thread's messages and its private channel as the previous
release's node (``episodic_capture``) and middleware (``episodic_trace``, nested call entries)
checkpointed them, with the workflow that release compiled from them (see the folder's README).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, messages_from_dict
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from lg_scaffold import (
    CLASSIFY,
    EXTRACT,
    FLAKY,
    ScriptedChatModel,
    agent_crew,
    call,
    classify_turn,
    extract_turn,
    load_handoff_turn,
    pfas_classifier,
    product_extractor,
    thread,
    with_memory,
    write_report,
)

from em_plugin.capture.trajectory import without_run_details
from em_plugin.session import Turn
from em_plugin.testing import FakeMemory
from integrations.langgraph import EpisodicMemoryMiddleware, EpisodicMemoryNode
from integrations.langgraph._trace import trajectory_from_trace
from integrations.langgraph._turns import trajectory_from_turns
from provenance.model import CallStep, Step, Workflow
from provenance.workflow_json import workflow_from_json

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "sessions"


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def call_ids(steps: tuple[Step, ...]) -> list[str | None]:
    return [
        i for s in steps for i in ([s.id] if isinstance(s, CallStep) else []) + call_ids(s.steps)
    ]


def test_an_earlier_node_thread_compiles_to_the_workflow_it_compiled_to() -> None:
    data = sample("langgraph_node_v1.json")
    messages = messages_from_dict(data["messages"])
    workflow = trajectory_from_turns(
        messages, data["episodic_capture"], session_id="t1", scope="default"
    ).compile()
    assert workflow == workflow_from_json(data["workflow"])


def test_an_earlier_middleware_thread_compiles_to_the_workflow_it_compiled_to() -> None:
    data = sample("langgraph_middleware_v1.json")
    messages = messages_from_dict(data["messages"])
    workflow = trajectory_from_trace(
        messages, data["episodic_trace"], session_id="n1", scope="default"
    ).compile()
    expected: Workflow = workflow_from_json(data["workflow"])
    # That release stamped the middleware's calls when it replayed them: only times differ.
    assert without_run_details(workflow) == without_run_details(expected)
    assert call_ids(workflow.steps) == call_ids(expected.steps) == ["c1", "c2", "k2", "k3"]
    assert [f.call.id for f in workflow.failed] == [f.call.id for f in expected.failed]
    assert [f.call.name for f in workflow.failed] == ["pfas_classifier", "write_report"]


def test_the_node_stores_turn_records_that_compile_as_the_previous_release_did() -> None:
    memory = FakeMemory()
    model = ScriptedChatModel()
    graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory))
    model.load(extract_turn())
    graph.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("t1"))
    FLAKY.fail_once("pfas_classifier")
    model.load(classify_turn())
    graph.invoke({"messages": [HumanMessage(CLASSIFY)]}, thread("t1"))
    graph.invoke({"messages": [HumanMessage("/save")]}, thread("t1"))
    stored = graph.get_state(thread("t1")).values["episodic_capture"]
    turns = [Turn.from_json(t) for t in stored]
    assert [t.to_json() for t in turns] == stored  # the channel holds the session record as is
    assert [[c.name for c in t.calls] for t in turns] == [
        ["product_extractor"],
        ["pfas_classifier", "pfas_classifier"],
    ]
    expected = workflow_from_json(sample("langgraph_node_v1.json")["workflow"])
    saved = memory.load("session/t1")
    assert without_run_details(saved) == without_run_details(expected)
    assert call_ids(saved.steps) == call_ids(expected.steps)


def test_the_middleware_stores_turn_fragments_that_compile_as_the_previous_release_did() -> None:
    memory = FakeMemory()
    middleware = EpisodicMemoryMiddleware(memory)
    chemist_model = ScriptedChatModel()
    chemist = agent_crew(
        chemist_model, tools=[pfas_classifier, write_report], middleware=[middleware],
        name="chemist",
    )  # fmt: skip

    @tool
    def ask_chemist(task: str) -> str:
        """Hand a chemistry task to the chemist sub-agent."""
        return chemist.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

    model = ScriptedChatModel()
    coordinator = agent_crew(
        model, middleware=[middleware], tools=[product_extractor, ask_chemist],
        name="coordinator", checkpointer=InMemorySaver(),
    )  # fmt: skip
    load_handoff_turn(model, chemist_model)
    coordinator.invoke({"messages": [HumanMessage("Check acme.pdf")]}, thread("n1"))
    model.load([call("write_report", {"summary": "PFOA"}, "c1"), AIMessage("Reported.")])
    coordinator.invoke({"messages": [HumanMessage("Write the report")]}, thread("n1"))
    coordinator.invoke({"messages": [HumanMessage("/save")]}, thread("n1"))
    trace = coordinator.get_state(thread("n1")).values["episodic_trace"]
    handoff = Turn.from_json(trace[1])
    assert [(c.id, c.name, c.parent, c.order) for c in handoff.calls] == [
        ("c2", "ask_chemist", None, 1),
        ("k1", "pfas_classifier", "c2", None),
        ("k2", "pfas_classifier", "c2", None),
        ("k3", "write_report", "c2", None),
    ]
    assert all(c.started and c.ended for c in handoff.calls)
    expected = workflow_from_json(sample("langgraph_middleware_v1.json")["workflow"])
    saved = memory.load("session/n1")
    assert without_run_details(saved) == without_run_details(expected)
    assert call_ids(saved.steps) == call_ids(expected.steps)
    assert [f.call.id for f in saved.failed] == [f.call.id for f in expected.failed]
