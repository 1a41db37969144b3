"""Print the OpenTelemetry span tree of one LangGraph turn and one BeeAI turn with the memory.

The crews are the README's (the demo's offline chat models and PFAS tools, the real frameworks).
Each framework runs a first session that ends with ``/save``, then the turn shown: the first
instruction of a new session, whose memory search suggests the next step. Spans go to the
OpenTelemetry SDK's in-memory exporter and are printed as a tree:

- LangGraph reports to LangSmith-style callbacks, not OpenTelemetry, so the turn is wrapped in a
  span the application opens (``invoke_agent langgraph-crew``), as a user would;
- BeeAI is traced by OpenInference's instrumentation (``openinference-instrumentation-beeai``)
  when it is installed: the memory spans then sit under BeeAI's own agent span. Without it the
  script opens the parent span itself and says so.

Run: ``HF_HUB_OFFLINE=1 python benchmarks/trace_turn.py [--capture-content]``
(docs/observability.md).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from em_plugin import EpisodicMemory, telemetry

FIRST = ["Extract all ingredients from firestop_afff3_sds.txt", "Classify them as PFAS", "/save"]
ASK = "Extract all ingredients from aquashield_spray_sds.txt"
_SHOWN = (
    "gen_ai.operation.name",
    "gen_ai.conversation.id",
    "gen_ai.memory.record.count",
    "gen_ai.memory.record.id",
    "em_plugin.record.ids",
    "em_plugin.best_score",
    "em_plugin.suggestion.tools",
    "em_plugin.scope",
    "gen_ai.memory.query.text",
)


def langgraph_turn(tracer: Any) -> None:
    """Run the README's LangGraph crew: a saved session, then the turn that is traced."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    from integrations.demo import OfflineChatModel
    from integrations.demo.crews import langchain_tools
    from integrations.demo.router import OfflineRouter
    from integrations.langgraph import EpisodicMemoryNode

    memory = EpisodicMemory(store="memory:")
    model = OfflineChatModel(router=OfflineRouter(memory.embedder))
    node = EpisodicMemoryNode(memory)
    builder = StateGraph(MessagesState)
    builder.add_node("crew", create_agent(model, langchain_tools()))
    builder.add_node("episodic_memory", node)
    builder.add_conditional_edges(START, node.router("crew"), ["crew", "episodic_memory"])
    builder.add_edge("crew", "episodic_memory")
    builder.add_edge("episodic_memory", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    for text in FIRST:
        with tracer.start_as_current_span("invoke_agent langgraph-crew (session s1)"):
            graph.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": "s1"}})
    with tracer.start_as_current_span("invoke_agent langgraph-crew") as turn:
        turn.set_attribute("gen_ai.conversation.id", "s2")
        graph.invoke({"messages": [("user", ASK)]}, {"configurable": {"thread_id": "s2"}})
    memory.close()


def beeai_turn(tracer: Any) -> bool:
    """Run the README's BeeAI crew; return whether OpenInference traced BeeAI itself."""
    from beeai_framework.agents.requirement import RequirementAgent

    from integrations.beeai import EpisodicMemoryMiddleware
    from integrations.demo import OfflineBeeAIChatModel
    from integrations.demo.crews import beeai_tools
    from integrations.demo.router import OfflineRouter

    instrumented = _instrument_beeai()
    memory = EpisodicMemory(store="memory:")
    llm = OfflineBeeAIChatModel(OfflineRouter(memory.embedder))
    crew = RequirementAgent(llm=llm, tools=beeai_tools(), name="chemist")

    async def run() -> None:
        first = EpisodicMemoryMiddleware(memory, session_id="b1")
        for text in FIRST:
            with tracer.start_as_current_span("turn (session b1)"):
                await crew.run(text).middleware(first)
        second = EpisodicMemoryMiddleware(memory, session_id="b2")
        if instrumented:
            with tracer.start_as_current_span("turn"):
                await crew.run(ASK).middleware(second)
        else:
            with tracer.start_as_current_span("invoke_agent chemist"):
                await crew.run(ASK).middleware(second)

    asyncio.run(run())
    memory.close()
    return instrumented


def _instrument_beeai() -> bool:
    try:
        from openinference.instrumentation.beeai import BeeAIInstrumentor
    except ImportError:
        return False
    BeeAIInstrumentor().instrument()
    return True


def span_tree(spans: Sequence[ReadableSpan], root_name: str) -> str:
    """The tree under the last span called ``root_name``, one line per span, as text."""
    roots = [s for s in spans if s.name == root_name]
    if not roots:
        raise LookupError(f"no span {root_name!r} among {sorted({s.name for s in spans})}")
    root = roots[-1]
    children: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)
    lines: list[str] = []

    def show(span: ReadableSpan, depth: int) -> None:
        took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        lines.append(f"{'  ' * depth}{span.name}  [{span.kind.name.lower()}, {took:.1f} ms]")
        for key in _SHOWN:
            value = (span.attributes or {}).get(key)
            if value is not None:
                shown = list(value) if isinstance(value, tuple) else value
                if isinstance(shown, float):
                    shown = round(shown, 3)
                lines.append(f"{'  ' * depth}    {key} = {shown!r}")
        for child in sorted(
            children.get(span.context.span_id, []), key=lambda s: s.start_time or 0
        ):
            show(child, depth + 1)

    show(root, 0)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Run both turns and print their span trees."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture-content", action="store_true", help="opt in to content")
    args = parser.parse_args(argv)
    exporter = InMemorySpanExporter()
    # OpenInference records more attributes per span than the SDK keeps by default.
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=1024))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # global: OpenInference's BeeAI spans use it too
    telemetry.configure(capture_content=args.capture_content or None)
    tracer = trace.get_tracer("trace_turn")

    langgraph_turn(tracer)
    spans = exporter.get_finished_spans()
    print("LangGraph, first turn of session s2 (parent span opened by the application):\n")
    print(span_tree(spans, "invoke_agent langgraph-crew"))
    print("\nLangGraph, the '/save' turn of session s1:\n")
    print(span_tree(spans, "invoke_agent langgraph-crew (session s1)"))
    exporter.clear()

    instrumented = beeai_turn(tracer)
    how = (
        "OpenInference's BeeAI instrumentation" if instrumented else "the script (no OpenInference)"
    )
    spans = exporter.get_finished_spans()
    print(f"\nBeeAI, first turn of session b2 (agent spans from {how}):\n")
    print(span_tree(spans, "turn" if instrumented else "invoke_agent chemist"))
    print("\nBeeAI, the '/save' turn of session b1:\n")
    print(span_tree(spans, "turn (session b1)"))


if __name__ == "__main__":
    main()
