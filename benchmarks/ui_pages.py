"""Page times of the memory panel (``em-plugin ui``) over a large disk store.

Usage::

    python benchmarks/ui_pages.py [--workflows 100000] [--store DIR] [--repeat 20] [--tools]
                                  [--fill-only]

Tops ``--store`` (default: ``$TMPDIR/em-plugin-ui-pages/N``, kept between runs) up to
``--workflows`` synthetic workflows (``em_plugin.evaluation.synthetic``, dated a minute apart and
titled; see :func:`fill`), serves it read-only with the panel on 127.0.0.1 (uvicorn, in this
process, no background warm-up) and times each page over HTTP, ``--repeat`` times after one
untimed fetch: a static file (the floor of a request), one workflow (random ids; before the
table exists, as it needs none), the table's first look (which builds it; once), the table's
pages (first page, a deep page, sorts, a text search, a tool filter, a date range), one
workflow again, the scopes page, and the tools page with ``--tools`` (its first computation
costs minutes at 100k). Each line gives the wall-clock p50 and p95, the p95 over the floor's,
and the CPU milliseconds this process spent (panel and client; they do not grow with the load
of a shared machine as the wall-clock does), and the load average. The target is a p95 of 300
ms or less for the workflow table (first page) and for one workflow. Figures: docs/ui.md.
"""

from __future__ import annotations

import argparse
import os
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
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyoxigraph as ox

from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from provenance.model import Workflow
from provenance.stores import WorkflowStore, open_store
from provenance.vocab import graph_iri

BATCH = 5_000
TARGET_MS = 300.0
TARGETED = ("workflow table, page 1", "one workflow (random)", "one workflow (random), after")
"""The pages the target is for."""
CACHE = Path(tempfile.gettempdir()) / "em-plugin-ui-pages"
"""Where the filled store is kept between runs when ``--store`` is not given."""


def _synthetic(first: int, size: int) -> list[Workflow]:
    """The synthetic workflows ``first``..``first + size`` (dated a minute apart, titled)."""
    base = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        workflow.replace(
            created=(base + timedelta(minutes=first + n)).isoformat(),
            title=f"Synthetic task {first + n}",
        )
        for n, workflow in enumerate(SyntheticMemory(seed=0).workflows(size, start=first))
    ]


def _nquads_file(spool: str, first: int, size: int) -> str:
    """Write workflows ``first``..``first + size`` as the N-Quads a save writes; return the file.

    Runs in a worker process. The text is the store's own (``workflow_to_text`` into the graph
    ``graph_iri``, as ``WorkflowStore.save_many`` writes it), so the loaded graphs are the ones
    a save makes. Written under a temporary name and renamed, so a file of the spool is whole.
    """
    from provenance.stores._terms import nquads
    from provenance.stores._text_writer import workflow_to_text

    graphs = [(graph_iri(w.id, w.scope), workflow_to_text(w)) for w in _synthetic(first, size)]
    path = Path(spool) / f"{first:08d}-{size}.nq"
    partial = path.with_suffix(".part")
    partial.write_text(nquads(graphs), encoding="utf-8")
    partial.rename(path)
    return str(path)


def _count(store: WorkflowStore, count: int) -> int:
    """Return how many of the synthetic workflows the store holds.

    The fill adds ``wf-0000000``, ``wf-0000001`` ... in order, so a binary search of graph
    lookups finds it (listing the ids of a 100k store takes minutes on a busy machine).
    """
    low, high = 0, count  # the store holds wf-0..wf-(low-1); it lacks wf-high
    if store.backend.has_graph(graph_iri(_synthetic_id(count - 1), SCOPE)):
        return count
    while low < high:
        middle = (low + high) // 2
        if store.backend.has_graph(graph_iri(_synthetic_id(middle), SCOPE)):
            low = middle + 1
        else:
            high = middle
    return low


def _synthetic_id(number: int) -> str:
    return f"wf-{number:07d}"


def fill(path: Path, count: int, *, workers: int = 3) -> None:
    """Top the store up to ``count`` synthetic workflows (nothing to do when it holds them).

    ``workers`` processes write batches of :data:`BATCH` workflows as N-Quads files into a
    spool beside the store (``STORE.fill/``, kept until loaded, so an interrupted fill resumes
    without generating again) while this one bulk-loads them in order (Oxigraph's
    ``bulk_load``, new graphs only, as ``save_many`` does for new workflows). The last batch
    goes through ``WorkflowStore.save_many``, so the scope's change log has an entry and the
    store is one a memory writes.
    """
    with open_store(str(path)) as store:
        have = _count(store, count)
    if have >= count:
        print(f"store {path}: {have} workflows already", flush=True)
        return
    start = time.perf_counter()
    last = max(have, count - BATCH)
    spool = path.with_name(f"{path.name}.fill")
    spool.mkdir(parents=True, exist_ok=True)
    for stale in spool.glob("*.part"):
        stale.unlink()
    if last > have:
        raw = ox.Store(str(path))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            firsts = range(have, last, BATCH)
            files: list[str | Future[str]] = []
            for first in firsts:
                size = min(BATCH, last - first)
                ready = spool / f"{first:08d}-{size}.nq"
                if ready.exists():
                    files.append(str(ready))
                else:
                    files.append(pool.submit(_nquads_file, str(spool), first, size))
            for first, pending in zip(firsts, files, strict=True):
                name = pending if isinstance(pending, str) else pending.result()
                raw.bulk_load(path=name, format=ox.RdfFormat.N_QUADS, lenient=True)
                Path(name).unlink()
                done = min(first + BATCH, last)
                print(f"  loaded {done} ({time.perf_counter() - start:.0f} s)", flush=True)
        raw.flush()
        del raw
    with open_store(str(path)) as store:
        store.save_many(_synthetic(last, count - last))
    for leftover in spool.glob("*.nq"):  # batches loaded before an interruption
        leftover.unlink()
    spool.rmdir()
    print(f"filled {count - have} workflows in {time.perf_counter() - start:.0f} s", flush=True)


