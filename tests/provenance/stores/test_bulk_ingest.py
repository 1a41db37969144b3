"""Batches of new graphs go to a disk store through ``bulk_load``: still all or nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rdflib import Literal, URIRef
from rdflib.namespace import DCTERMS

from provenance.errors import StoreError
from provenance.model import CallStep, Workflow
from provenance.stores import open_store
from provenance.stores._terms import TriplesText
from provenance.stores.embedded import OxigraphStore

ROOT = Path(__file__).resolve().parents[3]

# Saves one batch through a store whose bulk_load ends the process while Rust is loading it
# (the call releases the GIL, so a timer thread runs meanwhile).
_CRASHER = """
import os, sys, threading
import pyoxigraph as ox
from provenance.model import CallStep, Workflow
from provenance.stores import open_store

path, count = sys.argv[1], int(sys.argv[2])
calls = []

class DiesInBulkLoad:
    def __init__(self, real):
        self.real = real
    def __getattr__(self, name):
        return getattr(self.real, name)
    def bulk_load(self, *args, **kwargs):
        calls.append(len(args[0]))
        threading.Timer(0.02, os._exit, args=(17,)).start()
        self.real.bulk_load(*args, **kwargs)
        print("committed", flush=True)
        threading.Event().wait(30)

store = open_store(path)
store.save(Workflow(id="before", steps=(CallStep(name="A1"),)))
store.backend._store = DiesInBulkLoad(store.backend._store)
print("saving", flush=True)
store.save_many(
    Workflow(id=f"w{i}", steps=tuple(CallStep(name=f"t{j}", args={"n": j}) for j in range(12)))
    for i in range(count)
)
"""


def _workflow(name: str, title: str | None = None) -> Workflow:
    return Workflow(id=name, title=title, steps=(CallStep(name="A1", args={"q": name}),))


@pytest.mark.slow
def test_a_crash_inside_bulk_load_leaves_no_part_of_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "store"
    crasher = subprocess.run(
        [sys.executable, "-c", _CRASHER, str(path), "3000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert crasher.returncode == 17, crasher.stderr
    assert crasher.stdout.split() == ["saving"], "bulk_load finished before the crash"
    with open_store(path) as store:
        assert store.ids() == ["before"]  # not one workflow of the batch, nor its log entry
        assert store.marker("default").sequence == 1
        assert not list(path.glob("bulk-*.sst"))  # unfinished load files are gone
        store.save(_workflow("after"))  # and the store takes new batches
        assert store.ids() == ["after", "before"]


def test_leftover_bulk_files_are_removed_when_opened_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with open_store(path) as store:
        store.save_many([_workflow("a"), _workflow("b")])
    leftover = path / "bulk-1234567890.sst"
    leftover.write_bytes(b"a half-written sorted file")
    with open_store(path, read_only=True) as reader:  # a reader never deletes anything
        assert reader.ids() == ["a", "b"]
    assert leftover.exists()
    with open_store(path) as store:
        assert not leftover.exists()
        assert store.ids() == ["a", "b"]


def test_bulk_batches_are_readable_and_replaceable(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with open_store(path) as store:
        store.save_many([_workflow(f"w{i}", "v1") for i in range(50)])
        store.save_many([_workflow("w3", "v2"), _workflow("new", "v2")])  # replace + add
        assert store.load("w3").title == "v2" and store.load("w4").title == "v1"
        assert len(store) == 51
    with open_store(path, read_only=True) as reader:
        assert reader.load("new") == _workflow("new", "v2")
        assert reader.stats()["workflows"] == 51


def test_only_trusted_text_is_parsed_leniently(tmp_path: Path) -> None:
    bad_iri = URIRef("http://example.org/%zz")  # passes the client's check, not Oxigraph's
    triple = (bad_iri, DCTERMS.title, Literal("x"))
    store = OxigraphStore(tmp_path / "store")
    try:
        for triples in ([triple], TriplesText.of([triple])):
            with pytest.raises(StoreError):
                store.replace_graphs([(URIRef("urn:x:g"), triples)])
        with pytest.raises(StoreError):  # a bad graph name, even with trusted triples
            store.replace_graphs([(bad_iri, TriplesText.of([], trusted=True))])
        assert store.graph_names() == []
    finally:
        store.close()
