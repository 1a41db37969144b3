"""The demo crew on LangGraph and BeeAI with episodic memory: Figure 3, /save, Figure 4.

Real crews, real stores, real FAISS; the FakeEmbedder keeps it fast (it routes the Figure 3
instructions the same way the real model does; the off-topic question is one it cannot route).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rich.console import Console

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from em_plugin.session import SEPARATOR
from em_plugin.suggest import build_chain
from em_plugin.suggest.types import format_suggestions
from integrations.demo import FIGURE3, run_demo
from integrations.demo._figures import DemoContext, open_session
from integrations.demo._llm_env import LLMSpec
from integrations.demo._sessions import SuggestionTap
from integrations.demo._setup import load_bootstrap
from integrations.demo.pfas import CREW_DESCRIPTION
from integrations.demo.router import DATA_PREFIX, OfflineRouter
from provenance.model import CallStep, InstructionStep
from provenance.stores import open_store

OFF_TOPIC = "Who won the football world cup in 1998?"
FRAMEWORKS = ("langgraph", "beeai")


@pytest.fixture
def context() -> Iterator[DemoContext]:
    store = open_store("memory:")
    embedder = FakeEmbedder()
    tap = SuggestionTap()
    memory = EpisodicMemory(
        store=store,
        embedder=embedder,
        crew_description=CREW_DESCRIPTION,
        chain=build_chain("paper"),
        on_suggestions=tap,
    )
    assert load_bootstrap(memory, store) == 64
    yield DemoContext(memory, store, OfflineRouter(embedder), LLMSpec(), tap)
    memory.close()
    store.close()


def test_bootstrap_is_loaded_once(context: DemoContext) -> None:
    assert load_bootstrap(context.memory, context.store) == 0
    assert len(context.store) == 64 and "bootstrap/0064" in context.store


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_figure3_answers_are_the_crew_result_then_memory_suggestions(
    context: DemoContext, framework: str
) -> None:
    session = open_session(context, framework, f"t-{framework}")
    try:
        first = session.ask(FIGURE3[0])
        second = session.ask(FIGURE3[1])
    finally:
        session.close()

    for turn, opening in ((first, "FireStop AFFF 3%"), (second, "2 of 6 are PFAS")):
        assert turn.suggestions, "the memory suggested nothing"
        crew_answer, separator, tail = turn.text.partition(SEPARATOR + "Suggested next steps")
        assert crew_answer.startswith(opening) and DATA_PREFIX not in crew_answer
        assert turn.text == crew_answer + SEPARATOR + format_suggestions(turn.suggestions)
        evidence = {e.workflow_id for s in turn.suggestions for e in s.evidence}
        assert evidence and all(w.startswith("bootstrap/") for w in evidence)
    # After extraction the memory proposes classification; after classification, a next step.
    assert "pfas_classifier" in [s.tool for s in first.suggestions]
    assert {"markdown_table", "hazard_assessment"} & {s.tool for s in second.suggestions}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_save_stores_sub_agent_calls_nested_under_the_handoffs(
    context: DemoContext, framework: str
) -> None:
    session = open_session(context, framework, f"s-{framework}")
    try:
        for text in FIGURE3:
            session.ask(text)
        reply = session.ask("/save")
    finally:
        session.close()

    assert f"session/s-{framework}" in reply.text
    workflow = context.store.load(f"session/s-{framework}")
    assert [s.text for s in workflow.steps] == list(FIGURE3)
    expected = [
        ("product_extractor_agent", "product_extractor"),
        ("pfas_classifier_agent", "pfas_classifier"),
    ]
    for instruction, (handoff_name, tool) in zip(workflow.steps, expected, strict=True):
        assert isinstance(instruction, InstructionStep)
        [handoff] = instruction.steps
        assert isinstance(handoff, CallStep) and handoff.name == handoff_name
        assert handoff.agent == "chemist"
        [call] = handoff.steps
        assert (call.name, call.agent, call.steps) == (tool, handoff_name, ())
    assert [leaf.name for leaf in workflow.leaves()] == ["product_extractor", "pfas_classifier"]
    assert workflow.steps[0].steps[0].steps[0].args == {"file": "firestop_afff3_sds.txt"}
    assert workflow.crew == CREW_DESCRIPTION.name and workflow.failed == ()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_failed_tool_call_is_reported_and_kept_out_of_the_steps(
    context: DemoContext, framework: str
) -> None:
    session = open_session(context, framework, f"f-{framework}")
    try:
        turn = session.ask("Extract the product name and ingredients from missing_sds.txt")
        session.ask("/save")
    finally:
        session.close()

    assert turn.text.startswith("The product_extractor call failed:")
    workflow = context.store.load(f"session/f-{framework}")
    assert [f.call.name for f in workflow.failed] == ["product_extractor"]
    assert "product_extractor" not in [leaf.name for leaf in workflow.leaves()]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_figure4_answers_with_fallback_suggestions_from_the_crew(
    context: DemoContext, framework: str
) -> None:
    session = open_session(context, framework, f"q-{framework}")
    try:
        turn = session.ask(OFF_TOPIC)
    finally:
        session.close()

    assert turn.text.startswith("None of the crew's tools covers")
    # Nothing similar was retrieved: every suggestion comes from the crew description.
    assert turn.suggestions and all(s.source == "fallback" for s in turn.suggestions)
    assert not any(s.evidence for s in turn.suggestions)
    assert {s.tool for s in turn.suggestions} <= set(CREW_DESCRIPTION.tool_names)
    assert turn.text.endswith(SEPARATOR + format_suggestions(turn.suggestions))


def test_run_demo_shows_both_figures_for_both_frameworks() -> None:
    console = Console(record=True, width=140)

    code = run_demo("memory:", console, question=OFF_TOPIC)

    text = console.export_text()
    assert code == 0, text
    for title in ("LangGraph", "BeeAI"):
        assert f"Figure 3 on {title}" in text and f"Figure 4 on {title}" in text
    assert text.count("Saved workflow session/demo-") == 2
    assert "SPARQL query workflow-steps, workflow=session/demo-beeai" in text
    # A memory: store is gone after the run: no commands to explore it, a note instead.
    assert "store was in memory and is gone" in text and "explore further" not in text
