"""BeeAI crews served as teams deploy them: A2A and the OpenAI-compatible server, real processes.

Each fixture starts ``beeai_server_app.py`` (a coordinator with unnamed handoff sub-agents on
scripted models, the memory middleware on it) on a free 127.0.0.1 port and stops it afterwards.
Real clients drive it: the a2a-sdk client, and httpx speaking the OpenAI Responses and
chat-completions wire formats. Checked: one session per conversation id, capture at every depth
across a restart and across two worker processes on one store, suggestions in what the client
reads and never in what a model reads, ``/save`` across requests, true times.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, Task, TextPart
from a2a.utils.message import get_message_text
from beeai_server_app import CLASSIFY, EXTRACT, SCOPE
from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.session.journal import SessionJournal
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from tests.processes import accepts, free_port, stop_process, wait_until_ready

pytestmark = pytest.mark.integration

APP = Path(__file__).with_name("beeai_server_app.py")
ROOT = Path(__file__).resolve().parents[3]
_START_TIMEOUT_S = 240.0  # importing BeeAI, a2a and the memory on a loaded 2-core runner
SUGGESTED = "Suggested next steps"


@dataclass
class Served:
    """One server process of ``beeai_server_app.py``."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    output: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def model_texts(self) -> list[str]:
        """Every message text any model of the crew read, in order."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [text for line in lines for text in json.loads(line)["texts"]]

    def stop(self) -> None:
        stop_process(self.process)


def launch(protocol: str, store: str, workdir: Path, name: str, *options: str) -> Served:
    """Start a server process (without waiting for it); ``options`` go to the app."""
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["HF_HUB_OFFLINE"] = "1"
    output = workdir / f"{name}.out"
    log = workdir / f"{name}.models.jsonl"
    args = [sys.executable, str(APP), "--protocol", protocol, "--port", str(port)]
    args += ["--store", store, "--log", str(log), *options]
    with output.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    return Served(process, port, log, output)


def wait_ready(*servers: Served) -> None:
    """Wait until every server accepts connections; fail with its output if one exits."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    try:
        for server in servers:
            wait_until_ready(
                server.process,
                lambda port=server.port: accepts(port),
                what=f"the BeeAI server on {server.url}",
                timeout=max(0.0, deadline - time.monotonic()),
                interval=0.5,
                detail=lambda output=server.output: output.read_text(errors="replace"),
            )
    except RuntimeError:
        for each in servers:
            each.stop()
        raise


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """``serve(protocol, store, name)`` starts servers; all are stopped after the test."""
    started: list[Served] = []

    def start(
        protocol: str, store: str, *names: str, options: tuple[str, ...] = ()
    ) -> list[Served]:
        servers = [launch(protocol, store, tmp_path, name, *options) for name in names]
        started.extend(servers)
        wait_ready(*servers)
        return servers

    yield start
    for server in started:
        server.stop()


# -- clients --------------------------------------------------------------------------------


async def a2a_send(url: str, context_id: str, text: str) -> str:
    """Send one message in an A2A context with the a2a-sdk client; return the agent's text."""
    async with httpx.AsyncClient(trust_env=False, timeout=120) as http:
        config = ClientConfig(streaming=False, httpx_client=http)
        client = await ClientFactory.connect(url, client_config=config)
        message = Message(
            role=Role.user,
            parts=[Part(root=TextPart(text=text))],
            message_id=uuid.uuid4().hex,
            context_id=context_id,
        )
        answer = ""
        async for event in client.send_message(message):
            if isinstance(event, Message):
                answer = get_message_text(event)
            elif isinstance(event, tuple) and isinstance(event[0], Task):
                status = event[0].status
                if status.message is not None:
                    answer = get_message_text(status.message)
        return answer


def responses_send(url: str, conversation: str, text: str) -> str:
    """One OpenAI Responses API request in a conversation; return the output text."""
    body = {"model": "coordinator", "input": text, "conversation": conversation}
    with httpx.Client(trust_env=False, timeout=120) as http:
        response = http.post(f"{url}/responses", json=body)
    response.raise_for_status()
    data = response.json()
    assert data["status"] == "completed", data
    return "".join(c["text"] for item in data["output"] for c in item["content"])


def chat_send(url: str, messages: list[dict[str, str]]) -> str:
    """One OpenAI chat-completions request with the whole history; return the answer."""
    body = {"model": "coordinator", "messages": messages}
    with httpx.Client(trust_env=False, timeout=120) as http:
        response = http.post(f"{url}/chat/completions", json=body)
    response.raise_for_status()
    content: str = response.json()["choices"][0]["message"]["content"]
    return content


# -- checks ---------------------------------------------------------------------------------


