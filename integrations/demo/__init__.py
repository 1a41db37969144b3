"""``make demo`` / ``em-plugin demo``: the paper's PFAS crew with episodic memory, twice.

What it runs, for LangGraph and then BeeAI (paper §3):

- **Figure 3**: "Extract all ingredients from <sample SDS>" → the crew's answer followed by
  next steps suggested from similar past workflows; "Classify them as PFAS" → the answer with new
  suggestions; ``/save`` → a confirmation; then the ``workflow-steps`` SPARQL query over the
  saved workflow, whose calls by the sub-agents nest under the coordinator's handoffs;
- **Figure 4**: a question no tool serves → the crew's answer with *fallback* suggestions drawn
  from the crew description.

Every suggestion is shown with its source and evidence (memory workflows and leaf positions).
The memory is the default store (``--store`` to pick another); on first run it is seeded with the
64 bootstrap workflows (``integrations/demo/pfas/data/bootstrap.jsonl``). Everything runs
offline: the crew's chat model is the deterministic router (:mod:`integrations.demo.router`) unless
``$EM_PLUGIN_LLM`` names a real one (:mod:`integrations.demo._llm_env`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from integrations.demo import _render as render

__all__ = [
    "FIGURE3",
    "FIGURE4",
    "FRAMEWORKS",
    "OfflineBeeAIChatModel",
    "OfflineChatModel",
    "run_demo",
]

_LAZY = {
    "OfflineChatModel": "integrations.demo._langchain_model",
    "OfflineBeeAIChatModel": "integrations.demo._beeai_model",
}


def __getattr__(name: str) -> Any:
    # The framework-specific models import LangChain or BeeAI: only on first use.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'integrations.demo' has no attribute {name!r}")


FRAMEWORKS: tuple[str, ...] = ("langgraph", "beeai")
"""The frameworks the demo runs, in order."""
FIGURE3: tuple[str, ...] = (
    "Extract all ingredients from firestop_afff3_sds.txt",
    "Classify them as PFAS",
)
"""The instructions of the scripted session (paper, Figure 3)."""
FIGURE4 = "What is the boiling point of water on Mars?"
"""A question none of the crew's tools serves (paper, Figure 4)."""
STEPS_QUERY = "workflow-steps"


def run_demo(
    store: str | None = None,
    console: Console | None = None,
    frameworks: Sequence[str] = FRAMEWORKS,
    *,
    embedder: Any = None,
    question: str = FIGURE4,
    chain: str | None = None,
) -> int:
    """Run the scripted Figure 3 session and the Figure 4 case on each framework.

    Args:
        store: A store spec (directory, ``memory:``, endpoint URL); ``None`` for the default
            store (``$EM_PLUGIN_STORE``, else ``~/.em-plugin/store``).
        console: Where to print (default: a new rich console).
        frameworks: Which of ``"langgraph"`` and ``"beeai"`` to run, in order.
        embedder: The embedder of the memory and the router (default: all-MiniLM-L6-v2,
            offline), or its name, or ``"fake"``.
        question: The Figure 4 question.
        chain: The suggestion chain (``continuation``, ``paper`` or ``llm``); default
            ``continuation``, or ``llm`` when ``$EM_PLUGIN_LLM`` names a model.

    Returns:
        0 when every framework showed the expected behaviour, 1 otherwise (the problems are
        printed).

    Raises:
        ConfigurationError: An unknown framework or a bad ``$EM_PLUGIN_LLM``.
        ProvenanceError: The store cannot be opened or written.
    """
    from em_plugin.embedding import resolve_embedder
    from em_plugin.errors import ConfigurationError
    from em_plugin.memory import EpisodicMemory
    from em_plugin.suggest import build_chain
    from integrations.demo._llm_env import llm_spec_from_env, suggester_chat_model
    from integrations.demo._sessions import SuggestionTap
    from integrations.demo._setup import load_bootstrap, store_label
    from integrations.demo.pfas import CREW_DESCRIPTION
    from provenance.stores import open_store

    unknown = [f for f in frameworks if f not in FRAMEWORKS]
    if unknown or not frameworks:
        raise ConfigurationError(
            f"unknown framework(s) {unknown or list(frameworks)}; choose from {list(FRAMEWORKS)}"
        )
    console = console or Console()
    _quiet_frameworks()
    llm = llm_spec_from_env()
    chat_model = suggester_chat_model(llm)
    chain_name = chain or ("llm" if chat_model is not None else "continuation")
    started = time.perf_counter()
    embedder = resolve_embedder(embedder)
    render.section(console, "em-plugin demo: the PFAS crew of the paper, with episodic memory")
    tap = SuggestionTap()
    with open_store(store) as workflow_store:
        memory = EpisodicMemory(
            store=workflow_store,
            embedder=embedder,
            crew_description=CREW_DESCRIPTION,
            # The library's default chain; with $EM_PLUGIN_LLM naming a model (e.g. "local":
            # SmolLM2 on this CPU) the LLM suggester goes first, as in the paper.
            chain=build_chain(chain_name, chat_model),
            on_suggestions=tap,
        )
        try:
            loaded = load_bootstrap(memory, workflow_store)
            console.print(
                render.setup_table(
                    store=store_label(store),
                    workflows=len(workflow_store),
                    loaded=loaded,
                    embedder=embedder.name,
                    model=str(llm),
                    chain=chain_name,
                )
            )
            problems = _run_all(console, memory, workflow_store, llm, tap, frameworks, question)
            if store is not None and store.strip() in ("memory:", "memory://", ":memory:"):
                # Nothing to explore afterwards: the store ends with this process.
                console.print(
                    "[dim]This run's store was in memory and is gone; run with --store DIR (or "
                    "without --store) to explore the saved sessions afterwards.[/dim]"
                )
            else:
                render.commands(console, _explore_commands(store, frameworks))
                console.print(
                    "[dim]The store keeps the sessions saved above: the next run also retrieves "
                    "them, so its suggestions can differ from this run's. --store memory: runs "
                    "on the bootstrap workflows alone.[/dim]"
                )
        finally:
            memory.close()
    console.print(f"[dim]demo finished in {time.perf_counter() - started:.1f} s[/dim]")
    if problems:
        for problem in problems:
            console.print(f"[bold red]problem:[/bold red] {problem}")
        return 1
    return 0


