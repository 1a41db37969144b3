"""Shared fixtures: a real ``oxigraph serve`` process on 127.0.0.1, and stores of every backend."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provenance.stores import WorkflowStore, open_store

_START_TIMEOUT_S = 15.0
# Requests to the local server must never go through a proxy from the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class OxigraphServer:
    """A running ``oxigraph serve`` bound to 127.0.0.1 (never another address)."""

    process: subprocess.Popen[bytes]
    port: int
    location: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def query_url(self) -> str:
        return f"{self.base_url}/query"

    @property
    def update_url(self) -> str:
        return f"{self.base_url}/update"

    def update(self, sparql: str) -> None:
        """Run a SPARQL update directly, bypassing the code under test."""
        request = urllib.request.Request(
            self.update_url,
            data=sparql.encode("utf-8"),
            headers={"Content-Type": "application/sparql-update"},
            method="POST",
        )
        with _LOCAL.open(request, timeout=10) as response:
            response.read()

    def wipe(self) -> None:
        """Remove every graph, so each test starts from an empty endpoint."""
        self.update("DROP ALL")


def oxigraph_binary() -> str | None:
    """Return the ``oxigraph`` CLI shipped by the PyPI ``oxigraph`` package, if installed."""
    beside_python = Path(sys.executable).parent / "oxigraph"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("oxigraph")


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    request = urllib.request.Request(
        url,
        data=b"ASK {}",
        headers={"Content-Type": "application/sparql-query"},
        method="POST",
    )
    try:
        with _LOCAL.open(request, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_oxigraph(location: Path, *extra: str) -> OxigraphServer:
    """Start ``oxigraph serve`` on a free 127.0.0.1 port and wait until it answers.

    Raises:
        RuntimeError: When it exits or does not answer within the start timeout.
    """
    binary = oxigraph_binary()
    if binary is None:
        pytest.skip("the oxigraph server binary is not installed (pip install oxigraph)")
    port = free_port()
    command = [binary, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        [*command, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    server = OxigraphServer(process, port, location)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"oxigraph serve exited with {process.returncode}: {error}")
        if _answers(server.query_url):
            return server
        time.sleep(0.05)
    stop_oxigraph(server)
    raise RuntimeError(f"oxigraph serve did not answer on {server.base_url} within the timeout")


def stop_oxigraph(server: OxigraphServer) -> None:
    """Stop the server process that :func:`start_oxigraph` started."""
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)
    if server.process.stderr:
        server.process.stderr.close()


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphServer]:
    """A real ``oxigraph serve`` on 127.0.0.1, for the whole session."""
    server = start_oxigraph(tmp_path_factory.mktemp("oxigraph-server"))
    try:
        yield server
    finally:
        stop_oxigraph(server)


@pytest.fixture(params=["memory", "disk", pytest.param("remote", marks=pytest.mark.integration)])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The spec of an empty store of each backend: ``memory:``, a temp directory, the server."""
    if request.param == "memory":
        return "memory:"
    if request.param == "disk":
        return str(tmp_path / "store")
    server: OxigraphServer = request.getfixturevalue("oxigraph_server")
    server.wipe()
    return server.query_url


@pytest.fixture
def store(store_spec: str) -> Iterator[WorkflowStore]:
    """An empty :class:`provenance.stores.WorkflowStore` of each backend, closed afterwards."""
    workflow_store = open_store(store_spec)
    try:
        yield workflow_store
    finally:
        workflow_store.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--update-golden``: rewrite tests/provenance/golden/*.ttl from the current mapping."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="regenerate the golden RDF files in tests/provenance/golden/ instead of comparing",
    )
