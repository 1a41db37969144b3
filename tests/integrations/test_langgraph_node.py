"""EpisodicMemoryNode in real compiled graphs driven by scripted chat models."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from lg_memory import make_memory
from lg_scaffold import (
    CLASSIFY,
    EXTRACT,
    EXTRACT_NEW,
    FLAKY,
    ScriptedChatModel,
    agent_crew,
    call,
    classify_turn,
    extract_turn,
    react_crew,
    thread,
    with_memory,
)

from em_plugin import SessionPolicy
from em_plugin.capture.trajectory import without_run_details
from em_plugin.suggest.types import format_suggestions
from integrations.langgraph import EpisodicMemoryNode, TrajectoryRecorder, reply_text
from integrations.langgraph._memory_messages import memory_kind
from provenance.model import CallStep, InstructionStep

CREWS = {"create_agent": agent_crew, "react_subgraph": react_crew}


def ask(graph: Any, text: str, config: dict[str, Any], **kwargs: Any) -> str:
    out = graph.invoke({"messages": [HumanMessage(text)]}, config, **kwargs)
    return reply_text(out["messages"])


async def aask(graph: Any, text: str, config: dict[str, Any], **kwargs: Any) -> str:
    out = await graph.ainvoke({"messages": [HumanMessage(text)]}, config, **kwargs)
    return reply_text(out["messages"])


def crew_part(answer: str) -> str:
    """The crew's answer: everything before the appended suggestions."""
    return answer.partition("\n\n")[0]


def leaf_names(workflow) -> list[str]:
    return [s.name if isinstance(s, CallStep) else f"<{s.text}>" for s in workflow.leaves()]


@pytest.fixture
def memory():
    mem = make_memory()
    yield mem
    mem.close()


@pytest.mark.parametrize("kind", sorted(CREWS))
def test_two_turns_save_and_a_new_session_gets_the_next_step(kind: str, memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(CREWS[kind](model), EpisodicMemoryNode(memory))
    t1 = thread(f"{kind}-1")

    model.load(extract_turn())
    assert ask(graph, EXTRACT, t1) == "acme.pdf contains PFOA and water."  # nothing in memory
    FLAKY.fail_once("pfas_classifier")
    model.load(classify_turn())
    assert crew_part(ask(graph, CLASSIFY, t1)) == "PFOA is a PFAS; water is not."

    calls_before = len(model.seen)
    reply = ask(graph, "/save", t1)
    assert len(model.seen) == calls_before  # /save never reaches the crew
    assert reply == f"Saved workflow session/{kind}-1 (2 steps) in scope 'default'."

    saved = memory.load(f"session/{kind}-1")
    assert leaf_names(saved) == ["product_extractor", "pfas_classifier"]
    assert [type(s) for s in saved.steps] == [InstructionStep, InstructionStep]
    assert [s.text for s in saved.steps] == [EXTRACT, CLASSIFY]
    assert [(f.call.name, f.parent) for f in saved.failed] == [("pfas_classifier", "1")]
    assert "TimeoutError" in saved.failed[0].error

    model.load(extract_turn("beta.pdf", prefix="n"))
    node = EpisodicMemoryNode(memory)
    out = graph.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread(f"{kind}-2"))
    answer = reply_text(out["messages"])
    crew_answer = "beta.pdf contains PFOA and water."
    suggestions = memory.suggest(_current(out, node, f"{kind}-2"), limit=3)
    assert suggestions and suggestions[0].tool == "pfas_classifier"
    assert answer == crew_answer + "\n\n" + format_suggestions(suggestions, limit=3)


def _current(out: dict, node: EpisodicMemoryNode, thread_id: str):
    """Recompile the session the node saw (the memory's suggestions for it are deterministic)."""
    from integrations.langgraph._messages import trajectory_from_messages

    messages = out["messages"][:-1] + [
        out["messages"][-1].model_copy(update={"content": "beta.pdf contains PFOA and water."})
    ]
    return trajectory_from_messages(messages, session_id=thread_id, scope="default").compile()


