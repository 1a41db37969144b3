"""The closing table of the deployments: what the memory keeps when a crew is served.

For each deployment this script starts real server processes on 127.0.0.1 (BeeAI: the app of
``tests/integrations/deploy/beeai_server_app.py``, a coordinator with unnamed ``HandoffTool``
sub-agents on scripted models; LangGraph: ``langgraph dev`` serving
``tests/integrations/deploy/lg_server_crew.py``, a ``create_agent`` coordinator with sub-agents
behind tools on rule-based models, driven by ``langgraph-sdk``), drives conversations with a real
client across a restart or a second worker, and checks each property on what happened:

- capture exact at every depth: the saved workflow holds every instruction, each handoff with the
  sub-agent's call nested under it, the sub-agent known by its handoff;
- session per conversation id: each conversation saved as ``session/<its id>``, ``Workflow.session``
  set, two conversations never merged;
- suggestions reach the client: the suggestions block is in the text the client received;
- model context clean: no model input holds the suggestions, ``/save`` or its reply;
- survives restart and a second worker: turns served before a restart, or by another worker
  process on the same store, are in the saved workflow;
- ``/save`` never degrades: a save after more turns on another process has every step of the
  earlier save, and times nest (each call inside its parent's interval).

Run::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/deployments_table.py --beeai --langgraph

The servers get ``EM_PLUGIN_TURN_BUDGET=30`` (unless set): the table checks what reaches the
client, not how fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "integrations" / "deploy")]

from beeai_server_app import CLASSIFY, EXTRACT, SCOPE  # noqa: E402
from conftest import start_oxigraph, stop_oxigraph  # noqa: E402
from test_beeai_servers import (  # noqa: E402
    SUGGESTED,
    Served,
    a2a_send,
    chat_send,
    check_session,
    launch,
    responses_send,
    wait_ready,
)

from provenance.model import DEFAULT_SCOPE, Workflow  # noqa: E402
from provenance.stores import open_store  # noqa: E402

COLUMNS = (
    "capture exact at every depth",
    "session per conversation id",
    "suggestions reach the client",
    "model context clean",
    "survives restart and a second worker",
    "/save never degrades",
)


class Run:
    """The observations of one deployment, and the verdicts drawn from them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.verdicts: dict[str, str] = {}

    def check(self, column: str, test: Callable[[], object]) -> None:
        try:
            result = test()
        except AssertionError as exc:
            self.verdicts[column] = f"no ({exc or 'check failed'})"
            return
        except Exception as exc:  # noqa: BLE001 - a broken deployment is a "no", with why
            self.verdicts[column] = f"no ({type(exc).__name__}: {exc})"
            return
        self.verdicts[column] = "yes" if result is not False else "no"


def leaves(workflow: Workflow) -> list[tuple[str, str]]:
    return [(step.name, str(getattr(step, "agent", ""))) for step in workflow.leaves()]


def clean(*servers: Served) -> bool:
    texts = [t for s in servers for t in s.model_texts()]
    return bool(texts) and not [
        t for t in texts if SUGGESTED in t or "/save" in t or "Saved workflow" in t
    ]


def saved(store: str, session: str) -> Workflow:
    with open_store(store) as opened:
        return opened.load(f"session/{session}", SCOPE)


def start(protocol: str, store: str, workdir: Path, *names: str) -> list[Served]:
    servers = [launch(protocol, store, workdir, name) for name in names]
    wait_ready(*servers)
    return servers


def a2a_run(workdir: Path) -> Run:
    run = Run("BeeAI A2A")
    store = str(workdir / "a2a-store")
    alice, bob = f"ctx-{uuid.uuid4().hex[:8]}", f"ctx-{uuid.uuid4().hex[:8]}"
    (first,) = start("a2a", store, workdir, "a2a-1")
    try:
        shown = asyncio.run(a2a_send(first.url, alice, EXTRACT))
        asyncio.run(a2a_send(first.url, bob, EXTRACT))
        asyncio.run(a2a_send(first.url, alice, "/save"))
    finally:
        first.stop()
    before = saved(store, alice)
    (second,) = start("a2a", store, workdir, "a2a-2")  # the restarted server
    try:
        asyncio.run(a2a_send(second.url, alice, CLASSIFY))
        asyncio.run(a2a_send(second.url, bob, CLASSIFY))
        replies = [asyncio.run(a2a_send(second.url, s, "/save")) for s in (alice, bob)]
    finally:
        second.stop()
    after = {s: saved(store, s) for s in (alice, bob)}
    judge(run, shown, replies, before, after, (alice, bob), (first, second))
    return run


