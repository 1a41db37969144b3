"""``em-plugin serve``: the store as a SPARQL 1.1 endpoint, through the ``oxigraph`` server.

The embedded store is a RocksDB directory with a single writer, so a server cannot open a store
that a crew holds, and a crew cannot open a store that a server holds. ``serve`` therefore
**owns** the directory while it runs, and everything else talks to it over HTTP: crews open
``http://HOST:PORT/query`` (the remote backend), and outside clients (rdflib ``SPARQLStore``,
SPARQLWrapper, a browser) query the same URL and see every save at once (``docs/stores.md``).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import click

from em_plugin.cli.base import DEFAULT_STORE, cli, store_path
from em_plugin.cli.sparql_front import SparqlFront

__all__ = ["oxigraph_binary", "serve"]

_START_TIMEOUT_S = 30.0
# Probing our own server must not go through a proxy from the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def oxigraph_binary() -> str | None:
    """Return the ``oxigraph`` server binary of the ``oxigraph`` PyPI package, if installed."""
    beside_python = Path(sys.executable).parent / "oxigraph"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("oxigraph")


@cli.command("serve")
@click.option(
    "--store",
    "store_spec",
    metavar="DIR",
    envvar="EM_PLUGIN_STORE",
    default=DEFAULT_STORE,
    show_default=True,
    help="Store directory to serve ($EM_PLUGIN_STORE), or 'memory:' for an empty one.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=7878,
    show_default=True,
    help="TCP port; 0 picks a free one.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Without --token-file the endpoint has no authentication: keep it "
    "on loopback.",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Require bearer tokens, each opening read or read-write access to named scopes "
    "(TOML or JSON; docs/observability.md).",
)
def serve(store_spec: str, port: int, host: str, token_file: Path | None) -> None:
    """Serve the store as a SPARQL 1.1 endpoint (Query, Update, Graph Store protocols).

    \b
    The server OWNS the store directory while it runs: a store on disk has one
    writer, so stop crews that hold it first. Crews then use the endpoint:
        EM_PLUGIN_STORE=http://127.0.0.1:7878/query
    (or EpisodicMemory(store="http://127.0.0.1:7878/query")), and outside
    clients (rdflib SPARQLStore, SPARQLWrapper, a browser) query the same URL
    and see each save at once. Updates go to /update. A query that names no
    dataset runs over the union of the workflow graphs, each triple once (the
    answer of 'em-plugin query'). Ctrl-C stops the server.

    \b
    With --token-file, every request needs 'Authorization: Bearer TOKEN', and
    each token sees only the graphs of its scopes (docs/observability.md).

    \b
    Example:
      em-plugin serve --store ~/.em-plugin/store --port 7878
    """
    spec = store_path(store_spec)
    location = _location(spec)
    if token_file is not None:
        _serve_guarded(spec, location, host, port, token_file)
        return
    binary = oxigraph_binary()
    if binary is None:
        raise click.ClickException(
            "the oxigraph server binary is missing; install it with: pip install oxigraph"
        )
    if port == 0:
        port = _free_port(host)
    if not _is_loopback(host):
        click.echo(
            f"warning: binding {host}: anyone who can reach it can read and change the store",
            err=True,
        )
    # Oxigraph answers on a private port; the front (the user's port) answers queries over
    # the union of the workflow graphs, each triple once, and passes the rest through.
    inner = _free_port("127.0.0.1")
    command = [binary, "serve", "--bind", _bind("127.0.0.1", inner), "--union-default-graph"]
    if location is not None:
        command += ["--location", str(location)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://{_url_host(host)}:{port}"
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    front: SparqlFront | None = None
    try:
        _wait_until_ready(process, f"http://127.0.0.1:{inner}/query", spec)
        front = SparqlFront(host, port, ("127.0.0.1", inner), partial(_open_inner, inner))
        front.start()
        where = "an empty in-memory store" if location is None else str(location)
        click.echo(f"serving {where}", err=True)
        click.echo(f"query:  {url}/query", err=True)
        click.echo(f"update: {url}/update", err=True)
        click.echo(f"crews:  EM_PLUGIN_STORE={url}/query   (Ctrl-C stops)", err=True)
        # Printed last and flushed: scripts wait for this line.
        click.echo(f"{url}/query")
        sys.stdout.flush()
        process.wait()
        raise click.ClickException(f"the oxigraph server stopped: {_stderr(process)}")
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    finally:
        if front is not None:
            front.stop()
        _stop(process)
        signal.signal(signal.SIGTERM, previous)


def _open_inner(port: int) -> Any:
    from provenance.stores import open_store

    return open_store(f"http://127.0.0.1:{port}/query")


def _serve_guarded(
    spec: str, location: Path | None, host: str, port: int, token_file: Path
) -> None:
    from em_plugin.access import TokenTable
    from em_plugin.cli.guarded_endpoint import GuardedEndpoint, open_store
    from em_plugin.errors import ConfigurationError

    try:
        tokens = TokenTable.load(token_file)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--token-file") from exc
    try:
        store = open_store(location)
    except OSError as exc:
        raise click.ClickException(
            f"cannot open the store {spec} (a crew or a CLI command may hold it for writing; "
            f"stop it first): {exc}"
        ) from exc
    try:
        endpoint = GuardedEndpoint(store, tokens, host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot bind {_bind(host, port)}: {exc}") from exc
    if not _is_loopback(host):
        click.echo(f"warning: binding {host} over plain HTTP: put TLS in front", err=True)
    url = f"http://{_url_host(host)}:{endpoint.port}"
    worker = threading.Thread(target=endpoint.serve_forever, name="em-plugin-serve", daemon=True)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        worker.start()
        where = "an empty in-memory store" if location is None else str(location)
        click.echo(f"serving {where}; {len(tokens)} token(s) from {token_file}", err=True)
        click.echo(f"query:  {url}/query", err=True)
        click.echo(f"update: {url}/update", err=True)
        click.echo(f"{url}/query")
        sys.stdout.flush()
        while worker.is_alive():
            worker.join(0.5)
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    finally:
        endpoint.shutdown()
        signal.signal(signal.SIGTERM, previous)
        del store  # the last reference: RocksDB closes and releases the directory lock


def _location(spec: str) -> Path | None:
    """Return the directory to serve (None for ``memory:``), or refuse a spec that is none."""
    if spec.strip() in ("memory:", "memory://", ":memory:"):
        return None
    scheme = urllib.parse.urlsplit(spec).scheme.lower()
    if scheme in ("http", "https"):
        raise click.BadParameter(
            f"{spec} is already a SPARQL endpoint; serve a store directory", param_hint="--store"
        )
    if scheme == "file":
        return Path(urllib.request.url2pathname(urllib.parse.urlsplit(spec).path))
    if len(scheme) > 1:
        raise click.BadParameter(
            f"cannot serve {spec!r}; give a store directory or 'memory:'", param_hint="--store"
        )
    return Path(spec)


def _wait_until_ready(process: subprocess.Popen[bytes], query_url: str, spec: str) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = _stderr(process)
            if "lock" in error.lower():
                # Oxigraph's own text is a Rust panic with a backtrace: say what it means.
                raise click.ClickException(
                    f"the store {spec} is in use by another process (a crew or a CLI command "
                    "holding it for writing); stop it, start serve first, and point the crew "
                    "at the endpoint instead"
                )
            raise click.ClickException(f"the oxigraph server exited: {error}")
        if _answers(query_url):
            return
        time.sleep(0.05)
    raise click.ClickException(f"the oxigraph server did not answer on {query_url} in time")


def _answers(query_url: str) -> bool:
    request = urllib.request.Request(
        query_url,
        data=b"query=ASK%20%7B%7D",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    try:
        with _LOCAL.open(request, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    if process.stderr:
        process.stderr.close()


def _stderr(process: subprocess.Popen[bytes]) -> str:
    text = process.stderr.read().decode(errors="replace") if process.stderr else ""
    return " ".join(text.split())[-500:] or f"exit status {process.returncode}"


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (a service manager, a test) stops the server like Ctrl-C does.
    raise KeyboardInterrupt


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _bind(host: str, port: int) -> str:
    return f"{_url_host(host)}:{port}"


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
