"""Plumbing behind :class:`~em_plugin.memory.EpisodicMemory`: where derived data lives, how the
step index is opened or rebuilt, and how suggestion provenance is written.

Derived data of a disk store at ``PATH`` lives beside it in ``PATH.em-index/``: the step index
(``steps/``) and the persistent embedding cache (``embeddings.sqlite``). In-memory and remote
stores get an in-memory index and cache, rebuilt from the store when the memory opens.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rdflib import Literal

from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.embedding.embedders import Embedder
from em_plugin.errors import IndexStaleError
from em_plugin.state.persistence import fingerprint
from em_plugin.suggest.types import Suggestion
from provenance.stores import WorkflowStore
from provenance.suggestion_record import suggestion_graph_iri, suggestion_triples
from provenance.vocab import PREFIXES, WF

__all__ = [
    "derived_dir",
    "drop_suggestion_records",
    "open_cache",
    "open_step_index",
    "store_fingerprint",
    "write_suggestion_record",
]

log = logging.getLogger("em_plugin.memory")

_SCOPE_RECORDS = (
    "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())
    + "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?a a wf:Suggestion ; wf:scope ?scope } }"
)


def derived_dir(store: WorkflowStore) -> Path | None:
    """Return the directory for a disk store's derived data, ``None`` for other stores."""
    path = getattr(store.backend, "path", None)
    if path is None:
        return None
    path = Path(path)
    return path.with_name(f"{path.name}.em-index")


def open_cache(embedder: Embedder, directory: Path | None) -> CachedEmbedder:
    """Wrap the embedder in a cache, persisted in ``directory`` when there is one."""
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    if directory is None:
        return embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(inner)
    return CachedEmbedder(inner, directory / "embeddings.sqlite")


def store_fingerprint(store: WorkflowStore) -> str:
    """Digest of the store's ``(scope, id)`` pairs, as :meth:`StepIndex.fingerprint` computes it."""
    return fingerprint((scope, wid) for scope in store.scopes() for wid in store.ids(scope))


def open_step_index(store: WorkflowStore, embedder: CachedEmbedder, directory: Path | None) -> Any:
    """Open the step index beside a disk store, or build one from the store.

    A missing or stale persisted index (other embedder, other workflows) is rebuilt from the
    store and a warning is logged: the store is the source of truth.
    """
    from em_plugin.state.step_index import StepIndex

    if directory is None:
        index = StepIndex(embedder)
        if len(store):
            index.add_many(store.iter_workflows())
        return index
    steps = directory / "steps"
    try:
        return StepIndex.load(steps, embedder, expected_fingerprint=store_fingerprint(store))
    except IndexStaleError as exc:
        if steps.exists():
            log.warning("rebuilding the step index: %s", exc)
    index = StepIndex(embedder, path=steps)
    index.rebuild(store.iter_workflows())
    return index


def write_suggestion_record(
    store: WorkflowStore,
    session_id: str,
    suggestions: Sequence[Suggestion],
    workflow_ids: Sequence[str],
    scope: str,
    time: datetime | None = None,
) -> str:
    """Append one round of suggestions to the session's suggestion graph.

    Returns:
        The ISO time that names the suggestion activity.
    """
    stamp = (time or datetime.now(UTC)).isoformat()
    graph = suggestion_triples(session_id, [s.to_json() for s in suggestions], workflow_ids, stamp)
    activity = next(iter(graph.subjects(predicate=WF.sessionId)))
    graph.add((activity, WF.scope, Literal(scope)))  # lets forget(scope) find the record
    name = suggestion_graph_iri(session_id)
    triples = list(graph)
    for _, old in store.backend.read_graphs([name]):
        triples.extend(old)
    store.backend.replace_graphs([(name, triples)])
    return stamp


def drop_suggestion_records(store: WorkflowStore, scope: str) -> int:
    """Delete the suggestion graphs of sessions in a scope; return how many."""
    rows = store.backend.select(_SCOPE_RECORDS, {"scope": Literal(scope)}).rows
    names = [row[0] for row in rows]
    if names:
        store.backend.drop_graphs(names)  # type: ignore[arg-type]
    return len(names)