def _size(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return f"{total / 2**30:.2f} GiB" if total >= 2**30 else f"{total / 2**20:.0f} MiB"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(path: Path) -> tuple[str, Callable[[], None]]:
    """Start the panel on 127.0.0.1 over ``path`` (read-only); return its URL and a stopper.

    No warm-up: the first look at the table builds it, and is timed.
    """
    import uvicorn

    from integrations.panel import PanelSettings, create_app

    port = _free_port()
    app = create_app(PanelSettings(store=str(path), embedder="fake", warm=False))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 600
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the panel did not start")
        time.sleep(0.05)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=30)

    return f"http://127.0.0.1:{port}", stop


def fetch(url: str) -> tuple[float, float]:
    """GET a page; return its wall-clock and CPU milliseconds (a non-200 answer stops the run).

    The CPU time is this process's (the panel and the client run in it), so it does not grow
    with the other jobs of a busy machine the way the wall-clock time does.
    """
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with urllib.request.urlopen(url, timeout=600) as answer:
            answer.read()
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"{url}: HTTP {exc.code}: {exc.read()[:300]!r}") from None
    return 1000 * (time.perf_counter() - start), 1000 * (time.process_time() - cpu)


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=100_000)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--fill-only", action="store_true", help="fill the store, time nothing")
    parser.add_argument("--tools", action="store_true", help="time the tools page too")
    args = parser.parse_args()
    if args.store is None:
        args.store = CACHE / str(args.workflows)
    fill(args.store, args.workflows)
    if args.fill_only:
        return
    with open_store(str(args.store), read_only=True) as store:
        held = _count(store, args.workflows)
        tool = store.backend.select(
            "SELECT ?t WHERE { GRAPH ?g { ?x <https://w3id.org/em-plugin/ns#toolName> ?t } }"
            " LIMIT 1"
        ).rows[0][0]
    ids = [_synthetic_id(n) for n in range(held)]
    print(f"{held} workflows in scope {SCOPE!r}, store {_size(args.store)}", flush=True)
    url, stop = serve(args.store)
    rng = random.Random(0)
    scope = urllib.parse.quote(SCOPE)
    table = f"{url}/workflows?scope={scope}"

    def one() -> str:
        return f"{url}/workflow?scope={scope}&id={urllib.parse.quote(rng.choice(ids))}"

    # One workflow first: it needs no table, so it is timed before the table is built.
    first: list[tuple[str, Callable[[], str]]] = [
        ("static file (floor)", lambda: f"{url}/static/panel.css"),
        ("one workflow (random)", one),
    ]
    cold: list[tuple[str, str]] = [
        ("workflow table, first look (builds it)", table),
        ("workflow table sorted by steps, first time", f"{table}&sort=steps"),
        ("scopes, first look", f"{url}/"),
    ]
    then: list[tuple[str, Callable[[], str]]] = [
        ("workflow table, page 1", lambda: table),
        ("workflow table, page 1000", lambda: f"{table}&page=1000"),
        ("workflow table, sort by id", lambda: f"{table}&sort=id&dir=asc"),
        ("workflow table, sort by calls", lambda: f"{table}&sort=calls"),
        ("workflow table, text search", lambda: f"{table}&q=task+99"),
        ("workflow table, tool filter", lambda: f"{table}&tool={urllib.parse.quote(str(tool))}"),
        ("workflow table, date range", lambda: f"{table}&since=2026-01-10&until=2026-01-12"),
        ("one workflow (random), after", one),
        ("scopes (cached)", lambda: f"{url}/"),
    ]
    if args.tools:
        cold.append(("tools, first look", f"{url}/tools?scope={scope}"))
        then.append(("tools (cached)", lambda: f"{url}/tools?scope={scope}"))
    try:
        floor = _time(first[:1], args.repeat, None)
        _time(first[1:], args.repeat, floor)
        for name, address in cold:
            ms, cpu = fetch(address)
            print(f"{name:40s} {ms:9.0f} ms (once, cpu {cpu:.0f} ms)", flush=True)
        _time(then, args.repeat, floor)
    finally:
        stop()


def _time(pages: list[tuple[str, Callable[[], str]]], repeat: int, floor: float | None) -> float:
    """Time each page ``repeat`` times (after one untimed fetch) and print a line per page.

    Returns the last page's p95 (the floor, when called with the static file).
    """
    if floor is None:
        print(
            f"{'page':40s} {'p50 ms':>8s} {'p95 ms':>8s} {'p95/floor':>10s}"
            f" {'cpu p50':>8s} {'cpu p95':>8s}  load",
            flush=True,
        )
    last = 0.0
    for name, make in pages:
        fetch(make())  # warm-up
        found = [fetch(make()) for _ in range(repeat)]
        times = [ms for ms, _ in found]
        cpu = [c for _, c in found]
        last = p95(times)
        ratio = last / (floor or last)
        mark = ""
        if name in TARGETED:
            mark = "  ok" if last <= TARGET_MS else f"  over the {TARGET_MS:.0f} ms target"
        print(
            f"{name:40s} {statistics.median(times):8.1f} {last:8.1f} {ratio:10.1f}"
            f" {statistics.median(cpu):8.1f} {p95(cpu):8.1f}  {os.getloadavg()[0]:4.1f}{mark}",
            flush=True,
        )
    return last


if __name__ == "__main__":
    sys.exit(main())
