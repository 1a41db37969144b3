"""The HTTP side of ``serve``, the same with and without tokens: requests in, answers out.

A :class:`SparqlServer` reads each request to ``/query`` or ``/update`` with
:func:`~em_plugin.endpoint.protocol.read_request` and hands the checked request to its
:class:`Backend`: :class:`~em_plugin.endpoint.scoped.ScopedBackend` (``--token-file``: the store
in this process, a dataset per token) or :class:`~em_plugin.endpoint.proxied.ProxiedBackend`
(an ``oxigraph serve`` child). Every request is one span (:mod:`~em_plugin.endpoint.tracing`).
Errors are plain text with the Protocol's status; a 500 is logged with its traceback.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from em_plugin.endpoint.answers import Answer
from em_plugin.endpoint.description import service_description
from em_plugin.endpoint.protocol import (
    QUERY_PATH,
    UPDATE_PATH,
    ProtocolError,
    SparqlRequest,
    endpoint_path,
    read_request,
)
from em_plugin.endpoint.tracing import request_span

__all__ = ["Backend", "SparqlServer"]

log = logging.getLogger("em_plugin.serve")

_MAX_BODY = 512 * 1024 * 1024


class Backend(Protocol):
    """What answers the checked requests of a :class:`SparqlServer`."""

    scoped: bool
    """Whether tokens narrow the dataset (said in the service description)."""

    def authorize(self, header: str | None) -> Any:
        """Return the caller's grant from its ``Authorization`` header (or raise a 401)."""

    def query(self, grant: Any, request: SparqlRequest, base: str, accept: str | None) -> Answer:
        """Answer a query; ``base`` is the query endpoint's URL (relative IRIs resolve there)."""

    def update(self, grant: Any, request: SparqlRequest, base: str) -> None:
        """Run an update."""

    def other(self, handler: BaseHTTPRequestHandler, body: bytes) -> bool:
        """Answer a request to another path (the Graph Store Protocol); False: none served."""

    def close(self) -> None:
        """Release what the backend holds."""


class SparqlServer:
    """A threaded HTTP server answering the SPARQL 1.1 Protocol through ``backend``.

    Args:
        backend: What answers the requests.
        host: Address to bind.
        port: Port to bind (0: a free one).
    """

    def __init__(self, backend: Backend, host: str, port: int) -> None:
        self.backend = backend
        self.server = ThreadingHTTPServer((host, port), _handler(self))
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.server.server_address[1])

    def start(self) -> None:
        """Answer requests in a background thread until :meth:`stop`."""
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
            name="em-plugin-serve", daemon=True,
        )  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        """Stop answering, close the socket and the backend."""
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join(timeout=30)
        self.server.server_close()
        self.backend.close()


def _handler(owner: SparqlServer) -> type[BaseHTTPRequestHandler]:
    backend = owner.backend

    class Handler(BaseHTTPRequestHandler):
        server_version = "em-plugin"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.address_string(), format % args)

        def version_string(self) -> str:
            # The remote store backend reads the server kind here: Oxigraph's dialect.
            return "Oxigraph em-plugin-serve"

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_HEAD(self) -> None:
            self._serve()

        def _serve(self) -> None:
            path = endpoint_path(self.path)
            with request_span(
                self.command, path, self.headers, owner.server.server_address[:2]
            ) as record:
                record(self._answer(path))

        def _answer(self, path: str) -> int:
            try:
                body = self._body()
                if path not in (QUERY_PATH, UPDATE_PATH) and backend.other(self, body):
                    return 0
                grant = backend.authorize(self.headers.get("Authorization"))
                request = read_request(self.command, self.path, self.headers, body)
                base = f"http://{self.headers.get('Host') or _host(owner)}{QUERY_PATH}"
                if request.text is None:
                    answer = service_description(
                        base, scoped=backend.scoped, accept=self.headers.get("Accept")
                    )
                elif request.is_update:
                    backend.update(grant, request, base)
                    return self._send(204, b"", None)
                else:
                    answer = backend.query(grant, request, base, self.headers.get("Accept"))
                return self._send(200, answer.body, answer.media_type)
            except ProtocolError as exc:
                return self._send(exc.status, str(exc).encode(), "text/plain; charset=utf-8",
                                  exc.allow)  # fmt: skip
            except (BrokenPipeError, ConnectionResetError):
                return 499  # the client left: nothing to answer
            except Exception as exc:  # a server error: answered, and logged with its traceback
                log.exception("request failed: %s %s", self.command, path)
                message = f"the request failed: {type(exc).__name__}: {exc}".encode()
                return self._send(500, message, "text/plain; charset=utf-8")

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                raise ProtocolError(f"the request body is over {_MAX_BODY} bytes", 413)
            return self.rfile.read(length) if length else b""

        def _send(
            self, status: int, body: bytes, media_type: str | None, allow: str | None = None
        ) -> int:
            self.send_response(status)
            if status == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="em-plugin"')
            if allow:
                self.send_header("Allow", allow)
            if media_type:
                self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(body)
            return status

    return Handler


def _host(owner: SparqlServer) -> str:
    host, port = str(owner.server.server_address[0]), owner.server.server_address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
