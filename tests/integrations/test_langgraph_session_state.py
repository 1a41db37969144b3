"""The LangGraph session lives in the graph's checkpointed state: another graph object (another
worker) continues it, nested calls keep their true times, and nothing needs attaching."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from lg_memory import make_memory
from lg_scaffold import (
    CLASSIFY,
    EXTRACT,
    FLAKY,
    ScriptedChatModel,
    agent_crew,
    call,
    product_extractor,
    thread,
)
from typing_extensions import TypedDict

from em_plugin.memory import EpisodicMemory
from integrations.langgraph import (
    EpisodicMemoryNode,
    TrajectoryRecorder,
    reply_text,
    with_episodic_memory,
)
from integrations.langgraph._turns import CAPTURE_KEY
from provenance.model import CallStep, Workflow


@pytest.fixture
def memory() -> Iterator[EpisodicMemory]:
    mem = make_memory()
    yield mem
    mem.close()


def _crew(coordinator: ScriptedChatModel, chemist: ScriptedChatModel) -> Any:
    sub_agent = agent_crew(chemist, name="chemist")

    @tool
    def ask_chemist(task: str) -> str:
        """Hand a chemistry task to the chemist sub-agent."""
        return str(sub_agent.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text)

    return agent_crew(coordinator, tools=[product_extractor, ask_chemist], name="coordinator")


def _script(coordinator: ScriptedChatModel, chemist: ScriptedChatModel, text: str) -> None:
    if text == EXTRACT:
        coordinator.load([call("product_extractor", {"file": "acme.pdf"}, "e1"), AIMessage("ok")])
        return
    FLAKY.fail_once("pfas_classifier")
    coordinator.load([call("ask_chemist", {"task": "classify PFOA"}, "a1"), AIMessage("PFAS")])
    chemist.load(
        [
            call("pfas_classifier", {"names": ["PFOA"]}, "c1"),
            call("pfas_classifier", {"names": ["PFOA"]}, "c2"),
            AIMessage("PFOA is a PFAS."),
        ]
    )


def _nested(workflow: Workflow) -> list[tuple[str, str | None, list[str]]]:
    return [
        (s.name, s.agent, [c.name for c in s.steps])
        for i in workflow.steps
        for s in i.steps
        if isinstance(s, CallStep)
    ]


def test_another_graph_object_continues_the_thread_from_the_checkpoint(
    memory: EpisodicMemory,
) -> None:
    saver = InMemorySaver()  # shared, as a server's workers share their checkpointer

    def worker() -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
        coordinator, chemist = (ScriptedChatModel(messages=iter([])) for _ in range(2))
        builder = with_episodic_memory(_crew(coordinator, chemist), memory)
        return builder.compile(checkpointer=saver), coordinator, chemist

    first, coordinator, chemist = worker()
    _script(coordinator, chemist, EXTRACT)
    out = first.invoke({"messages": [HumanMessage(EXTRACT)]}, thread("w"))
    assert CAPTURE_KEY not in out  # not in the graph's output: the thread's state keeps it
    assert len(first.get_state(thread("w")).values[CAPTURE_KEY]) == 1
    second, coordinator, chemist = worker()  # a new node: nothing of the session in memory
    _script(coordinator, chemist, CLASSIFY)
    second.invoke({"messages": [HumanMessage(CLASSIFY)]}, thread("w"))
    third, _, _ = worker()
    reply = reply_text(third.invoke({"messages": [HumanMessage("/save")]}, thread("w"))["messages"])
    assert reply.startswith("Saved workflow session/w (2 steps)")

    saved = memory.load("session/w")
    assert saved.session == "w"
    assert _nested(saved) == [
        ("product_extractor", "coordinator", []),
        ("ask_chemist", "coordinator", ["pfas_classifier"]),
    ]
    assert [(f.call.name, f.call.agent, f.parent) for f in saved.failed] == [
        ("pfas_classifier", "chemist", "1.0")
    ]
    # True times: the instruction opens its turn; a nested call runs inside its handoff.
    turn, handoff = saved.steps[1], saved.steps[1].steps[0]
    inner = handoff.steps[0]
    assert turn.timestamp and handoff.started and handoff.ended and inner.started and inner.ended
    assert turn.timestamp <= handoff.started <= inner.started <= inner.ended <= handoff.ended
    # Compiling the same thread again (any worker) gives the same workflow.
    again = reply_text(third.invoke({"messages": [HumanMessage("/save")]}, thread("w"))["messages"])
    assert again == reply and memory.load("session/w") == saved


class _Chat(TypedDict):
    chat: Annotated[list[AnyMessage], add_messages]


def test_a_custom_messages_key_takes_the_node_state_schema(memory: EpisodicMemory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    crew = agent_crew(model)

    def run_crew(state: _Chat) -> dict:
        return {"chat": crew.invoke({"messages": state["chat"]})["messages"][len(state["chat"]) :]}

    node = EpisodicMemoryNode(memory, messages_key="chat")
    builder = StateGraph(_Chat)
    builder.add_node("crew", run_crew)
    builder.add_node("episodic_memory", node, input_schema=node.state_schema)
    builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
    builder.add_edge("crew", "episodic_memory")
    builder.add_edge("episodic_memory", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    model.load([call("product_extractor", {"file": "acme.pdf"}, "e1"), AIMessage("ok")])
    graph.invoke({"chat": [HumanMessage(EXTRACT)]}, thread("c"))
    graph.invoke({"chat": [HumanMessage("/save")]}, thread("c"))
    assert [s.name for s in memory.load("session/c").leaves()] == ["product_extractor"]


def test_a_recorder_keeps_sessions_of_graphs_without_the_node() -> None:
    model = ScriptedChatModel(messages=iter([]))
    crew = agent_crew(model)
    recorder = TrajectoryRecorder()
    model.load([call("product_extractor", {"file": "acme.pdf"}, "e1"), AIMessage("ok")])
    crew.invoke({"messages": [HumanMessage(EXTRACT)]}, {**thread("r"), "callbacks": [recorder]})
    trajectory = recorder.trajectory("r")
    assert trajectory is not None
    workflow = trajectory.compile()
    assert [s.text for s in workflow.steps] == [EXTRACT]
    assert [s.name for s in workflow.leaves()] == ["product_extractor"]


def test_turns_whose_messages_are_gone_still_count_in_their_place() -> None:
    from integrations.langgraph._turns import trajectory_from_turns

    call = {"id": "c1", "name": "product_extractor", "args": {}, "agent": "crew", "parent": None}
    turns = [
        {
            "turn": "h1",
            "instruction": EXTRACT,
            "started": "2026-01-01T00:00:00+00:00",
            "calls": [
                {
                    **call,
                    "started": "2026-01-01T00:00:01+00:00",
                    "ended": "2026-01-01T00:00:02+00:00",
                    "output": "ok",
                }
            ],
        },
        {
            "turn": "h2",
            "instruction": CLASSIFY,
            "started": "2026-01-01T00:01:00+00:00",
            "calls": [
                {
                    **call,
                    "name": "pfas_classifier",
                    "started": "2026-01-01T00:01:01+00:00",
                    "ended": "2026-01-01T00:01:02+00:00",
                    "error": "TimeoutError: slow",
                }
            ],
        },
    ]
    # The first turn's messages were trimmed from the thread (e.g. summarised away).
    messages = [HumanMessage(CLASSIFY, id="h2"), AIMessage("PFAS"), HumanMessage("Report", id="h3")]
    workflow = trajectory_from_turns(messages, turns, session_id="s", scope="default").compile()
    assert [s.text for s in workflow.steps] == [EXTRACT, CLASSIFY, "Report"]
    assert workflow.steps[0].steps[0].started == "2026-01-01T00:00:01+00:00"
    assert [(f.call.name, f.call.id) for f in workflow.failed] == [("pfas_classifier", "c1#2")]


def test_the_capture_keeps_nothing_of_finished_runs() -> None:
    from integrations.langgraph._capture import install

    capture = install()
    model = ScriptedChatModel(messages=iter([]))
    model.load([call("product_extractor", {"file": "acme.pdf"}, "e1"), AIMessage("ok")])
    agent_crew(model).invoke({"messages": [HumanMessage(EXTRACT)]})  # no memory node collects
    assert not capture._roots and not capture._parent and not capture._tool_records


def test_a_model_or_tool_called_on_its_own_leaves_nothing_behind() -> None:
    from langchain_core.tools import tool

    from integrations.langgraph._capture import install

    capture = install()
    before = set(capture._roots)
    model = ScriptedChatModel(messages=iter([]))
    model.load([AIMessage("ok")])
    model.invoke([HumanMessage(EXTRACT)])  # a root run of its own, outside any graph

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    echo.invoke({"text": "hi"})
    assert set(capture._roots) <= before