def responses_run(workdir: Path) -> Run:
    run = Run("BeeAI OpenAI-compatible (Responses)")
    server = start_oxigraph(workdir / "oxigraph")
    try:
        store = server.query_url
        one, two = start("responses", store, workdir, "responses-1", "responses-2")
        try:
            alice, bob = f"conv-{uuid.uuid4().hex[:8]}", f"conv-{uuid.uuid4().hex[:8]}"
            shown = responses_send(one.url, alice, EXTRACT)
            responses_send(two.url, bob, EXTRACT)
            responses_send(one.url, alice, "/save")
            before = saved(store, alice)
            responses_send(two.url, alice, CLASSIFY)  # the second worker continues it
            responses_send(two.url, bob, CLASSIFY)
            replies = [responses_send(one.url, s, "/save") for s in (alice, bob)]
            after = {s: saved(store, s) for s in (alice, bob)}
        finally:
            one.stop()
            two.stop()
        judge(run, shown, replies, before, after, (alice, bob), (one, two))
    finally:
        stop_oxigraph(server)
    return run


def chat_run(workdir: Path) -> Run:
    run = Run("BeeAI OpenAI-compatible (chat completions)")
    store = str(workdir / "chat-store")
    alice: list[dict[str, str]] = [{"role": "user", "content": EXTRACT}]
    bob: list[dict[str, str]] = [{"role": "user", "content": CLASSIFY}]
    (first,) = start("chat", store, workdir, "chat-1")
    try:
        shown = chat_send(first.url, alice)
        alice += [{"role": "assistant", "content": shown}]
        bob += [{"role": "assistant", "content": chat_send(first.url, bob)}]
        reply = chat_send(first.url, [*alice, {"role": "user", "content": "/save"}])
        session_alice = reply.split("session/")[1].split(" ")[0]
    finally:
        first.stop()
    before = saved(store, session_alice)
    (second,) = start("chat", store, workdir, "chat-2")
    try:
        replies = []
        for history in (alice, bob):
            history += [{"role": "user", "content": CLASSIFY}]
            history += [{"role": "assistant", "content": chat_send(second.url, history)}]
            replies.append(chat_send(second.url, [*history, {"role": "user", "content": "/save"}]))
    finally:
        second.stop()
    sessions = tuple(r.split("session/")[1].split(" ")[0] for r in replies)
    after = {s: saved(store, s) for s in set(sessions)}
    expected = ([EXTRACT, CLASSIFY], [CLASSIFY, CLASSIFY])
    judge(run, shown, replies, before, after, sessions, (first, second), expected, ids_known=False)
    return run


def judge(
    run: Run,
    shown: str,
    replies: list[str],
    before: Workflow,
    after: dict[str, Workflow],
    sessions: tuple[str, ...],
    servers: tuple[Served, ...],
    expected: tuple[list[str], ...] = ([EXTRACT, CLASSIFY], [EXTRACT, CLASSIFY]),
    *,
    ids_known: bool = True,
) -> None:
    first = sessions[0]

    def exact() -> None:
        for session, instructions in zip(sessions, expected, strict=True):
            check_session(after[session], session, instructions)

    def per_conversation() -> None:
        assert len(set(sessions)) == 2, "two conversations share one session"
        for reply, session in zip(replies, sessions, strict=True):
            assert reply.startswith(f"Saved workflow session/{session} "), reply
        assert all(after[s].session == s for s in sessions)

    def survives() -> None:
        instructions = [s.text for s in after[first].steps]
        assert instructions == [EXTRACT, CLASSIFY], f"saved turns: {instructions}"

    def never_degrades() -> None:
        old, new = leaves(before), leaves(after[first])
        assert new[: len(old)] == old, "a later save lost steps of the earlier one"
        check_session(after[first], first, [EXTRACT, CLASSIFY])

    run.check(COLUMNS[0], exact)
    run.check(COLUMNS[1], per_conversation)
    run.check(COLUMNS[2], lambda: SUGGESTED in shown)
    run.check(COLUMNS[3], lambda: clean(*servers))
    run.check(COLUMNS[4], survives)
    run.check(COLUMNS[5], never_degrades)
    if not ids_known:
        run.name += " ¹"


LG_SESSION = [
    (0, "Extract the ingredients from acme.pdf", "user"),
    (1, "ask_extractor", "coordinator"),
    (2, "product_extractor", "extractor"),
    (0, "Classify the extracted ingredients", "user"),
    (1, "ask_classifier", "coordinator"),
    (2, "pfas_classifier", "classifier"),
]
LG_MODES = ["values", "updates", "messages-tuple", "custom", "events", "debug", "tasks"]


def lg_saved(store: str, session: str) -> Workflow:
    with open_store(store) as opened:
        return opened.load(f"session/{session}", DEFAULT_SCOPE)  # the served crew's scope


