"""How close the save path is to the store engine's own floor; print wf/s, ratios and KB per leaf.

Usage::

    python benchmarks/ingest_floor.py [--workflows N] [--batch B] [--rounds R] [--product-only]
        [--remote]

One run, the same synthetic workflows (``em-plugin bench``'s generator), each measured into a
fresh directory:

* ``save_many``: one ``EpisodicMemory.save_many`` call over all the workflows on the default
  disk store (fake 384-d embedder, batches of ``--batch``, pipelined: the store writes a batch
  while the next is prepared), as ``em-plugin import`` and ``em-plugin bench`` make it;
* ``bulk_load floor``: ``pyoxigraph.Store(DIR).bulk_load`` of the same batches' N-Quads text,
  made before the clock starts: what the engine alone takes, with no Python work at all;
* ``bulk_load, five fewer properties``: the same without ``wf:index``, ``wf:depth``, ``wf:seq``,
  ``p-plan:correspondsToStep`` and ``dcterms:isPartOf`` (the "leaner mapping" lever that
  docs/stores.md weighs; these graphs are not the product's and are read by nothing);
* ``memory load``: ``pyoxigraph.Store().load`` of the same text, the in-memory baseline;
* ``parse``: ``pyoxigraph.parse`` of the same text (Python quad objects included).

Ratios are against the ``bulk_load floor`` of the same run. With ``--rounds R`` the product and
the floor are measured R times in turn (odd rounds floor first), each round into fresh
directories; each round's speed ratio (floor seconds / product seconds) is printed, the median
rows make the table. ``--product-only`` skips the three reference rows after the floor;
``--serial`` adds ``save_many`` called batch by batch, the path before the pipeline. Disk per
leaf is the store directory after a reopen; for ``save_many`` it includes the derived data
beside it. The CPU time of the pipelined call's own thread, which does all of its Python work
while the engine writes, is printed per workflow: on a machine with few cores it is what the
product adds to the engine's work.

With ``--remote``, the same for a real ``oxigraph serve`` on a free 127.0.0.1 port (started and
stopped with the test fixtures' helper), each write into a fresh server:

* ``save_many``: ``EpisodicMemory.save_many`` against the server (the product);
* ``update floor``: the very SPARQL updates the remote backend sends for these batches (one per
  batch, replacing the batch's graphs in one transaction), made before the clock starts and
  POSTed with ``urllib``: the server's own work plus HTTP;
* ``N-Quads POST, one transaction``: the same graphs as N-Quads to the server's ``/store``;
* ``N-Quads POST, bulk loader``: ``/store?no_transaction``, Oxigraph's bulk loader over HTTP
  (for reference only: it cannot replace graphs, and other servers have no such path).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pyoxigraph as ox
from rdflib import URIRef

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from provenance.model import Workflow
from provenance.stores._terms import TriplesText, nquads, replace_update
from provenance.stores._text_writer import workflow_to_text
from provenance.vocab import DCTERMS, PPLAN, WF, graph_iri

#: The properties the "leaner mapping" lever drops (each is implied by the IRIs).
LEAN_DROPS = tuple(
    f"<{iri}>".encode()
    for iri in (WF.index, WF.depth, WF.seq, PPLAN.correspondsToStep, DCTERMS.isPartOf)
)


Row = tuple[str, float, float | None]
T = TypeVar("T")
_NQUADS = ox.RdfFormat.N_QUADS


def _graphs(batch: list[Workflow]) -> list[tuple[URIRef, TriplesText]]:
    return [(graph_iri(w.id, w.scope), workflow_to_text(w)) for w in batch]


def _text(batch: list[Workflow]) -> bytes:
    return nquads(_graphs(batch)).encode()


def _update(batch: list[Workflow]) -> bytes:
    graphs = _graphs(batch)
    return replace_update(graphs, [name for name, _ in graphs]).encode()


def _lean(text: bytes) -> bytes:
    keep = (
        line for line in text.splitlines(keepends=True) if line.split(b" ", 2)[1] not in LEAN_DROPS
    )
    return b"".join(keep)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _timed(items: Sequence[T], step: Callable[[T], object]) -> float:
    """Seconds that ``step`` took over all ``items`` (only the calls are timed)."""
    seconds = 0.0
    for item in items:
        start = time.perf_counter()
        step(item)
        seconds += time.perf_counter() - start
    return seconds


#: Per pipelined save_many call: CPU seconds of the calling thread, which does all of the
#: save's Python work (the store engine runs on the writer thread and its own threads).
PYTHON_CPU: list[float] = []


def _save_many(batches: list[list[Workflow]], store: str, *, serial: bool = False) -> float:
    """Seconds of one ``save_many`` call over all batches (as ``em-plugin import`` makes it).

    With ``serial``, one call per batch instead: each batch is prepared, written and indexed
    before the next, the save path before it was pipelined.
    """
    memory = EpisodicMemory(store=store, embedder=FakeEmbedder(384), scope=SCOPE)
    workflows = [w for batch in batches for w in batch]
    try:
        if serial:
            return _timed(batches, lambda batch: memory.save_many(batch, batch_size=len(batch)))
        start, cpu = time.perf_counter(), time.thread_time()
        memory.save_many(iter(workflows), batch_size=len(batches[0]))
        PYTHON_CPU.append(time.thread_time() - cpu)
        return time.perf_counter() - start
    finally:
        memory.close()


def _bulk_load(texts: list[bytes], directory: Path) -> float:
    store = ox.Store(str(directory))  # closed when this returns, before its size is read
    return _timed(texts, lambda text: store.bulk_load(text, format=_NQUADS, lenient=True))


def _memory_load(texts: list[bytes]) -> float:
    store = ox.Store()
    return _timed(texts, lambda text: store.load(text, format=_NQUADS, lenient=True))


def _parse(texts: list[bytes]) -> float:
    return _timed(texts, lambda text: sum(1 for _ in ox.parse(text, format=_NQUADS, lenient=True)))


def _post(url: str, bodies: list[bytes], content_type: str) -> float:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy

    def send(body: bytes) -> None:
        request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
        with opener.open(request, timeout=600) as response:
            response.read()

    return _timed(bodies, send)


def _remote_rows(batches: list[list[Workflow]], texts: list[bytes], root: Path) -> list[Row]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.conftest import start_oxigraph, stop_oxigraph

    updates = [_update(b) for b in batches]
    writes: list[tuple[str, Callable[[str], float]]] = [
        ("save_many (the product)", lambda query: _save_many(batches, query)),
        ("update floor", lambda query: _post(query[: -len("query")] + "update", updates, _UPDATE)),
        (
            "N-Quads POST, one transaction",
            lambda query: _post(query[: -len("query")] + "store", texts, _NQ),
        ),
        (
            "N-Quads POST, bulk loader",
            lambda query: _post(
                query[: -len("query")] + "store?no_transaction&lenient", texts, _NQ
            ),
        ),
    ]
    rows: list[Row] = []
    for number, (name, write) in enumerate(writes):
        server = start_oxigraph(root / f"server-{number}")
        try:
            rows.append((name, write(server.query_url), None))
        finally:
            stop_oxigraph(server)
    return rows


_UPDATE = "application/sparql-update"
_NQ = "application/n-quads"


def _print(title: str, rows: list[Row], floor: float, n: int) -> None:
    print(f"{title:34} {'wf/s':>8} {'ms/wf':>7} {'x floor':>8} {'KB/leaf':>8}")
    for name, seconds, kb in rows:
        size = f"{kb:8.2f}" if kb is not None else f"{'-':>8}"
        print(
            f"{name:34} {n / seconds:8.0f} {seconds / n * 1000:7.3f} {seconds / floor:8.2f} {size}"
        )


def _disk_kb_per_leaf(paths: list[Path], leaves: int) -> float:
    ox.Store.read_only(str(paths[0]))  # a reopen, as em-plugin bench measures it
    return sum(_size(p) for p in paths if p.exists()) / leaves / 1000


def _product_and_floor(
    batches: list[list[Workflow]],
    texts: list[bytes],
    root: Path,
    number: int,
    leaves: int,
    *,
    serial: bool,
) -> tuple[Row, Row, Row | None]:
    """One round: ``save_many``, the floor (and the serial path), each into a fresh directory.

    Odd rounds run in the reverse order, so that drift in the machine's load favours none.
    """

    def product(name: str, **options: bool) -> Callable[[], Row]:
        def run() -> Row:
            store = root / f"save-{number}-{len(options)}"
            seconds = _save_many(batches, str(store), **options)
            derived = [store, *store.parent.glob(f"{store.name}.*")]
            row = (name, seconds, _disk_kb_per_leaf(derived, leaves))
            for path in derived:
                shutil.rmtree(path, ignore_errors=True)
            return row

        return run

    def engine() -> Row:
        floor = root / f"floor-{number}"
        row = ("bulk_load floor", _bulk_load(texts, floor), _disk_kb_per_leaf([floor], leaves))
        shutil.rmtree(floor, ignore_errors=True)
        return row

    runs = {"product": product("save_many (the product)"), "floor": engine}
    if serial:
        runs["serial"] = product("save_many, batch by batch", serial=True)
    order = list(runs)[::-1] if number % 2 else list(runs)
    done = {key: runs[key]() for key in order}
    return done["product"], done["floor"], done.get("serial")


def _median_row(rows: list[Row]) -> Row:
    ordered = sorted(rows, key=lambda row: row[1])
    return ordered[len(ordered) // 2]


def main(argv: list[str] | None = None) -> None:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--remote", action="store_true", help="also oxigraph serve on loopback")
    parser.add_argument(
        "--rounds", type=int, default=1, help="product and floor in turn, this many times"
    )
    parser.add_argument(
        "--product-only", action="store_true", help="only the product and the floor rows"
    )
    parser.add_argument(
        "--serial", action="store_true", help="also save_many batch by batch (no pipeline)"
    )
    args = parser.parse_args(argv)

    workflows = list(SyntheticMemory().workflows(args.workflows))
    batches = [workflows[i : i + args.batch] for i in range(0, len(workflows), args.batch)]
    leaves = sum(len(w.leaves()) for w in workflows)
    texts = [_text(b) for b in batches]
    quads = sum(t.count(b"\n") for t in texts) / len(workflows)

    root = Path(tempfile.mkdtemp(prefix="em-floor-"))
    os.environ["EM_PLUGIN_CACHE_DIR"] = str(root / "cache")  # a remote store's index slot
    rows: list[Row] = []
    remote: list[Row] = []
    rounds: list[tuple[Row, Row, Row | None]] = []
    lean_quads = None
    try:
        for number in range(max(1, args.rounds)):
            rounds.append(
                _product_and_floor(batches, texts, root, number, leaves, serial=args.serial)
            )
        rows += [_median_row([p for p, _, _ in rounds]), _median_row([f for _, f, _ in rounds])]
        if args.serial:
            rows.append(_median_row([s for _, _, s in rounds if s is not None]))
        if not args.product_only:
            lean = [_lean(t) for t in texts]
            lean_quads = sum(t.count(b"\n") for t in lean) / len(workflows)
            seconds = _bulk_load(lean, root / "lean")
            kb = _disk_kb_per_leaf([root / "lean"], leaves)
            rows.append(("bulk_load, five fewer properties", seconds, kb))
            rows.append(("memory load (baseline)", _memory_load(texts), None))
            rows.append(("parse only", _parse(texts), None))
        if args.remote:
            remote = _remote_rows(batches, texts, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = len(workflows)
    floor = rows[1][1]
    fewer = f" ({lean_quads:.1f} with five fewer properties)" if lean_quads is not None else ""
    print(
        f"{n} workflows, {leaves / n:.2f} leaves and {quads:.1f} quads per workflow"
        f"{fewer}, batches of {args.batch}"
    )
    print("speed / floor speed (floor seconds / seconds), per round:")
    for number, (product, engine, serial) in enumerate(rounds, 1):
        line = f"  round {number}: save_many {engine[1] / product[1]:.3f}"
        if serial is not None:
            line += f", batch by batch {engine[1] / serial[1]:.3f}"
        print(line)
    ratios = sorted(engine[1] / product[1] for product, engine, _ in rounds)
    print(f"  median: save_many {ratios[len(ratios) // 2]:.3f}")
    if PYTHON_CPU:
        cpu = sorted(PYTHON_CPU)[len(PYTHON_CPU) // 2] / n * 1000
        print(
            f"  python work: {cpu:.3f} ms/wf (save_many's calling thread CPU, median), "
            f"beside the engine on {os.cpu_count()} cores"
        )
    _print("disk store", rows, floor, n)
    if remote:
        _print("oxigraph serve (127.0.0.1)", remote, remote[1][1], n)


if __name__ == "__main__":
    main(sys.argv[1:])
