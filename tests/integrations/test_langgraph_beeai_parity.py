"""The same session through LangGraph and BeeAI: equal workflows, one shared store for both.

Both crews are a coordinator that hands tasks to an ``extractor`` and a ``classifier`` sub-agent.
In BeeAI the handoffs are ``HandoffTool``s; in LangGraph they are tools that run ``create_agent``
sub-agents. Each framework's scripted models make the same calls; the extractor's tool fails
once and is retried.
"""

from __future__ import annotations

import asyncio
from typing import Any

import beeai_support as bee
import lg_scaffold as lg
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from em_plugin.capture.trajectory import without_run_details
from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.beeai import EpisodicMemoryMiddleware as BeeMiddleware
from integrations.langgraph import (
    EpisodicMemoryMiddleware,
    EpisodicMemoryNode,
    TrajectoryRecorder,
    reply_text,
)

EXTRACT_TASK = "Extract the ingredients of acme.pdf"
CLASSIFY_TASK = "Classify PFOA and water"


@pytest.fixture
def memory():
    mem = EpisodicMemory(store="memory:", embedder=FakeEmbedder(64))
    yield mem
    mem.close()


class LangGraphCrew:
    """Coordinator + extractor + classifier as create_agent agents; handoffs are tools."""

    def __init__(self, middleware: Any = None) -> None:
        extra = [middleware] if middleware is not None else []
        self.coordinator_llm = lg.ScriptedChatModel(messages=iter([]))
        self.extractor_llm = lg.ScriptedChatModel(messages=iter([]))
        self.classifier_llm = lg.ScriptedChatModel(messages=iter([]))
        extractor_agent = lg.agent_crew(
            self.extractor_llm, tools=[lg.product_extractor], middleware=extra, name="extractor"
        )
        classifier_agent = lg.agent_crew(
            self.classifier_llm, tools=[lg.pfas_classifier], middleware=extra, name="classifier"
        )

        @tool
        def extractor(task: str) -> str:
            """Hand an extraction task to the extractor sub-agent."""
            return extractor_agent.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

        @tool
        def classifier(task: str) -> str:
            """Hand a classification task to the classifier sub-agent."""
            return classifier_agent.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

        self.coordinator = lg.agent_crew(
            self.coordinator_llm,
            tools=[extractor, classifier],
            middleware=extra,
            name="coordinator",
            checkpointer=InMemorySaver() if middleware is not None else None,
        )

    def turn_extract(self) -> None:
        lg.FLAKY.fail_once("product_extractor")
        self.coordinator_llm.load(
            [
                lg.call("extractor", {"task": EXTRACT_TASK}, "h1"),
                AIMessage("acme.pdf contains PFOA and water."),
            ]
        )
        self.extractor_llm.load(
            [
                lg.call("product_extractor", {"file": "acme.pdf"}, "x1"),
                lg.call("product_extractor", {"file": "acme.pdf"}, "x2"),
                AIMessage("PFOA, water"),
            ]
        )

    def turn_classify(self) -> None:
        self.coordinator_llm.load(
            [
                lg.call("classifier", {"task": CLASSIFY_TASK}, "h2"),
                AIMessage("PFOA is a PFAS; water is not."),
            ]
        )
        self.classifier_llm.load(
            [
                lg.call("pfas_classifier", {"names": ["PFOA", "water"]}, "p1"),
                AIMessage("PFOA: PFAS"),
            ]
        )


def run_beeai(memory: EpisodicMemory, session: str) -> Any:
    mw = BeeMiddleware(memory)
    crew = bee.build_crew()
    context = {"session_id": session}

    async def run() -> None:
        crew.turn_extract(flaky=True)
        await crew.coordinator.run(bee.EXTRACT).middleware(mw).context(context)
        crew.turn_classify()
        await crew.coordinator.run(bee.CLASSIFY).middleware(mw).context(context)
        await crew.coordinator.run("/save").middleware(mw).context(context)

    asyncio.run(run())
    return memory.load(f"session/{session}")