def check_session(workflow: Workflow, session: str, instructions: list[str]) -> None:
    """The session's id in PROV, its instructions, the sub-agents' calls nested, times true."""
    assert workflow.session == session and workflow.id == f"session/{session}"
    assert [s.text for s in workflow.steps if isinstance(s, InstructionStep)] == instructions
    nested = {"extractor": "product_extractor", "classifier": "pfas_classifier"}
    for instruction in workflow.steps:
        assert isinstance(instruction, InstructionStep)
        for handoff in instruction.steps:
            assert isinstance(handoff, CallStep) and handoff.agent == "coordinator"
            assert [c.name for c in handoff.steps] == [nested[handoff.name]]
            assert handoff.steps[0].agent == handoff.name  # unnamed: known by its handoff
            check_times(instruction.timestamp, None, handoff)


def check_times(start: str | None, end: str | None, step: CallStep) -> None:
    """Every call runs inside its parent's interval."""
    assert step.started is not None and step.ended is not None
    assert start is None or start <= step.started
    assert step.started <= step.ended
    assert end is None or step.ended <= end
    for child in step.steps:
        assert isinstance(child, CallStep)
        check_times(step.started, step.ended, child)


def assert_models_clean(*servers: Served) -> None:
    texts = [t for server in servers for t in server.model_texts()]
    assert texts, "the models were never called"
    leaked = [t for t in texts if SUGGESTED in t or "/save" in t or "Saved workflow" in t]
    assert not leaked


def listed(store: str) -> str:
    result = CliRunner().invoke(cli, ["list", "--store", store, "--scope", SCOPE])
    assert result.exit_code == 0, result.output
    return result.output


# -- A2A ------------------------------------------------------------------------------------


