"""The memory behind the real LangGraph API server (``langgraph dev``), driven by langgraph-sdk.

One server restart between turns of a thread, every stream mode, two runs at once
(``--n-jobs-per-worker 2``), two server processes on one ``oxigraph serve`` store, and a failed
run saved as a failure by the restarted server. The crew
(:mod:`lg_server_crew`) is a ``create_agent`` coordinator with sub-agents behind tools.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langgraph_server import (
    LangGraphServer,
    launch_langgraph,
    make_project,
    start_langgraph,
    stop_langgraph,
    wait_ready,
)

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from integrations.conformance import rows
from provenance.model import CallStep, Workflow

pytestmark = pytest.mark.integration

EXTRACT = "Extract the ingredients from acme.pdf"
CLASSIFY = "Classify the extracted ingredients"
EXTRACT_NEW = "Extract the ingredients from beta.pdf"
TOGETHER = "Extract the ingredients from together.pdf"
FAILING = "Extract the ingredients from unreachable.pdf"
MEMORY_WORDS = ("Suggested next steps", "/save", "Saved workflow")
#: The stream modes that carry the graph's output (``tools``/``lifecycle`` carry none).
STREAM_MODES = [
    "values",
    "updates",
    "messages-tuple",
    "custom",
    "events",
    "debug",
    "tasks",
    "checkpoints",
]
#: Depth, name, agent per step (the user's instructions at depth 0).
SESSION = [
    (0, EXTRACT, "user"),
    (1, "ask_extractor", "coordinator"),
    (2, "product_extractor", "extractor"),
    (0, CLASSIFY, "user"),
    (1, "ask_classifier", "coordinator"),
    (2, "pfas_classifier", "classifier"),
]


def times_nest(workflow: Workflow) -> bool:
    """Every call ran inside its parent's interval (ISO times of one clock compare as text)."""
    for path, step in workflow.walk():
        if not isinstance(step, CallStep):
            continue
        if not (step.started and step.ended and step.started <= step.ended):
            return False
        above = path.rpartition(".")[0]
        if not above:
            continue
        parent = workflow.step_at(above)
        start, end = (
            (parent.started, parent.ended)
            if isinstance(parent, CallStep)
            else (parent.timestamp, None)
        )
        if (start is not None and step.started < start) or (end is not None and step.ended > end):
            return False
    return True


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def ask(client: Any, thread_id: str, text: str) -> list[dict[str, Any]]:
    out = client.runs.wait(thread_id, "crew", input=user(text))
    return list(out["messages"])


def memory_says(messages: Sequence[dict[str, Any]]) -> str:
    last = messages[-1]
    assert last.get("name") == "episodic_memory", last
    return str(last["content"])


def leaked(seen: Path) -> list[str]:
    if not seen.exists():
        return []
    texts = [t for line in seen.read_text().splitlines() for t in json.loads(line)["texts"]]
    return [t for t in texts if any(w in t for w in MEMORY_WORDS)]


def sdk(server: LangGraphServer) -> Any:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    server.clients.append(client)
    return client


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    yield make_project(tmp_path / "project")