def run_langgraph_node(memory: EpisodicMemory, session: str) -> Any:
    crew = LangGraphCrew()
    graph = lg.with_memory(crew.coordinator, EpisodicMemoryNode(memory))
    config = {**lg.thread(session), "callbacks": [TrajectoryRecorder()]}
    crew.turn_extract()
    graph.invoke({"messages": [HumanMessage(lg.EXTRACT)]}, config)
    crew.turn_classify()
    graph.invoke({"messages": [HumanMessage(lg.CLASSIFY)]}, config)
    graph.invoke({"messages": [HumanMessage("/save")]}, config)
    return memory.load(f"session/{session}")


def run_langgraph_middleware(memory: EpisodicMemory, session: str) -> Any:
    crew = LangGraphCrew(EpisodicMemoryMiddleware(memory))
    config = lg.thread(session)
    crew.turn_extract()
    crew.coordinator.invoke({"messages": [HumanMessage(lg.EXTRACT)]}, config)
    crew.turn_classify()
    crew.coordinator.invoke({"messages": [HumanMessage(lg.CLASSIFY)]}, config)
    crew.coordinator.invoke({"messages": [HumanMessage("/save")]}, config)
    return memory.load(f"session/{session}")


def comparable(workflow: Any) -> Any:
    """Equal up to run details (call ids, times) and the framework/crew labels."""
    return without_run_details(workflow).replace(crew=None)


@pytest.mark.parametrize("langgraph_path", ["node", "middleware"])
def test_same_session_compiles_to_equal_workflows(langgraph_path: str, memory) -> None:
    assert bee.EXTRACT == lg.EXTRACT and bee.CLASSIFY == lg.CLASSIFY
    beeai = run_beeai(memory, "shared-session")
    memory.forget()  # same session id: start the LangGraph run from an empty memory
    run = run_langgraph_node if langgraph_path == "node" else run_langgraph_middleware
    langgraph = run(memory, "shared-session")
    assert (beeai.framework, langgraph.framework) == ("beeai", "langgraph")
    assert [s.name for s in langgraph.leaves()] == ["product_extractor", "pfas_classifier"]
    assert comparable(langgraph) == comparable(beeai)


def test_one_store_serves_both_frameworks(memory) -> None:
    """A workflow saved from LangGraph shapes BeeAI's suggestions, and the other way round."""
    run_langgraph_node(memory, "lg-session")
    crew = bee.build_crew()
    mw = BeeMiddleware(memory)
    answer = crew.turn_extract("beta.pdf")

    async def run() -> Any:
        context = {"session_id": "bee-2"}
        return await crew.coordinator.run(bee.EXTRACT_NEW).middleware(mw).context(context)

    response = asyncio.run(run())
    head, _, tail = response.last_message.text.partition("\n\n")
    assert head == answer
    assert "[classifier]" in tail and "pfas_classifier" not in tail  # the coordinator's handoff
    assert "session/lg-session" in {
        e.workflow_id for s in mw.suggestions("bee-2") for e in s.evidence
    }

    run_beeai(memory, "bee-session")
    memory.delete("session/lg-session")
    lgcrew = LangGraphCrew()
    graph = lg.with_memory(lgcrew.coordinator, EpisodicMemoryNode(memory))
    lgcrew.turn_extract()
    out = graph.invoke(
        {"messages": [HumanMessage(lg.EXTRACT_NEW)]},
        {**lg.thread("lg-2"), "callbacks": [TrajectoryRecorder()]},
    )
    head, _, tail = reply_text(out["messages"]).partition("\n\n")
    assert head == "acme.pdf contains PFOA and water."
    # From the BeeAI session, the only one left, at the user's level (the coordinator's handoff).
    assert "[classifier]" in tail and "pfas_classifier" not in tail
    assert set(memory.ids()) == {"session/bee-session"}
