"""A BeeAI crew served over Zed's Agent Client Protocol (stdio), driven by the ACP client.

``beeai_server_app.py --protocol acp`` serves the coordinator (unnamed ``HandoffTool``
sub-agents on scripted models, the memory middleware on it) with BeeAI's ``ACPZedServer`` on the
process's stdin and stdout; the test speaks ACP to it as an editor does, with the
``agent-client-protocol`` package's own client (``acp.spawn_agent_process``), which also stops
the process. Checked, wired as docs/deploy.md says and without ``SessionMemoryManager``: each
ACP session is one memory session named by its ACP session id, both turns of a session are in
the workflow ``/save`` writes (calls nested at every depth, true times), another session stays
apart, the crew's answer reaches the client, no model reads the memory's text, and no wiring
warning is logged (none is due: the adapter names the session either way).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from beeai_server_app import CLASSIFY, EXTRACT, SCOPE
from test_beeai_servers import check_session

from em_plugin.session.journal import SessionJournal
from provenance.stores import open_store

acp = pytest.importorskip("acp", reason='needs "beeai-framework[acp-zed]" (the serve extra)')

pytestmark = pytest.mark.integration

APP = Path(__file__).with_name("beeai_server_app.py")
ROOT = Path(__file__).resolve().parents[3]
_WIRING_WARNING = "without memory_manager=SessionMemoryManager()"
_TIMEOUT_S = 600.0  # importing BeeAI and the memory, four turns, on a loaded 2-core runner


class EditorClient:
    """The client side of ACP, as an editor: it keeps what the agent streams per session."""

    def __init__(self) -> None:
        self.messages: dict[str, list[str]] = {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Keep the agent's message chunks (its thoughts and tool calls are left out)."""
        if isinstance(update, acp.schema.AgentMessageChunk):
            text = getattr(update.content, "text", "")
            self.messages.setdefault(session_id, []).append(text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        """The crew asks for none; a request would be a failure of the test."""
        raise AssertionError(f"unexpected permission request: {args} {kwargs}")


async def _chat(
    store: Path, log: Path, errors: Path, manager: str
) -> tuple[EditorClient, str, str]:
    """Two ACP sessions: the first extracts, the second extracts, the first classifies and saves.

    Returns:
        The client, the first session's id and the second's.
    """
    client = EditorClient()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    args = ["--protocol", "acp", "--store", str(store), "--log", str(log), "--manager", manager]
    with errors.open("wb") as stderr:
        async with (
            acp.spawn_agent_process(
                client,
                sys.executable,
                str(APP),
                *args,
                env=env,
                cwd=ROOT,
                transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 30.0},
            ) as (connection, _process),
            asyncio.timeout(_TIMEOUT_S),
        ):
            # A hung agent fails the test; leaving the block stops the process either way.
            await connection.initialize(protocol_version=acp.PROTOCOL_VERSION)
            first = (await connection.new_session(cwd=str(ROOT))).session_id
            second = (await connection.new_session(cwd=str(ROOT))).session_id
            for session, text in ((first, EXTRACT), (second, EXTRACT), (first, CLASSIFY)):
                response = await connection.prompt(
                    session_id=session, prompt=[acp.text_block(text)]
                )
                assert response.stop_reason == "end_turn"
            saved = await connection.prompt(session_id=first, prompt=[acp.text_block("/save")])
            assert saved.stop_reason == "end_turn"
    return client, first, second


@pytest.mark.parametrize("manager", ["session", "none"], ids=["wired", "no-manager"])
async def test_acp_sessions_are_memory_sessions_wired_or_not(manager: str, tmp_path: Path) -> None:
    store, log, errors = tmp_path / "store", tmp_path / "models.jsonl", tmp_path / "agent.err"
    client, first, second = await _chat(store, log, errors, manager)
    output = errors.read_text(errors="replace")
    assert "Traceback" not in output, output
    assert output.count(_WIRING_WARNING) == 0, output
    assert client.messages[first] == [f"Done: Your task: {t}" for t in (EXTRACT, CLASSIFY)]
    assert client.messages[second] == [f"Done: Your task: {EXTRACT}"]
    texts = [t for line in log.read_text().splitlines() for t in json.loads(line)["texts"]]
    assert texts and not [t for t in texts if "Suggested next steps" in t or "/save" in t]
    with open_store(str(store)) as saved:
        assert sorted(saved.ids(SCOPE)) == ["seed", f"session/{first}"]
        check_session(saved.load(f"session/{first}", SCOPE), first, [EXTRACT, CLASSIFY])
        unsaved = SessionJournal(saved.backend).unsaved(scope=SCOPE)
        assert [s.session_id for s in unsaved] == [second]
