"""``em-plugin bench`` on ``memory:``, a real ``oxigraph serve`` and a real Virtuoso, in one run.

Usage::

    python benchmarks/sparql_engines.py [--workflows 10000] [--queries 50] [--batch 250]
                                        [--engines memory,oxigraph,virtuoso]

Each engine gets the same synthetic memory (:func:`em_plugin.evaluation.bench.run_bench`, fake
384-d embedder) through the real save path. The servers are started on free 127.0.0.1 ports with
temporary data directories by the test fixtures' helpers (``tests/conftest.py``) and stopped
afterwards; Virtuoso comes from ``make virtuoso``. ``--batch`` is the number of workflows per
``save_many`` (one SPARQL update each): Virtuoso takes at most 10 MB per request, about 350 of
these workflows. The servers' reports include ``cold_open_seconds`` and ``first_suggest_seconds``
of a new process, which finds the index in its slot of the local cache
(``$EM_PLUGIN_CACHE_DIR``, a temporary directory here). Prints one JSON line per engine, then a
table; the ``memory`` engine, when listed, is the baseline of the same run. Each engine runs in a
process of its own, so that its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import em_plugin.evaluation.bench as bench
from tests.conftest import (
    start_oxigraph,
    start_virtuoso,
    stop_oxigraph,
    stop_virtuoso,
)


@contextmanager
def _memory(tmp: Path) -> Iterator[str]:
    yield "memory:"


@contextmanager
def _oxigraph(tmp: Path) -> Iterator[str]:
    server = start_oxigraph(tmp / "oxigraph")
    try:
        yield server.query_url
    finally:
        stop_oxigraph(server)


@contextmanager
def _virtuoso(tmp: Path) -> Iterator[str]:
    server = start_virtuoso(tmp / "virtuoso")
    try:
        yield server.query_url
    finally:
        stop_virtuoso(server)


ENGINES: dict[str, Callable[[Path], Any]] = {
    "memory": _memory,
    "oxigraph": _oxigraph,
    "virtuoso": _virtuoso,
}


def _run_one(name: str, args: argparse.Namespace, baseline: bool | None) -> dict[str, Any]:
    """Run the bench on one engine in this process (see ``--one``)."""
    bench.BATCH = args.batch
    with tempfile.TemporaryDirectory(prefix=f"sparql-engines-{name}-") as tmp:
        # The remote stores' index caches (one slot per process) live with the servers' data.
        os.environ.setdefault("EM_PLUGIN_CACHE_DIR", str(Path(tmp) / "cache"))
        with ENGINES[name](Path(tmp)) as spec:
            started = time.perf_counter()
            result = bench.run_bench(
                args.workflows, queries=args.queries, store=spec, baseline=baseline
            )
            result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def main() -> None:
    """Run the bench on each engine and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--engines", default="memory,oxigraph,virtuoso")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: one engine, JSON out
    parser.add_argument("--no-baseline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = _run_one(args.one, args, False if args.no_baseline else None)
        print(json.dumps(result, default=str))
        return
    engines = args.engines.split(",")
    results: dict[str, dict[str, Any]] = {}
    for name in engines:
        # One process per engine, so that each peak RSS is that engine's own; the memory:
        # engine of this run is the baseline, else each server's report carries its own.
        command = [
            sys.executable, __file__, "--one", name, "--workflows", str(args.workflows),
            "--queries", str(args.queries), "--batch", str(args.batch),
        ]  # fmt: skip
        if "memory" in engines:
            command.append("--no-baseline")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"{name}: {done.stderr.strip()[-2000:]}")
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps({"engine": name, **results[name]}, default=str), flush=True)
    columns = (
        ("ingest wf/s", "ingest_workflows_per_s"),
        ("RSS MB", "rss_mb"),
        ("open s", "cold_open_seconds"),
        ("1st sugg s", "first_suggest_seconds"),
        ("sugg p50", "suggest_ms_p50"),
        ("sugg p95", "suggest_ms_p95"),
        ("fast p50", "fast_ms_p50"),
        ("fast p95", "fast_ms_p95"),
        ("identical", "identical"),
    )
    print("\n" + f"{'engine':<10}" + "".join(f"{title:>12}" for title, _ in columns))
    for name, r in results.items():
        print(f"{name:<10}" + "".join(f"{str(r.get(key, '-')):>12}" for _, key in columns))


if __name__ == "__main__":
    main()
