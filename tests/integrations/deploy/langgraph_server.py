"""Start and stop the real LangGraph API server (``langgraph dev``, in-memory runtime).

The server runs from a project directory holding ``langgraph.json`` and a graph module that
serves :mod:`lg_server_crew`; it binds 127.0.0.1 on a free port. The in-memory runtime keeps its
threads and checkpoints in ``.langgraph_api/`` of the project directory, so a server started
again from the same directory continues the same threads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.processes import free_port, stop_process, wait_until_ready

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
_START_TIMEOUT_S = 120.0
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class LangGraphServer:
    """A running ``langgraph dev`` process bound to 127.0.0.1."""

    process: subprocess.Popen[bytes]
    port: int
    project: Path
    log: Path
    clients: list[Any] = field(default_factory=list)
    """SDK clients made for this server, closed when it stops (a pooled connection to a server
    that is gone would otherwise be left for the garbage collector)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def langgraph_binary() -> str | None:
    """The ``langgraph`` CLI of this environment (``langgraph-cli[inmem]``), if installed."""
    beside_python = Path(sys.executable).parent / "langgraph"
    return str(beside_python) if beside_python.is_file() else None


def make_project(project: Path) -> Path:
    """Write ``langgraph.json`` and the graph module into ``project``."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "crew.py").write_text("from lg_server_crew import graph  # noqa: F401\n")
    config = {"dependencies": ["."], "graphs": {"crew": "./crew.py:graph"}}
    (project / "langgraph.json").write_text(json.dumps(config))
    return project


def start_langgraph(project: Path, *, store: str, seen: Path, jobs: int = 2) -> LangGraphServer:
    """Start ``langgraph dev`` from ``project`` and wait until it answers ``/ok``.

    The arguments are those of :func:`launch_langgraph`.

    Returns:
        The server.
    """
    return wait_ready(launch_langgraph(project, store=store, seen=seen, jobs=jobs))


def launch_langgraph(project: Path, *, store: str, seen: Path, jobs: int = 2) -> LangGraphServer:
    """Start ``langgraph dev`` from ``project`` without waiting (see :func:`wait_ready`).

    Args:
        project: The project directory (see :func:`make_project`).
        store: The memory's store spec (a directory, or an ``oxigraph serve`` URL).
        seen: Where the crew's models log their inputs.
        jobs: ``--n-jobs-per-worker``.

    Returns:
        The server, starting.
    """
    binary = langgraph_binary()
    if binary is None:
        pytest.skip('the LangGraph API server is not installed (pip install -e ".[serve]")')
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]),
        "EM_TEST_STORE": store,
        "EM_TEST_SEEN": str(seen),
        "HF_HUB_OFFLINE": "1",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    command = [
        binary,
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        "langgraph.json",
        "--n-jobs-per-worker",
        str(jobs),
    ]
    log = project / f"server-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return LangGraphServer(process, port, project, log)


def wait_ready(server: LangGraphServer) -> LangGraphServer:
    """Wait until a launched server answers ``/ok``.

    Raises:
        RuntimeError: When it exits or does not answer within the start timeout.
    """
    wait_until_ready(
        server.process,
        lambda: _answers(f"{server.url}/ok"),
        what=f"langgraph dev on {server.url}",
        timeout=_START_TIMEOUT_S,
        detail=lambda: _tail(server.log),
    )
    return server


def stop_langgraph(server: LangGraphServer) -> None:
    """Stop the server gracefully (it writes its threads to ``.langgraph_api/`` on the way)."""
    for client in server.clients:
        client.close()
    stop_process(server.process)


def _answers(url: str) -> bool:
    try:
        with _LOCAL.open(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""
