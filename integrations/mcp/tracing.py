"""A server span per MCP request, continuing the caller's W3C trace context.

The caller's ``traceparent`` (and ``tracestate``) is read from the request's ``params._meta``
(how MCP carries trace context on every transport), else from the HTTP request's headers. The
span follows the OpenTelemetry MCP conventions: kind ``SERVER``, named ``{mcp.method.name}
{target}`` (``tools/call suggest_next_steps``), with ``mcp.method.name``, ``jsonrpc.request.id``,
``gen_ai.tool.name`` / ``mcp.resource.uri`` and ``network.transport``. The memory's own spans
(:mod:`em_plugin.telemetry`) are its children, so one trace runs from the assistant through the
tool call to the store.

Without ``opentelemetry-api`` installed nothing is traced and nothing is imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["request_span", "trace_carrier"]

_FIELDS = ("traceparent", "tracestate")
_HAS_OTEL = importlib.util.find_spec("opentelemetry") is not None


def trace_carrier(meta: Any, headers: Mapping[str, str] | None) -> dict[str, str]:
    """Return the W3C trace fields of a request: from ``_meta`` when it has them, else headers.

    Args:
        meta: The request's ``params._meta`` (an SDK model allowing extra fields), or ``None``.
        headers: The HTTP request's headers (``None`` on stdio).

    Returns:
        ``traceparent`` (and ``tracestate``) when the caller sent them; else an empty dict.
    """
    extra = getattr(meta, "model_extra", None) or {}
    carrier = {k: str(extra[k]) for k in _FIELDS if isinstance(extra.get(k), str)}
    if "traceparent" in carrier or headers is None:
        return carrier
    return {k: headers[k] for k in _FIELDS if headers.get(k)}


@contextmanager
def request_span(
    method: str,
    target: str,
    *,
    carrier: Mapping[str, str],
    attributes: Mapping[str, Any],
    tracer_provider: Any = None,
) -> Iterator[None]:
    """Run a request inside a ``SERVER`` span that continues the caller's trace.

    Args:
        method: The MCP method (``tools/call``, ``resources/read``).
        target: The tool name or resource URI.
        carrier: The caller's W3C fields (:func:`trace_carrier`).
        attributes: The span's attributes.
        tracer_provider: A tracer provider (default: the global one).
    """
    if not _HAS_OTEL:
        yield
        return
    from opentelemetry import propagate, trace

    parent = propagate.extract(dict(carrier))
    tracer = trace.get_tracer("integrations.mcp", tracer_provider=tracer_provider)
    with tracer.start_as_current_span(
        f"{method} {target}",
        context=parent,
        kind=trace.SpanKind.SERVER,
        attributes={"mcp.method.name": method, **attributes},
        record_exception=True,
        set_status_on_exception=True,
    ) as span:
        try:
            yield
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            raise
