"""OpenTelemetry spans and metrics of memory operations (GenAI memory conventions)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from em_plugin import telemetry
from em_plugin.memory import EpisodicMemory
from provenance.errors import StoreError
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-abcdefghijklmnopqrstuvwx1234"


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])

    def spans(self, operation: str | None = None) -> list[ReadableSpan]:
        found = list(self.exporter.get_finished_spans())
        if operation is None:
            return found
        return [s for s in found if s.attributes["gen_ai.operation.name"] == operation]

    def durations(self) -> list[tuple[dict[str, object], int]]:
        data = self.reader.get_metrics_data()
        out = []
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    assert metric.name == "gen_ai.client.operation.duration"
                    assert metric.unit == "s"
                    out += [(dict(p.attributes), p.count) for p in metric.data.data_points]
        return out


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    tel = Telemetry()
    telemetry.configure(tracer_provider=tel.provider, meter_provider=tel.meters)
    yield tel
    telemetry.configure()


def _workflow(wid: str, *tools: str, session: str | None = None, text: str = "classify the SDS"):
    calls = tuple(CallStep(t) for t in tools)
    return Workflow(id=wid, session=session, steps=(InstructionStep(text, calls),))


def _memory(**kwargs: object) -> EpisodicMemory:
    memory = EpisodicMemory(store="memory:", embedder="fake", scope="team", **kwargs)  # type: ignore[arg-type]
    memory.save_many(
        [
            _workflow("w1", "product_extractor", "pfas_classifier"),
            _workflow("w2", "product_extractor", "pfas_classifier", "report"),
        ]
    )
    return memory


def test_every_operation_is_one_span_with_the_conventions_attributes(otel: Telemetry) -> None:
    memory = _memory()
    current = _workflow("now", "product_extractor", session="thread-7", text="classify this SDS")
    suggestions = memory.suggest(current)
    memory.save(current)
    assert memory.delete("w2")
    assert memory.forget() == ["now", "w1"]
    memory.close()

    names = [s.name for s in otel.spans()]
    assert names == [
        "create_memory_store",  # the conventions' name: the operation alone
        "upsert_memory",
        "search_memory",  # suggest's own retrieval adds no span
        "upsert_memory",
        "delete_memory",
        "delete_memory_store",
    ]
    for span in otel.spans():
        assert span.kind is SpanKind.INTERNAL  # an in-process store
        assert span.attributes["gen_ai.memory.store.id"] == "memory:"
        assert span.attributes["em_plugin.scope"] == "team"
        assert span.status.status_code is StatusCode.UNSET

    first_save = otel.spans("upsert_memory")[0].attributes
    assert first_save["gen_ai.memory.record.count"] == 2
    assert list(first_save["em_plugin.record.ids"]) == ["w1", "w2"]
    assert "gen_ai.memory.record.id" not in first_save  # two records: the list only

    search = otel.spans("search_memory")[0].attributes
    assert search["gen_ai.conversation.id"] == "thread-7"
    assert search["gen_ai.memory.record.count"] == len(suggestions) > 0
    assert search["em_plugin.best_score"] == pytest.approx(suggestions[0].score)
    assert search["em_plugin.suggestion.tools"][0] == suggestions[0].tool == "pfas_classifier"
    assert set(search["em_plugin.record.ids"]) <= {"w1", "w2"}
    assert "gen_ai.memory.query.text" not in search
    assert "gen_ai.memory.records" not in search

    save = otel.spans("upsert_memory")[1].attributes
    assert save["gen_ai.memory.record.id"] == "now"
    assert save["gen_ai.conversation.id"] == "thread-7"
    assert "gen_ai.memory.records" not in save

    delete = otel.spans("delete_memory")[0].attributes
    assert delete["gen_ai.memory.record.id"] == "w2"
    assert delete["em_plugin.deleted"] is True
    erase = otel.spans("delete_memory_store")[0].attributes
    assert erase["gen_ai.memory.record.count"] == 2
    assert list(erase["em_plugin.record.ids"]) == ["now", "w1"]

    counts: dict[str, int] = {}
    for attributes, count in otel.durations():
        assert "em_plugin.scope" not in attributes  # tenants stay off the metric
        assert attributes["gen_ai.memory.store.id"] == "memory:"
        operation = str(attributes["gen_ai.operation.name"])
        counts[operation] = counts.get(operation, 0) + count
    assert counts == {
        "create_memory_store": 1,
        "upsert_memory": 2,
        "search_memory": 1,
        "delete_memory": 1,
        "delete_memory_store": 1,
    }


def test_spans_nest_under_the_current_span_sync_and_async(otel: Telemetry) -> None:
    memory = _memory()
    tracer = otel.provider.get_tracer("crew")
    current = _workflow("now", "product_extractor")
    with tracer.start_as_current_span("invoke_agent crew") as parent:
        memory.suggest(current)
        memory.retrieve(current)

    async def turn() -> None:
        with tracer.start_as_current_span("invoke_agent async crew"):
            await memory.asuggest(current)
            await memory.asave(current)

    asyncio.run(turn())
    memory.close()
    by_name = {s.name: s for s in otel.spans() if not s.attributes.get("gen_ai.operation.name")}
    spans = [s for s in otel.spans() if s.attributes.get("gen_ai.operation.name")]
    sync_parent = parent.get_span_context().span_id
    children = [s for s in spans if s.parent and s.parent.span_id == sync_parent]
    assert [s.name for s in children] == ["search_memory", "search_memory"]
    retrieved = children[1].attributes
    assert retrieved["gen_ai.memory.record.count"] >= 1
    assert retrieved["em_plugin.best_score"] > 0.5
    async_parent = by_name["invoke_agent async crew"].context.span_id
    nested = [s.name for s in spans if s.parent and s.parent.span_id == async_parent]
    assert nested == ["search_memory", "upsert_memory"]


def test_content_only_on_opt_in_and_redacted(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = _memory()
    current = _workflow("now", "product_extractor", text=f"classify this SDS, key {SECRET}")
    memory.suggest(current)
    assert "gen_ai.memory.query.text" not in otel.spans("search_memory")[-1].attributes

    monkeypatch.setenv(telemetry.CAPTURE_CONTENT_ENV, "true")
    memory.suggest(current)
    memory.save(current)
    search = otel.spans("search_memory")[-1].attributes
    assert search["gen_ai.memory.query.text"].startswith("classify this SDS, key ")
    assert SECRET not in search["gen_ai.memory.query.text"]
    records = json.loads(search["gen_ai.memory.records"])
    assert records[0]["content"]["tool"] == "pfas_classifier"
    assert records[0]["score"] == pytest.approx(search["em_plugin.best_score"])
    saved = json.loads(otel.spans("upsert_memory")[-1].attributes["gen_ai.memory.records"])
    assert saved[0]["id"] == "now"
    assert saved[0]["content"]["tools"] == ["product_extractor"]
    assert SECRET not in json.dumps(saved)

    # The keyword option wins over the environment, both ways.
    telemetry.configure(
        capture_content=False, tracer_provider=otel.provider, meter_provider=otel.meters
    )
    memory.suggest(current)
    assert "gen_ai.memory.query.text" not in otel.spans("search_memory")[-1].attributes
    monkeypatch.delenv(telemetry.CAPTURE_CONTENT_ENV)
    telemetry.configure(
        capture_content=True, tracer_provider=otel.provider, meter_provider=otel.meters
    )
    memory.retrieve(current)
    retrieved = otel.spans("search_memory")[-1].attributes
    assert "gen_ai.memory.query.text" in retrieved
    assert json.loads(retrieved["gen_ai.memory.records"])[0]["id"] in {"w1", "w2"}
    memory.close()


def test_a_failed_operation_is_an_error_span_and_counts_its_error_type(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = _memory()

    def broken(*args: object, **kwargs: object) -> object:
        raise StoreError("the disk is full")

    monkeypatch.setattr(memory._engine, "write_many", broken)
    with pytest.raises(StoreError):
        memory.save(_workflow("w9", "report"))
    memory.close()
    failed = otel.spans("upsert_memory")[-1]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "StoreError"
    assert any(e.name == "exception" for e in failed.events)
    errors = [a for a, _ in otel.durations() if a.get("error.type") == "StoreError"]
    assert [a["gen_ai.operation.name"] for a in errors] == ["upsert_memory"]


def test_a_disk_store_is_named_by_its_directory(otel: Telemetry, tmp_path: Path) -> None:
    with EpisodicMemory(store=tmp_path / "store", embedder="fake") as memory:
        memory.save(_workflow("w1", "report"))
    spans = otel.spans()
    where = str((tmp_path / "store").resolve())
    assert [s.name for s in spans] == ["create_memory_store", "upsert_memory"]
    assert {s.attributes["gen_ai.memory.store.id"] for s in spans} == {where}
    assert {s.kind for s in spans} == {SpanKind.INTERNAL}


def test_every_operation_on_a_remote_store_is_a_client_span(
    otel: Telemetry, oxigraph_server: Any
) -> None:
    """Opening the store included: it talks to the endpoint as the other operations do."""
    oxigraph_server.wipe()
    url = oxigraph_server.query_url
    with EpisodicMemory(store=url, embedder="fake", scope="team") as memory:
        memory.save(_workflow("w1", "report"))
        memory.suggest(_workflow("now", "report"))
    with open_store(url) as store, EpisodicMemory(store, embedder="fake") as memory:
        memory.retrieve(_workflow("now", "report"))
    oxigraph_server.wipe()

    spans = otel.spans()
    assert [s.name for s in spans] == [
        "create_memory_store",
        "upsert_memory",
        "search_memory",
        "create_memory_store",  # an open WorkflowStore given
        "search_memory",
    ]
    for span in spans:
        assert span.kind is SpanKind.CLIENT, span.name
        assert span.attributes["server.address"] == "127.0.0.1"
        assert span.attributes["server.port"] == oxigraph_server.port
        assert span.attributes["gen_ai.memory.store.id"] == url


_NO_OTEL = """
import sys
import em_plugin
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow
assert not any(m == "opentelemetry" or m.startswith("opentelemetry.") for m in sys.modules), \\
    sorted(m for m in sys.modules if m.startswith("opentelemetry"))
if sys.argv[1] == "blocked":
    sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
memory = EpisodicMemory(store="memory:", embedder="fake")
memory.save(Workflow(id="w1", steps=(InstructionStep("a", (CallStep("t"),)),)))
memory.suggest(Workflow(id="now", steps=(InstructionStep("a", ()),)))
memory.close()
loaded = sorted(m for m in sys.modules if m and m.startswith("opentelemetry."))
print("loaded" if loaded else "none")
"""


@pytest.mark.parametrize(("mode", "expected"), [("blocked", "none"), ("installed", "loaded")])
def test_import_never_loads_opentelemetry_and_works_without_it(mode: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NO_OTEL, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == expected
