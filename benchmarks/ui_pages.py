"""Page times of the memory panel (``em-plugin ui``) over a large disk store.

Usage::

    python benchmarks/ui_pages.py [--workflows 100000] [--store DIR] [--repeat 20]

Fills ``--store`` (default: a temporary directory) with ``--workflows`` synthetic workflows
(``em_plugin.evaluation.synthetic``, with creation times and titles) unless it already holds
that many, serves it read-only with the panel on 127.0.0.1 (uvicorn, in this process) and times
each page over HTTP, ``--repeat`` times: the workflow table (first page, a deep page, a text
search, a tool filter, sorts), one workflow (random ids), the scopes and tools pages (cold,
then cached), and a static file as the floor of a request. It prints p50 and p95 per page and the
ratio of each p95 to the static file's. The target is a p95 of 300 ms or less for the workflow
table (default sort) and for one workflow.

Measured on the shared 2-core machine while about eight other jobs ran (load average 20 to 24),
store and panel in one process, 45,000 workflows (the 100k store could not be filled in the
time available: 45k took an hour of that machine), ``--repeat 20``, at commit ddf4fa4 (before
the scopes page read the warmed tables and searches were cached)::

    warm-up (tables and tool counts)                     867.2 s
    scopes, first load                                  104192 ms (once; now from the tables)
    workflow table sorted by steps, first time            1569 ms (once)

    page                                 p50 ms   p95 ms  p95 / floor
    static file (floor)                    20.5     28.9          1.0
    workflow table, page 1                 20.2     53.9          1.9  ok
    workflow table, page 1000              12.2     17.2          0.6
    workflow table, sort by id             50.7     68.9          2.4
    workflow table, sort by calls          36.1     56.5          2.0
    workflow table, text search           470.4    555.6         19.2
    workflow table, tool filter           447.3    579.9         20.0
    workflow table, date range            387.3    639.9         22.1
    one workflow (random)                 129.4    335.9         11.6  over the 300 ms target
    scopes (cached)                         2.6      3.8          0.1
    tools (cached)                        237.9   1249.7         43.2

The same on 2,000 workflows with the final code (load average about 15)::

    warm-up (tables and tool counts)                       9.4 s
    workflow table, page 1                 14.8     19.9          1.0  ok
    workflow table, text search            26.5     39.9          1.9
    one workflow (random)                  43.1     80.2          3.8  ok
    tools (cached)                         49.3    267.6         12.8

The table pages do not grow with the store (a slice of an in-memory order); one workflow costs
what reading and drawing that one graph costs, whatever the store's size; a first search scans
the rows in Python (linear); the warm-up is linear in the store (SPARQL aggregates).
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from provenance.stores import open_store

BATCH = 5000
TARGET_MS = 300.0


def fill(path: Path, count: int) -> None:
    """Save ``count`` synthetic workflows (dated a minute apart, titled) unless already there."""
    with open_store(str(path)) as store:
        have = len(store.ids(SCOPE))
        if have >= count:
            print(f"store {path}: {have} workflows already", flush=True)
            return
        start = time.perf_counter()
        base = datetime(2026, 1, 1, tzinfo=UTC)
        batch = []
        for number, workflow in enumerate(
            SyntheticMemory(seed=0).workflows(count - have, start=have)
        ):
            index = have + number
            created = (base + timedelta(minutes=index)).isoformat()
            batch.append(workflow.replace(created=created, title=f"Synthetic task {index}"))
            if len(batch) == BATCH:
                store.save_many(batch)
                batch = []
                done = index + 1
                print(f"  saved {done} ({time.perf_counter() - start:.0f} s)", flush=True)
        if batch:
            store.save_many(batch)
        print(f"filled {count} workflows in {time.perf_counter() - start:.0f} s", flush=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(path: Path) -> tuple[str, Callable[[], None]]:
    """Start the panel on 127.0.0.1 over ``path`` (read-only); return its URL and a stopper.

    Waits for its warm-up (workflow tables and tool counts of every scope, timed).
    """
    import uvicorn

    from integrations.panel import PanelSettings, create_app

    port = _free_port()
    app = create_app(PanelSettings(store=str(path), embedder="fake"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    start = time.perf_counter()
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the panel did not start")
        time.sleep(0.05)
    app.state.panel.warmed.wait()
    print(
        f"{'warm-up (tables and tool counts)':48s} {time.perf_counter() - start:9.1f} s", flush=True
    )

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=30)

    return url, stop


def fetch(url: str) -> float:
    """GET a page; return milliseconds (a non-200 answer stops the run)."""
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=600) as answer:
            answer.read()
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"{url}: HTTP {exc.code}: {exc.read()[:300]!r}") from None
    return 1000 * (time.perf_counter() - start)


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    folder = None
    if args.store is None:
        folder = tempfile.TemporaryDirectory(prefix="ui-pages-")
        args.store = Path(folder.name) / "store"
    fill(args.store, args.workflows)
    with open_store(str(args.store), read_only=True) as store:
        ids = store.ids(SCOPE)
        tool = store.backend.select(
            "SELECT ?t WHERE { GRAPH ?g { ?x <https://w3id.org/em-plugin/ns#toolName> ?t } }"
            " LIMIT 1"
        ).rows[0][0]
    print(f"{len(ids)} workflows in scope {SCOPE!r}", flush=True)
    url, stop = serve(args.store)
    rng = random.Random(0)
    scope = urllib.parse.quote(SCOPE)
    table = f"{url}/workflows?scope={scope}"
    pages: list[tuple[str, Callable[[], str]]] = [
        ("static file (floor)", lambda: f"{url}/static/panel.css"),
        ("workflow table, page 1", lambda: table),
        ("workflow table, page 1000", lambda: f"{table}&page=1000"),
        ("workflow table, sort by id", lambda: f"{table}&sort=id&dir=asc"),
        ("workflow table, sort by calls", lambda: f"{table}&sort=calls"),
        ("workflow table, text search", lambda: f"{table}&q=task+99"),
        ("workflow table, tool filter", lambda: f"{table}&tool={urllib.parse.quote(str(tool))}"),
        ("workflow table, date range", lambda: f"{table}&since=2026-01-10&until=2026-01-12"),
        (
            "one workflow (random)",
            lambda: f"{url}/workflow?scope={scope}&id={urllib.parse.quote(rng.choice(ids))}",
        ),
        ("scopes (cached)", lambda: f"{url}/"),
        ("tools (cached)", lambda: f"{url}/tools?scope={scope}"),
    ]
    try:
        cold = {
            "scopes, first load": fetch(f"{url}/"),
            "workflow table sorted by steps, first time": fetch(f"{table}&sort=steps"),
        }
        for name, ms in cold.items():
            print(f"{name:48s} {ms:9.0f} ms (once)", flush=True)
        results = {}
        for name, make in pages:
            fetch(make())  # warm-up
            times = [fetch(make()) for _ in range(args.repeat)]
            results[name] = times
        floor = p95(results["static file (floor)"])
        print(f"\n{'page':34s} {'p50 ms':>8s} {'p95 ms':>8s} {'p95 / floor':>12s}")
        for name, times in results.items():
            ratio = p95(times) / floor if floor else float("nan")
            mark = ""
            if name in ("workflow table, page 1", "one workflow (random)"):
                mark = (
                    "  ok" if p95(times) <= TARGET_MS else f"  over the {TARGET_MS:.0f} ms target"
                )
            print(
                f"{name:34s} {statistics.median(times):8.1f} {p95(times):8.1f} {ratio:12.1f}{mark}"
            )
    finally:
        stop()
        if folder is not None:
            folder.cleanup()


if __name__ == "__main__":
    sys.exit(main())
