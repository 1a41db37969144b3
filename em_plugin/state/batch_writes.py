"""Writing batches of workflows: each batch one unit of store and index, pipelined over batches.

A batch is stored in one store transaction and then indexed; when indexing fails, the store is
put back as it was. :meth:`BatchWrites.run` writes many batches with two threads at once
(``EpisodicMemory.save_many``):

.. code-block:: text

    calling thread:  stage 1 | stage 2     index 1 | stage 3     index 2 | ...
    writer thread:           | write 1             | write 2             | write 3 ...

Staging a batch is its Python work: embedding its instructions (through the cache), planning
versions, and the PROV text of its graphs (:meth:`WorkflowStore.stage`). Indexing is the step
index, the suggestion state and the local copies. Both run while the store engine writes the
batch before (Oxigraph's load releases the GIL), so a save runs at the engine's own speed
instead of the engine's speed plus the Python work (docs/stores.md has the figures).

The outcome is the one of writing the batches one after another:

* batches are written in order, each indexed after its write committed;
* a batch that shares a ``(scope, id)`` with the batch being written waits until that one is
  indexed, so it becomes a new version of it;
* when a batch cannot be staged (a workflow fails validation or embedding), the batches before
  it are written and indexed, then the error is raised;
* when a write fails, the batches before it are stored and indexed, nothing after it is written;
* when indexing batch k fails, batch k and batch k+1 (already written) are taken back out of the
  store, as when a single batch fails to index.

A process killed between a write and its indexing leaves the store ahead of the index; the
change log makes the next open reload what it missed (docs/state.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from em_plugin.state.step_index import StepIndex
from em_plugin.state.versions import SavePlan, Versions
from em_plugin.state.workflow_cache import WorkflowCache
from provenance.errors import StoreOutcomeUnknown
from provenance.model import InstructionStep, Workflow
from provenance.stores import WorkflowStore
from provenance.stores.workflow_store import ChangeMarker, StagedWrite

__all__ = ["BatchWrites", "EngineParts"]

log = logging.getLogger("em_plugin.memory")

Key = tuple[str, str]


class EngineParts(Protocol):
    """What batch writes need of the engine (:class:`~em_plugin.state.engine.MemoryEngine`)."""

    store: WorkflowStore
    index: StepIndex
    versions: Versions
    workflows: WorkflowCache
    embedder: Any
    unsettled: bool

    def apply(
        self,
        scope: str,
        fresh: Sequence[Workflow],
        gone: Sequence[str] = (),
        *,
        index: StepIndex | None = None,
    ) -> None:
        """Apply a change to the scope's state and the copies."""

    def advance(self, markers: Mapping[str, ChangeMarker]) -> None:
        """Record the change markers after a write."""

    def record_embedder(self) -> None:
        """Record the store's embedder once."""

    def load_stored(self, workflow_id: str, scope: str) -> Workflow | None:
        """Return the stored workflow, or ``None``."""


@dataclass
class _Batch:
    """One batch on its way: what it replaces, its versions plan and its staged write."""

    workflows: list[Workflow]
    old: dict[Key, Workflow | None]
    plan: SavePlan
    write: StagedWrite | None
    future: Future[dict[str, ChangeMarker]] | None = None

    @property
    def keys(self) -> set[Key]:
        return {(w.scope, w.id) for w in self.workflows}