def test_suggest_command_and_unknown_session_without_checkpointer(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory), checkpointer=None)
    model.load(extract_turn())
    # No checkpointer and no thread id: the session id comes from the first human message.
    out = graph.invoke({"messages": [HumanMessage(EXTRACT)]})
    assert reply_text(out["messages"]) == "acme.pdf contains PFOA and water."
    seen = len(model.seen)
    out = graph.invoke({"messages": [HumanMessage("/suggest")]})
    assert reply_text(
        out["messages"]
    ) == "No suggestions yet: this session has no instructions." or (
        reply_text(out["messages"]).startswith("No suggestions yet")
    )
    assert len(model.seen) == seen


def test_sealed_crew_falls_back_to_the_callback_recorder(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    crew = agent_crew(model)

    def sealed(state: MessagesState, config) -> dict:
        result = crew.invoke({"messages": state["messages"]}, config)
        return {"messages": [result["messages"][-1]]}  # hides the tool calls

    graph = with_memory(sealed, EpisodicMemoryNode(memory))
    recorder = TrajectoryRecorder()
    config = {**thread("sealed"), "callbacks": [recorder]}
    model.load(extract_turn())
    ask(graph, EXTRACT, config)
    FLAKY.fail_once("pfas_classifier")
    model.load(classify_turn())
    ask(graph, CLASSIFY, config)
    state = graph.get_state(thread("sealed")).values["messages"]
    assert not any(getattr(m, "tool_calls", None) for m in state)  # really sealed
    assert ask(graph, "/save", config).startswith("Saved workflow session/sealed (2 steps)")
    saved = memory.load("session/sealed")
    assert leaf_names(saved) == ["product_extractor", "pfas_classifier"]
    assert saved.steps[0].steps[0].agent == "crew"
    assert [f.call.name for f in saved.failed] == ["pfas_classifier"]
    assert saved.failed[0].error.startswith("TimeoutError")


def _nested_graph(memory, coordinator_model: ScriptedChatModel, chemist_model: ScriptedChatModel):
    chemist = react_crew(chemist_model, name="chemist")

    @tool
    def ask_chemist(task: str) -> str:
        """Hand a chemistry task to the chemist sub-agent."""
        result = chemist.invoke({"messages": [HumanMessage(task)]})
        return result["messages"][-1].text

    from lg_scaffold import product_extractor

    crew = agent_crew(coordinator_model, tools=[product_extractor, ask_chemist], name="coordinator")
    return with_memory(crew, EpisodicMemoryNode(memory))


def test_sub_agent_calls_nest_under_the_handoff_tool(memory) -> None:
    coordinator = ScriptedChatModel(messages=iter([]))
    chemist = ScriptedChatModel(messages=iter([]))
    graph = _nested_graph(memory, coordinator, chemist)
    recorder = TrajectoryRecorder()
    config = {**thread("nested"), "callbacks": [recorder]}
    coordinator.load(
        [
            call("product_extractor", {"file": "acme.pdf"}, "c1"),
            call("ask_chemist", {"task": "classify PFOA"}, "c2"),
            AIMessage("PFOA is a PFAS."),
        ]
    )
    FLAKY.fail_once("pfas_classifier")
    chemist.load(
        [
            call("pfas_classifier", {"names": ["PFOA"]}, "c1"),
            call("pfas_classifier", {"names": ["PFOA"]}, "c2"),
            call("write_report", {"summary": "PFOA is PFAS"}, "c3"),
            AIMessage("PFOA is a PFAS."),
        ]
    )
    assert crew_part(ask(graph, "Check acme.pdf for PFAS", config)) == "PFOA is a PFAS."
    ask(graph, "/save", config)
    saved = memory.load("session/nested")
    handoff = saved.steps[0].steps[1]
    assert handoff.name == "ask_chemist"
    assert [s.name for s in handoff.steps] == ["pfas_classifier", "write_report"]
    assert {s.agent for s in handoff.steps} == {"chemist"}  # the sub-agent graph's name
    assert leaf_names(saved) == ["product_extractor", "pfas_classifier", "write_report"]
    assert [(f.call.name, f.parent) for f in saved.failed] == [("pfas_classifier", "0.1")]


def test_messages_give_instructions_and_answers_only(memory) -> None:
    """Calls come from the run hierarchy: tool calls a node merely writes into the messages never
    ran, so they are no steps (real shared-message handoffs are in the crew-shape suite)."""

    def crew(state: MessagesState) -> dict:
        return {
            "messages": [
                AIMessage("", name="supervisor", tool_calls=[_tc("transfer_to_chemist", "h1")]),
                _tool_message("h1", "transferred"),
                AIMessage("", name="chemist", tool_calls=[_tc("pfas_classifier", "p1")]),
                _tool_message("p1", "PFAS"),
                AIMessage("Done.", name="supervisor"),
            ]
        }

    graph = with_memory(crew, EpisodicMemoryNode(memory))
    ask(graph, "Classify PFOA", thread("written"))
    assert ask(graph, "/save", thread("written")).startswith("Saved workflow session/written")
    saved = memory.load("session/written")
    assert [s.text for s in saved.steps] == ["Classify PFOA"]
    assert saved.steps[0].steps == () and saved.failed == ()


def _tc(name: str, call_id: str) -> dict:
    return {"name": name, "args": {}, "id": call_id, "type": "tool_call"}


def _tool_message(call_id: str, content: str):
    from langchain_core.messages import ToolMessage

    return ToolMessage(content, tool_call_id=call_id)


def test_async_invocation(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory))

    async def run() -> tuple[str, str]:
        model.load(extract_turn())
        await aask(graph, EXTRACT, thread("a1"))
        FLAKY.fail_once("pfas_classifier")
        model.load(classify_turn())
        await aask(graph, CLASSIFY, thread("a1"))
        saved = await aask(graph, "/save", thread("a1"))
        model.load(extract_turn("beta.pdf"))
        return saved, await aask(graph, EXTRACT_NEW, thread("a2"))

    saved, answer = asyncio.run(run())
    assert saved.startswith("Saved workflow session/a1 (2 steps)")
    head, _, tail = answer.partition("\n\n")
    assert head == "beta.pdf contains PFOA and water."
    assert "pfas_classifier" in tail


