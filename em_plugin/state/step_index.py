"""The step index: per-scope leaf storage, FAISS over instruction texts, postings for tools.

It is the engine's view of the memory, kept in step with the store on every save and delete:
:meth:`StepIndex.add` / :meth:`StepIndex.remove` / :meth:`StepIndex.remove_scope`. With a
``path`` (a directory beside a disk store) every change is also appended to a journal, and
:meth:`StepIndex.save` writes a compact snapshot. :meth:`StepIndex.load` refuses an index built
with another embedder or dimension, or for another set of stored workflows, with
:class:`~em_plugin.errors.IndexStaleError`; :meth:`StepIndex.rebuild` recreates it from the
store's workflows alone.

Retrieval never crosses scopes: every structure is per scope.

A writable index on disk keeps at most ``cache_scopes`` scopes loaded (least recently used out,
never one in use or changed since the last snapshot); an unloaded scope is read back from its
snapshot files on its next use, never embedded again (docs/state.md, "Many scopes").
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
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
from em_plugin.state.persistence import REINDEX_HINT, ScopeFile, fingerprint
from em_plugin.state.rwlock import ReadWriteLock
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
        cache_scopes: Scopes kept loaded at most (``None``: every scope). Only an index that
            writes its own snapshots unloads scopes: the others have nowhere to reload from.

    Raises:
        ConfigurationError: When ``cache_scopes`` is below 1.
    """

    def __init__(
        self, embedder: Embedder, *, path: str | Path | None = None, cache_scopes: int | None = None
    ) -> None:
        if cache_scopes is not None and cache_scopes < 1:
            raise ConfigurationError(f"cache_scopes must be at least 1 or None, got {cache_scopes}")
        self.embedder = (
            embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
        )
        self.path = Path(path) if path is not None else None
        self.cache_scopes = cache_scopes
        # Loaded scopes, least recently used first; a scope not loaded is in `_files`.
        self._scopes: OrderedDict[str, ScopeIndex] = OrderedDict()
        # Where the last snapshot holds each scope; a loaded scope not in `_dirty` equals it.
        self._files: dict[str, ScopeFile] = {}
        self._dirty: set[str] = set()
        # The directory's layout after the last snapshot this index wrote or read (None: read
        # it from the directory), and the files that snapshot has and the next one drops.
        self._layout: index_files.Layout | None = None
        self._garbage: list[Path] = []
        self._pins: Counter[str] = Counter()
        self._pin_lock = threading.Lock()
        #: Scopes unloaded (evicted) and loaded back from their snapshot files so far.
        self.evictions = 0
        self.reloads = 0
        #: Scopes whose files could not be read: empty here until reloaded from the store.
        self.lost: set[str] = set()
        self.markers: dict[str, tuple[int, str]] = {}
        # Shared by matches, exclusive for everything else (see match()).
        self._lock = ReadWriteLock()
        self._journal: index_files.Journal | None = None
        # Journal lines below which _log need not count the workflows (an O(scopes) sum).
        self._unchecked_lines = 0
        if self.path is not None:
            if not (self.path / index_files.META).exists():
                _, self._layout = index_files.write_snapshot(
                    self.path, self.embedder.name, self.dimension, {}
                )
            self._journal = index_files.Journal(self.path)

    @property
    def dimension(self) -> int:
        """The embedding dimension."""
        return self.embedder.dimension

    # ----------------------------------------------------------------------------- contents

    def __contains__(self, key: object) -> bool:
        """``(scope, id)`` asks one scope; a bare id asks whether any scope holds it."""
        with self._lock:
            if isinstance(key, tuple) and len(key) == 2:
                return isinstance(key[0], str) and key[1] in self._ids_of(key[0])
            return any(key in self._ids_of(name) for name in self._names())

    def __len__(self) -> int:
        with self._lock:
            return sum(self._count(name) for name in self._names())

    def scopes(self) -> list[str]:
        """Return the scopes holding at least one workflow, sorted."""
        with self._lock:
            return sorted(name for name in self._names() if self._count(name))

    def ids(self, scope: str = DEFAULT_SCOPE) -> list[str]:
        """Return the ids of a scope's workflows, sorted."""
        with self._lock:
            return sorted(self._ids_of(scope))

    def scopes_of(self, workflow_id: str) -> list[str]:
        """Return the scopes holding a workflow with this id, sorted (ids are per scope)."""
        with self._lock:
            return sorted(n for n in self._names() if workflow_id in self._ids_of(n))

    def loaded(self) -> int:
        """Return how many scopes are loaded now (at most ``cache_scopes`` once trimmed)."""
        return len(self._scopes)

    @contextmanager
    def pin(self, scope: str) -> Iterator[None]:
        """Keep a scope loaded while the block runs (a suggestion reading its state)."""
        # Its own lock, never held long: an event loop pins a scope while a save holds the
        # index's lock.
        with self._pin_lock:
            self._pins[scope] += 1
        try:
            yield
        finally:
            with self._pin_lock:
                self._pins[scope] -= 1
                if self._pins[scope] <= 0:
                    del self._pins[scope]

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
            found = self._get(name) if name is not None else None
            if found is None:
                raise KeyError(workflow_id)
            leaves = found.leaves(found.id_slots[workflow_id])
            self._trim()
            return leaves

    def fingerprint(self) -> str:
        """Return the digest of the indexed ``(scope, id)`` pairs (see :func:`fingerprint`)."""
        with self._lock:
            return fingerprint((n, wid) for n in self._names() for wid in self._ids_of(n))

    def set_marker(self, scope: str, position: tuple[int, str]) -> None:
        """Record the store change marker ``(sequence, token)`` this scope's entries reflect."""
        with self._lock:
            if self.markers.get(scope) != position:
                self.markers[scope] = position
                self._log([{"op": "marker", "scope": scope, "position": list(position)}])

    def scope_index(self, scope: str) -> ScopeIndex | None:
        """Return a scope's state, or ``None`` when the index has none.

        Read it under the index's lock: it changes with every save and delete, and compaction
        replaces it (its suggestion models are then built again on first use). An unloaded
        scope is read from its snapshot files; hold :meth:`pin` while using it outside the
        lock, so that it is not unloaded meanwhile.
        """
        with self._lock:
            found = self._get(scope)
            self._trim()
            return found

    def episodes(self, scope: str) -> list[Episode]:
        """Return a scope's episodes in save order (what its suggestion state is built from)."""
        with self._lock:
            found = self._get(scope)
            episodes = found.episodes() if found is not None else []
            self._trim()
            return episodes

    def texts(self) -> set[str]:
        """Return every instruction text any scope's entries use.

        Leaf texts and the contexts the suggestion state takes its vectors from (those of
        removed workflows until the scope is compacted), so their cached vectors are kept.
        Unloaded scopes are read from their files without being loaded.
        """
        with self._lock:
            found: set[str] = set()
            for name in self._names():
                scope = self._peek(name)
                found.update(scope.live_texts(), scope.contexts.values)
            return found

    def stats(self) -> dict[str, Any]:
        """Return counts per scope: workflows, leaves, distinct texts and tools."""
        with self._lock:
            return {name: self._peek(name).stats() for name in sorted(self._names())}

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
                self._trim()
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
            self._trim()
            return removed

    def remove_scope(self, scope: str) -> list[str]:
        """Remove a scope's workflows and vectors.

        The embedding cache is not touched here: its one owner, the engine, drops the vectors
        no scope uses any more (:meth:`~em_plugin.state.engine.MemoryEngine.discard`).

        Returns:
            The removed workflow ids, sorted.
        """
        with self._lock:
            ids = self._ids_of(scope)
            known = scope in self._scopes or scope in self._files
            self._drop(scope)
            self.markers.pop(scope, None)
            if not known:
                return []
            self._log([{"op": "remove_scope", "scope": scope}])
            return sorted(ids)

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
            self._garbage += [file.base for file in self._files.values()]
            self._files.clear()
            self._dirty.clear()
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
        name = DEFAULT_SCOPE if scope is None else scope
        with self._lock:  # loading a scope and the LRU order change the index
            found = self._get(name)
        # Matched under the shared lock: matches of one scope run together (numpy and FAISS
        # release the GIL) and a change waits for them.
        with self.pin(name), self._lock.shared:
            matches = match_scope(current, found, config or MatchConfig(), method)
        with self._lock:
            self._trim()
        return matches

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
            # Only scopes changed since the last snapshot are compacted and written; the others
            # keep their files (linked into another directory).
            for name in [n for n in self._dirty if n in self._scopes]:
                scope = self._scopes[name]
                if not len(scope):
                    self._drop(name)
                elif scope.dead or (scope.text_refs.view() == 0).any():
                    self._scopes[name] = scope.compacted()  # keeps its place in the LRU order
            changed = {
                n: s for n, s in self._scopes.items() if n in self._dirty or n not in self._files
            }
            own = self.path is not None and target.resolve() == self.path.resolve()
            if own and self._journal is not None:
                self._journal.close()
            garbage = [self._files[n].base for n in changed if n in self._files]
            try:
                files, layout = index_files.write_snapshot(
                    target,
                    self.embedder.name,
                    self.dimension,
                    changed,
                    self.markers,
                    stored={n: f for n, f in self._files.items() if n not in changed},
                    layout=self._layout if own else None,
                    garbage=[*self._garbage, *garbage] if own else (),
                )
            finally:
                if own and self._journal is not None:
                    self._journal = index_files.Journal(target)
            if own:
                self._files = files
                self._layout = layout
                self._garbage.clear()
                self._dirty.clear()

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
        cache_scopes: int | None = None,
    ) -> StepIndex:
        """Open a saved index and replay its journal.

        Scopes are read from their files on first use (every scope at once for a read-only
        index, or a snapshot written before its files had counts).

        Args:
            path: The index directory.
            embedder: The embedder in use; it must be the one the index was built with.
            expected_fingerprint: The store's :func:`fingerprint`; checked when given.
            read_only: Never write to ``path`` (a reader beside a writer): changes stay in
                memory.
            cache_scopes: Scopes kept loaded at most (``None``: every scope); ignored when
                read-only.

        Returns:
            The index, journaling further changes to ``path`` unless read-only.

        Raises:
            IndexStaleError: When the index is missing or unreadable, was built with another
                embedder or dimension, or does not hold the store's workflows.
        """
        path = Path(path)
        if not (path / index_files.META).exists():
            raise IndexStaleError(f"no step index at {path}; {REINDEX_HINT}")
        meta = index_files.read_meta(path)
        # A reader beside a writer loads every scope now: the writer's next snapshots delete
        # the files of the scopes they rewrite, which it would load later. The constructor
        # keeps an embedder that is cached already (the engine's) and wraps only a bare one.
        index = cls(embedder, cache_scopes=None if read_only else cache_scopes)
        cached = index.embedder
        if meta.embedder != cached.name or meta.dimension != cached.dimension:
            raise IndexStaleError(
                f"step index {path} was built with embedder {meta.embedder!r} "
                f"(dimension {meta.dimension}), but the embedder is {cached.name!r} "
                f"(dimension {cached.dimension}); {REINDEX_HINT}"
            )
        index._files = meta.files
        index._layout = meta.layout
        index.markers = dict(meta.markers)
        eager = read_only or meta.format < index_files.FORMAT
        if eager or any(f.workflows is None for f in meta.files.values()):
            for name in sorted(meta.files):  # older snapshots: no counts to load lazily with
                index._get(name)
        migrated = index_files.add_context_vectors(index._scopes.values(), cached.embed)
        index._dirty.update(index._scopes if migrated else ())
        index._replay(index_files.read_journal(path, meta.layout))
        index.path = path
        if not read_only:
            index._journal = index_files.Journal(path)
            if migrated:
                log.warning("step index %s: format upgraded (context vectors added)", path)
                index.save()
            index._trim()
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
        if expected is None:
            return
        actual = self.fingerprint()
        if actual == expected:
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
        """Return a scope's state to change (loaded or made, and marked changed)."""
        scope = self._get(name)
        if scope is None:
            scope = self._scopes[name] = ScopeIndex(self.dimension)
        self._dirty.add(name)
        return scope

    def _names(self) -> set[str]:
        return {*self._scopes, *self._files}

    def _get(self, name: str) -> ScopeIndex | None:
        """Return a scope's state, loading it from its snapshot files when it is not loaded.

        Never unloads anything (callers may hold other scopes): :meth:`_trim` does, between
        operations.
        """
        found = self._scopes.get(name)
        if found is not None:
            self._scopes.move_to_end(name)
            return found
        file = self._files.get(name)
        if file is None:
            return None
        try:
            found = index_files.read_scope(name, file, self.dimension)
        except IndexStaleError as exc:
            # The scope is dropped with its store position, so the engine's next check with the
            # store reloads it (MemoryEngine.sync): a damaged file costs this read its results.
            log.warning("%s; the scope is reloaded from the store", exc)
            self._drop(name)
            self.markers.pop(name, None)
            self.lost.add(name)
            return None
        self._scopes[name] = found
        if file.unloaded:
            self.reloads += 1
        return found

    def _peek(self, name: str) -> ScopeIndex:
        """Return a scope's state, read from its files (not loaded) when it is not loaded."""
        found = self._scopes.get(name)
        if found is None:
            found = index_files.read_scope(name, self._files[name], self.dimension)
        return found

    def _ids_of(self, name: str) -> Collection[str]:
        found = self._scopes.get(name)
        if found is not None:
            return found.id_slots
        file = self._files.get(name)
        return file.known_ids() if file is not None else ()

    def _count(self, name: str) -> int:
        found = self._scopes.get(name)
        if found is not None:
            return len(found)
        file = self._files[name]
        return file.workflows if file.workflows is not None else len(file.known_ids())

    def _drop(self, name: str) -> None:
        self._scopes.pop(name, None)
        file = self._files.pop(name, None)
        if file is not None:
            self._garbage.append(file.base)
        self._dirty.discard(name)

    def _trim(self) -> None:
        """Unload the least recently used scopes beyond ``cache_scopes``.

        A scope in use (:meth:`pin`) stays; so does one changed since the last snapshot, since
        its files do not hold it yet: when those fill half the cache, a snapshot is written
        (only the changed scopes are; the others keep their files).
        """
        limit = self.cache_scopes
        if limit is None or len(self._scopes) <= limit or self._journal is None:
            return
        if len(self._dirty) > limit // 2:
            self.save()
        excess = len(self._scopes) - limit
        victims = []
        for name in self._scopes:  # least recently used first
            if name not in self._dirty and not self._pins.get(name) and name in self._files:
                victims.append(name)
                if len(victims) == excess:
                    break
        for name in victims:
            scope = self._scopes.pop(name)
            file = self._files[name]
            file.workflows, file.ids, file.unloaded = len(scope), tuple(scope.id_slots), True
        self.evictions += len(victims)

    def _remove(self, name: str, workflow_id: str, *, compact: bool = True) -> bool:
        found = self._get(name)
        if found is None or workflow_id not in found.id_slots:
            return False
        self._dirty.add(name)
        found.remove(workflow_id)
        if compact:
            self._compact_if_sparse(name)
        return True

    def _compact_if_sparse(self, name: str) -> None:
        # Dead slots cost scan time and memory; compacting when they outnumber the live ones
        # keeps that cost amortised O(1) per removal.
        scope = self._scopes[name]
        if scope.dead > max(1024, len(scope)):
            self._scopes[name] = scope.compacted()
            self._dirty.add(name)

    def _log(self, entries: list[dict[str, Any]]) -> None:
        if self._journal is None:
            return
        self._journal.write(entries)
        # Bounds what an open replays (a reader beside this writer, or after a crash): ~1 s for
        # 12.5k lines at 100k workflows, against ~0.8 s to write the snapshot. Counting the
        # workflows sums over every scope, so it is done again only once the journal passed
        # the last count's bound: once per marker line of each scope, it made a save_many of
        # many scopes quadratic (docs/performance.md, "Many tenants").
        lines = self._journal.lines
        if lines > 10_000 and lines > self._unchecked_lines:
            workflows = len(self)
            if lines > workflows // 8:
                self._unchecked_lines = 0
                self.save()
            else:
                self._unchecked_lines = workflows // 8

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
                self._drop(entry["scope"])
                self.markers.pop(entry["scope"], None)
            elif op == "marker":
                self.markers[entry["scope"]] = (int(entry["position"][0]), entry["position"][1])
        if pending:
            self._apply_adds(pending)
