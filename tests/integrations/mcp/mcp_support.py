"""Helpers of the MCP server tests: a seeded disk store, servers on stdio and HTTP, SDK clients.

The store holds the PFAS bootstrap workflows (scope ``pfas``) and the Helpdesk sample (scope
``helpdesk``), indexed with the fake embedder unless a test asks for the real one. Servers run
as ``python -m integrations.mcp`` over stdio, or in this process on 127.0.0.1 (uvicorn in a
thread, so a test can read the spans the server made); clients are the SDK's own.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from em_plugin.memory import EpisodicMemory
from integrations.mcp import MCPSettings, MemoryServer
from integrations.mcp.http_server import MCP_PATH, http_app, listen
from provenance.model import Workflow
from provenance.workflow_json import read_jsonl, workflow_to_json

ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl"
HELPDESK = ROOT / "tests" / "data" / "workflows" / "helpdesk.jsonl"
PFAS = "pfas"
HELPDESK_SCOPE = "helpdesk"
TOKEN_PFAS = "pfas-reader-token-0123456789"
TOKEN_HELPDESK = "helpdesk-writer-token-0123456789"


def seed(path: Path, *, embedder: Any = "fake") -> Path:
    """Create a disk store at ``path`` with the two scopes' workflows and their index."""
    bootstrap = [w.replace(scope=PFAS) for w in read_jsonl(BOOTSTRAP)]
    helpdesk = [w.replace(scope=HELPDESK_SCOPE) for w in read_jsonl(HELPDESK)]
    with EpisodicMemory(store=str(path), embedder=embedder) as memory:
        memory.save_many(bootstrap + helpdesk)
    return path


def copy_store(template: Path, target: Path) -> Path:
    """Copy a disk store and its index directory beside it; return the copy's path."""
    shutil.copytree(template, target / template.name)
    index = template.with_name(f"{template.name}.em-index")
    if index.exists():
        shutil.copytree(index, target / index.name)
    return target / template.name


def bootstrap_workflow(number: int = 1) -> Workflow:
    """One PFAS bootstrap workflow as stored (``bootstrap/0001`` by default)."""
    wanted = f"bootstrap/{number:04d}"
    return next(w.replace(scope=PFAS) for w in read_jsonl(BOOTSTRAP) if w.id == wanted)


def workflow_so_far(workflow: Workflow, leaves: int) -> dict[str, Any]:
    """The Workflow JSON of a workflow's first leaves, without id (a run in progress)."""
    obj = workflow_to_json(workflow.prefix(leaves))
    return {"steps": obj["steps"]}


def payload(result: CallToolResult) -> Any:
    """The JSON a tool answered (its text content), after checking it is not an error."""
    assert not result.isError, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def error_text(result: CallToolResult) -> str:
    """The message of a tool error result."""
    assert result.isError, result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


def server_env() -> dict[str, str]:
    """The environment of a server process: this checkout first, offline, the fake embedder."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
    }


@asynccontextmanager
async def stdio_session(store: Path, *options: str) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``python -m integrations.mcp`` over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "integrations.mcp", "--store", str(store), *options],
        env=server_env(),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        session.initialized = await session.initialize()  # type: ignore[attr-defined]
        yield session


@dataclass
class HttpServer:
    """A :class:`MemoryServer` served by uvicorn in a thread of this process, on 127.0.0.1."""

    server: MemoryServer
    uvicorn: uvicorn.Server
    thread: threading.Thread
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"


@contextmanager
def http_server(settings: MCPSettings, *, tracer_provider: Any = None) -> Iterator[HttpServer]:
    """Serve ``settings`` over streamable HTTP on a free loopback port until the block ends."""
    server = MemoryServer(settings, tracer_provider=tracer_provider)
    sock = listen("127.0.0.1", 0)
    config = uvicorn.Config(http_app(server), log_level="warning", ws="none", lifespan="on")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(3000):  # until uvicorn has run its startup (the lifespan included)
            if runner.started or not thread.is_alive():
                break
            time.sleep(0.01)
        assert runner.started, "uvicorn did not start"
        yield HttpServer(server, runner, thread, sock.getsockname()[1])
    finally:
        runner.should_exit = True
        thread.join(timeout=30)
        sock.close()
        server.close()


@asynccontextmanager
async def http_session(
    url: str, token: str | None = None, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session over streamable HTTP (with a bearer token if given)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with (
        httpx.AsyncClient(headers=sent, timeout=httpx.Timeout(120.0)) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        session.initialized = await session.initialize()  # type: ignore[attr-defined]
        yield session


def token_file(path: Path) -> Path:
    """Write a token file: a read token for ``pfas``, a read-write token for ``helpdesk``."""
    path.write_text(
        "[tokens.pfas-reader]\n"
        f'token = "{TOKEN_PFAS}"\n'
        'scopes = ["pfas"]\n'
        "[tokens.helpdesk-writer]\n"
        f'token = "{TOKEN_HELPDESK}"\n'
        'scopes = ["helpdesk"]\n'
        'access = "read-write"\n',
        encoding="utf-8",
    )
    return path
