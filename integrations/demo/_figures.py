"""The two scripted scenes of the demo: the paper's Figure 3 session and Figure 4 fallback case."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from integrations.demo import _render as render
from integrations.demo._sessions import BeeAISession, ChatSession, LangGraphSession, SuggestionTap
from integrations.demo._setup import workflow_steps

__all__ = ["DemoContext", "figure3", "figure4", "open_session"]

TITLES = {"langgraph": "LangGraph", "beeai": "BeeAI"}
_ANSWER = "Chemist Agent (crew result) + episodic memory (suggestions)"


@dataclass
class DemoContext:
    """What every scene needs."""

    memory: Any
    """The :class:`~em_plugin.memory.EpisodicMemory`."""
    store: Any
    """The :class:`~provenance.stores.WorkflowStore` under it."""
    router: Any
    """The offline router (used when no LLM is configured)."""
    llm: Any
    """The :class:`~integrations.demo._llm_env.LLMSpec` of the crew's chat model."""
    tap: SuggestionTap
    """Where the suggestions shown per session are read."""


def open_session(context: DemoContext, framework: str, session_id: str) -> ChatSession:
    """Build the crew on ``framework`` and open a chat session with it."""
    from integrations.demo import _llm_env, crews

    if framework == "langgraph":
        model = None if context.llm.offline else _llm_env.langchain_chat_model(context.llm)
        graph_crew = crews.build_langgraph_crew(context.memory, model=model, router=context.router)
        return LangGraphSession(graph_crew, session_id, context.tap)
    model = None if context.llm.offline else _llm_env.beeai_chat_model(context.llm)
    # A demo run is one session on each framework: the LangGraph crew's checkpointer is in
    # memory, so the BeeAI one keeps no journal either; a journaled "demo-beeai" would resume
    # every earlier run's turns and grow by one scene per run.
    bee_crew = crews.build_beeai_crew(
        context.memory, model=model, router=context.router, journal=False
    )
    return BeeAISession(bee_crew, session_id)


def figure3(
    console: Console, context: DemoContext, framework: str, instructions: Sequence[str]
) -> list[str]:
    """Run the scripted session, save it and query the saved workflow's steps.

    Returns:
        The problems seen (a turn without memory-based suggestions, a failed save).
    """
    title = TITLES[framework]
    session_id = f"demo-{framework}"
    workflow_id = f"session/{session_id}"
    render.section(
        console,
        f"Figure 3 on {title}: a chat session with suggestions from episodic memory",
        "Each answer is the crew's result, unchanged, then the suggested next steps.",
    )
    problems: list[str] = []
    session = open_session(context, framework, session_id)
    try:
        for text in instructions:
            render.user_turn(console, title, session_id, text)
            turn = session.ask(text)
            render.answer(console, _ANSWER, turn.text, turn.crew_answer)
            render.suggestion_sources(console, turn.suggestions)
            if not any(s.evidence for s in turn.suggestions):
                problems.append(f"{title}: no memory-based suggestions after {text!r}")
        render.user_turn(console, title, session_id, "/save")
        reply = session.ask("/save")
        render.answer(console, "episodic memory", reply.text)
    finally:
        session.close()
    if workflow_id not in context.store:
        return [*problems, f"{title}: /save did not store {workflow_id}"]
    _, rows = workflow_steps(context.store, workflow_id, "workflow-steps")
    console.print()
    title = f"SPARQL query workflow-steps, workflow={workflow_id} (from the store)"
    render.steps_table(console, title, rows)
    if not rows:
        problems.append(f"{title}: the workflow-steps query found no steps in {workflow_id}")
    return problems


def figure4(console: Console, context: DemoContext, framework: str, question: str) -> list[str]:
    """Ask a question no tool serves; the suggestions fall back on the crew description.

    Returns:
        The problems seen (no fallback suggestions).
    """
    title = TITLES[framework]
    session_id = f"demo-{framework}-fallback"
    render.section(
        console,
        f"Figure 4 on {title}: nothing similar in memory, suggestions from the crew description",
    )
    session = open_session(context, framework, session_id)
    try:
        render.user_turn(console, title, session_id, question)
        turn = session.ask(question)
    finally:
        session.close()
    render.answer(console, _ANSWER, turn.text, turn.crew_answer)
    render.suggestion_sources(console, turn.suggestions)
    if not turn.suggestions or any(s.source != "fallback" for s in turn.suggestions):
        return [f"{title}: the suggestions for {question!r} are not all fallback ones"]
    return []
