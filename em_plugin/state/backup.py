"""Restore a backup into a memory: the store's graphs, then the index that derives from them.

A backup (:mod:`provenance.stores.backup`, ``em-plugin export --format nq``) holds every graph
the store's registry backs up, the embedder record included. :func:`restore_to_memory` writes
it into a memory's store as it was, in one transaction, and the memory then catches up with the
store as it does after another process's writes (:meth:`~em_plugin.memory.EpisodicMemory.sync`),
so the step index holds exactly the live workflows (older versions and retired workflows stay
stored, unindexed). With ``scope`` the workflows are saved into that scope through the memory
instead (a saved id that exists becomes a new version there), and the lifecycle records, which
belong to their own scope, are left out (docs/lifecycle.md).

A backup's embedder record names the embedder its workflows were indexed with: restoring it
into a memory with another embedder is refused before anything is written
(:class:`~em_plugin.errors.EmbedderMismatchError` names both), so the store never records an
embedder that its index was not built with.

Example:
    >>> import pathlib, tempfile
    >>> from em_plugin import EpisodicMemory, FakeEmbedder
    >>> from provenance.model import CallStep, Workflow
    >>> from provenance.stores.backup import backup_text
    >>> source = EpisodicMemory(store="memory:", embedder=FakeEmbedder())
    >>> _ = source.save(Workflow(id="w1", steps=(CallStep(name="A1"),)))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "backup.nq"
    >>> _ = path.write_text(backup_text(source.store), encoding="utf-8")
    >>> target = EpisodicMemory(store="memory:", embedder=FakeEmbedder())
    >>> restore_to_memory(target, path)
    Restored(workflows=1, graphs=1)
    >>> target.ids()
    ['w1']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from em_plugin.embedding.record import check_recorded
from provenance.model import Workflow
from provenance.stores import WorkflowStore
from provenance.stores.backup import read_backup, restore_backup, restore_graphs
from provenance.stores.graph_families import EMBEDDER

__all__ = ["Restored", "restore_to_memory"]


class _Memory(Protocol):
    """What a restore needs of an :class:`~em_plugin.memory.EpisodicMemory`."""

    @property
    def store(self) -> WorkflowStore: ...

    @property
    def embedder(self) -> Any: ...

    def save_many(self, workflows: Iterable[Workflow], *, batch_size: int) -> Any: ...

    def sync(self) -> None: ...


@dataclass(frozen=True)
class Restored:
    """What :func:`restore_to_memory` wrote."""

    workflows: int
    """How many workflows were restored (or saved into the scope)."""
    graphs: int
    """How many other graphs were restored (records, journals, the embedder record)."""


def restore_to_memory(memory: _Memory, path: str | Path, *, scope: str | None = None) -> Restored:
    """Restore a backup file into the memory's store, and bring the memory up to date.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory` over the store.
        path: The ``.nq`` file (``em-plugin export --format nq``).
        scope: Save every workflow into this scope through the memory (records keep their own
            scope; lifecycle records are left out).

    Returns:
        How many workflows and how many other graphs were restored.

    Raises:
        WorkflowFormatError: The file is not N-Quads or a workflow graph is not a workflow.
        EmbedderMismatchError: The backup records another embedder than the memory's.
    """
    backup = read_backup(path)
    for _, triples in backup.of(EMBEDDER):
        check_recorded(triples, memory.embedder, where="this backup")
    if scope is not None:
        workflows = [w.replace(scope=scope) for w in backup.workflows]
        if workflows:
            memory.save_many(workflows, batch_size=len(workflows))
        return Restored(len(workflows), restore_graphs(memory.store, backup.graphs))
    workflows_restored, graphs_restored = restore_backup(memory.store, backup)
    if workflows_restored or graphs_restored:
        memory.sync()  # catch up with the store as after another writer
    return Restored(workflows_restored, graphs_restored)