async def test_a2a_conversations_are_sessions_and_survive_a_restart(
    serve: Any, tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    (first,) = serve("a2a", store, "a2a-1")
    alice, bob = f"ctx-{uuid.uuid4().hex[:8]}", f"ctx-{uuid.uuid4().hex[:8]}"
    shown = await a2a_send(first.url, alice, EXTRACT)
    assert SUGGESTED in shown and "classifier" in shown.split(SUGGESTED)[1]
    assert SUGGESTED in await a2a_send(first.url, bob, EXTRACT)
    first.stop()  # the server restarts between two turns of both conversations
    (second,) = serve("a2a", store, "a2a-2")
    await a2a_send(second.url, alice, CLASSIFY)
    assert (await a2a_send(second.url, alice, "/save")).startswith(
        f"Saved workflow session/{alice} ("
    )
    await a2a_send(second.url, bob, CLASSIFY)
    assert (await a2a_send(second.url, bob, "/save")).startswith(f"Saved workflow session/{bob}")
    second.stop()
    assert_models_clean(first, second)
    with open_store(store) as saved:
        for session in (alice, bob):
            check_session(saved.load(f"session/{session}", SCOPE), session, [EXTRACT, CLASSIFY])
        assert SessionJournal(saved.backend).unsaved() == []
    assert f"session/{alice}" in listed(store) and f"session/{bob}" in listed(store)


# -- OpenAI-compatible: Responses API, two workers on one oxigraph server --------------------


def test_responses_conversations_span_two_workers_on_one_store(
    serve: Any, oxigraph_server: Any
) -> None:
    oxigraph_server.wipe()
    store = oxigraph_server.query_url
    one, two = serve("responses", store, "responses-1", "responses-2")
    shown = responses_send(one.url, "conv-a", EXTRACT)
    assert SUGGESTED in shown and shown.startswith("Done:")
    responses_send(two.url, "conv-b", EXTRACT)
    responses_send(two.url, "conv-a", CLASSIFY)  # another worker continues conv-a
    responses_send(two.url, "conv-b", CLASSIFY)  # the worker replays conv-b's stored answer
    assert responses_send(one.url, "conv-a", "/save").startswith("Saved workflow session/conv-a (")
    assert_models_clean(one, two)
    with open_store(store) as saved:
        check_session(saved.load("session/conv-a", SCOPE), "conv-a", [EXTRACT, CLASSIFY])
        unsaved = SessionJournal(saved.backend).unsaved(scope=SCOPE)
        assert [(s.session_id, s.events) for s in unsaved][:1] == [("conv-b", 12)]
    assert "session/conv-a" in listed(store) and "session/conv-b" not in listed(store)


# -- OpenAI-compatible: chat completions, the client replays the history ---------------------


@pytest.mark.parametrize("front", ["middleware", "agent"])
def test_chat_completions_continue_the_conversation_the_history_replays(
    serve: Any, tmp_path: Path, front: str
) -> None:
    """The middleware on the coordinator, or the EM agent in front of it."""
    store = str(tmp_path / "store")
    (server,) = serve("chat", store, "chat", options=("--front", front))
    alice: list[dict[str, str]] = [{"role": "user", "content": EXTRACT}]
    bob: list[dict[str, str]] = [{"role": "user", "content": CLASSIFY}]
    for turn in (CLASSIFY, "/save"):
        for history in (alice, bob):  # two conversations, interleaved
            answer = chat_send(server.url, history)
            history += [{"role": "assistant", "content": answer}, {"role": "user", "content": turn}]
    replies = [chat_send(server.url, history) for history in (alice, bob)]
    assert all(r.startswith("Saved workflow session/") for r in replies)
    sessions = [r.split("session/")[1].split(" ")[0] for r in replies]
    assert sessions[0] != sessions[1]
    assert SUGGESTED in alice[1]["content"]  # the client saw them, and sent them back
    server.stop()
    assert_models_clean(server)
    with open_store(store) as saved:
        check_session(saved.load(f"session/{sessions[0]}", SCOPE), sessions[0], [EXTRACT, CLASSIFY])
        check_session(
            saved.load(f"session/{sessions[1]}", SCOPE), sessions[1], [CLASSIFY, CLASSIFY]
        )


_WIRING_WARNING = "without memory_manager=SessionMemoryManager()"


def _wiring_table(tmp_path: Path, front: str) -> dict[str, tuple[str, int, int]]:
    """Serve ``front`` (the middleware or the EM agent) over A2A and the Responses API, each
    wired as docs/deploy.md says and without the manager; in each, two conversations of two
    turns, then ``/save`` in the first. Returns, per cell, the reply to ``/save`` (up to its
    count), how many wiring warnings the server logged and how many instructions the saved
    workflow holds (0: none saved)."""
    cells = [
        ("A2A, wired", "a2a", "session"),
        ("Responses, wired", "responses", "session"),
        ("A2A, no manager", "a2a", "none"),
        ("Responses, no manager", "responses", "none"),
    ]
    servers = {
        name: launch(
            protocol,
            str(tmp_path / f"store-{index}"),
            tmp_path,
            f"{front}-{index}",
            *("--manager", manager, "--front", front),
        )
        for index, (name, protocol, manager) in enumerate(cells)
    }
    table: dict[str, tuple[str, int]] = {}
    saved_ids: dict[str, str] = {}
    try:
        wait_ready(*servers.values())
        for name, protocol, _ in cells:
            server = servers[name]

            def send(
                conversation: str, text: str, server: Served = server, protocol: str = protocol
            ) -> str:
                if protocol == "a2a":
                    return asyncio.run(a2a_send(server.url, conversation, text))
                return responses_send(server.url, conversation, text)

            for conversation in ("c1", "c2"):
                send(conversation, EXTRACT)
                send(conversation, CLASSIFY)
            saved = send("c1", "/save")
            warnings = server.output.read_text(errors="replace").count(_WIRING_WARNING)
            reply = re.sub(r"beeai-[0-9a-f]+", "beeai-<random>", saved.split(" (")[0])
            table[name] = (reply.split(":")[0], warnings)
            saved_ids[name] = saved.split(" (")[0].removeprefix("Saved workflow ")
    finally:
        for server in servers.values():
            server.stop()
    result = {}
    for index, (name, _, _) in enumerate(cells):
        instructions = 0
        if table[name][0].startswith("Saved workflow"):
            with open_store(str(tmp_path / f"store-{index}")) as store:
                workflow = store.load(saved_ids[name], SCOPE)
            instructions = sum(isinstance(s, InstructionStep) for s in workflow.steps)
        result[name] = (*table[name], instructions)
    print(front, result)
    return result


def test_wiring_table_sessions_correct_or_one_warning(tmp_path: Path) -> None:
    """Adapter x (wired as docs/deploy.md says; wired without the manager), the middleware on
    the coordinator: sessions are kept per conversation, or the server logs one warning naming
    the fix at the first request."""
    assert _wiring_table(tmp_path, "middleware") == {
        "A2A, wired": ("Saved workflow session/c1", 0, 2),
        "Responses, wired": ("Saved workflow session/c1", 0, 2),
        # One session per A2A context still (BeeAI keeps a memory per context, the middleware a
        # session per memory), but not named after it: another worker, or the server after a
        # restart, cannot continue it. The Responses API clones that memory per request.
        "A2A, no manager": ("Saved workflow session/beeai-<random>", 1, 2),
        "Responses, no manager": ("Nothing to save yet", 1, 0),
    }


def test_em_agent_wiring_table_sessions_correct_or_one_warning(tmp_path: Path) -> None:
    """The same table with the EM agent in front of the crew: its constructor's session id
    never makes every conversation one session."""
    assert _wiring_table(tmp_path, "agent") == {
        "A2A, wired": ("Saved workflow session/c1", 0, 2),
        "Responses, wired": ("Saved workflow session/c1", 0, 2),
        # A2A replays the context's history to the EM agent: the session is the one whose last
        # turn ended with it (as for chat completions), not named after the context.
        "A2A, no manager": ("Saved workflow session/beeai-<random>", 1, 2),
        # The Responses API sends the new input only: each request is a session of its own.
        "Responses, no manager": ("Nothing to save yet", 1, 0),
    }
