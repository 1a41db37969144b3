"""A full backup of a store as N-Quads: ``em-plugin export --format nq`` and ``import FILE.nq``.

The Workflow JSON and PROV exports hold workflows only. A backup also needs what the store
records about them: the suggestion records (which workflows shaped which suggestions) and the
records other parts of em-plugin keep in graphs of their own. So ``nq`` writes every named graph
of the store (of one scope, with ``--scope``: its workflow graphs and suggestion records) except
the store's own bookkeeping: the change logs (``changes/...``, rebuilt by every write) and the
embedder record (``store/embedder``, which names the index of *this* store).

The lifecycle records (``id/lifecycle/...``: versions linked by ``prov:wasRevisionOf``,
retirements and restorations, procedures with their status and activities) are graphs of the
store like the others, so a backup carries them, with every older version ``ID@vN`` and every
retired workflow as the workflow graphs they are; outcomes are in the workflow graphs.

Importing a ``.nq`` file restores it as it was: the workflow graphs (read back as workflows, so a
malformed one is refused before anything is written) and every other graph are written in one
transaction, each replacing a graph of the same name, with the scopes' change-log entries; the
memory then catches up with the store as it does after another process's writes, so the step
index holds exactly the live workflows (older versions and retired workflows stay stored,
unindexed). With ``--scope``, the workflows are saved into that scope through the memory instead
(a saved id that exists becomes a new version there), and the lifecycle records, which belong to
their own scope, are left out (docs/lifecycle.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rdflib import URIRef

from provenance.errors import WorkflowFormatError
from provenance.model import Workflow
from provenance.vocab import BASE

__all__ = ["BACKUP_SUFFIXES", "backup_graphs", "backup_text", "restore"]

#: File suffixes read as a backup by ``em-plugin import``.
BACKUP_SUFFIXES = (".nq", ".nquads")
_BOOKKEEPING = (f"{BASE}changes/", f"{BASE}store/")
_LIFECYCLE = f"{BASE}lifecycle/"


def backup_graphs(store: Any, scope: str | None = None) -> list[URIRef]:
    """Return the names of the graphs a backup holds, sorted."""
    from provenance.stores.union import workflow_graphs

    if scope is not None:
        return sorted(
            [
                *workflow_graphs(store, scope),
                *store.suggestion_records(scope),
                *store.lifecycle_graphs(scope),
            ]
        )
    names = store.backend.graph_names()
    return sorted(n for n in names if not str(n).startswith(_BOOKKEEPING))


def backup_text(store: Any, scope: str | None = None) -> str:
    """Return the backup of a store (or of one scope) as N-Quads."""
    from provenance.stores._terms import nquads

    graphs = list(store.backend.read_graphs(backup_graphs(store, scope)))
    return nquads(graphs) if graphs else ""


def restore(path: Any, memory: Any, *, scope: str | None = None) -> tuple[int, int]:
    """Restore a backup into the memory's store.

    Args:
        path: The ``.nq`` file.
        memory: The :class:`~em_plugin.memory.EpisodicMemory` over the store.
        scope: Put every workflow in this scope (records keep their own scope).

    Returns:
        How many workflows and how many other graphs (suggestion and lifecycle records) were
        restored.

    Raises:
        WorkflowFormatError: The file is not N-Quads or a workflow graph is not a workflow.
    """
    import pyoxigraph as ox

    from provenance._graph_reader import triples_to_workflow
    from provenance.stores._terms import to_rdflib
    from provenance.stores.union import is_workflow_graph

    name = str(path)
    try:
        quads = list(ox.parse(path=str(path), format=ox.RdfFormat.N_QUADS))
    except (OSError, SyntaxError, ValueError) as exc:
        raise WorkflowFormatError(f"not an N-Quads backup: {exc}", file=name) from None
    graphs: dict[str, list[Any]] = {}
    cache: dict[Any, Any] = {}
    for quad in quads:
        if not isinstance(quad.graph_name, ox.NamedNode):
            continue  # a backup holds named graphs only
        triple = tuple(to_rdflib(t, cache) for t in (quad.subject, quad.predicate, quad.object))
        graphs.setdefault(quad.graph_name.value, []).append(triple)
    workflows: list[Workflow] = []
    others: list[tuple[URIRef, list[Any]]] = []
    for graph, triples in graphs.items():
        if str(graph).startswith(_BOOKKEEPING):
            continue
        if is_workflow_graph(graph):
            try:
                workflow = triples_to_workflow(triples)
            except Exception as exc:  # noqa: BLE001 - reported with the graph's name
                raise WorkflowFormatError(f"graph <{graph}>: {exc}", file=name) from None
            workflows.append(workflow.replace(scope=scope) if scope else workflow)
        else:
            others.append((URIRef(graph), triples))
    if scope is not None:
        # Moved into another scope: saved as new workflows there; the lifecycle records
        # name their own scope's workflows, so they stay out.
        others = [(g, t) for g, t in others if not str(g).startswith(_LIFECYCLE)]
        _save(memory, workflows)
        if others:
            memory.store.backend.replace_graphs(others)
        return len(workflows), len(others)
    if workflows or others:
        # As it was: versions and retired workflows with their records, in one transaction
        # (saving through the memory would version and index them anew).
        memory.store.commit(saves=workflows, records=others)
        # Catch up with the store as after another process's writes.
        memory._engine.sync(force=True)
    return len(workflows), len(others)


def _save(memory: Any, workflows: Iterable[Workflow]) -> None:
    batch = list(workflows)
    if batch:
        memory.save_many(batch, batch_size=len(batch))
