"""A new user's first session, as the README shows it, with a scripted chat model of this suite.

Each run is a fresh process on a disk store seeded with the demo's bootstrap workflows, with the
default embedder loading cold (nothing warms it up but the memory itself): the first session's
second turn gets suggestions, and the ``/save`` the user was told about is in ``em-plugin list``
right after the process ends, whether it exits normally without ``memory.close()`` or is killed
with SIGTERM right after the reply.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

# The README's LangGraph snippet, with the test suite's scripted chat model instead of the
# demo's router (which loads the embedding model early and so hid the cold start).
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time

    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langchain.agents import create_agent

    from em_plugin import EpisodicMemory
    from integrations.langgraph import EpisodicMemoryNode
    from lg_scaffold import TOOLS, ScriptedChatModel, call

    memory = EpisodicMemory(store=sys.argv[1])
    model = ScriptedChatModel(messages=iter(())).load([
        call("product_extractor", {"file": "firestop_afff3_sds.txt"}, "e1"),
        AIMessage("FireStop contains PFOA and water."),
        call("pfas_classifier", {"names": ["PFOA", "water"]}, "k1"),
        AIMessage("PFOA is a PFAS; water is not."),
    ])
    node = EpisodicMemoryNode(memory)

    builder = StateGraph(MessagesState)
    builder.add_node("crew", create_agent(model, TOOLS))
    builder.add_node("episodic_memory", node)
    builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
    builder.add_edge("crew", "episodic_memory")
    builder.add_edge("episodic_memory", END)
    graph = builder.compile(checkpointer=InMemorySaver())

    session = {"configurable": {"thread_id": "s1"}}
    turns = [
        "Extract all ingredients from firestop_afff3_sds.txt", "Classify them as PFAS", "/save"
    ]
    for text in turns:
        reply = graph.invoke({"messages": [("user", text)]}, session)["messages"][-1].content
        print("REPLY", repr(reply), flush=True)
    if sys.argv[2] == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)  # the signal ends the process before this does
    # "exit": no memory.close(), as a script that just ends
    """
)


def _env(budget: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        # Generous enough for a loaded machine once the model is loaded; the cold load itself
        # is waited for outside the budget, here as long as it takes (a 2-core machine at load
        # 11 took 45 s to load the model).
        "EM_PLUGIN_TURN_BUDGET": budget,
        "EM_PLUGIN_WARM_UP_WAIT": "900",
    }
    env.pop("EM_PLUGIN_EMBEDDER", None)
    return env


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A disk store holding the demo's bootstrap workflows, indexed with the default model."""
    from integrations.demo._setup import bootstrap_path

    store = tmp_path_factory.mktemp("first") / "store"
    result = subprocess.run(
        [str(BIN / "em-plugin"), "import", str(bootstrap_path()), "--store", str(store)],
        env=_env("10"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return store


@pytest.mark.integration
@pytest.mark.parametrize("ending", ["exit", "sigterm"])
def test_first_session_suggests_and_its_save_survives_the_process(
    ending: str, seeded: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    subprocess.run(["cp", "-r", str(seeded), str(store)], check=True)
    subprocess.run(["cp", "-r", f"{seeded}.em-index", f"{store}.em-index"], check=True)
    script = tmp_path / "first_session.py"
    script.write_text(SCRIPT, encoding="utf-8")

    run = subprocess.run(
        [sys.executable, str(script), str(store), ending],
        cwd=tmp_path,
        env=_env("10"),
        capture_output=True,
        text=True,
        timeout=900,
    )

    expected = 0 if ending == "exit" else 128 + signal.SIGTERM
    assert run.returncode == expected, run.stderr[-3000:]
    replies = [line for line in run.stdout.splitlines() if line.startswith("REPLY ")]
    assert len(replies) == 3, run.stdout
    assert "Suggested next steps" in replies[1], run.stdout + run.stderr[-2000:]
    assert "Saved workflow session/s1 (2 steps) in scope 'default'." in replies[2]
    listed = subprocess.run(
        [str(BIN / "em-plugin"), "list", "--limit", "0", "--store", str(store)],
        env=_env("10"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    assert "session/s1" in listed.stdout
