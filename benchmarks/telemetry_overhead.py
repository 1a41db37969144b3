"""What tracing costs a memory operation: suggest and save, with and without OpenTelemetry.

Three child processes run the same work on the same synthetic memory (fake embedder, ``memory:``
store), one after the other:

- ``absent``: ``opentelemetry`` cannot be imported (as without the ``otel`` extra);
- ``api``: the API is installed, no tracer or meter provider is configured (no-op spans);
- ``sdk``: the SDK with a tracer provider (a batch processor into an in-memory exporter) and a
  meter provider (an in-memory reader), as a traced deployment has.

Run: ``python benchmarks/telemetry_overhead.py [--workflows 2000] [--queries 200]``
(docs/observability.md). Figures are medians per call, and ratios to ``absent`` in the same run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
mode, workflows, queries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "absent":
    sys.modules["opentelemetry"] = None
if mode == "sdk":
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from em_plugin import telemetry
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    telemetry.configure(
        tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()])
    )
from em_plugin.evaluation.synthetic import SyntheticMemory
from em_plugin.memory import EpisodicMemory
data = SyntheticMemory(7)
memory = EpisodicMemory(store="memory:", embedder="fake", scope="bench")
memory.save_many(data.workflows(workflows))
current = list(data.queries(queries))
memory.suggest(current[0])
def median(values):
    values = sorted(values)
    return values[len(values) // 2]
def timed(function, items):
    out = []
    for item in items:
        start = time.perf_counter()
        function(item)
        out.append((time.perf_counter() - start) * 1000)
    return out
suggest = timed(memory.suggest, current)
saves = list(data.workflows(queries, start=workflows, prefix="extra"))
save = timed(memory.save, saves)
memory.close()
print(json.dumps({"suggest": median(suggest), "save": median(save)}))
"""


def main() -> None:
    """Run the three modes and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    figures = {}
    for mode in ("absent", "api", "sdk"):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, mode, str(args.workflows), str(args.queries)],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        figures[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    base = figures["absent"]
    print(f"{args.workflows} workflows in memory, {args.queries} calls each; medians per call")
    print(f"{'mode':<8} {'suggest ms':>11} {'x absent':>9} {'save ms':>9} {'x absent':>9}")
    for mode, row in figures.items():
        print(
            f"{mode:<8} {row['suggest']:>11.3f} {row['suggest'] / base['suggest']:>9.3f}"
            f" {row['save']:>9.3f} {row['save'] / base['save']:>9.3f}"
        )


if __name__ == "__main__":
    main()
