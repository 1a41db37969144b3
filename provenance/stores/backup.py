"""A full backup of a store as N-Quads, and its restore: every family the registry backs up.

The Workflow JSON and PROV exports hold workflows only. A backup holds every graph of the
families marked ``backup`` in :mod:`provenance.stores.graph_families` (workflows with every
older version ``ID@vN`` and every retired one, lifecycle records, suggestion records, session
journals and the embedder record) and any graph of no family a client put in the store; the
change logs are left out, since a restore writes the scopes' entries anew. A backup of one scope
holds that scope's graphs of those families (the embedder record, of no scope, is not one).

:func:`restore_backup` writes a backup back as it was: the workflow graphs (read back as
workflows by :func:`read_backup`, so a malformed one is refused before anything is written) and
every other graph, in one transaction, each replacing a graph of the same name, with the scopes'
change-log entries. ``em-plugin export --format nq`` is :func:`backup_text`; ``em-plugin import
FILE.nq`` restores through the memory (``em_plugin/state/backup.py``), which checks the embedder
record and brings the step index up to date.

Example:
    >>> from provenance.model import CallStep, Workflow
    >>> from provenance.stores import open_store
    >>> source, target = open_store("memory:"), open_store("memory:")
    >>> source.save(Workflow(id="w1", steps=(CallStep(name="A1"),), scope="team"))
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "backup.nq"
    >>> _ = path.write_text(backup_text(source), encoding="utf-8")
    >>> restore_backup(target, read_backup(path))
    (1, 0)
    >>> target.ids(scope="team")
    ['w1']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rdflib import URIRef

from provenance.errors import WorkflowFormatError
from provenance.model import Workflow
from provenance.stores.graph_families import (
    FAMILIES,
    LIFECYCLE,
    WORKFLOWS,
    GraphFamily,
    family_of,
)
from provenance.stores.graph_writes import scope_graphs
from provenance.stores.workflow_store import WorkflowStore

__all__ = [
    "BACKUP_SUFFIXES",
    "Backup",
    "backup_graphs",
    "backup_text",
    "read_backup",
    "restore_backup",
    "restore_graphs",
]

#: File suffixes read as a backup (``em-plugin import``).
BACKUP_SUFFIXES = (".nq", ".nquads")


@dataclass(frozen=True)
class Backup:
    """What a backup file holds: its workflows, and its other graphs."""

    workflows: list[Workflow]
    """The workflows of its workflow graphs."""
    graphs: list[tuple[URIRef, list[Any]]] = field(default_factory=list)
    """Every other graph it holds, ``(name, triples)``, of a backed-up family or of none."""

    def of(self, family: GraphFamily | None) -> list[tuple[URIRef, list[Any]]]:
        """Return its graphs of ``family`` (``None``: those of no family)."""
        return [(name, triples) for name, triples in self.graphs if family_of(name) is family]


def backup_graphs(store: WorkflowStore, scope: str | None = None) -> list[URIRef]:
    """Return the names of the graphs a backup of the store (or of one scope) holds, sorted."""
    backed_up = [f for f in FAMILIES if f.backup]
    if scope is None:
        return sorted(n for n in store.backend.graph_names() if _backed_up(n))
    names = {g for g, _, _ in store._index(scope)}
    names.update(scope_graphs(store.backend, scope, backed_up))
    # Records found by what they say too, as erasing the scope finds them.
    names.update(store.suggestion_records(scope))
    names.update(store.lifecycle_graphs(scope))
    return sorted(names)


def backup_text(store: WorkflowStore, scope: str | None = None) -> str:
    """Return the backup of a store (or of one scope) as N-Quads."""
    from provenance.stores._terms import nquads

    graphs = list(store.backend.read_graphs(backup_graphs(store, scope)))
    return nquads(graphs) if graphs else ""


def read_backup(path: str | Path) -> Backup:
    """Read a backup file.

    Args:
        path: The ``.nq`` file.

    Returns:
        Its workflows and other graphs (change-log entries and default-graph triples, which
        no backup writes, are left out).

    Raises:
        WorkflowFormatError: The file is not N-Quads, or a workflow graph is not a workflow.
    """
    import pyoxigraph as ox

    from provenance._graph_reader import triples_to_workflow
    from provenance.stores._terms import to_rdflib

    name = str(path)
    try:
        quads = list(ox.parse(path=name, format=ox.RdfFormat.N_QUADS))
    except (OSError, SyntaxError, ValueError) as exc:
        raise WorkflowFormatError(f"not an N-Quads backup: {exc}", file=name) from None
    grouped: dict[str, list[Any]] = {}
    cache: dict[Any, Any] = {}
    for quad in quads:
        if not isinstance(quad.graph_name, ox.NamedNode):
            continue  # a backup holds named graphs only
        triple = tuple(to_rdflib(t, cache) for t in (quad.subject, quad.predicate, quad.object))
        grouped.setdefault(quad.graph_name.value, []).append(triple)
    workflows: list[Workflow] = []
    graphs: list[tuple[URIRef, list[Any]]] = []
    for graph, triples in grouped.items():
        family = family_of(graph)
        if family is WORKFLOWS:
            try:
                workflows.append(triples_to_workflow(triples))
            except Exception as exc:  # noqa: BLE001 - reported with the graph's name
                raise WorkflowFormatError(f"graph <{graph}>: {exc}", file=name) from None
        elif family is None or family.backup:
            graphs.append((URIRef(graph), triples))
    return Backup(workflows, graphs)


def restore_backup(store: WorkflowStore, backup: Backup) -> tuple[int, int]:
    """Write a backup into the store as it was, in one transaction.

    Versions and retired workflows come back with their records (saving them through a
    memory would version and index them anew); each graph replaces one of the same name.

    Returns:
        How many workflows and how many other graphs were written.

    Raises:
        StoreError: When the backend fails (nothing is written).
    """
    if backup.workflows or backup.graphs:
        store.commit(saves=backup.workflows, records=backup.graphs)
    return len(backup.workflows), len(backup.graphs)


def restore_graphs(store: WorkflowStore, graphs: Sequence[tuple[URIRef, list[Any]]]) -> int:
    """Write a backup's records beside workflows saved anew (an import into another scope).

    The lifecycle records name their own scope's workflows, so they stay out; so do workflow
    graphs and change-log entries, which only a commit writes.

    Returns:
        How many graphs were written.

    Raises:
        StoreError: When the backend fails (nothing is written).
    """
    kept = [
        (n, t) for n, t in graphs if family_of(n) not in (LIFECYCLE, WORKFLOWS) and _backed_up(n)
    ]
    if kept:
        store.backend.replace_graphs(kept)
    return len(kept)


def _backed_up(name: URIRef | str) -> bool:
    family = family_of(name)
    return family is None or family.backup
