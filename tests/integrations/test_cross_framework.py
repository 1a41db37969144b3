"""One session, two frameworks, one disk store.

The same scripted session (extract with a flaky tool that is retried, classify, ``/save``) runs
through BeeAI's EM agent (a coordinator with two ``HandoffTool`` sub-agents) and through a
LangGraph ``create_agent`` coordinator whose handoffs are tools running ``create_agent``
sub-agents. Both save into the same on-disk store, reopened between the frameworks, and compile
to equal workflows up to run details (call ids, times) and framework/session metadata. Each
framework's next session is then served by the other's saved workflow.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import beeai_support as bee
import lg_scaffold as lg
from beeai_framework.utils.asynchronous import run_sync
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from em_plugin.capture.trajectory import without_run_details
from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.beeai import EpisodicMemoryAgent
from integrations.langgraph import EpisodicMemoryMiddleware as LangGraphMiddleware
from integrations.langgraph import reply_text
from provenance.model import Workflow


def _open(path: Path) -> EpisodicMemory:
    return EpisodicMemory(store=str(path), embedder=FakeEmbedder(64))


def _beeai_session(memory: EpisodicMemory, session: str) -> None:
    crew = bee.build_crew()
    em = EpisodicMemoryAgent(crew.coordinator, memory, session_id=session)

    async def run() -> None:
        crew.turn_extract(flaky=True)
        await em.run(bee.EXTRACT)
        crew.turn_classify()
        await em.run(bee.CLASSIFY)
        await em.run("/save")

    asyncio.run(run())


class _LangGraphCrew:
    """The same crew in LangGraph: handoffs are tools that run ``create_agent`` sub-agents."""

    def __init__(self, memory: EpisodicMemory) -> None:
        middleware = [LangGraphMiddleware(memory)]
        self.llms = {n: lg.ScriptedChatModel(messages=iter([])) for n in ("c", "x", "k")}
        extractor_agent = lg.agent_crew(
            self.llms["x"], tools=[lg.product_extractor], middleware=middleware, name="extractor"
        )
        classifier_agent = lg.agent_crew(
            self.llms["k"], tools=[lg.pfas_classifier], middleware=middleware, name="classifier"
        )

        @tool
        def extractor(task: str) -> str:
            """Extracts ingredients from SDS files."""
            return extractor_agent.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

        @tool
        def classifier(task: str) -> str:
            """Classifies chemicals as PFAS or not."""
            return classifier_agent.invoke({"messages": [HumanMessage(task)]})["messages"][-1].text

        self.coordinator = lg.agent_crew(
            self.llms["c"],
            tools=[extractor, classifier],
            middleware=middleware,
            name="coordinator",
            checkpointer=InMemorySaver(),
        )

    def run(self, session: str, text: str) -> str:
        out = self.coordinator.invoke({"messages": [HumanMessage(text)]}, lg.thread(session))
        return reply_text(out["messages"])

    def script_extract(self, file: str = "acme.pdf", *, flaky: bool = False) -> str:
        answer = f"{file} contains PFOA and water."
        self.llms["c"].load(
            [lg.call("extractor", {"task": f"Extract the ingredients of {file}"}, "h1"),
             AIMessage(answer)]
        )  # fmt: skip
        attempts = [lg.call("product_extractor", {"file": file}, "x1")]
        if flaky:
            lg.FLAKY.fail_once("product_extractor")
            attempts.append(lg.call("product_extractor", {"file": file}, "x2"))
        self.llms["x"].load([*attempts, AIMessage("PFOA, water")])
        return answer

    def script_classify(self) -> None:
        self.llms["c"].load(
            [lg.call("classifier", {"task": "Classify PFOA and water"}, "h2"),
             AIMessage("PFOA is a PFAS; water is not.")]
        )  # fmt: skip
        self.llms["k"].load(
            [lg.call("pfas_classifier", {"names": ["PFOA", "water"]}, "p1"),
             AIMessage("PFOA: PFAS")]
        )  # fmt: skip


def _langgraph_session(memory: EpisodicMemory, session: str) -> None:
    crew = _LangGraphCrew(memory)
    crew.script_extract(flaky=True)
    crew.run(session, lg.EXTRACT)
    crew.script_classify()
    crew.run(session, lg.CLASSIFY)
    crew.run(session, "/save")


def _comparable(workflow: Workflow) -> Workflow:
    """Drop run details and the framework/session/crew labels; the rest must be equal."""
    return without_run_details(workflow).replace(id="session", session=None, crew=None)


def test_same_session_through_both_frameworks_on_one_disk_store(tmp_path: Path) -> None:
    assert (bee.EXTRACT, bee.CLASSIFY) == (lg.EXTRACT, lg.CLASSIFY)
    store = tmp_path / "store"
    with _open(store) as memory:
        _beeai_session(memory, "bee-1")
    with _open(store) as memory:  # reopened from disk: the BeeAI workflow is there
        assert memory.ids() == ["session/bee-1"]
        _langgraph_session(memory, "lg-1")
    with _open(store) as memory:
        beeai, langgraph = memory.load("session/bee-1"), memory.load("session/lg-1")

    assert (beeai.framework, langgraph.framework) == ("beeai", "langgraph")
    assert [s.name for s in beeai.leaves()] == ["product_extractor", "pfas_classifier"]
    assert [f.call.name for f in beeai.failed] == ["product_extractor"]
    assert _comparable(beeai) == _comparable(langgraph)


def test_each_framework_is_served_by_the_other_ones_workflow(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with _open(store) as memory:
        _langgraph_session(memory, "lg-1")
    with _open(store) as memory:  # BeeAI, next process: suggestions from the LangGraph session
        crew = bee.build_crew()
        answer = crew.turn_extract("beta.pdf")
        em = EpisodicMemoryAgent(crew.coordinator, memory, session_id="bee-2")
        response = run_sync(em.run(bee.EXTRACT_NEW))  # sync invocation
        assert response.answer == answer
        assert response.suggestions[0].tool == "classifier"  # lifted to the handoff
        assert {e.workflow_id for e in response.suggestions[0].evidence} == {"session/lg-1"}
        memory.delete("session/lg-1")
        _beeai_session(memory, "bee-1")
    with _open(store) as memory:  # LangGraph, next process: suggestions from the BeeAI session
        crew = _LangGraphCrew(memory)
        answer = crew.script_extract("beta.pdf")
        text = crew.run("lg-2", lg.EXTRACT_NEW)
        head, _, tail = text.partition("\n\n")
        assert head == answer
        # At the user's level: the handoff the coordinator makes, not the sub-agent's tool.
        assert "[classifier]" in tail and "pfas_classifier" not in tail
        assert memory.ids() == ["session/bee-1"]
