"""The engine behind :class:`~em_plugin.memory.EpisodicMemory` and its scope views.

One :class:`MemoryEngine` owns the workflow store, the cached embedder, the step index and, per
scope, the suggestion state (:class:`~em_plugin.state.scope_memory.ScopeMemory`), under one lock. It
keeps them in step: a batch of workflows is stored and indexed as one unit (when indexing fails
the store is put back as it was), and deleting a workflow or a scope removes its graphs, index
entries, suggestion state and the cached vectors no other scope uses.
"""

from __future__ import annotations

import threading
from typing import Any

from em_plugin.embedding.embedders import resolve_embedder
from em_plugin.state import derived as support
from em_plugin.state.continuation import ContinuationConfig
from em_plugin.state.scope_memory import ScopeMemory
from provenance.errors import WorkflowNotFound
from provenance.model import InstructionStep, Workflow
from provenance.stores import WorkflowStore, open_store

__all__ = ["MemoryEngine"]


class MemoryEngine:
    """Store, embedder, step index and per-scope suggestion state, kept consistent.

    Args:
        store: A store spec or an open store (an open store is not closed by :meth:`close`).
        embedder: Anything :func:`~em_plugin.embedding.resolve_embedder` accepts.
        continuation: Parameters of the continuation model.
        c: H-EPM efficiency weight.
        edge_similarity: Context cosine from which a graph edge ranks by similarity.
        use_text: ``False`` treats every instruction as the same text.
    """

    def __init__(
        self,
        store: Any,
        embedder: Any,
        *,
        continuation: ContinuationConfig | None,
        c: float,
        edge_similarity: float,
        use_text: bool,
    ) -> None:
        self.owns_store = not isinstance(store, WorkflowStore)
        self.store: WorkflowStore = open_store(store) if self.owns_store else store
        try:
            directory = support.derived_dir(self.store)
            self.embedder = support.open_cache(resolve_embedder(embedder), directory)
            self.index = support.open_step_index(self.store, self.embedder, directory)
        except BaseException:
            if self.owns_store:
                self.store.close()
            raise
        self._scope_settings = dict(
            config=continuation, c=c, similarity_threshold=edge_similarity, use_text=use_text
        )
        self.scopes: dict[str, ScopeMemory] = {}
        self.lock = threading.RLock()
        self.closed = False

    def scope_memory(self, scope: str) -> ScopeMemory:
        """Return a scope's suggestion state, building it from the store on first use."""
        with self.lock:
            found = self.scopes.get(scope)
            if found is None:
                found = self.scopes[scope] = ScopeMemory(
                    self.embedder.dimension, self.embedder.embed, **self._scope_settings
                )
                if scope in self.index.scopes():
                    found.add_many(self.store.iter_workflows(scope))
            return found

    # ------------------------------------------------------------------------------ writes

    def write(self, batch: list[Workflow]) -> list[Workflow]:
        """Store and index a batch as one unit (a repeated id keeps its last workflow)."""
        batch = list({w.id: w for w in batch}.values())
        with self.lock:
            states = {w.scope: self.scope_memory(w.scope) for w in batch}
            # Embed first (through the cache) so that indexing after the store write cannot
            # fail on the model; then store; then index, restoring the store if that fails.
            texts = [s.text for w in batch for _, s in w.walk() if isinstance(s, InstructionStep)]
            if texts:
                self.embedder.embed(list(dict.fromkeys(texts)))
            old = {w.id: self._load(w.id) for w in batch if w.id in self.index}
            self.store.save_many(batch)
            try:
                self._index(batch, old, states)
            except BaseException:
                self._restore(batch, old)
                raise
        return batch

    def _index(
        self,
        batch: list[Workflow],
        old: dict[str, Workflow | None],
        states: dict[str, ScopeMemory],
    ) -> None:
        for workflow in batch:
            previous = old.get(workflow.id)
            if previous is not None and previous.scope != workflow.scope:
                self.discard(self.scope_memory(previous.scope).remove(workflow.id))
        self.index.add_many(batch, batch_size=max(1, len(batch)))
        for scope, state in states.items():
            self.discard(state.add_many(w for w in batch if w.scope == scope))

    def _restore(self, batch: list[Workflow], old: dict[str, Workflow | None]) -> None:
        for workflow in batch:
            self.index.remove(workflow.id)
            state = self.scopes.get(workflow.scope)
            if state is not None:
                state.remove(workflow.id)
            previous = old.get(workflow.id)
            if previous is None:
                self.store.delete(workflow.id)
            else:
                self.store.save(previous)
                self.index.add(previous)
                self.scope_memory(previous.scope).add_many([previous])

    def delete(self, workflow_id: str, scope: str) -> bool:
        """Delete a workflow of ``scope``; return whether it existed there."""
        with self.lock:
            if self.index.scope_of(workflow_id) != scope:
                return False
            removed = self.store.delete(workflow_id)
            self.index.remove(workflow_id)
            self.discard(self.scope_memory(scope).remove(workflow_id))
            return removed

    def forget(self, scope: str) -> list[str]:
        """Delete a scope's workflows, vectors, suggestion state and records; return the ids."""
        with self.lock:
            removed = self.store.delete_scope(scope)
            self.index.remove_scope(scope)
            state = self.scopes.pop(scope, None)
            if state is not None:
                self.discard(state.contexts.texts())
            support.drop_suggestion_records(self.store, scope)
            return removed

    def discard(self, texts: list[str]) -> None:
        """Drop cached vectors of texts that no scope's suggestion state uses any more."""
        unused = [t for t in texts if not any(t in s.contexts for s in self.scopes.values())]
        if unused:
            self.embedder.discard(unused)

    def _load(self, workflow_id: str) -> Workflow | None:
        try:
            return self.store.load(workflow_id)
        except WorkflowNotFound:
            return None

    def close(self) -> None:
        """Persist the index and cache; close the store when the engine opened it."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.index.close()
            self.embedder.close()
            if self.owns_store:
                self.store.close()
