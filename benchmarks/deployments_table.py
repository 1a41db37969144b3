"""The deployments table: each served deployment x what the memory promises there.

Each row comes from running the deployment's real server processes on 127.0.0.1 (scripted chat
models, a store served by ``oxigraph serve``) and checking what the client and the store see; a
cell is ``yes`` or ``NO`` with what was observed. Add a deployment by adding a function to
``DEPLOYMENTS`` that returns its rows.

Run::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/deployments_table.py --langgraph

The servers get ``EM_PLUGIN_TURN_BUDGET=30`` (unless set): the table checks what reaches the
client, not how fast.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integrations" / "deploy")]

COLUMNS = (
    "capture exact at every depth",
    "session per conversation id",
    "suggestions reach the client",
    "model context clean",
    "survives restart and a second worker",
    "/save never degrades",
)
MEMORY_WORDS = ("Suggested next steps", "/save", "Saved workflow")


@dataclass
class Row:
    """One deployment's cells: column -> (held, what was observed)."""

    deployment: str
    cells: dict[str, tuple[bool, str]] = field(default_factory=dict)


# -- a store server shared by the deployments' processes -------------------------------------


@contextmanager
def oxigraph_serve(location: Path) -> Iterator[str]:
    """Run ``oxigraph serve`` on a free 127.0.0.1 port; yield its query URL."""
    from langgraph_server import free_port

    binary = Path(sys.executable).parent / "oxigraph"
    port = free_port()
    process = subprocess.Popen(
        [str(binary), "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/query"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                data = urllib.parse.urlencode({"query": "ASK {}"}).encode()
                opener.open(urllib.request.Request(url, data=data), timeout=1).read()
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("oxigraph serve did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


# -- LangGraph API server ---------------------------------------------------------------------


def langgraph_rows(work: Path, store: str) -> list[Row]:
    """The LangGraph API server (``langgraph dev``): restart, second process, stream modes."""
    from langgraph_sdk import get_sync_client
    from langgraph_server import launch_langgraph, make_project, stop_langgraph, wait_ready

    from em_plugin.embedding import FakeEmbedder
    from em_plugin.memory import EpisodicMemory

    seen = work / "langgraph-seen.jsonl"
    project = make_project(work / "langgraph-a")
    expected = [
        (0, "Extract the ingredients from acme.pdf", "user"),
        (1, "ask_extractor", "coordinator"),
        (2, "product_extractor", "extractor"),
        (0, "Classify the extracted ingredients", "user"),
        (1, "ask_classifier", "coordinator"),
        (2, "pfas_classifier", "classifier"),
    ]
    modes = ["values", "updates", "messages-tuple", "custom", "events", "debug", "tasks"]

    def ask(client: Any, thread: str, text: str) -> list[dict[str, Any]]:
        user = {"messages": [{"role": "user", "content": text}]}
        return list(client.runs.wait(thread, "crew", input=user)["messages"])

    memory = EpisodicMemory(store=store, embedder=FakeEmbedder(64))
    server = wait_ready(launch_langgraph(project, store=store, seen=seen))
    try:
        client = get_sync_client(url=server.url)
        thread = client.threads.create()["thread_id"]
        ask(client, thread, expected[0][1])
        ask(client, thread, "/save")
        before = memory.load(f"session/{thread}")
    finally:
        stop_langgraph(server)
    server = launch_langgraph(project, store=store, seen=seen)  # the restart
    second = launch_langgraph(make_project(work / "langgraph-b"), store=store, seen=seen)
    try:
        client = get_sync_client(url=wait_ready(server).url)
        other_client = get_sync_client(url=wait_ready(second).url)
        ask(client, thread, expected[3][1])
        ask(client, thread, "/save")
        after = memory.load(f"session/{thread}")
        other = other_client.threads.create()["thread_id"]  # the second process
        found: dict[str, bool] = {}
        user = {"messages": [{"role": "user", "content": "Extract the ingredients from beta.pdf"}]}
        for part in other_client.runs.stream(other, "crew", input=user, stream_mode=modes):
            mode = part.event.split("|")[0].split("/")[0]
            hit = "Suggested next steps" in json.dumps(part.data, default=str)
            found[mode] = found.get(mode, False) or hit
        ask(other_client, other, "Classify the extracted ingredients")
    finally:
        stop_langgraph(server)
        stop_langgraph(second)
    memory.close()
    rows_after = _rows(after)
    wanted = {"messages" if m == "messages-tuple" else m for m in modes}
    texts = [t for line in seen.read_text().splitlines() for t in json.loads(line)["texts"]]
    leaks = [t for t in texts if any(w in t for w in MEMORY_WORDS)]
    kept = {s.name for s in before.leaves()} <= {s.name for s in after.leaves()}
    return [
        Row(
            "LangGraph API server (langgraph dev, langgraph-sdk)",
            {
                COLUMNS[0]: (
                    rows_after == expected
                    and [f.call.name for f in after.failed] == ["product_extractor"],
                    "coordinator > sub-agent calls over 2 turns; the failed attempt kept apart",
                ),
                COLUMNS[1]: (after.session == thread, "session = thread id"),
                COLUMNS[2]: (
                    wanted <= {m for m, hit in found.items() if hit},
                    f"in stream modes {sorted(m for m, hit in found.items() if hit)}",
                ),
                COLUMNS[3]: (
                    not leaks,
                    f"{len(texts)} model inputs, {len(leaks)} with memory text",
                ),
                COLUMNS[4]: (
                    rows_after == expected and bool(found.get("custom")),
                    "turn 2 after a restart; a 2nd server process on the same store suggests",
                ),
                COLUMNS[5]: (kept, f"{len(before.leaves())} -> {len(after.leaves())} steps"),
            },
        )
    ]


def _rows(workflow: Any) -> list[tuple[int, str, str | None]]:
    out: list[tuple[int, str, str | None]] = []

    def walk(steps: Sequence[Any], depth: int) -> None:
        for step in steps:
            text = getattr(step, "text", None)
            out.append(
                (depth, text, "user") if text is not None else (depth, step.name, step.agent)
            )
            walk(step.steps, depth + 1)

    walk(workflow.steps, 0)
    return out


DEPLOYMENTS: dict[str, Callable[[Path, str], list[Row]]] = {"langgraph": langgraph_rows}
"""Deployment flag (``--<name>``) -> the function that runs it and returns its rows."""


def render(rows: Sequence[Row]) -> str:
    """The table as Markdown, then what each cell observed."""
    lines = ["| deployment | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    notes: list[str] = []
    for row in rows:
        cells = [("yes" if row.cells[c][0] else "NO") if c in row.cells else "n/a" for c in COLUMNS]
        lines.append(f"| {row.deployment} | " + " | ".join(cells) + " |")
        notes += [f"- {row.deployment} / {c}: {row.cells[c][1]}" for c in COLUMNS if c in row.cells]
    return "\n".join([*lines, "", *notes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in DEPLOYMENTS:
        parser.add_argument(f"--{name}", action="store_true", help=f"run the {name} deployment")
    args = parser.parse_args()
    # A table checks what reaches the client, not speed: a loaded machine must not cut the
    # suggestions at the default per-turn budget (benchmarks/langgraph_overhead.py measures it).
    os.environ.setdefault("EM_PLUGIN_TURN_BUDGET", "30")
    chosen = [name for name in DEPLOYMENTS if getattr(args, name)] or list(DEPLOYMENTS)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="em-deploy-") as tmp:
        work = Path(tmp)
        with oxigraph_serve(work / "oxigraph") as store:
            for name in chosen:
                rows += DEPLOYMENTS[name](work, store)
    print(render(rows))


if __name__ == "__main__":
    main()
