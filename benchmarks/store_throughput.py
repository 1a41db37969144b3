"""Import a Workflow JSON file into a store and export it back; print workflows/s and triples/s.

Usage::

    python benchmarks/store_throughput.py FILE.jsonl [--store disk|memory|remote|SPEC]
                                                     [--batch N] [--no-verify]

``disk`` is a fresh temporary directory; ``remote`` starts ``oxigraph serve`` on a free
127.0.0.1 port with a temporary location and stops it afterwards; any other value is passed to
``open_store`` as is. The import is ``save_many`` over batches of ``--batch`` workflows (default:
the whole file in one transaction); the export is ``iter_workflows``. The mapping alone
(workflow <-> triples, no store) is timed too, so the store's own share is visible.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from provenance.mapping import triples_to_workflow, workflow_to_triples
from provenance.stores import open_store
from provenance.workflow_json import read_jsonl


@contextlib.contextmanager
def _oxigraph_server(location: Path) -> Iterator[str]:
    """Run ``oxigraph serve`` on 127.0.0.1 (only) and yield its query URL."""
    binary = Path(sys.executable).parent / "oxigraph"
    found = str(binary) if binary.is_file() else shutil.which("oxigraph")
    if found is None:
        raise SystemExit("the oxigraph server binary is not installed (pip install oxigraph)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [found, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/query"
    try:
        _wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"oxigraph serve exited with {process.returncode}")
        request = urllib.request.Request(
            url, data=b"ASK {}", headers={"Content-Type": "application/sparql-query"}
        )
        local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no env proxy
        with contextlib.suppress(urllib.error.URLError, OSError):
            with local.open(request, timeout=1):
                return
        time.sleep(0.05)
    raise SystemExit(f"oxigraph serve did not answer on {url}")


@contextlib.contextmanager
def _store_spec(kind: str) -> Iterator[str]:
    if kind == "memory":
        yield "memory:"
        return
    with tempfile.TemporaryDirectory(prefix="em-bench-") as tmp:
        if kind == "disk":
            yield str(Path(tmp) / "store")
        elif kind == "remote":
            with _oxigraph_server(Path(tmp) / "server") as url:
                yield url
        else:
            yield kind


def _rate(label: str, seconds: float, workflows: int, triples: int) -> None:
    print(
        f"{label:<28} {seconds:8.2f} s  {workflows / seconds:10.0f} workflows/s"
        f"  {triples / seconds:12.0f} triples/s"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", type=Path)
    parser.add_argument("--store", default="disk", help="disk, memory, remote, or a store spec")
    parser.add_argument("--batch", type=int, default=0, help="workflows per transaction")
    parser.add_argument("--no-verify", action="store_true", help="skip comparing the export")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    workflows = read_jsonl(args.jsonl)
    elapsed = time.perf_counter() - start
    print(f"{args.jsonl.name}: {len(workflows)} workflows, read in {elapsed:.2f} s")

    start = time.perf_counter()
    mapped = [workflow_to_triples(w) for w in workflows]
    to_triples = time.perf_counter() - start
    triples = sum(len(t) for t in mapped)
    start = time.perf_counter()
    for item in mapped:
        triples_to_workflow(item)
    from_triples = time.perf_counter() - start
    del mapped
    _rate("mapping only: to triples", to_triples, len(workflows), triples)
    _rate("mapping only: from triples", from_triples, len(workflows), triples)

    batch = args.batch or len(workflows)
    with _store_spec(args.store) as spec, open_store(spec) as store:
        print(f"store: {store.backend!r}, {batch} workflows per transaction")
        start = time.perf_counter()
        for i in range(0, len(workflows), batch):
            store.save_many(workflows[i : i + batch])
        _rate("import (save_many)", time.perf_counter() - start, len(workflows), triples)
        stored = store.stats()
        if stored["workflows"] != len(workflows) or stored["triples"] != triples:
            print(f"MISMATCH: store holds {stored['workflows']} / {stored['triples']} triples")
            return 1
        start = time.perf_counter()
        exported = list(store.iter_workflows())
        _rate("export (iter_workflows)", time.perf_counter() - start, len(exported), triples)
    if not args.no_verify:
        by_id = {w.id: w for w in exported}
        if len(by_id) != len(workflows) or any(by_id.get(w.id) != w for w in workflows):
            print("MISMATCH: the export differs from the input")
            return 1
        print("export equals input: yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
