"""A SERVER span per request to ``serve``, continuing the caller's W3C ``traceparent``.

With ``opentelemetry-api`` installed (the ``otel`` extra) and a tracer provider configured, each
SPARQL request is one span named ``{method} {path}`` (``POST /query``) of kind ``SERVER``, with
the HTTP server attributes, whose parent is the span the client's ``traceparent`` (and
``tracestate``) header names: a crew's trace goes on through the endpoint. Without OpenTelemetry
nothing is imported and a request pays one flag check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from email.message import Message
from typing import Any

__all__ = ["request_span"]

_api: list[Any] = []  # [(trace, propagate, SpanKind, StatusCode) or None], found once


def _otel() -> Any:
    if not _api:
        try:
            from opentelemetry import propagate, trace
            from opentelemetry.trace import SpanKind, StatusCode
        except ImportError:
            _api.append(None)
        else:
            _api.append((trace, propagate, SpanKind, StatusCode))
    return _api[0]


@contextmanager
def request_span(
    method: str, path: str, headers: Mapping[str, str] | Message, server: tuple[Any, int]
) -> Iterator[Any]:
    """Run a request inside its span (the caller's ``traceparent`` as its parent).

    Args:
        method: The HTTP method.
        path: The endpoint path (``/query``, ``/update``).
        headers: The request headers (``traceparent``, ``tracestate``).
        server: The bound ``(address, port)``.

    Yields:
        A function that records the response status on the span (a no-op without
        OpenTelemetry).
    """
    api = _otel()
    if api is None:
        yield lambda status: None
        return
    trace, propagate, span_kind, status_code = api
    carrier = {k.lower(): v for k, v in headers.items()}
    parent = propagate.extract(carrier)
    tracer = trace.get_tracer("em_plugin.endpoint")
    attributes = {"http.request.method": method, "url.path": path, "http.route": path,
                  "server.address": str(server[0]), "server.port": int(server[1])}  # fmt: skip
    with tracer.start_as_current_span(
        f"{method} {path}", context=parent, kind=span_kind.SERVER, attributes=attributes
    ) as span:

        def record(status: int) -> None:
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(status_code.ERROR)
                span.set_attribute("error.type", str(status))

        yield record
