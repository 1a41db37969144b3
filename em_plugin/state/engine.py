"""The engine behind :class:`~em_plugin.memory.EpisodicMemory` and its scope views.

One :class:`MemoryEngine` owns the workflow store, the cached embedder, the step index (one
state per scope: :class:`~em_plugin.state.scope_index.ScopeIndex`, with its suggestion models,
:class:`~em_plugin.state.scope_memory.ScopeMemory`, built over it on first use) and the one cache
of parsed workflows (:class:`~em_plugin.state.workflow_cache.WorkflowCache`), under one lock.
Everything is keyed by ``(scope, id)``: ids are per scope. Every change goes through one path
(:meth:`MemoryEngine.apply`), which writes the scope's state and the cached copies; it keeps them
in step with the store:

* a batch of workflows is stored and indexed as one unit (when indexing fails the store is put
  back as it was);
* deleting a workflow or a scope removes its graphs, index entries, suggestion state and cached
  vectors; erasing a scope also rewrites the index files, so no derived file keeps its texts;
* the store's per-scope change markers say whether the index is current. At open, and at most
  every ``poll_interval`` seconds before a read, the engine compares them and reloads only the
  workflows another process (or a write whose answer was lost) changed: a crash between the
  store's commit and the index's journal never leaves a stale index, and a reader process sees
  a writer's saves;
* a memory on a read-only store never writes index or cache files.

Derived data lives in the store's ``derived_dir`` (``DIR.em-index`` of a disk store, a slot of
the local cache for a remote store): the step index (``steps/``), the embedding cache
(``embeddings.sqlite``) and, for a writable memory, copies of the indexed workflows
(``workflows.sqlite``, :mod:`em_plugin.state.workflow_copies`), so that suggestions read no
store. The in-memory store gets an in-memory index and cache, rebuilt from the store when the
memory opens. See ``docs/state.md``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from em_plugin.config import scope_cache as scope_cache_setting
from em_plugin.embedding.cache import open_cache
from em_plugin.embedding.opener import StoreEmbedder, open_embedder
from em_plugin.errors import IndexStaleError
from em_plugin.state.batch_writes import BatchWrites
from em_plugin.state.persistence import META, store_fingerprint
from em_plugin.state.rwlock import ReadWriteLock
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.state.scope_models import ScopeModelSpec
from em_plugin.state.step_index import StepIndex
from em_plugin.state.versions import HiddenIds, Versions
from em_plugin.state.workflow_cache import WorkflowCache
from em_plugin.state.workflow_copies import FILE_NAME, WorkflowCopies
from provenance.errors import WorkflowNotFound
from provenance.lifecycle import version_id, workflow_record_iri
from provenance.model import InstructionStep, Workflow
from provenance.stores import WorkflowStore, open_store
from provenance.stores.workflow_store import ChangeMarker

__all__ = ["DEFAULT_POLL_INTERVAL", "MemoryEngine", "open_cache"]

log = logging.getLogger("em_plugin.memory")

#: Seconds between two checks of the store's change marker before a read.
DEFAULT_POLL_INTERVAL = 0.5
# Journal lines from which closing the memory writes an index snapshot (docs/state.md).
_CHECKPOINT = 1000


class MemoryEngine:
    """Store, embedder, step index and per-scope suggestion state, kept consistent.

    The scopes kept loaded at most are ``$EM_PLUGIN_SCOPE_CACHE``
    (:func:`em_plugin.config.scope_cache`): an unloaded scope is read back from its index
    snapshot, never embedded again.

    Args:
        store: A store spec or an open store (an open store is not closed by :meth:`close`).
        embedder: Anything :func:`~em_plugin.embedding.resolve_embedder` accepts.
        models: The per-scope models the suggesters declare (each scope builds them).
        on_demand: Models a scope builds only when first asked for (see ``ScopeMemory``).
        use_text: ``False`` treats every instruction as the same text.
        poll_interval: Seconds between checks of the store's change markers before reads.
        warm_up: Start loading the embedder's model in the background
            (:func:`~em_plugin.embedding.opener.open_embedder`).
        hidden: The lifecycle's cache of hidden ids
            (:class:`~em_plugin.lifecycle.cache.LifecycleCache`): the engine keeps none.

    Raises:
        ConfigurationError: When ``$EM_PLUGIN_SCOPE_CACHE`` is not a positive integer or ``none``.
    """

    def __init__(
        self,
        store: Any,
        embedder: Any,
        *,
        models: Sequence[ScopeModelSpec],
        on_demand: Sequence[ScopeModelSpec] = (),
        use_text: bool,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        warm_up: bool = True,
        hidden: HiddenIds,
    ) -> None:
        self.scope_cache = scope_cache_setting()
        self.owns_store = not isinstance(store, WorkflowStore)
        self.store: WorkflowStore = open_store(store) if self.owns_store else store
        self.read_only = self.store.read_only
        self.poll_interval = poll_interval
        self._new_state = partial(
            ScopeMemory, models=models, on_demand=on_demand, use_text=use_text
        )
        # Reads (retrieval, suggestions) hold it shared and run together; writes alone.
        self.lock = ReadWriteLock()
        # Among shared holders: the parsed-workflow cache and the lazy build of a scope's
        # suggestion models are changed by readers too.
        self._read_mutex = threading.RLock()
        self.closed = False
        self._polled = time.monotonic()
        self._polling = threading.Lock()  # one read asks the store's position at a time
        self.unsettled = False
        self.copies: WorkflowCopies | None = None
        embedding: StoreEmbedder | None = None
        # Retired workflows and superseded versions stay stored but are never indexed.
        self.versions = Versions(self.store, hidden)
        try:
            directory = self.store.derived_dir
            # Resolved, cached, checked against the store's record, warming up: in one call.
            self.embedding = embedding = open_embedder(embedder, self.store, warm_up=warm_up)
            self.embedder = embedding.embedder
            if directory is not None and not self.read_only:
                # Cited workflows are read from local copies, not parsed from the store's graphs
                # (a request each on a remote store). Opened before the index, which writes them
                # as it catches up.
                self.copies = WorkflowCopies(directory / FILE_NAME)
            # Suggesters load a few cited workflows per turn; parsing a graph costs ~10 ms.
            self.workflows = WorkflowCache(self.store, self.copies)
            self.index = self._open_index(directory)
            if self.index.scopes():
                self.embedding.record()  # a store indexed before records existed
        except BaseException:
            if embedding is not None:
                embedding.embedder.close()
            if self.copies is not None:
                self.copies.close()
            if self.owns_store:
                self.store.close()
            raise

    # ------------------------------------------------------------------------------ opening

    def _open_index(self, directory: Path | None) -> StepIndex:
        """Open the persisted index (or build one) and bring it up to the store's markers."""
        steps = directory / "steps" if directory is not None else None
        index: StepIndex | None = None
        if steps is not None and (steps / META).exists():
            try:
                index = StepIndex.load(
                    steps, self.embedder, read_only=self.read_only, cache_scopes=self.scope_cache
                )
            except IndexStaleError as exc:
                log.warning("rebuilding the step index: %s", exc)
        if index is None:
            writable = steps is not None and not self.read_only
            index = StepIndex(
                self.embedder, path=steps if writable else None, cache_scopes=self.scope_cache
            )
            self._rebuild(index)
            return index
        markers = self.store.markers()
        if not markers or not index.markers:
            # A store written before change logs existed, or an index rebuilt without them
            # (`em-plugin reindex`): fall back to comparing the (scope, id) pairs.
            if index.fingerprint() != store_fingerprint(self.store, self.versions.hidden):
                log.warning("rebuilding the step index: it does not hold the store's workflows")
                self._rebuild(index)
            else:
                for scope, position in markers.items():
                    index.set_marker(scope, position)
            return index
        for scope in sorted(set(markers) | set(index.markers) | set(index.scopes())):
            self._reconcile(index, scope, markers.get(scope))
        return index

    def _rebuild(self, index: StepIndex) -> None:
        self.versions.forget()
        workflows = (
            w for w in self.store.iter_workflows() if w.id not in self.versions.hidden(w.scope)
        )
        self.workflows.clear()
        index.rebuild(self.workflows.copied(workflows))
        for scope, position in self.store.markers().items():
            index.set_marker(scope, position)

    def _reconcile(
        self, index: StepIndex, scope: str, position: tuple[int, str] | None
    ) -> list[str]:
        """Bring one scope of ``index`` (and its suggestion state) up to the store's marker.

        Returns:
            The ids reloaded or removed.
        """
        if position is not None and index.markers.get(scope) == position:
            return []
        marker = self.store.marker(scope)
        changed = marker.since(*index.markers.get(scope, (0, "")))
        whole = changed is None
        if changed is None:
            # The log does not reach back to the index's position: reload the whole scope.
            changed = frozenset(index.ids(scope)) | frozenset(self.store.ids(scope))
        self.versions.forget(scope)  # another process may have retired or revised some
        hidden = self.versions.hidden(scope)
        fresh = [w for w in self.store.load_many(scope, sorted(changed)) if w.id not in hidden]
        gone = sorted(changed - {w.id for w in fresh})
        log.info("scope %r: reloading %d workflows changed in the store", scope, len(changed))
        self.apply(scope, fresh, gone, index=index)  # before the marker: see workflow_copies
        index.set_marker(scope, marker.position)
        if whole and gone and index.path is not None and not self.read_only:
            # The scope may have been erased by another process: a fresh snapshot, so that no
            # file of this index keeps the texts of workflows the store no longer has.
            index.save()
        return sorted(changed)

    def sync(self, scope: str | None = None, *, force: bool = False) -> None:
        """Catch up with writes other processes made to the store (polled, cheap).

        At most every ``poll_interval`` seconds (or when ``force``), a read-only store is
        reopened on the latest commit and the scope's change marker is compared with the
        index's; only the workflows that changed are reloaded.

        Args:
            scope: The scope about to be read; ``None``: every scope with a marker.
            force: Check now, whatever the interval.
        """
        if not self._due(force):
            return
        if self.lock.reading():
            return  # under a read that began after a check: it cannot wait for the write lock
        if self._unchanged(scope, force):
            return
        with self.lock:
            now = time.monotonic()
            lost = sorted(self.index.lost)  # scope files found unreadable: reload those scopes
            if not (force or lost or self.unsettled or now - self._polled >= self.poll_interval):
                return
            self._polled = now
            # Unsettled (a write whose outcome is unknown) until a reconcile has gone through:
            # a read failing meanwhile (the server still down) leaves the next one to settle,
            # whatever the poll interval.
            self.store.refresh()
            for name in lost:
                self._reconcile(self.index, name, None)
            # Cleared once reloaded: a reload failing (the store unreachable) is tried again.
            self.index.lost.difference_update(lost)
            if scope is None or self.unsettled:  # an unsettled write may span scopes
                markers = self.store.markers()
                for name in sorted(set(markers) | set(self.index.markers)):
                    self._reconcile(self.index, name, markers.get(name))
            else:
                self._reconcile(self.index, scope, self.store.position(scope))
            self.unsettled = False

    def _unchanged(self, scope: str | None, force: bool) -> bool:
        """Whether the store's position of ``scope`` is the index's (checked under the read lock).

        The usual poll finds nothing new: reading the position beside other reads, instead of
        under the write lock, keeps a poll from stopping every read while it waits for the
        running ones and asks the store (under 64 concurrent suggestions, every half second).
        A read-only store is reopened under the write lock first, and lost scopes, unsettled
        writes and a forced check go there directly.
        """
        if scope is None or force or self.read_only or self.unsettled or self.index.lost:
            return False
        if not self._polling.acquire(blocking=False):
            return True  # another read is asking the store now: this one reads what it finds
        try:
            with self.lock.shared:
                position = self.store.position(scope)
                if self.index.markers.get(scope) != position:
                    return False
                self._polled = time.monotonic()
                return True
        finally:
            self._polling.release()

    def _due(self, force: bool) -> bool:
        """Whether :meth:`sync` has work (read without the lock; checked again under it)."""
        return (
            force
            or bool(self.index.lost)
            or self.unsettled
            or time.monotonic() - self._polled >= self.poll_interval
        )

    def scope_memory(self, scope: str) -> ScopeMemory:
        """Return a scope's suggestion models, built over its state on first use."""
        with self.lock.shared, self._read_mutex:  # built once, not by each reader at once
            arrays = self.index.scope_index(scope)
            if arrays is None:  # nothing stored yet: empty models of their own
                return self._new_state(self.embedder.dimension, self.embedder.embed)
            if isinstance(arrays.models, ScopeMemory):
                return arrays.models
            # Over the scope's arrays in one vectorised pass: no store read, no RDF parsing, no
            # episode reduction, no embedding (docs/state.md). From now on the scope tells the
            # models of every change.
            return self._new_state(self.embedder.dimension, self.embedder.embed, arrays=arrays)

    @contextmanager
    def using(self, scope: str) -> Iterator[None]:
        """Keep a scope's state loaded while the block runs (see ``StepIndex.pin``)."""
        with self.index.pin(scope):
            yield

    def apply(
        self,
        scope: str,
        fresh: Sequence[Workflow],
        gone: Sequence[str] = (),
        *,
        index: StepIndex | None = None,
    ) -> None:
        """Apply a change to the scope's state (models follow), then to the copies.

        Args:
            scope: The scope of the ``gone`` ids.
            fresh: Workflows to index, each in its own scope (a batch may span scopes).
            gone: Ids of ``scope`` to remove.
            index: The index to change (the engine's own by default).
        """
        index = self.index if index is None else index
        for workflow_id in gone:
            index.remove(workflow_id, scope)
        if fresh:
            index.add_many(fresh, batch_size=max(1, len(fresh)))
        self.workflows.remove(scope, gone)
        self.workflows.put_many(fresh)

    # ------------------------------------------------------------------------------ writes

    def write(self, batch: list[Workflow]) -> list[Workflow]:
        """Store and index a batch as one unit (a repeated (scope, id) keeps its last)."""
        return self.write_many([batch])

    def write_many(
        self,
        batches: Iterable[list[Workflow]],
        *,
        on_batch: Callable[[list[Workflow]], None] | None = None,
        pipelined: bool = False,
    ) -> list[Workflow]:
        """Store and index batches, each as one unit: :meth:`BatchWrites.run` under the lock.

        Returns:
            What each workflow is stored as, in order.
        """
        with self.lock:
            return BatchWrites(self).run(batches, on_batch=on_batch, pipelined=pipelined)

    def record_embedder(self) -> None:
        """Record the store's embedder, once (:meth:`StoreEmbedder.record`)."""
        self.embedding.record()

    def advance(self, markers: Mapping[str, ChangeMarker]) -> None:
        """Record the markers after this write; reload what other writers changed since."""
        for scope, marker in markers.items():
            held = self.index.markers.get(scope, (0, ""))
            changed = marker.since(*held)
            own = marker.entries[-1].ids if marker.entries else None
            if changed is not None and own is not None and changed <= own:
                self.index.set_marker(scope, marker.position)
            else:
                self._reconcile(self.index, scope, None)

    def delete(self, workflow_id: str, scope: str) -> bool:
        """Delete a workflow with its versions and record; return whether it existed."""
        with self.lock:
            if (scope, workflow_id) not in self.index and not (
                workflow_id in self.versions.hidden(scope) and (scope, workflow_id) in self.store
            ):
                return False
            record, triples = self.versions.record(workflow_id, scope)
            older = [(scope, version_id(workflow_id, v.version)) for v in record.versions[:-1]]
            drop: list[tuple[Any, Any]] = (
                [(workflow_record_iri(workflow_id, scope), [])] if triples else []
            )
            markers, _ = self.store.commit(deletes=[(scope, workflow_id), *older], records=drop)
            self.versions.forget(scope)
            self.apply(scope, [], [workflow_id])
            self.advance(markers)
            return True

    def forget(self, scope: str) -> list[str]:
        """Erase a scope's workflows, suggestion records, index entries, state and vectors.

        The index files are rewritten so that none keeps the scope's texts.

        Returns:
            The deleted workflow ids, sorted.
        """
        with self.lock:
            # Every instruction text of the scope, whether or not this process built its
            # suggestion state: their cached vectors go too.
            texts = {
                step.text
                for workflow in self.store.iter_workflows(scope)
                for _, step in workflow.walk()
                if isinstance(step, InstructionStep)
            }
            arrays = self.index.scope_index(scope)
            if arrays is not None:
                texts.update(arrays.contexts.values)
            removed = self.store.delete_scope(scope)
            self.versions.forget(scope)
            self.index.remove_scope(scope)
            self.workflows.clear(scope)
            self.index.set_marker(scope, self.store.marker(scope).position)
            self.discard(sorted(texts))
            if self.index.path is not None:
                self.index.save()  # a fresh snapshot: the journal held the scope's texts
            return removed

    def discard(self, texts: Iterable[str]) -> None:
        """Drop cached vectors of texts that no scope's index or suggestion state uses."""
        texts = list(texts)
        if not texts:
            return
        used = self.index.texts()  # every scope's texts and contexts, models included
        unused = [t for t in texts if t not in used]
        if unused:
            self.embedder.discard(unused)

    def load(self, workflow_id: str, scope: str) -> Workflow:
        """Return a stored workflow of a scope (through the cache of parsed workflows).

        Raises:
            WorkflowNotFound: When the scope holds no such workflow.
        """
        with self.lock.shared, self._read_mutex:
            return self.workflows.get(scope, workflow_id)

    def load_many(self, workflow_ids: Sequence[str], scope: str) -> None:
        """Load the workflows that :meth:`load` does not hold yet, in one store read."""
        with self.lock.shared, self._read_mutex:
            self.workflows.prefetch(scope, workflow_ids)

    def load_stored(self, workflow_id: str, scope: str) -> Workflow | None:
        """Return a workflow as the store holds it now, or ``None`` when it holds none."""
        try:
            return self.store.load(workflow_id, scope=scope)
        except WorkflowNotFound:
            return None

    def record_suggestions(
        self,
        session_id: str,
        suggestions: Sequence[Mapping[str, Any]],
        workflow_ids: Sequence[str],
        scope: str,
        time: datetime | None = None,
        crew: str | None = None,
    ) -> str:
        """Record a round of suggestions in the store; return the ISO time naming it."""
        stamp = (time or datetime.now(UTC)).isoformat()
        with self.lock:
            self.store.record_suggestions(
                session_id, suggestions, workflow_ids, scope=scope, time=stamp, crew=crew
            )
        return stamp

    def close(self) -> None:
        """Close the index and cache files; close the store when the engine opened it."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            # A long journal is folded into a snapshot now, so the next open replays nothing.
            self.index.close(checkpoint=None if self.read_only else _CHECKPOINT)
            self.embedder.close()
            self.workflows.close()
            if self.owns_store:
                self.store.close()
