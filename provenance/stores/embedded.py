"""Embedded Oxigraph (pyoxigraph): in memory, or persistent on disk (RocksDB).

Atomicity comes from pyoxigraph itself: ``Store.load``, ``Store.bulk_load`` and
``Store.update`` each write all or nothing, and pyoxigraph has no other transaction API. So
:meth:`OxigraphStore.replace_graphs` serialises the whole batch first (a bad term fails before
anything is written) and then makes exactly one call:

* none of the graphs exists yet (an import) on disk: ``bulk_load`` of one N-Quads document. It
  parses the batch and writes it as sorted RocksDB files beside the store, then ingests all of
  them in one atomic step (RocksDB ``IngestExternalFiles`` over all column families): readers
  see the whole batch or none of it, and a crash before that step leaves only unused
  ``bulk-*.sst`` files, deleted when the store is next opened for writing. About three times
  faster than ``load`` (a transaction), and it fills no memtables (docs/stores.md). A batch of
  :class:`~provenance.stores._terms.TriplesText` built from encoded IRIs is parsed
  ``lenient`` (Oxigraph skips its IRI checks; a quarter of the load's time);
* the same in memory: ``load`` (one transaction; faster than ``bulk_load`` in memory);
* some graphs exist: one ``update`` that deletes their triples and then ``INSERT DATA { GRAPH
  <g> { … } … }`` (see :func:`~provenance.stores._terms.replace_update`).

A disk store has a single writer process (RocksDB's lock). ``read_only=True`` opens it with
``Store.read_only``, next to a writer: the reader sees the store as it was when it was opened,
until :meth:`OxigraphStore.refresh` reopens it on the writer's latest commit. An open or a read
that meets a file the writer's compaction just deleted is tried again on the new file list. A
read-only store reads its own hard links to the store's files (:mod:`provenance.stores._pinned`,
under ``.readers/`` in the store), so that a compaction cannot delete a file it has yet to open:
a read meeting one fails over and over, which pyoxigraph's GROUP BY and hash joins collect
without bound. The writer flushes its memtables after every megabyte of updates, so the
write-ahead log that each read-only open replays stays short.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyoxigraph as ox
from rdflib import Graph, URIRef
from rdflib.term import Node

from provenance.errors import QueryError, StoreError
from provenance.stores._pinned import Incomplete, pin, unpin
from provenance.stores._sparql import bind, query_form
from provenance.stores._terms import (
    TermError,
    Triple,
    TriplesText,
    iri_text,
    nquads_bytes,
    prerender,
    replace_update,
    to_rdflib,
)
from provenance.stores.base import (
    Bindings,
    GraphStore,
    QueryResult,
    StoreConfigError,
    check_batch,
    result_from_oxigraph,
)

__all__ = ["OxigraphStore"]

_T = TypeVar("_T")


# Reads of a read-only store retried after the writer compacted files away (see _reopened).
_READ_RETRIES = 5
# Opens of a read-only store tried while the writer compacts files away under them: under a
# writer saving without pause about one open in ten meets a vanished file; each try sees the
# file list of its moment, so the chance that all of them fail falls tenfold with each one.
_OPEN_TRIES = 12
_OPEN_PAUSE_S = (0.01, 0.25)  # the first pause, the longest (doubling in between)
# Pins a read-only store keeps: the current one and the last ones before it, which a read that
# began before a refresh may still be using.
_PINS_KEPT = 3
# SPARQL update text a writer commits before it flushes its memtables. A read-only open replays
# the write-ahead log that unflushed writes keep; unbounded, a writer replacing graphs for a
# minute left 130 MB of it, and a reader's open took tens of seconds.
_FLUSH_AFTER_BYTES = 1 << 20


def _trusted(batch: Sequence[tuple[URIRef, Iterable[Triple]]]) -> bool:
    """Whether Oxigraph may skip its IRI checks (``lenient``) parsing this batch.

    It may when every graph's triples are :class:`TriplesText` built from encoded IRIs (its graph
    names are checked by ``ox.NamedNode`` before the load). Measured: a quarter of the load's time.
    """
    return all(isinstance(t, TriplesText) and t.trusted for _, t in batch)


def _remove_unfinished_loads(path: Path) -> None:
    """Delete the files of bulk loads that a crash stopped before they were ingested.

    ``bulk_load`` writes ``bulk-*.sst`` files into the store directory and then ingests them
    all in one atomic step, which gives them new names (hard links); the ``bulk-`` names are
    removed afterwards. A process killed before that step leaves files the store never
    references: only disk space, never data, so deleting them is always safe.
    """
    for leftover in path.glob("bulk-*.sst"):
        try:
            leftover.unlink()
        except OSError:
            pass  # not ours to fail on: the store is usable with or without it


def _vanished(exc: BaseException) -> bool:
    """Whether an error says a file of the store disappeared under a read-only reader."""
    text = str(exc)
    return "No such file" in text or "Corruption" in text


class OxigraphStore(GraphStore):
    """A pyoxigraph store: in memory when ``path`` is None, else a RocksDB directory.

    Args:
        path: The store directory (created when missing, unless read-only); None for memory.
        read_only: Open an existing disk store read-only, alongside a process that writes it.

    Raises:
        StoreConfigError: ``read_only`` without a path.
        StoreError: The directory cannot be opened (locked by a writer, missing, not a store).

    Example:
        >>> with OxigraphStore() as store:
        ...     store.replace_graphs([(URIRef("urn:g"), [(URIRef("urn:a"), URIRef("urn:b"),
        ...                                                URIRef("urn:c"))])])
        ...     store.graph_names()
        [rdflib.term.URIRef('urn:g')]
    """

    def __init__(self, path: str | Path | None = None, *, read_only: bool = False) -> None:
        self.path = None if path is None else Path(path).expanduser()
        self.read_only = read_only
        self._lock = threading.Lock()
        self._unflushed = 0  # update text committed since the last flush (see _FLUSH_AFTER_BYTES)
        self._pins: list[Path] = []  # see _pinned: a read-only store's own links to its files
        self._pins_lock = threading.Lock()
        self._pinning = read_only
        self._store: ox.Store | None = self._open()

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"OxigraphStore({where!r}{', read_only=True' if self.read_only else ''})"

    def _open(self) -> ox.Store:
        if self.path is None:
            if self.read_only:
                raise StoreConfigError("a read-only store needs a path; memory stores start empty")
            return ox.Store()
        try:
            if self.read_only:
                if not (self.path / "CURRENT").is_file():
                    raise StoreError(f"no Oxigraph store at {self.path} to open read-only")
                return self._open_read_only()
            self.path.mkdir(parents=True, exist_ok=True)
            store = ox.Store(str(self.path))
            _remove_unfinished_loads(self.path)  # after the open: this process holds the lock
            return store
        except OSError as exc:
            if "lock" in str(exc).lower():
                raise StoreError(
                    f"the store at {self.path} is open for writing in another process; "
                    "open it with read_only=True to read it meanwhile"
                ) from exc
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc

    def _live(self) -> ox.Store:
        if self._store is None:
            raise StoreError(f"{self!r} is closed")
        return self._store

    def _open_read_only(self) -> ox.Store:
        # Opened from a pin (see _pinned): the writer's compactions delete files that the
        # reader has yet to open, and a read that meets one can grow without bound. A pin, or
        # the open itself, that meets a file the writer just deleted is tried again.
        if self.path is None:
            raise StoreConfigError("a read-only store needs a path; memory stores start empty")
        pause, longest = _OPEN_PAUSE_S
        for attempt in range(_OPEN_TRIES):
            last = attempt == _OPEN_TRIES - 1
            target = self.path
            if self._pinning:
                try:
                    target = pin(self.path)
                except Incomplete as exc:
                    if last:
                        raise StoreError(
                            f"cannot open the store at {self.path}: its writer deleted files "
                            f"during each of {_OPEN_TRIES} tries; try again"
                        ) from exc
                    time.sleep(pause)
                    pause = min(2 * pause, longest)
                    continue
                except OSError:
                    self._pinning = False  # cannot write beside the store: read its own files
            try:
                store = ox.Store.read_only(str(target))
            except (OSError, RuntimeError) as exc:
                if target != self.path:
                    unpin(target)
                if last or not _vanished(exc):
                    if isinstance(exc, OSError):
                        raise
                    raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
            else:
                if target != self.path:
                    self._keep(target)
                return store
            time.sleep(pause)
            pause = min(2 * pause, longest)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _keep(self, target: Path) -> None:
        """Hold a new pin; drop the oldest beyond the last few (a read may still use those)."""
        with self._pins_lock:
            self._pins.append(target)
            old, self._pins = self._pins[:-_PINS_KEPT], self._pins[-_PINS_KEPT:]
        for gone in old:
            unpin(gone)

    def _reopened(self, exc: BaseException, attempt: int) -> bool:
        """Reopen a read-only store after the writer compacted files away under it.

        RocksDB secondaries see a snapshot of the file set; a compaction by the writing process
        deletes files the snapshot still names ("Corruption ... No such file"). Opening again
        picks up the new file set. Returns whether the caller should retry.
        """
        if not self.read_only or attempt >= _READ_RETRIES - 1 or not _vanished(exc):
            return False
        with self._lock:
            self._store = self._open()
        return True

    def refresh(self) -> None:
        """See :meth:`GraphStore.refresh`: a read-only disk store reopens on the latest commit."""
        if not self.read_only or self._store is None:
            return
        fresh = self._open()
        with self._lock:
            self._store = fresh

    def _writable(self) -> ox.Store:
        if self.read_only:
            raise StoreError(f"{self!r} is read-only; open it without read_only to write")
        return self._live()

    # -- writes ------------------------------------------------------------------------------

    def replace_graphs(self, graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
        """See :meth:`GraphStore.replace_graphs`."""
        store = self._writable()
        batch = check_batch(graphs)
        if not batch:
            return
        with self._lock:
            try:
                existing = [n for n, _ in batch if store.contains_named_graph(ox.NamedNode(n))]
                if not existing:
                    data = nquads_bytes(batch)
                    if self.path is None:
                        store.load(data, ox.RdfFormat.N_QUADS, lenient=_trusted(batch))
                    else:
                        # Sorted files ingested in one atomic step (see the module doc): about
                        # three times faster than a transaction, and no memtables to flush.
                        store.bulk_load(data, ox.RdfFormat.N_QUADS, lenient=_trusted(batch))
                    return
                update = replace_update(batch, existing)
                store.update(update)
                self._flush_now_and_then(store, len(update))
            except (TermError, UnicodeEncodeError, ValueError) as exc:
                raise StoreError(f"cannot store the graphs: {exc}") from exc
            except (OSError, SyntaxError, RuntimeError) as exc:
                raise StoreError(f"{self!r} failed to write: {exc}") from exc

    def prepare(self, graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
        """See :meth:`GraphStore.prepare`: the N-Quads text of a load, made ahead."""
        prerender(graphs)

    def drop_graphs(self, names: Iterable[URIRef]) -> None:
        """See :meth:`GraphStore.drop_graphs`."""
        store = self._writable()
        try:
            update = " ;\n".join(f"DROP SILENT GRAPH {iri_text(str(n))}" for n in names)
        except TermError as exc:
            raise StoreError(f"cannot drop graphs: {exc}") from exc
        if not update:
            return
        with self._lock:
            try:
                store.update(update)
                self._flush_now_and_then(store, len(update))
            except (OSError, SyntaxError, RuntimeError) as exc:
                raise StoreError(f"{self!r} failed to drop graphs: {exc}") from exc

    def _flush_now_and_then(self, store: ox.Store, written: int) -> None:
        """Flush a disk store's memtables once enough updates piled up since the last flush.

        Keeps the write-ahead log short, which every read-only open beside this writer replays
        (bulk loads write files and leave no log). The commit is already durable: flushing
        moves it from the log to sorted files.
        """
        if self.path is None:
            return
        self._unflushed += written
        if self._unflushed >= _FLUSH_AFTER_BYTES:
            self._unflushed = 0
            try:
                store.flush()
            except (OSError, RuntimeError):
                pass  # the commit stands (the log holds it); the next flush tries again

    # -- reads -------------------------------------------------------------------------------

    def _read(self, read: Callable[[ox.Store], _T]) -> _T:
        """Run ``read`` on the store, reopening a read-only one whose files were compacted away."""
        for attempt in range(_READ_RETRIES):
            store = self._live()
            try:
                return read(store)
            except (OSError, RuntimeError) as exc:
                if not self._reopened(exc, attempt):
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def graph_names(self) -> list[URIRef]:
        """See :meth:`GraphStore.graph_names`."""
        try:
            names = self._read(lambda store: list(store.named_graphs()))
            return sorted(URIRef(g.value) for g in names if isinstance(g, ox.NamedNode))
        except (OSError, RuntimeError) as exc:
            raise StoreError(f"{self!r} failed to list graphs: {exc}") from exc

    def read_graphs(self, names: Sequence[URIRef]) -> Iterator[tuple[URIRef, list[Triple]]]:
        """See :meth:`GraphStore.read_graphs`."""
        cache: dict[Any, Node] = {}
        for name in names:
            try:
                graph = ox.NamedNode(name)
                quads = self._read(
                    lambda store: list(store.quads_for_pattern(None, None, None, graph))  # noqa: B023 - called at once
                )
                triples = [
                    (
                        to_rdflib(q.subject, cache),
                        to_rdflib(q.predicate, cache),
                        to_rdflib(q.object, cache),
                    )
                    for q in quads
                ]
            except ValueError as exc:
                raise StoreError(f"cannot read graph <{name}>: {exc}") from exc
            except (OSError, RuntimeError) as exc:
                raise StoreError(f"{self!r} failed to read <{name}>: {exc}") from exc
            if triples:
                yield name, triples

    def query(
        self,
        sparql: str,
        bindings: Bindings | None = None,
        *,
        graphs: Sequence[URIRef] | None = None,
    ) -> QueryResult | bool | Graph:
        """See :meth:`GraphStore.query`."""
        query_form(sparql)  # refuse updates before anything runs
        text = bind(sparql, bindings)
        for attempt in range(_READ_RETRIES):
            store = self._live()
            try:
                if graphs is None:
                    result = store.query(text, use_default_graph_as_union=True)
                else:
                    dataset: list[ox.NamedNode | ox.BlankNode] = [ox.NamedNode(g) for g in graphs]
                    result = store.query(text, default_graph=list(dataset), named_graphs=dataset)
                return result_from_oxigraph(result)
            except SyntaxError as exc:
                raise QueryError(f"invalid SPARQL: {exc}") from exc
            except (OSError, RuntimeError) as exc:
                if self._reopened(exc, attempt):
                    continue
                if isinstance(exc, OSError) or "Corruption" in str(exc):
                    raise StoreError(f"{self!r} failed to run a query: {exc}") from exc
                raise QueryError(f"the query failed: {exc}") from exc
            except ValueError as exc:
                raise QueryError(f"the query failed: {exc}") from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        """See :meth:`GraphStore.close`; releases the RocksDB lock of a disk store."""
        with self._lock:
            store, self._store = self._store, None
        if store is not None and self.path is not None and not self.read_only:
            try:
                store.flush()
            except OSError:
                pass  # closing must not fail; RocksDB's WAL already holds every commit
        del store
        with self._pins_lock:
            pins, self._pins = self._pins, []
        for target in pins:
            unpin(target)