def test_a_thread_survives_a_restart_streams_every_mode_and_runs_two_at_once(
    project: Path, tmp_path: Path
) -> None:
    store, seen = str(tmp_path / "store"), tmp_path / "seen.jsonl"
    server = start_langgraph(project, store=store, seen=seen, jobs=2)
    try:
        client = sdk(server)
        thread = client.threads.create()["thread_id"]
        assert ask(client, thread, EXTRACT)[-1]["content"].startswith("Done: acme.pdf")
        first = memory_says(ask(client, thread, "/save"))
        assert first.startswith(f"Saved workflow session/{thread} (1 step)")
    finally:
        stop_langgraph(server)
    assert any((project / ".langgraph_api").glob(".langgraph_checkpoint.*.pckl"))

    # Another process continues the thread: the checkpoints hold the session's calls.
    server = start_langgraph(project, store=store, seen=seen, jobs=2)
    try:
        client = sdk(server)
        ask(client, thread, CLASSIFY)
        assert memory_says(ask(client, thread, "/save")).startswith(
            f"Saved workflow session/{thread} (2 steps)"
        )

        # A new thread: the suggestions reach the client in every stream mode.
        other = client.threads.create()["thread_id"]
        seen_modes: dict[str, bool] = {}
        for part in client.runs.stream(
            other, "crew", input=user(EXTRACT_NEW), stream_mode=STREAM_MODES
        ):
            mode = part.event.split("|")[0].split("/")[0]
            found = "Suggested next steps" in json.dumps(part.data, default=str)
            seen_modes[mode] = seen_modes.get(mode, False) or found
        expected = {"messages" if m == "messages-tuple" else m for m in STREAM_MODES}
        assert {m for m, found in seen_modes.items() if found} >= expected, seen_modes
        ask(client, other, CLASSIFY)  # its model input must not hold the suggestions

        # Two runs at once (--n-jobs-per-worker 2): the extractor's tool waits for the other.
        threads = [client.threads.create()["thread_id"] for _ in range(2)]
        runs = [client.runs.create(t, "crew", input=user(TOGETHER)) for t in threads]
        with ThreadPoolExecutor(2) as pool:
            results = list(
                pool.map(
                    lambda pair: client.runs.join(*pair),
                    zip(threads, [r["run_id"] for r in runs], strict=True),
                )
            )
        assert all(
            r["messages"][-2]["content"] == "Done: together.pdf: PFOA, water" for r in results
        )
        for t in threads:
            assert memory_says(ask(client, t, "/save")).startswith(f"Saved workflow session/{t}")
    finally:
        stop_langgraph(server)

    assert leaked(seen) == []
    memory = EpisodicMemory(store=store, embedder=FakeEmbedder(64))
    try:
        saved = memory.load(f"session/{thread}")
        assert rows(saved) == SESSION
        assert [f.call.name for f in saved.failed] == ["product_extractor"]
        assert saved.session == thread and saved.framework == "langgraph"
        assert times_nest(saved)
        for t in threads:
            together = memory.load(f"session/{t}")
            assert rows(together) == [
                (0, TOGETHER, "user"),
                (1, "ask_extractor", "coordinator"),
                (2, "product_extractor", "extractor"),
            ]
            assert together.session == t
    finally:
        memory.close()


def test_two_server_processes_share_one_oxigraph_store(
    tmp_path: Path, oxigraph_server: Any
) -> None:
    oxigraph_server.wipe()
    store, seen = oxigraph_server.query_url, tmp_path / "seen.jsonl"
    first = launch_langgraph(make_project(tmp_path / "a"), store=store, seen=seen)
    second = launch_langgraph(make_project(tmp_path / "b"), store=store, seen=seen)
    try:
        a, b = sdk(wait_ready(first)), sdk(wait_ready(second))
        thread = a.threads.create()["thread_id"]
        ask(a, thread, EXTRACT)
        ask(a, thread, CLASSIFY)
        assert memory_says(ask(a, thread, "/save")).startswith(f"Saved workflow session/{thread}")

        other = b.threads.create()["thread_id"]
        suggestions = memory_says(ask(b, other, EXTRACT_NEW))
        assert suggestions.startswith("Suggested next steps (from 1 similar past workflow)")
        assert "ask_classifier" in suggestions
    finally:
        stop_langgraph(first)
        stop_langgraph(second)
    assert leaked(seen) == []


def test_a_run_that_failed_before_a_restart_is_saved_as_a_failure(
    project: Path, tmp_path: Path
) -> None:
    """The run raises in one server process; the next one (restarted from the same threads)
    saves the thread with outcome failure: the error travels with the thread's checkpoints."""
    store, seen = str(tmp_path / "store"), tmp_path / "seen.jsonl"
    server = start_langgraph(project, store=store, seen=seen, jobs=2)
    try:
        client = sdk(server)
        thread = client.threads.create()["thread_id"]
        ask(client, thread, EXTRACT)
        failed = client.runs.wait(thread, "crew", input=user(FAILING), raise_error=False)
        assert failed["__error__"]["error"] == "ConnectionError", failed
        assert client.threads.get(thread)["status"] == "error"
    finally:
        stop_langgraph(server)

    server = start_langgraph(project, store=store, seen=seen, jobs=2)
    try:
        client = sdk(server)
        reply = memory_says(ask(client, thread, "/save"))
        assert reply.startswith(f"Saved workflow session/{thread} (2 steps)"), reply
    finally:
        stop_langgraph(server)

    memory = EpisodicMemory(store=store, embedder=FakeEmbedder(64))
    try:
        saved = memory.load(f"session/{thread}")
        assert saved.outcome == "failure"
        assert [(d, t) for d, t, _ in rows(saved) if d == 0] == [(0, EXTRACT), (0, FAILING)]
    finally:
        memory.close()