def _run_all(
    console: Console,
    memory: Any,
    store: Any,
    llm: Any,
    tap: Any,
    frameworks: Sequence[str],
    question: str,
) -> list[str]:
    from integrations.demo._figures import DemoContext, figure3, figure4
    from integrations.demo.router import OfflineRouter

    context = DemoContext(
        memory=memory,
        store=store,
        router=OfflineRouter(memory.embedder),  # the memory's cached embedder
        llm=llm,
        tap=tap,
    )
    problems: list[str] = []
    for framework in frameworks:
        problems += figure3(console, context, framework, FIGURE3)
    for framework in frameworks:
        problems += figure4(console, context, framework, question)
    return problems


def em_plugin_program() -> str:
    """How to run ``em-plugin`` from here: its name when it is on PATH, else its path.

    ``make demo`` runs the demo from ``.venv`` without activating it; the commands it prints must
    still work when pasted into the same shell.
    """
    import shutil
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "em-plugin"
    on_path = shutil.which("em-plugin")
    if on_path is not None or not script.is_file():
        return "em-plugin"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _explore_commands(store: str | None, frameworks: Sequence[str]) -> list[tuple[str, str]]:
    option = f" --store {store}" if store else ""
    first = f"session/demo-{frameworks[0]}"
    em_plugin = em_plugin_program()
    return [
        (
            f"{em_plugin} query {STEPS_QUERY} --bind workflow={first}{option}",
            "the saved workflow's steps (SPARQL over its PROV graph)",
        ),
        (f"{em_plugin} show {first}{option}", "the saved workflow as a tree"),
        (
            f"{em_plugin} query suggestion-sources --bind session={first.split('/', 1)[1]}{option}",
            "which memory workflows shaped the suggestions shown in that session (PROV)",
        ),
        (f"{em_plugin} show bootstrap/0007{option}", "one of the bootstrap workflows"),
        (f"{em_plugin} query --list{option}", "every named SPARQL query"),
        (f"{em_plugin} stats{option}", "what the store holds"),
        (f"{em_plugin} export --format trig{option}", "everything as RDF (TriG)"),
    ]


def _quiet_frameworks() -> None:
    # Nothing may touch the network: the default embedder is bundled with the package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Model-loading progress bars and BeeAI's retry logs (ERROR level, on stderr) would bury the
    # demo's output; the demo reports its own problems.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("BEEAI_LOG_LEVEL", "CRITICAL")
    for name in ("beeai_framework", "httpx", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
