"""The memory finds the BeeAI server serving it, and whether its manager keys sessions.

Each case runs BeeAI's real server classes' ``serve()`` with uvicorn replaced by a probe that
asks :func:`~integrations.beeai._wiring.unkeyed_server` from another thread, as the middleware
does (BeeAI binds middlewares on a worker thread while ``serve()`` runs the event loop). The EM
agent is served the same way, its requests run on clones as BeeAI's executors run them. The
end-to-end table, over real server processes, is in
``tests/integrations/deploy/test_beeai_servers.py``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
import uvicorn
from beeai_framework.adapters.a2a.serve.server import A2AServer, A2AServerConfig
from beeai_framework.adapters.openai.serve.server import OpenAIServer, OpenAIServerConfig
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.memory import UnconstrainedMemory
from beeai_framework.serve.utils import LRUMemoryManager
from beeai_support import make_memory

from integrations.beeai import EpisodicMemoryAgent, SessionMemoryManager
from integrations.beeai._wiring import unkeyed_server
from integrations.beeai.testing import ScriptedChatModel, final


def _agent() -> RequirementAgent:
    return RequirementAgent(llm=ScriptedChatModel([final("hi")]), name="coordinator")


def _found_while_serving(server: Any, monkeypatch: pytest.MonkeyPatch) -> str | None:
    found: list[str | None] = []

    def probe(*args: Any, **kwargs: Any) -> None:
        worker = threading.Thread(target=lambda: found.append(unkeyed_server()))
        worker.start()
        worker.join()

    monkeypatch.setattr(uvicorn, "run", probe)
    server.register(_agent()).serve()
    return found[0]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda m: A2AServer(config=A2AServerConfig(), memory_manager=m), "A2AServer"),
        (
            lambda m: OpenAIServer(config=OpenAIServerConfig(api="responses"), memory_manager=m),
            "OpenAIServer",
        ),
    ],
    ids=["a2a", "responses"],
)
def test_a_server_without_the_session_manager_is_found(
    make: Any, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _found_while_serving(make(None), monkeypatch) == expected  # BeeAI's default
    assert _found_while_serving(make(LRUMemoryManager(10)), monkeypatch) == expected
    assert _found_while_serving(make(SessionMemoryManager()), monkeypatch) is None
    wrapped = SessionMemoryManager(LRUMemoryManager(10))
    assert _found_while_serving(make(wrapped), monkeypatch) is None


def test_chat_completions_and_unserved_runs_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat = OpenAIServer(config=OpenAIServerConfig(api="chat-completion"))
    assert _found_while_serving(chat, monkeypatch) is None  # sessions come from the history
    assert unkeyed_server() is None  # a script's run: no server anywhere


def _em_sessions_while_serving(
    server: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[EpisodicMemoryAgent, list[str], int]:
    """Two requests to an EM agent under ``server``, each on a clone, as BeeAI serves them.

    Returns:
        The agent, the two runs' sessions and how many wiring warnings were logged.
    """
    crew = RequirementAgent(
        llm=ScriptedChatModel([final("one"), final("two")]),
        memory=UnconstrainedMemory(),
        name="coordinator",
    )
    em = EpisodicMemoryAgent(crew, make_memory())
    sessions: list[str] = []

    async def two_requests() -> None:
        for text in ("first conversation", "second conversation"):
            twin = await em.clone()
            sessions.append((await twin.run(text)).session_id)

    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: asyncio.run(two_requests()))
    with caplog.at_level(logging.WARNING, logger="integrations.beeai"):
        server.register(em).serve()
    warned = sum(
        "without memory_manager=SessionMemoryManager()" in r.message for r in caplog.records
    )
    return em, sessions, warned


@pytest.mark.parametrize(
    ("manager", "warnings"), [(None, 1), (SessionMemoryManager(), 0)], ids=["no-manager", "wired"]
)
def test_a_served_em_agent_never_puts_every_conversation_in_its_one_session(
    manager: Any,
    warnings: int,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = A2AServer(config=A2AServerConfig(), memory_manager=manager)
    em, sessions, warned = _em_sessions_while_serving(server, monkeypatch, caplog)
    # Its clones share the constructor's session id: served, each conversation buffer (here
    # each request, which names no conversation) has a session of its own instead.
    assert len(set(sessions)) == 2 and em.session_id not in sessions
    assert warned == warnings  # once, at the first request, when the manager is missing


async def test_an_em_agent_in_a_script_keeps_its_constructors_session() -> None:
    crew = RequirementAgent(llm=ScriptedChatModel([final("one"), final("two")]), name="c")
    em = EpisodicMemoryAgent(crew, make_memory(), session_id="mine")
    assert [(await em.run(text)).session_id for text in ("a", "b")] == ["mine", "mine"]