@dataclass
class Ctx:
    scope: str = "default"


def test_scope_comes_from_the_run_context_or_config(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    crew = agent_crew(model)
    builder = StateGraph(MessagesState, context_schema=Ctx)
    node = EpisodicMemoryNode(memory)
    builder.add_node("crew", crew)
    builder.add_node("episodic_memory", node)
    builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
    builder.add_edge("crew", "episodic_memory")
    builder.add_edge("episodic_memory", END)
    from langgraph.checkpoint.memory import InMemorySaver

    graph = builder.compile(checkpointer=InMemorySaver())
    model.load(extract_turn())
    ask(graph, EXTRACT, thread("s1"), context=Ctx(scope="alice"))
    model.load(classify_turn())
    ask(graph, CLASSIFY, thread("s1"), context=Ctx(scope="alice"))
    assert "scope 'alice'" in ask(graph, "/save", thread("s1"), context=Ctx(scope="alice"))

    model.load(extract_turn("beta.pdf"))
    other = ask(graph, EXTRACT_NEW, thread("s2"), context=Ctx(scope="bob"))
    assert other == "beta.pdf contains PFOA and water."  # scopes never mix
    model.load(extract_turn("beta.pdf"))
    same = ask(graph, EXTRACT_NEW, thread("s3", scope="alice"))  # scope from config
    assert "pfas_classifier" in same


def test_autosave_on_success_saves_turns_without_failures(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    node = EpisodicMemoryNode(memory, policy=SessionPolicy(autosave="on_success"))
    graph = with_memory(agent_crew(model), node)
    FLAKY.fail_once("product_extractor")
    model.load(
        [
            call("product_extractor", {"file": "acme.pdf"}, "x1"),
            call("product_extractor", {"file": "acme.pdf"}, "x2"),
            AIMessage("done"),
        ]
    )
    ask(graph, EXTRACT, thread("auto"))
    with pytest.raises(Exception):  # noqa: B017 - not saved: the turn had a failed call
        memory.load("session/auto")
    FLAKY.fail_once("pfas_classifier")
    model.load(classify_turn())
    ask(graph, CLASSIFY, thread("auto"))
    with pytest.raises(Exception):  # noqa: B017 - not saved: the turn had a failed call
        memory.load("session/auto")
    model.load([call("write_report", {"summary": "s"}, "w"), AIMessage("written")])
    ask(graph, "Write the report", thread("auto"))
    saved = memory.load("session/auto")
    assert leaf_names(saved) == ["product_extractor", "pfas_classifier", "write_report"]


def test_content_block_answers_stay_untouched_and_suggestions_follow(memory) -> None:
    memory.save(_saved_workflow(["product_extractor", "pfas_classifier"], "session/seed"))

    def crew(state: MessagesState) -> dict:
        return {
            "messages": [
                AIMessage("", tool_calls=[_tc("product_extractor", "q1")]),
                _tool_message("q1", json.dumps({"ingredients": ["PFOA"]})),
                AIMessage([{"type": "text", "text": "Found PFOA."}]),
            ]
        }

    graph = with_memory(crew, EpisodicMemoryNode(memory))
    out = graph.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread("blocks"))
    answer, shown = out["messages"][-2:]
    assert answer.content == [{"type": "text", "text": "Found PFOA."}]
    assert memory_kind(shown) == "suggestions"
    assert shown.text.startswith("Suggested next steps")
    assert reply_text(out["messages"]) == "Found PFOA.\n\n" + shown.text


def _saved_workflow(tools: list[str], workflow_id: str):
    from provenance.model import Workflow

    steps = tuple(CallStep(name=t, args={}) for t in tools)
    return Workflow(id=workflow_id, steps=(InstructionStep(text=EXTRACT, steps=steps),))


def test_same_session_twice_compiles_to_equal_workflows(memory) -> None:
    """Call ids and times differ between runs; the workflows are equal without them."""
    results = []
    for run in ("r1", "r2"):
        model = ScriptedChatModel(messages=iter([]))
        graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory))
        model.load(extract_turn(prefix=run))
        ask(graph, EXTRACT, thread("same"))
        ask(graph, "/save", thread("same"))
        results.append(memory.load("session/same"))
    assert without_run_details(results[0]) == without_run_details(results[1])


