"""A loopback proxy in front of a real SPARQL server, for tests of answers that never arrive.

:class:`SparqlProxy` forwards every POST to the server at :meth:`SparqlProxy.upstream` and
passes its answer back. A subclass decides, through two hooks, when the memory loses it: before
the request reaches the server (:meth:`SparqlProxy.refuses`: the server looks down) or after the
server answered an update (:meth:`SparqlProxy.loses_answer`: it committed, the answer is lost).
"""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self

_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class SparqlProxy(http.server.ThreadingHTTPServer):
    """Forwards SPARQL requests to ``upstream`` on 127.0.0.1, on a port of its own."""

    def __init__(self, upstream: str = "") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self._upstream = upstream

    def upstream(self) -> str:
        """Return the base URL of the real server (``http://127.0.0.1:<port>``)."""
        return self._upstream

    @property
    def query_url(self) -> str:
        """The query endpoint of the proxy: what a memory opens."""
        return f"http://127.0.0.1:{self.server_address[1]}/query"

    def refuses(self) -> bool:
        """Tell whether to drop a request before it reaches the server (default: never)."""
        return False

    def loses_answer(self, path: str, update: str) -> bool:
        """Tell whether to drop the server's answer to a request it has served (default: never).

        Args:
            path: The request's path (``/update`` for an update).
            update: The SPARQL update text (empty for a query).
        """
        return False

    @contextmanager
    def serving(self) -> Iterator[Self]:
        """Serve in a daemon thread until the block ends, then close the port."""
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.shutdown()
            self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: SparqlProxy

    def log_message(self, *args: object) -> None:
        pass

    def _drop(self) -> None:
        self.close_connection = True
        self.connection.shutdown(2)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        proxy = self.server
        if proxy.refuses():
            self._drop()
            return
        request = urllib.request.Request(
            proxy.upstream() + self.path,
            data=body,
            headers={"Content-Type": self.headers["Content-Type"], "Accept": "*/*"},
            method="POST",
        )
        try:
            with _LOCAL.open(request, timeout=30) as answer:
                payload, status, kind = answer.read(), answer.status, answer.headers["Content-Type"]
        except urllib.error.HTTPError as error:
            payload, status, kind = error.read(), error.code, error.headers["Content-Type"]
        except OSError:  # the server is down: so is the connection
            self._drop()
            return
        if self.headers["Content-Type"].startswith("application/sparql-update"):
            update = body.decode()
        else:
            update = urllib.parse.parse_qs(body.decode()).get("update", [""])[0]
        if proxy.loses_answer(self.path, update):
            self._drop()
            return
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/octet-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
