"""Shared fixtures: real ``oxigraph serve`` and Virtuoso processes on 127.0.0.1, and stores of
every backend.

Virtuoso comes from Debian's ``virtuoso-opensource`` package, which ``make virtuoso`` (and CI)
installs; the fixtures install nothing and skip, saying how to install it, when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provenance.stores import SparqlEndpointStore, WorkflowStore, open_store
from tests.processes import free_port, stop_process, wait_until_ready

_START_TIMEOUT_S = 15.0
_VIRTUOSO_START_TIMEOUT_S = 180.0  # a loaded 2-core runner starts it in over a minute
_VIRTUOSO_MISSING = (
    "Virtuoso is not installed: run `make virtuoso` "
    "(as root: apt-get install -y virtuoso-opensource)"
)
# Requests to the local server must never go through a proxy from the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(autouse=True, scope="session")
def _local_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the cache of remote stores' indexes (and that of worker processes) out of $HOME."""
    previous = os.environ.get("EM_PLUGIN_CACHE_DIR")
    os.environ["EM_PLUGIN_CACHE_DIR"] = str(tmp_path_factory.mktemp("em-plugin-cache"))
    yield
    if previous is None:
        os.environ.pop("EM_PLUGIN_CACHE_DIR", None)
    else:
        os.environ["EM_PLUGIN_CACHE_DIR"] = previous


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
        _form_post(self.update_url, {"update": sparql})

    def wipe(self) -> None:
        """Remove every graph, so each test starts from an empty endpoint."""
        self.update("DROP ALL")


def oxigraph_binary() -> str | None:
    """Return the ``oxigraph`` CLI shipped by the PyPI ``oxigraph`` package, if installed."""
    beside_python = Path(sys.executable).parent / "oxigraph"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("oxigraph")