def langgraph_run(workdir: Path) -> Run:
    """Drive the LangGraph API server.

    A thread across a restart, and a second server process on the same ``oxigraph serve`` store
    streaming in every output mode.
    """
    from langgraph_sdk import get_sync_client
    from langgraph_server import launch_langgraph, make_project, stop_langgraph
    from langgraph_server import wait_ready as lg_ready
    from test_langgraph_server import rows, times_nest

    run = Run("LangGraph API server (langgraph dev)")
    oxigraph = start_oxigraph(workdir / "oxigraph")
    store, seen = oxigraph.query_url, workdir / "langgraph-seen.jsonl"
    project = make_project(workdir / "langgraph-1")

    def ask(client: Any, thread: str, text: str) -> list[dict[str, Any]]:
        user = {"messages": [{"role": "user", "content": text}]}
        return list(client.runs.wait(thread, "crew", input=user)["messages"])

    try:
        server = lg_ready(launch_langgraph(project, store=store, seen=seen))
        try:
            client = get_sync_client(url=server.url)
            thread = client.threads.create()["thread_id"]
            ask(client, thread, LG_SESSION[0][1])
            replies = [ask(client, thread, "/save")[-1]["content"]]
        finally:
            stop_langgraph(server)
        before = lg_saved(store, thread)
        server = launch_langgraph(project, store=store, seen=seen)  # the restarted server
        second = launch_langgraph(make_project(workdir / "langgraph-2"), store=store, seen=seen)
        try:
            client = get_sync_client(url=lg_ready(server).url)
            other_client = get_sync_client(url=lg_ready(second).url)
            ask(client, thread, LG_SESSION[3][1])
            replies.append(ask(client, thread, "/save")[-1]["content"])
            other = other_client.threads.create()["thread_id"]  # on the second process
            found: dict[str, bool] = {}
            user = {
                "messages": [{"role": "user", "content": "Extract the ingredients from beta.pdf"}]
            }
            for part in other_client.runs.stream(other, "crew", input=user, stream_mode=LG_MODES):
                mode = part.event.split("|")[0].split("/")[0]
                hit = SUGGESTED in json.dumps(part.data, default=str)
                found[mode] = found.get(mode, False) or hit
            ask(other_client, other, LG_SESSION[3][1])
        finally:
            stop_langgraph(server)
            stop_langgraph(second)
        after = lg_saved(store, thread)
    finally:
        stop_oxigraph(oxigraph)
    texts = [t for line in seen.read_text().splitlines() for t in json.loads(line)["texts"]]

    def exact() -> None:
        assert rows(after) == LG_SESSION, f"saved: {rows(after)}"
        assert [f.call.name for f in after.failed] == ["product_extractor"], after.failed
        assert times_nest(after), "a step lies outside its parent's interval"

    def per_conversation() -> None:
        assert replies[-1].startswith(f"Saved workflow session/{thread} "), replies[-1]
        assert after.session == thread, after.session

    def reaches_client() -> None:
        wanted = {"messages" if m == "messages-tuple" else m for m in LG_MODES}
        missing = wanted - {m for m, hit in found.items() if hit}
        assert not missing, f"no suggestions in stream modes {sorted(missing)}"

    def clean_context() -> None:
        leaked = [t for t in texts if SUGGESTED in t or "/save" in t or "Saved workflow" in t]
        assert texts and not leaked, f"{len(leaked)} of {len(texts)} model inputs hold memory text"

    def never_degrades() -> None:
        old, new = leaves(before), leaves(after)
        assert new[: len(old)] == old, "a later save lost steps of the earlier one"

    run.check(COLUMNS[0], exact)
    run.check(COLUMNS[1], per_conversation)
    run.check(COLUMNS[2], reaches_client)
    run.check(COLUMNS[3], clean_context)
    run.check(COLUMNS[4], lambda: rows(after) == LG_SESSION and found.get("custom"))
    run.check(COLUMNS[5], never_degrades)
    return run


def table(runs: list[Run]) -> str:
    header = "| deployment | " + " | ".join(COLUMNS) + " |"
    rule = "|---" * (len(COLUMNS) + 1) + "|"
    rows = [
        f"| {run.name} | " + " | ".join(run.verdicts.get(c, "not run") for c in COLUMNS) + " |"
        for run in runs
    ]
    return "\n".join([header, rule, *rows])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--beeai", action="store_true", help="the BeeAI deployments")
    parser.add_argument("--langgraph", action="store_true", help="the LangGraph API server")
    args = parser.parse_args(argv)
    if not (args.beeai or args.langgraph):
        parser.error("choose the deployments to run: --beeai and/or --langgraph")
    os.environ.setdefault("EM_PLUGIN_TURN_BUDGET", "30")
    scenarios: list[Callable[[Path], Run]] = []
    if args.langgraph:
        scenarios.append(langgraph_run)
    if args.beeai:
        scenarios += [a2a_run, responses_run, chat_run]
    runs: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="em-deploy-") as tmp:
        for scenario in scenarios:
            workdir = Path(tmp) / scenario.__name__
            workdir.mkdir()
            runs.append(scenario(workdir))
    print(table(runs))
    if any("¹" in run.name for run in runs):
        print(
            "\n¹ chat completions carry no conversation id: the session is found from the "
            "history the client replays (docs/deploy.md)."
        )


if __name__ == "__main__":
    main()