class BatchWrites:
    """Store and index batches of workflows for an engine (see the module doc).

    Args:
        engine: The engine whose store, index and versions the batches go to; the caller
            holds its lock.
    """

    def __init__(self, engine: EngineParts) -> None:
        self.engine = engine

    def run(
        self,
        batches: Iterable[list[Workflow]],
        *,
        on_batch: Callable[[list[Workflow]], None] | None = None,
        pipelined: bool = False,
    ) -> list[Workflow]:
        """Store and index each batch as one unit; with ``pipelined``, two threads at once.

        Args:
            batches: The batches, pulled one at a time (preparing a batch may raise).
            on_batch: Called with each batch's stored workflows once it is indexed.
            pipelined: Write batch k on a writer thread while batch k+1 is staged and batch
                k-1 indexed. Without it, each batch is staged, written and indexed in turn.

        Returns:
            What each workflow is stored as, in order (a repeated (scope, id) in one batch
            keeps its last).
        """
        saved: list[Workflow] = []
        pending: _Batch | None = None  # written or being written, not indexed yet
        writer = ThreadPoolExecutor(1, "em-plugin-writer") if pipelined else None
        staging = iter(self._staged(batches, lambda: pending))
        try:
            while True:
                try:
                    staged = next(staging)
                except StopIteration:
                    break
                except BaseException:
                    if pending is not None:  # the batches before a bad one stand
                        self._finish_quietly(pending, on_batch)
                    raise
                if staged is None:  # the next batch shares an id with the one being written
                    assert pending is not None
                    done, pending = pending, None
                    saved += self._finish(done, on_batch)
                    continue
                markers = None
                if pending is not None:
                    done, pending = pending, None
                    markers = self._await(done)
                if staged.write is not None:
                    staged.future = self._submit(writer, staged)
                if markers is not None:
                    try:
                        saved += self._index(done, markers, on_batch)
                    except BaseException:
                        self._take_back(staged)
                        raise
                if staged.write is None:  # nothing new to store (unchanged workflows)
                    saved += self._done(staged.plan.result, on_batch)
                elif writer is None:
                    saved += self._finish(staged, on_batch)
                else:
                    pending = staged
            if pending is not None:
                done, pending = pending, None
                saved += self._finish(done, on_batch)
        except BaseException:
            self.engine.unsettled = True  # the next read compares the index with the store
            raise
        finally:
            if writer is not None:
                writer.shutdown(wait=True)
        return saved

    # -- stages ------------------------------------------------------------------------------

    def _staged(
        self, batches: Iterable[list[Workflow]], pending: Callable[[], _Batch | None]
    ) -> Iterable[_Batch | None]:
        """Stage each batch; yield ``None`` first when it must wait for the pending batch."""
        for batch in batches:
            distinct = list({(w.scope, w.id): w for w in batch}.values())
            if not distinct:
                continue
            waiting = pending()
            if waiting is not None and waiting.keys & {(w.scope, w.id) for w in distinct}:
                yield None
            yield self._stage(distinct)

    def _stage(self, batch: list[Workflow]) -> _Batch:
        engine = self.engine
        engine.workflows.forget_parsed((w.scope, w.id) for w in batch)
        # Embed first (through the cache) so that indexing after the store write cannot fail
        # on the model; then store; then index, restoring the store if that fails.
        texts = [s.text for w in batch for _, s in w.walk() if isinstance(s, InstructionStep)]
        if texts:
            engine.embedder.embed(list(dict.fromkeys(texts)))
        engine.versions.read_ahead(w.scope for w in batch)
        old = {
            (w.scope, w.id): engine.load_stored(w.id, w.scope)
            for w in batch
            if (w.scope, w.id) in engine.index or w.id in engine.versions.hidden(w.scope)
        }
        # An existing id gets a new version; the previous one is kept as ID@vN.
        plan = engine.versions.plan(batch, old)
        write = None
        if plan.saves:
            try:
                write = engine.store.stage(saves=plan.saves, records=plan.records)
            except BaseException:
                engine.versions.forget()
                raise
        return _Batch(batch, old, plan, write)

    def _write(self, batch: _Batch) -> dict[str, ChangeMarker]:
        """Commit a staged batch (on the writer thread when pipelined)."""
        assert batch.write is not None
        # Before the store's first workflow, not after: a process that opens the store in
        # between would find workflows and no record, and take the embedder from whatever its
        # cache last indexed at this address (a store wiped and refilled by another embedder).
        self.engine.record_embedder()
        return self.engine.store.commit_staged(batch.write)

    def _submit(
        self, writer: ThreadPoolExecutor | None, batch: _Batch
    ) -> Future[dict[str, ChangeMarker]]:
        if writer is not None:
            return writer.submit(self._write, batch)
        future: Future[dict[str, ChangeMarker]] = Future()
        try:
            future.set_result(self._write(batch))
        except Exception as exc:  # noqa: BLE001 - raised where the future is read, as a thread would
            future.set_exception(exc)
        return future

    def _await(self, batch: _Batch) -> dict[str, ChangeMarker]:
        """Wait for a batch's write; on failure forget the planned versions and raise."""
        assert batch.future is not None
        try:
            return batch.future.result()
        except BaseException:
            self.engine.versions.forget()
            raise

    def _index(
        self,
        batch: _Batch,
        markers: Mapping[str, ChangeMarker],
        on_batch: Callable[[list[Workflow]], None] | None,
    ) -> list[Workflow]:
        engine = self.engine
        live = batch.plan.live
        try:
            if live:  # one pass for every scope of the batch (one copies transaction)
                engine.apply(live[0].scope, live)
        except BaseException:
            # The index's marker still names the store before this write, so whatever state
            # the restore leaves, the next read reloads the ids changed since.
            engine.unsettled = True
            engine.versions.forget()
            self._restore(batch)
            raise
        engine.advance(markers)
        return self._done(batch.plan.result, on_batch)

    def _finish(
        self, batch: _Batch, on_batch: Callable[[list[Workflow]], None] | None
    ) -> list[Workflow]:
        return self._index(batch, self._await(batch), on_batch)

    def _finish_quietly(
        self, batch: _Batch, on_batch: Callable[[list[Workflow]], None] | None
    ) -> None:
        try:
            self._finish(batch, on_batch)
        except Exception:  # the error of the bad batch is the one raised
            log.warning("the batch before a failed one was not saved either", exc_info=True)

    @staticmethod
    def _done(
        result: list[Workflow], on_batch: Callable[[list[Workflow]], None] | None
    ) -> list[Workflow]:
        if on_batch is not None:
            on_batch(result)
        return result

    # -- taking a batch back -----------------------------------------------------------------

    def _take_back(self, batch: _Batch) -> None:
        """Undo a batch written but not indexed (the batch before it failed to index)."""
        if batch.future is None:
            return
        try:
            batch.future.result()
        except StoreOutcomeUnknown:
            return  # the engine is unsettled: its next read settles with the store
        except Exception:  # noqa: BLE001 - any failure means nothing was written
            return
        self._restore(batch)

    def _restore(self, batch: _Batch) -> None:
        """Put the store, the index and the copies back as they were before ``batch``."""
        engine = self.engine
        workflows, old = batch.workflows, batch.old
        for scope in dict.fromkeys(w.scope for w in workflows):
            engine.apply(scope, [], [w.id for w in workflows if w.scope == scope])
        previous = [w for w in old.values() if w is not None]
        absent = [(w.scope, w.id) for w in workflows if old.get((w.scope, w.id)) is None]
        markers, _ = engine.store.commit(
            saves=previous, deletes=[*absent, *batch.plan.archived], records=batch.plan.undo
        )
        previous = [w for w in previous if w.id not in engine.versions.hidden(w.scope)]
        for scope in dict.fromkeys(w.scope for w in previous):
            engine.apply(scope, [w for w in previous if w.scope == scope])
        for scope, marker in markers.items():
            engine.index.set_marker(scope, marker.position)
