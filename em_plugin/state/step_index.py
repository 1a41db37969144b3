"""The step index: per-scope leaf storage, FAISS over instruction texts, postings for tools.

It is the engine's view of the memory, kept in step with the store on every save and delete:
:meth:`StepIndex.add` / :meth:`StepIndex.remove` / :meth:`StepIndex.remove_scope`. With a
``path`` (a directory beside a disk store) every change is also appended to a journal, and
:meth:`StepIndex.save` writes a compact snapshot. :meth:`StepIndex.load` refuses an index built
with another embedder or dimension, or for another set of stored workflows, with
:class:`~em_plugin.errors.IndexStaleError`; :meth:`StepIndex.rebuild` recreates it from the
store's workflows alone.

Retrieval never crosses scopes: every structure is per scope.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.embedding.embedders import Embedder
from em_plugin.errors import ConfigurationError, IndexStaleError
from em_plugin.retrieval.reference import LeafSequence, Match, MatchConfig
from em_plugin.state import persistence as index_files
from em_plugin.state.episodes import Episode, episode_of
from em_plugin.state.matching import METHODS, Method, check_method, match_scope, query_leaves
from em_plugin.state.persistence import REINDEX_HINT, fingerprint
from em_plugin.state.scope_index import ScopeIndex, leaf_texts
from provenance.model import DEFAULT_SCOPE, Workflow

log = logging.getLogger("em_plugin.memory")

__all__ = ["METHODS", "StepIndex", "fingerprint"]


class StepIndex:
    """Leaf sequences of the stored workflows, indexed for exact fast retrieval.

    Args:
        embedder: Embeds instruction texts; wrapped in an in-memory
            :class:`~em_plugin.embedding.cache.CachedEmbedder` unless it is one already.
        path: Directory to journal changes to and save snapshots in; ``None`` for memory only.
    """

    def __init__(self, embedder: Embedder, *, path: str | Path | None = None) -> None:
        self.embedder = (
            embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
        )
        self.path = Path(path) if path is not None else None
        self._scopes: dict[str, ScopeIndex] = {}
        self.markers: dict[str, tuple[int, str]] = {}
        self._lock = threading.RLock()
        self._journal: index_files.Journal | None = None
        if self.path is not None:
            if not (self.path / index_files.META).exists():
                index_files.write_snapshot(self.path, self.embedder.name, self.dimension, {})
            self._journal = index_files.Journal(self.path)

    @property
    def dimension(self) -> int:
        """The embedding dimension."""
        return self.embedder.dimension

    # ----------------------------------------------------------------------------- contents

    def __contains__(self, key: object) -> bool:
        """``(scope, id)`` asks one scope; a bare id asks whether any scope holds it."""
        if isinstance(key, tuple) and len(key) == 2:
            found = self._scopes.get(key[0])
            return found is not None and key[1] in found.id_slots
        return any(key in s.id_slots for s in self._scopes.values())

    def __len__(self) -> int:
        return sum(len(s) for s in self._scopes.values())

    def scopes(self) -> list[str]:
        """Return the scopes holding at least one workflow, sorted."""
        with self._lock:
            return sorted(name for name, scope in self._scopes.items() if len(scope))

    def ids(self, scope: str = DEFAULT_SCOPE) -> list[str]:
        """Return the ids of a scope's workflows, sorted."""
        with self._lock:
            found = self._scopes.get(scope)
            return sorted(found.id_slots) if found is not None else []

    def scopes_of(self, workflow_id: str) -> list[str]:
        """Return the scopes holding a workflow with this id, sorted (ids are per scope)."""
        with self._lock:
            return sorted(n for n, s in self._scopes.items() if workflow_id in s.id_slots)

    def scope_of(self, workflow_id: str) -> str | None:
        """Return the one scope holding this id, or ``None`` when none does.

        Raises:
            ConfigurationError: When several scopes hold the id (name one of them).
        """
        found = self.scopes_of(workflow_id)
        if len(found) > 1:
            raise ConfigurationError(
                f"workflow id {workflow_id!r} is in several scopes ({', '.join(found)}); "
                "name the scope"
            )
        return found[0] if found else None

    def leaves(self, workflow_id: str, scope: str | None = None) -> LeafSequence:
        """Return a stored workflow's leaf sequence with its vectors.

        Args:
            workflow_id: The id.
            scope: Its scope; ``None``: the one scope holding the id.

        Raises:
            KeyError: When the workflow is not indexed.
        """
        with self._lock:
            name = scope if scope is not None else self.scope_of(workflow_id)
            found = self._scopes[name]  # type: ignore[index]
            return found.leaves(found.id_slots[workflow_id])

    def fingerprint(self) -> str:
        """Return the digest of the indexed ``(scope, id)`` pairs (see :func:`fingerprint`)."""
        with self._lock:
            return fingerprint((n, wid) for n, s in self._scopes.items() for wid in s.id_slots)

    def set_marker(self, scope: str, position: tuple[int, str]) -> None:
        """Record the store change marker ``(sequence, token)`` this scope's entries reflect."""
        with self._lock:
            if self.markers.get(scope) != position:
                self.markers[scope] = position
                self._log([{"op": "marker", "scope": scope, "position": list(position)}])

    def scope_index(self, scope: str) -> ScopeIndex | None:
        """Return a scope's state, or ``None`` when the index has none.

        Read it under the index's lock: it changes with every save and delete, and compaction
        replaces it (its suggestion models are then built again on first use).
        """
        return self._scopes.get(scope)

    def episodes(self, scope: str) -> list[Episode]:
        """Return a scope's episodes in save order (what its suggestion state is built from)."""
        with self._lock:
            found = self._scopes.get(scope)
            return found.episodes() if found is not None else []

    def texts(self) -> set[str]:
        """Return every instruction text any scope's entries use.

        Leaf texts and the contexts the suggestion state takes its vectors from (those of
        removed workflows until the scope is compacted), so their cached vectors are kept.
        """
        with self._lock:
            return {t for s in self._scopes.values() for t in (*s.live_texts(), *s.contexts.values)}

    def stats(self) -> dict[str, Any]:
        """Return counts per scope: workflows, leaves, distinct texts and tools."""
        with self._lock:
            return {name: scope.stats() for name, scope in sorted(self._scopes.items())}

    # ----------------------------------------------------------------------------- changes

    def add(self, workflow: Workflow) -> None:
        """Index a workflow in its scope, replacing any indexed workflow with the same id."""
        self.add_many([workflow])

    def add_many(
        self,
        workflows: Iterable[Workflow],
        *,
        batch_size: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Index workflows in batches (one embedding call per batch for the new texts).

        Args:
            workflows: The workflows; a later one replaces an earlier one with the same id.
            batch_size: Workflows per batch.
            progress: Called with the running count after each batch.

        Returns:
            How many workflows were indexed.
        """
        done = 0
        iterator = iter(workflows)
        while batch := list(islice(iterator, batch_size)):
            # One reduction of a workflow: its episode gives the leaves the matcher needs and
            # the contexts and args the suggestion models need.
            entries = [(w.scope, episode_of(w)) for w in batch]
            with self._lock:
                self._apply_adds(entries)
                self._log([index_files.add_entry(*e) for e in entries])
            done += len(batch)
            if progress is not None:
                progress(done)
        return done

    def remove(self, workflow_id: str, scope: str | None = None) -> bool:
        """Remove a workflow; return whether it was indexed.

        Args:
            workflow_id: The id.
            scope: Its scope; ``None``: the one scope holding the id.
        """
        with self._lock:
            name = scope if scope is not None else self.scope_of(workflow_id)
            removed = name is not None and self._remove(name, workflow_id)
            if removed:
                self._log([{"op": "remove", "scope": name, "id": workflow_id}])
            return removed

    def remove_scope(self, scope: str) -> list[str]:
        """Remove a scope's workflows and vectors.

        The embedding cache is not touched here: its one owner, the engine, drops the vectors
        no scope uses any more (:meth:`~em_plugin.state.engine.MemoryEngine.discard`).

        Returns:
            The removed workflow ids, sorted.
        """
        with self._lock:
            found = self._scopes.pop(scope, None)
            self.markers.pop(scope, None)
            if found is None:
                return []
            self._log([{"op": "remove_scope", "scope": scope}])
            return sorted(found.id_slots)

    def rebuild(self, workflows: Iterable[Workflow], **kwargs: Any) -> int:
        """Replace the whole index by these workflows (``em-plugin reindex``); save if on disk.

        Args:
            workflows: Every stored workflow.
            **kwargs: Passed to :meth:`add_many` (``batch_size``, ``progress``).

        Returns:
            How many workflows were indexed.
        """
        with self._lock:
            self._scopes.clear()
            self.markers.clear()
            journal, self._journal = self._journal, None
            try:
                count = self.add_many(workflows, **kwargs)
            finally:
                self._journal = journal
            if self.path is not None:
                self.save()
            return count

    # ----------------------------------------------------------------------------- retrieval

    def query_leaves(self, workflow: Workflow) -> LeafSequence:
        """Return the current workflow's leaf sequence, embedding its instructions (cached)."""
        return query_leaves(self.embedder, workflow)

    def match(
        self,
        current: Workflow | LeafSequence,
        *,
        scope: str | None = None,
        config: MatchConfig | None = None,
        method: Method = "fast",
    ) -> list[Match]:
        """Retrieve the scope's workflows matching the current one (docs/retrieval.md).

        Args:
            current: The current workflow, or its leaf sequence from :meth:`query_leaves`.
            scope: The scope to search; defaults to the workflow's own scope.
            config: Threshold, limit, exclusions and window.
            method: ``"fast"`` (index pruning + vectorised DP) or ``"reference"`` (brute force);
                both return the same matches.

        Returns:
            At most ``config.max_workflows`` matches, best first, ties by id.

        Raises:
            ConfigurationError: When ``method`` is not one of :data:`METHODS`.
        """
        check_method(method)
        if isinstance(current, Workflow):
            scope = current.scope if scope is None else scope
            current = self.query_leaves(current)
        with self._lock:
            found = self._scopes.get(DEFAULT_SCOPE if scope is None else scope)
            return match_scope(current, found, config or MatchConfig(), method)

    # ----------------------------------------------------------------------------- persistence

    def save(self, path: str | Path | None = None) -> None:
        """Write a compact snapshot (to ``path``, or to the index's own directory).

        Raises:
            ConfigurationError: When no path is given and the index has none.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ConfigurationError("save() needs a path: this index was created without one")
        with self._lock:
            self._scopes = {
                n: s.compacted() if s.dead or (s.text_refs.view() == 0).any() else s
                for n, s in self._scopes.items()
                if len(s)
            }
            own = self.path is not None and target.resolve() == self.path.resolve()
            if own and self._journal is not None:
                self._journal.close()
            index_files.write_snapshot(
                target, self.embedder.name, self.dimension, self._scopes, self.markers
            )
            if own:
                self._journal = index_files.Journal(target)

    @classmethod
    def open(
        cls, path: str | Path, embedder: Embedder, *, expected_fingerprint: str | None = None
    ) -> StepIndex:
        """Load the index at ``path``, or create an empty one there if there is none.

        Args:
            path: The index directory (beside the store).
            embedder: The embedder in use.
            expected_fingerprint: The store's :func:`fingerprint`; checked when given, so an
                empty new index beside a non-empty store is reported as stale too.

        Raises:
            IndexStaleError: As :meth:`load`.
        """
        if (Path(path) / index_files.META).exists():
            return cls.load(path, embedder, expected_fingerprint=expected_fingerprint)
        index = cls(embedder, path=path)
        index._check(expected_fingerprint)
        return index

    @classmethod
    def load(
        cls,
        path: str | Path,
        embedder: Embedder,
        *,
        expected_fingerprint: str | None = None,
        read_only: bool = False,
    ) -> StepIndex:
        """Open a saved index and replay its journal.

        Args:
            path: The index directory.
            embedder: The embedder in use; it must be the one the index was built with.
            expected_fingerprint: The store's :func:`fingerprint`; checked when given.
            read_only: Never write to ``path`` (a reader beside a writer): changes stay in
                memory.

        Returns:
            The index, journaling further changes to ``path`` unless read-only.

        Raises:
            IndexStaleError: When the index is missing or unreadable, was built with another
                embedder or dimension, or does not hold the store's workflows.
        """
        path = Path(path)
        if not (path / index_files.META).exists():
            raise IndexStaleError(f"no step index at {path}; {REINDEX_HINT}")
        snapshot = index_files.read_snapshot(path)
        cached = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
        if snapshot.embedder != cached.name or snapshot.dimension != cached.dimension:
            raise IndexStaleError(
                f"step index {path} was built with embedder {snapshot.embedder!r} "
                f"(dimension {snapshot.dimension}), but the embedder is {cached.name!r} "
                f"(dimension {cached.dimension}); {REINDEX_HINT}"
            )
        index = cls(cached)
        index._scopes = snapshot.scopes
        migrated = index_files.add_context_vectors(index._scopes.values(), cached.embed)
        index.markers = dict(snapshot.markers)
        index._replay(index_files.read_journal(path))
        index.path = path
        if not read_only:
            index._journal = index_files.Journal(path)
            if migrated:
                log.warning("step index %s: format upgraded (context vectors added)", path)
                index.save()
        index._check(expected_fingerprint)
        return index

    def close(self, *, checkpoint: int | None = None) -> None:
        """Close the journal (the index stays usable in memory).

        Args:
            checkpoint: Write a snapshot first when the journal holds at least this many
                lines, so that the next open replays nothing (a 30k-line journal took ~2 s to
                replay at 100k workflows; a snapshot ~0.8 s to write). A failed snapshot is
                logged: the journal still holds every change.
        """
        with self._lock:
            if (
                checkpoint is not None
                and self._journal is not None
                and self.path is not None
                and self._journal.lines >= checkpoint
            ):
                try:
                    self.save()
                except OSError as exc:
                    log.warning("step index %s: snapshot at close failed: %s", self.path, exc)
            if self._journal is not None:
                self._journal.close()
                self._journal = None

    # ----------------------------------------------------------------------------- internals

    def _check(self, expected: str | None) -> None:
        actual = self.fingerprint()
        if expected is None or actual == expected:
            return
        self.close()
        raise IndexStaleError(
            f"step index {self.path} holds {actual.split(':')[0]} workflows (fingerprint "
            f"{actual}), the store {expected.split(':')[0]} (fingerprint {expected}); "
            f"{REINDEX_HINT}"
        )

    def _apply_adds(self, entries: list[tuple[str, Episode]]) -> None:
        by_scope: dict[str, list[Episode]] = {}
        for scope_name, episode in entries:
            by_scope.setdefault(scope_name, []).append(episode)
        # One embedding call (through the cache) for every new matcher text and context of the
        # batch (most contexts are leaf texts too); each scope then finds them cached.
        fresh: dict[str, None] = {}
        for scope_name, episodes in by_scope.items():
            scope = self._scope(scope_name)
            fresh.update(
                dict.fromkeys(scope.new_texts([t for e in episodes for t in leaf_texts(e)]))
            )
            fresh.update(
                dict.fromkeys(scope.new_contexts([c for e in episodes for c in e.contexts]))
            )
        if fresh:
            self.embedder.embed(list(fresh))
        for scope_name, episodes in by_scope.items():
            self._scopes[scope_name].add_episodes(episodes, self.embedder.embed)
            self._compact_if_sparse(scope_name)

    def _scope(self, name: str) -> ScopeIndex:
        scope = self._scopes.get(name)
        if scope is None:
            scope = self._scopes[name] = ScopeIndex(self.dimension)
        return scope

    def _remove(self, name: str, workflow_id: str, *, compact: bool = True) -> bool:
        found = self._scopes.get(name)
        if found is None or not found.remove(workflow_id):
            return False
        if compact:
            self._compact_if_sparse(name)
        return True

    def _compact_if_sparse(self, name: str) -> None:
        # Dead slots cost scan time and memory; compacting when they outnumber the live ones
        # keeps that cost amortised O(1) per removal.
        scope = self._scopes[name]
        if scope.dead > max(1024, len(scope)):
            self._scopes[name] = scope.compacted()

    def _log(self, entries: list[dict[str, Any]]) -> None:
        if self._journal is None:
            return
        self._journal.write(entries)
        # Bounds what an open replays (a reader beside this writer, or after a crash): ~1 s for
        # 12.5k lines at 100k workflows, against ~0.8 s to write the snapshot.
        if self._journal.lines > max(10_000, len(self) // 8):
            self.save()

    def _replay(self, entries: Iterable[dict[str, Any]]) -> None:
        pending: list[tuple[str, Episode]] = []
        for entry in entries:
            op = entry.get("op")
            if op == "add":
                pending.append((entry["scope"], index_files.entry_episode(entry)))
                continue
            if pending:
                self._apply_adds(pending)
                pending = []
            if op == "remove":
                scope = entry.get("scope")
                for name in [scope] if scope is not None else self.scopes_of(entry["id"]):
                    self._remove(name, entry["id"])
            elif op == "remove_scope":
                self._scopes.pop(entry["scope"], None)
                self.markers.pop(entry["scope"], None)
            elif op == "marker":
                self.markers[entry["scope"]] = (int(entry["position"][0]), entry["position"][1])
        if pending:
            self._apply_adds(pending)
