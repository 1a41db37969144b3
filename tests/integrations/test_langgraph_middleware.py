"""EpisodicMemoryMiddleware on real create_agent agents, and the recall tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
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
    load_handoff_turn,
    product_extractor,
    thread,
    write_report,
)

from integrations.langgraph import EpisodicMemoryMiddleware, recall_workflows_tool, reply_text
from provenance.model import CallStep


def crew_part(answer: str) -> str:
    """The crew's answer: everything before the appended suggestions."""
    return answer.partition("\n\n")[0]


def leaf_names(workflow) -> list[str]:
    return [s.name if isinstance(s, CallStep) else f"<{s.text}>" for s in workflow.leaves()]


def ask(agent: Any, text: str, config: dict[str, Any], **kwargs: Any) -> str:
    return reply_text(
        agent.invoke({"messages": [HumanMessage(text)]}, config, **kwargs)["messages"]
    )


@pytest.fixture
def memory():
    mem = make_memory()
    yield mem
    mem.close()


def agent_with_memory(model: ScriptedChatModel, middleware: EpisodicMemoryMiddleware, **kw: Any):
    return agent_crew(model, middleware=[middleware], checkpointer=InMemorySaver(), **kw)


def test_capture_save_and_suggest_in_a_new_thread(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    agent = agent_with_memory(model, EpisodicMemoryMiddleware(memory))
    t1 = thread("m1")
    model.load(extract_turn())
    assert ask(agent, EXTRACT, t1) == "acme.pdf contains PFOA and water."
    FLAKY.fail_once("pfas_classifier")
    model.load(classify_turn())
    assert crew_part(ask(agent, CLASSIFY, t1)) == "PFOA is a PFAS; water is not."
    seen = len(model.seen)
    assert ask(agent, "/save", t1) == "Saved workflow session/m1 (2 steps) in scope 'default'."
    assert len(model.seen) == seen  # the model is not called for /save

    saved = memory.load("session/m1")
    assert leaf_names(saved) == ["product_extractor", "pfas_classifier"]
    assert [s.text for s in saved.steps] == [EXTRACT, CLASSIFY]
    assert saved.steps[0].steps[0].agent == "crew"
    assert [f.call.name for f in saved.failed] == ["pfas_classifier"]

    model.load(extract_turn("beta.pdf"))
    out = agent.invoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread("m2"))
    assert "episodic_trace" not in out  # a private state key
    answer = reply_text(out["messages"])
    head, sep, tail = answer.partition("\n\n")
    assert head == "beta.pdf contains PFOA and water." and sep
    assert tail.startswith("Suggested next steps") and "pfas_classifier" in tail


def test_async_invocation_and_prompt_injection(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    agent = agent_with_memory(model, EpisodicMemoryMiddleware(memory, inject=True))

    async def run() -> str:
        model.load(extract_turn())
        await agent.ainvoke({"messages": [HumanMessage(EXTRACT)]}, thread("i1"))
        model.load(classify_turn())
        await agent.ainvoke({"messages": [HumanMessage(CLASSIFY)]}, thread("i1"))
        await agent.ainvoke({"messages": [HumanMessage("/save")]}, thread("i1"))
        model.seen.clear()
        model.load(extract_turn("beta.pdf"))
        out = await agent.ainvoke({"messages": [HumanMessage(EXTRACT_NEW)]}, thread("i2"))
        return reply_text(out["messages"])

    answer = asyncio.run(run())
    assert answer.startswith("beta.pdf contains PFOA and water.\n\nSuggested next steps")
    # The first model call of the new thread retrieved nothing (a lone instruction matches no
    # calls) but got the procedural suggestions; the second call, after product_extractor, saw
    # the past workflow and its next tool.
    systems = [m[0] for m in model.seen if isinstance(m[0], SystemMessage)]
    assert "- none similar enough" in systems[0].text
    block = systems[-1].text
    assert block.startswith("You are a chemistry crew.\n\nRelevant past workflows")
    assert "session/i1" in block
    assert "Suggested next tools: pfas_classifier" in block


def test_inject_false_leaves_the_prompt_alone(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    agent = agent_with_memory(model, EpisodicMemoryMiddleware(memory))
    model.load(extract_turn())
    ask(agent, EXTRACT, thread("p"))
    assert all(m[0].text == "You are a chemistry crew." for m in model.seen)


def test_sub_agent_with_the_middleware_nests_under_the_handoff(memory) -> None:
    chemist_model = ScriptedChatModel(messages=iter([]))
    middleware = EpisodicMemoryMiddleware(memory)
    from lg_scaffold import pfas_classifier

    chemist = agent_crew(
        chemist_model,
        tools=[pfas_classifier, write_report],
        middleware=[middleware],
        name="chemist",
    )

    @tool
    def ask_chemist(task: str) -> str:
        """Hand a chemistry task to the chemist sub-agent."""
        return chemist.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

    model = ScriptedChatModel(messages=iter([]))
    coordinator = agent_with_memory(
        model, middleware, tools=[product_extractor, ask_chemist], name="coordinator"
    )
    load_handoff_turn(model, chemist_model)
    # The sub-agent's answer gets no suggestions (the outer agent owns the session).
    out = coordinator.invoke({"messages": [HumanMessage("Check acme.pdf")]}, thread("n1"))
    assert crew_part(reply_text(out["messages"])) == "PFOA is a PFAS."
    handoff_result = next(m for m in out["messages"] if getattr(m, "name", None) == "ask_chemist")
    assert handoff_result.text == "The chemist's answer."  # nothing appended inside
    ask(coordinator, "/save", thread("n1"))
    saved = memory.load("session/n1")
    handoff = saved.steps[0].steps[1]
    assert [(s.name, s.agent) for s in handoff.steps] == [
        ("pfas_classifier", "chemist"),
        ("write_report", "chemist"),
    ]
    assert leaf_names(saved) == ["product_extractor", "pfas_classifier", "write_report"]
    assert [(f.call.name, f.parent) for f in saved.failed] == [("pfas_classifier", "0.1")]


def test_recall_tool_looks_past_workflows_up(memory) -> None:
    model = ScriptedChatModel(messages=iter([]))
    agent = agent_with_memory(model, EpisodicMemoryMiddleware(memory))
    model.load(extract_turn())
    ask(agent, EXTRACT, thread("r1", scope="team"))
    model.load(classify_turn())
    ask(agent, CLASSIFY, thread("r1", scope="team"))
    assert "scope 'team'" in ask(agent, "/save", thread("r1", scope="team"))

    recall = recall_workflows_tool(memory)
    assert recall.name == "recall_workflows"
    assert set(recall.tool_call_schema.model_json_schema()["properties"]) == {"query"}
    user = ScriptedChatModel(messages=iter([]))
    recaller = agent_crew(user, tools=[recall, product_extractor], checkpointer=InMemorySaver())
    user.load([call("recall_workflows", {"query": EXTRACT}, "q1"), AIMessage("ok")])
    out = recaller.invoke(
        {"messages": [HumanMessage("What did we do before?")]}, thread("r2", scope="team")
    )
    tool_text = next(m.text for m in out["messages"] if m.type == "tool")
    assert "session/r1" in tool_text
    assert "steps: product_extractor -> pfas_classifier" in tool_text

    user.load([call("recall_workflows", {"query": EXTRACT}, "q2"), AIMessage("ok")])
    out = recaller.invoke({"messages": [HumanMessage("again")]}, thread("r3", scope="other"))
    tool_text = next(m.text for m in out["messages"] if m.type == "tool")
    assert tool_text.startswith("No past workflow")
