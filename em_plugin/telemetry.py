"""OpenTelemetry spans and metrics for memory operations, by the GenAI memory conventions.

With the ``otel`` extra (``opentelemetry-api``) installed and a tracer provider configured, each
operation of :class:`~em_plugin.memory.EpisodicMemory` is one span, a child of whatever span is
current (the crew's own, or the caller's), named ``{gen_ai.operation.name}`` as the conventions
name memory spans (the store is the ``gen_ai.memory.store.id`` attribute). An operation on a
remote store is a ``CLIENT`` span, opening one included; on an embedded store ``INTERNAL``:

=========================  ==========================================================
``create_memory_store``    ``EpisodicMemory(...)``: the store is opened (created if missing)
``upsert_memory``          ``save``, ``save_many``, ``asave``, ``asave_many``
``search_memory``          ``suggest``, ``asuggest``, ``retrieve``, ``aretrieve``
``delete_memory``          ``delete``
``delete_memory_store``    ``forget``: a scope's memory is erased
=========================  ==========================================================

A save is ``upsert_memory``, the conventions' name for "create or update memory records without
the caller choosing which" (a saved id replaces the stored one). Calls nested in an operation
(``suggest`` retrieving, ``save`` going through ``save_many``) add no span of their own.

Each operation also records its duration in the ``gen_ai.client.operation.duration`` histogram
(seconds), by operation, store and ``error.type``. Attributes and their meaning are listed in
``docs/observability.md``. The query text and the records' content are recorded only when the
user opts in, with :func:`configure` ``(capture_content=True)`` or the conventions' environment
variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; both are redacted as the
stored text is.

Without ``opentelemetry-api`` nothing is imported and each operation pays one flag check:
``import em_plugin`` never imports OpenTelemetry, and the first operation looks for it once.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "DURATION_METRIC",
    "configure",
    "store_id",
    "traced",
]

P = ParamSpec("P")
R = TypeVar("R")

#: The conventions' opt-in for content attributes (``true``/``1``, or a ``span_*`` mode).
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: The histogram every operation records its duration in (seconds).
DURATION_METRIC = "gen_ai.client.operation.duration"

_SCOPE_NAME = "em_plugin"
_MAX_IDS = 100  # record ids listed on one span; the count is always exact
# The conventions' advised bucket boundaries for gen_ai.client.operation.duration.
_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_CONTENT_MODES = ("true", "1", "span_only", "span_and_event")

# Set while an operation runs: its nested operations are part of it, not spans of their own.
_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("em_plugin_telemetry", default=False)


class _State:
    """The lazily found OpenTelemetry API and the instruments made from it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.checked = False
        self.api: Any = None  # (trace module, metrics module, SpanKind, StatusCode) or None
        self.tracer: Any = None
        self.histogram: Any = None
        self.tracer_provider: Any = None
        self.meter_provider: Any = None
        self.capture: bool | None = None


_state = _State()


def configure(
    *,
    capture_content: bool | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
) -> None:
    """Set how memory operations are traced (all optional; the global providers by default).

    Args:
        capture_content: Record the opt-in content attributes ``gen_ai.memory.query.text``
            and ``gen_ai.memory.records`` (``None``: follow ``$OTEL_INSTRUMENTATION_GENAI_
            CAPTURE_MESSAGE_CONTENT``).
        tracer_provider: A tracer provider to use instead of the global one.
        meter_provider: A meter provider to use instead of the global one.
    """
    with _state.lock:
        _state.capture = capture_content
        _state.tracer_provider = tracer_provider
        _state.meter_provider = meter_provider
        _state.tracer = _state.histogram = None


