"""The memory finds the BeeAI server serving it, and whether its manager keys sessions.

Each case runs BeeAI's real server classes' ``serve()`` with uvicorn replaced by a probe that
asks :func:`~integrations.beeai._wiring.unkeyed_server` from another thread, as the middleware
does (BeeAI binds middlewares on a worker thread while ``serve()`` runs the event loop). The
end-to-end table, over real server processes, is in
``tests/integrations/deploy/test_beeai_servers.py``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import uvicorn
from beeai_framework.adapters.a2a.serve.server import A2AServer, A2AServerConfig
from beeai_framework.adapters.openai.serve.server import OpenAIServer, OpenAIServerConfig
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.serve.utils import LRUMemoryManager

from integrations.beeai import SessionMemoryManager
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