def test_shown_suggestions_are_recorded_as_provenance_queryable_with_sparql(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    graph = with_memory(agent_crew(model), EpisodicMemoryNode(memory))
    model.load(extract_turn())
    ask(graph, EXTRACT, thread("p1"))
    model.load(classify_turn())
    ask(graph, CLASSIFY, thread("p1"))
    ask(graph, "/save", thread("p1"))
    model.load(extract_turn("beta.pdf"))
    answer = ask(graph, EXTRACT_NEW, thread("p2"))
    assert "pfas_classifier" in answer

    result = memory.store.query("suggestion-sources", {"session": "p2"})
    rows = [{k: str(v) for k, v in row.items() if v is not None} for row in result.dicts()]
    assert rows, "no suggestion activity was recorded"
    assert {"session": "p2", "workflow": "session/p1", "tool": "pfas_classifier"}.items() <= (
        rows[0].items()
    )
    assert rows[0]["rank"] == "1"


def test_attach_from_the_last_release_warns_and_keeps_the_graph_working(memory) -> None:
    # Last release's README: node.attach(graph) added the node's recorder to the graph's
    # callbacks. Capture needs no attach step now: it warns and hands back the same graph.
    model = ScriptedChatModel(messages=iter([]))
    node = EpisodicMemoryNode(memory)
    graph = with_memory(agent_crew(model), node)
    with pytest.warns(DeprecationWarning, match=r"EpisodicMemoryNode.attach\(graph\)"):
        attached = node.attach(graph)
    assert attached is graph
    model.load(extract_turn())
    assert ask(attached, EXTRACT, thread("attached")) == "acme.pdf contains PFOA and water."
    assert ask(attached, "/save", thread("attached")).startswith("Saved workflow session/attached")
    assert leaf_names(memory.load("session/attached")) == ["product_extractor"]
