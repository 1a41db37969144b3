"""How close the disk save path is to Oxigraph's own bulk-load floor; print wf/s and KB per leaf.

Usage::

    python benchmarks/disk_ingest_floor.py [--workflows N] [--batch B]

One run, the same synthetic workflows (``em-plugin bench``'s generator), each measured into a
fresh directory:

* ``save_many``: ``EpisodicMemory.save_many`` on the default disk store (fake 384-d embedder,
  batches of ``--batch``): the figure ``em-plugin bench --store DIR`` reports;
* ``bulk_load floor``: ``pyoxigraph.Store(DIR).bulk_load`` of the same batches' N-Quads text,
  made before the clock starts: what the engine alone takes, with no Python work at all;
* ``bulk_load, five fewer properties``: the same without ``wf:index``, ``wf:depth``, ``wf:seq``,
  ``p-plan:correspondsToStep`` and ``dcterms:isPartOf`` (the "leaner mapping" lever that
  docs/stores.md weighs; these graphs are not the product's and are read by nothing);
* ``memory load``: ``pyoxigraph.Store().load`` of the same text, the in-memory baseline;
* ``parse``: ``pyoxigraph.parse`` of the same text (Python quad objects included).

Ratios are against the ``bulk_load floor`` of the same run. Disk per leaf is the store
directory after a reopen; for ``save_many`` it includes the derived data beside it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from provenance.model import Workflow
from provenance.stores._terms import nquads
from provenance.stores._text_writer import workflow_to_text
from provenance.vocab import DCTERMS, PPLAN, WF, graph_iri

#: The properties the "leaner mapping" lever drops (each is implied by the IRIs).
LEAN_DROPS = tuple(
    f"<{iri}>".encode()
    for iri in (WF.index, WF.depth, WF.seq, PPLAN.correspondsToStep, DCTERMS.isPartOf)
)


def _text(batch: list[Workflow]) -> bytes:
    graphs = [(graph_iri(w.id, w.scope), workflow_to_text(w)) for w in batch]
    return nquads(graphs).encode()


def _lean(text: bytes) -> bytes:
    keep = (
        line for line in text.splitlines(keepends=True) if line.split(b" ", 2)[1] not in LEAN_DROPS
    )
    return b"".join(keep)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _timed(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def _save_many(batches: list[list[Workflow]], directory: Path) -> float:
    memory = EpisodicMemory(store=str(directory), embedder=FakeEmbedder(384), scope=SCOPE)
    try:
        return sum(_timed(lambda b=b: memory.save_many(b, batch_size=len(b))) for b in batches)
    finally:
        memory.close()


def _bulk_load(texts: list[bytes], directory: Path) -> float:
    store = ox.Store(str(directory))
    load = store.bulk_load
    seconds = sum(
        _timed(lambda t=t: load(t, format=ox.RdfFormat.N_QUADS, lenient=True)) for t in texts
    )
    del store
    return seconds


def _memory_load(texts: list[bytes]) -> float:
    store = ox.Store()
    return sum(
        _timed(lambda t=t: store.load(t, format=ox.RdfFormat.N_QUADS, lenient=True)) for t in texts
    )


def _parse(texts: list[bytes]) -> float:
    return sum(
        _timed(lambda t=t: sum(1 for _ in ox.parse(t, format=ox.RdfFormat.N_QUADS, lenient=True)))
        for t in texts
    )


def _disk_kb_per_leaf(paths: list[Path], leaves: int) -> float:
    ox.Store.read_only(str(paths[0]))  # a reopen, as em-plugin bench measures it
    return sum(_size(p) for p in paths if p.exists()) / leaves / 1000


def main(argv: list[str] | None = None) -> None:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args(argv)

    workflows = list(SyntheticMemory().workflows(args.workflows))
    batches = [workflows[i : i + args.batch] for i in range(0, len(workflows), args.batch)]
    leaves = sum(len(w.leaves()) for w in workflows)
    texts = [_text(b) for b in batches]
    lean = [_lean(t) for t in texts]
    quads = sum(t.count(b"\n") for t in texts) / len(workflows)
    lean_quads = sum(t.count(b"\n") for t in lean) / len(workflows)

    root = Path(tempfile.mkdtemp(prefix="em-floor-"))
    rows: list[tuple[str, float, float | None]] = []
    try:
        store = root / "save"
        seconds = _save_many(batches, store)
        derived = [store, *store.parent.glob(f"{store.name}.*")]
        rows.append(("save_many (the product)", seconds, _disk_kb_per_leaf(derived, leaves)))
        seconds = _bulk_load(texts, root / "floor")
        rows.append(("bulk_load floor", seconds, _disk_kb_per_leaf([root / "floor"], leaves)))
        seconds = _bulk_load(lean, root / "lean")
        rows.append(
            (
                "bulk_load, five fewer properties",
                seconds,
                _disk_kb_per_leaf([root / "lean"], leaves),
            )
        )
        rows.append(("memory load (baseline)", _memory_load(texts), None))
        rows.append(("parse only", _parse(texts), None))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = len(workflows)
    floor = rows[1][1]
    print(
        f"{n} workflows, {leaves / n:.2f} leaves and {quads:.1f} quads per workflow "
        f"({lean_quads:.1f} with five fewer properties), batches of {args.batch}"
    )
    print(f"{'write':34} {'wf/s':>8} {'ms/wf':>7} {'x floor':>8} {'KB/leaf':>8}")
    for name, seconds, kb in rows:
        size = f"{kb:8.2f}" if kb is not None else f"{'-':>8}"
        print(
            f"{name:34} {n / seconds:8.0f} {seconds / n * 1000:7.3f} {seconds / floor:8.2f} {size}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