def _form_post(url: str, params: dict[str, str], timeout: float = 30) -> bytes:
    """POST a SPARQL protocol form (the one request form every server answers)."""
    request = urllib.request.Request(
        url,
        data=urllib.parse.urlencode(params).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    with _LOCAL.open(request, timeout=timeout) as response:
        return bytes(response.read())


def _answers(url: str) -> bool:
    try:
        _form_post(url, {"query": "ASK {}"}, timeout=1)
        return True
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

    def error() -> str:
        return process.stderr.read().decode(errors="replace") if process.stderr else ""

    try:
        wait_until_ready(
            process,
            lambda: _answers(server.query_url),
            what=f"oxigraph serve on {server.base_url}",
            timeout=_START_TIMEOUT_S,
            interval=0.05,
            detail=error,
        )
    except RuntimeError:
        stop_oxigraph(server)
        raise
    return server


def stop_oxigraph(server: OxigraphServer) -> None:
    """Stop the server process that :func:`start_oxigraph` started."""
    stop_process(server.process, timeout=10)
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


@pytest.fixture
def remote_store_url(oxigraph_server: OxigraphServer) -> Iterator[str]:
    """The query URL of the session's ``oxigraph serve``, emptied before and after the test."""
    oxigraph_server.wipe()
    yield oxigraph_server.query_url
    oxigraph_server.wipe()


@dataclass
class VirtuosoServer:
    """A running Virtuoso 7 (``virtuoso-t``) with HTTP and SQL bound to 127.0.0.1 only."""

    process: subprocess.Popen[bytes]
    http_port: int
    sql_port: int
    location: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def query_url(self) -> str:
        """``/sparql``: anonymous; updates run as the ``SPARQL`` user (granted at start)."""
        return f"{self.base_url}/sparql"

    @property
    def auth_url(self) -> str:
        """``/sparql-auth``: HTTP Digest authentication (user ``dba``, password ``dba``)."""
        return f"{self.base_url}/sparql-auth"

    def isql(self, sql: str) -> str:
        """Run SQL through ``isql-vt`` as dba and return its output.

        Raises:
            RuntimeError: When isql fails.
        """
        isql = shutil.which("isql-vt") or shutil.which("isql")
        if isql is None:
            raise RuntimeError("isql-vt is missing; it comes with virtuoso-opensource")
        done = subprocess.run(
            [isql, f"127.0.0.1:{self.sql_port}", "dba", "dba", f"exec={sql}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
        if done.returncode != 0 or "*** Error" in output:
            raise RuntimeError(f"isql {sql!r} failed: {output.strip()}")
        return output

    def wipe(self) -> None:
        """Drop every graph except Virtuoso's own, so each test starts from an empty store."""
        backend = SparqlEndpointStore(self.query_url)
        try:
            backend.drop_graphs(backend.graph_names())
        finally:
            backend.close()


def virtuoso_binary() -> str | None:
    """Return the ``virtuoso-t`` server binary from Debian's virtuoso-opensource, if installed."""
    return shutil.which("virtuoso-t")


def start_virtuoso(location: Path) -> VirtuosoServer:
    """Start Virtuoso on free 127.0.0.1 ports with its database in ``location``.

    Grants ``SPARQL_UPDATE`` to the anonymous ``SPARQL`` user, which is safe only because the
    server listens on loopback, and lifts the result-row cap for the bench.

    Raises:
        RuntimeError: When it exits or does not answer within the start timeout.
    """
    binary = virtuoso_binary()
    if binary is None:
        pytest.skip(_VIRTUOSO_MISSING)
    location.mkdir(parents=True, exist_ok=True)
    http_port, sql_port = free_port(), free_port()
    vsp = Path("/var/lib/virtuoso-opensource-7/vsp")
    config = textwrap.dedent(
        f"""\
        [Database]
        DatabaseFile = {location}/virtuoso.db
        ErrorLogFile = {location}/virtuoso.log
        LockFile = {location}/virtuoso.lck
        TransactionFile = {location}/virtuoso.trx
        xa_persistent_file = {location}/virtuoso.pxa
        TempStorage = TempDatabase
        [TempDatabase]
        DatabaseFile = {location}/virtuoso-temp.db
        TransactionFile = {location}/virtuoso-temp.trx
        [Parameters]
        ServerPort = 127.0.0.1:{sql_port}
        DisableUnixSocket = 1
        CheckpointInterval = 60
        NumberOfBuffers = 20000
        MaxDirtyBuffers = 15000
        DirsAllowed = .
        [HTTPServer]
        ServerPort = 127.0.0.1:{http_port}
        ServerRoot = {vsp if vsp.is_dir() else location}
        ServerThreads = 4
        Charset = UTF-8
        [SPARQL]
        ResultSetMaxRows = 10000000
        MaxQueryExecutionTime = 600
        """
    )
    (location / "virtuoso.ini").write_text(config)
    process = subprocess.Popen(
        [binary, "+foreground", "+configfile", str(location / "virtuoso.ini")],
        cwd=location,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = VirtuosoServer(process, http_port, sql_port, location)
    log = location / "virtuoso.log"
    wait_until_ready(
        process,
        lambda: _answers(server.query_url),
        what=f"virtuoso-t on {server.base_url}",
        timeout=_VIRTUOSO_START_TIMEOUT_S,
        detail=lambda: log.read_text(errors="replace")[-2000:] if log.exists() else "",
    )
    try:
        server.isql('GRANT SPARQL_UPDATE TO "SPARQL";')
    except BaseException:
        stop_virtuoso(server)
        raise
    return server


def stop_virtuoso(server: VirtuosoServer) -> None:
    """Stop the server that :func:`start_virtuoso` started (SIGTERM: it checkpoints and exits)."""
    stop_process(server.process)


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtuosoServer]:
    """A real Virtuoso 7 on 127.0.0.1, for the whole session (skips when not installed)."""
    server = start_virtuoso(tmp_path_factory.mktemp("virtuoso"))
    try:
        yield server
    finally:
        stop_virtuoso(server)


@pytest.fixture(
    params=[
        "memory",
        "disk",
        pytest.param("remote", marks=pytest.mark.integration),
        pytest.param("virtuoso", marks=pytest.mark.integration),
    ]
)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The spec of an empty store of each backend: ``memory:``, a temp directory, the servers."""
    if request.param == "memory":
        return "memory:"
    if request.param == "disk":
        return str(tmp_path / "store")
    server: OxigraphServer | VirtuosoServer = request.getfixturevalue(
        "oxigraph_server" if request.param == "remote" else "virtuoso_server"
    )
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