def traced(operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a method of :class:`~em_plugin.memory.EpisodicMemory` as a memory operation.

    Args:
        operation: The ``gen_ai.operation.name`` (one of the module's table).

    Returns:
        The decorator; sync and async methods keep their signatures.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                if _ACTIVE.get() or not _instruments():
                    return await function(*args, **kwargs)
                with _operation(operation, args, kwargs) as finish:
                    token = _ACTIVE.set(True)
                    try:
                        result = await function(*args, **kwargs)
                    finally:
                        _ACTIVE.reset(token)
                    finish(result)
                    return result

            return cast(Callable[P, R], run_async)

        @functools.wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if _ACTIVE.get() or not _instruments():
                return function(*args, **kwargs)
            with _operation(operation, args, kwargs) as finish:
                token = _ACTIVE.set(True)
                try:
                    result = function(*args, **kwargs)
                finally:
                    _ACTIVE.reset(token)
                finish(result)
                return result

        return run

    return decorate


def store_id(store: Any) -> str:
    """Return the ``gen_ai.memory.store.id`` of a workflow store.

    A disk store's absolute directory, a remote store's query URL (credentials are never part
    of it), ``memory:`` for an in-process store.

    Args:
        store: A :class:`~provenance.stores.WorkflowStore`.

    Returns:
        The id.
    """
    backend = getattr(store, "backend", store)
    path = getattr(backend, "path", None)
    if path is not None:
        return str(Path(path).resolve())
    url = getattr(backend, "query_url", None)
    return str(url) if url else "memory:"


# ---------------------------------------------------------------------------------- internals


def _instruments() -> bool:
    """Find the OpenTelemetry API once; make the tracer and histogram on first use."""
    if not _state.checked:
        with _state.lock:
            if not _state.checked:
                try:
                    from opentelemetry import metrics, trace
                    from opentelemetry.trace import SpanKind, StatusCode
                except ImportError:
                    _state.api = None
                else:
                    _state.api = (trace, metrics, SpanKind, StatusCode)
                _state.checked = True
    if _state.api is None:
        return False
    if _state.tracer is None:
        with _state.lock:
            if _state.tracer is None:
                _state.tracer, _state.histogram = _make_instruments()
    return True


def _make_instruments() -> tuple[Any, Any]:
    trace, metrics, _, _ = _state.api
    version = _version()
    tracer = trace.get_tracer(_SCOPE_NAME, version, tracer_provider=_state.tracer_provider)
    meter = metrics.get_meter(_SCOPE_NAME, version, meter_provider=_state.meter_provider)
    try:
        histogram = meter.create_histogram(
            DURATION_METRIC,
            unit="s",
            description="Duration of memory operations.",
            explicit_bucket_boundaries_advisory=list(_BUCKETS),
        )
    except TypeError:  # an API older than 1.23 has no bucket advice
        histogram = meter.create_histogram(
            DURATION_METRIC, unit="s", description="Duration of memory operations."
        )
    return tracer, histogram


def _version() -> str | None:
    try:
        from importlib.metadata import version

        return version("em-plugin")
    except Exception:  # noqa: BLE001 - a source checkout without metadata
        return None


def _capture() -> bool:
    if _state.capture is not None:
        return _state.capture
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CONTENT_MODES


@contextmanager
def _operation(
    operation: str, args: Sequence[Any], kwargs: dict[str, Any]
) -> Iterator[Callable[[Any], None]]:
    _, _, span_kind, status_code = _state.api
    memory = args[0]
    base = _store_attributes(memory)
    if operation == "create_memory_store":  # the store is not open yet: what is asked for
        base.update(_requested_server(args, kwargs))
    kind = span_kind.CLIENT if "server.address" in base else span_kind.INTERNAL
    started = time.perf_counter()
    error: str | None = None
    with _state.tracer.start_as_current_span(
        operation,
        kind=kind,
        attributes={"gen_ai.operation.name": operation, **base},
        record_exception=True,
        set_status_on_exception=True,
    ) as span:
        try:
            if span.is_recording():
                span.set_attributes(_request_attributes(operation, memory, args, kwargs))

            def finish(result: Any) -> None:
                if span.is_recording():
                    span.set_attributes(_result_attributes(operation, memory, result))
                    if operation == "create_memory_store":  # the store is open only now
                        span.set_attributes(_store_attributes(memory))

            yield finish
        except BaseException as exc:
            error = type(exc).__qualname__
            span.set_attribute("error.type", error)
            span.set_status(status_code.ERROR, str(exc)[:300])
            raise
        finally:
            metric = {"gen_ai.operation.name": operation, **base}
            if operation == "create_memory_store":
                metric.update(_store_attributes(memory))
            if error is not None:
                metric["error.type"] = error
            metric.pop("em_plugin.scope", None)  # scopes are tenants: too many for a metric
            _state.histogram.record(time.perf_counter() - started, metric)


def _store_attributes(memory: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    scope = getattr(memory, "scope", None)
    if isinstance(scope, str):
        out["em_plugin.scope"] = scope
    engine = getattr(memory, "_engine", None)
    if engine is None:  # create_memory_store before the store is open
        return out
    store = engine.store
    out["gen_ai.memory.store.id"] = store_id(store)
    url = getattr(store.backend, "query_url", None)
    if url:
        out.update(_server(url))
    return out


def _requested_server(args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The server of the store ``EpisodicMemory(store=...)`` asks for, before it is opened."""
    store = kwargs["store"] if "store" in kwargs else (args[1] if len(args) > 1 else None)
    if store is None:
        store = os.environ.get("EM_PLUGIN_STORE")
    backend = getattr(store, "backend", None)
    url = getattr(backend, "query_url", None) if backend is not None else store
    if isinstance(url, str) and urllib.parse.urlsplit(url).scheme in ("http", "https"):
        return _server(url)
    return {}


def _server(url: str) -> dict[str, Any]:
    parts = urllib.parse.urlsplit(url)
    out: dict[str, Any] = {}
    if parts.hostname:
        out["server.address"] = parts.hostname
    if parts.port is not None:
        out["server.port"] = parts.port
    return out


def _request_attributes(
    operation: str, memory: Any, args: Sequence[Any], kwargs: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if operation == "search_memory":
        workflow = args[1] if len(args) > 1 else kwargs.get("workflow")
        session = getattr(workflow, "session", None)
        if session:
            out["gen_ai.conversation.id"] = str(session)
        if _capture() and workflow is not None:
            texts = [text for _, text in _instructions(workflow)]
            out["gen_ai.memory.query.text"] = memory.redactor.text("\n".join(texts))
    elif operation == "delete_memory":
        workflow_id = args[1] if len(args) > 1 else kwargs.get("workflow_id")
        out["gen_ai.memory.record.id"] = str(workflow_id)
        out["gen_ai.memory.record.count"] = 1
    elif operation == "delete_memory_store":
        scope = args[1] if len(args) > 1 else kwargs.get("scope")
        if scope is not None:
            out["em_plugin.scope"] = str(scope)
    return out


def _result_attributes(operation: str, memory: Any, result: Any) -> dict[str, Any]:
    if operation == "upsert_memory":
        return _saved(result)
    if operation == "search_memory":
        return _found(memory, result)
    if operation == "delete_memory":
        return {"em_plugin.deleted": bool(result)}
    if operation == "delete_memory_store":
        ids = [str(i) for i in result]
        return {"gen_ai.memory.record.count": len(ids), **_ids(ids)}
    return {}


def _saved(workflows: Sequence[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"gen_ai.memory.record.count": len(workflows)}
    out.update(_ids([w.id for w in workflows]))
    sessions = {w.session for w in workflows if w.session}
    if len(sessions) == 1:
        out["gen_ai.conversation.id"] = str(sessions.pop())
    if _capture():
        records = [
            {
                "id": w.id,
                "content": {
                    "instructions": [text for _, text in _instructions(w)],
                    "tools": [tool for tool, _ in _calls(w)],
                },
                "metadata": {"scope": w.scope, "session": w.session},
            }
            for w in workflows
        ]
        out["gen_ai.memory.records"] = _json(records)
    return out


def _found(memory: Any, found: Sequence[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"gen_ai.memory.record.count": len(found)}
    if not found:
        return out
    out["em_plugin.best_score"] = float(max(item.score for item in found))
    if hasattr(found[0], "workflow_id"):  # matches of retrieve()
        ids = [m.workflow_id for m in found]
        records = [
            {"id": m.workflow_id, "content": {"alignment": list(m.alignment)}, "score": m.score}
            for m in found
        ]
    else:  # suggestions: the memory workflows they rest on are the records used
        ids = list(dict.fromkeys(e.workflow_id for s in found for e in s.evidence))
        out["em_plugin.suggestion.tools"] = [s.tool or "" for s in found]
        records = [
            {"content": memory.redactor.suggestion(s.to_json()), "score": s.score} for s in found
        ]
    out.update(_ids(ids))
    if _capture():
        out["gen_ai.memory.records"] = _json(records)
    return out


def _ids(ids: Sequence[str]) -> dict[str, Any]:
    if not ids:
        return {}
    out: dict[str, Any] = {"em_plugin.record.ids": [str(i) for i in ids[:_MAX_IDS]]}
    if len(ids) == 1:
        out["gen_ai.memory.record.id"] = str(ids[0])
    return out


def _instructions(workflow: Any) -> list[tuple[str, str]]:
    steps = workflow.walk()
    return [(path, step.text) for path, step in steps if step.kind == "instruction"]


def _calls(workflow: Any) -> list[tuple[str, str]]:
    return [(step.name, path) for path, step in workflow.walk() if step.kind == "call"]


def _json(value: Any) -> str:
    # The conventions allow a JSON string on spans; OTel attributes cannot hold nested objects.
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
