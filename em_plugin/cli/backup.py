"""``em-plugin export --format nq`` and ``import FILE.nq``: a store's full backup and restore.

The backup is the library's (:mod:`provenance.stores.backup`): every graph of the families the
store's registry backs up (:mod:`provenance.stores.graph_families`), the embedder record
included. Importing a ``.nq`` file restores it as it was, in one transaction; the memory then
catches up with the store as it does after another process's writes, so the step index holds
exactly the live workflows (older versions and retired workflows stay stored, unindexed). With
``--scope``, the workflows are saved into that scope through the memory instead (a saved id that
exists becomes a new version there), and the lifecycle records, which belong to their own scope,
are left out (docs/lifecycle.md).

A backup's embedder record names the embedder its workflows were indexed with: restoring it
into a memory with another embedder is refused before anything is written
(:class:`~em_plugin.errors.EmbedderMismatchError` names both), so the store never records an
embedder that its index was not built with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from provenance.stores.backup import (
    BACKUP_SUFFIXES,
    backup_graphs,
    backup_text,
    read_backup,
    restore_backup,
    restore_graphs,
)

__all__ = ["BACKUP_SUFFIXES", "backup_graphs", "backup_text", "restore"]


def restore(path: str | Path, memory: Any, *, scope: str | None = None) -> tuple[int, int]:
    """Restore a backup into the memory's store.

    Args:
        path: The ``.nq`` file.
        memory: The :class:`~em_plugin.memory.EpisodicMemory` over the store.
        scope: Put every workflow in this scope (records keep their own scope).

    Returns:
        How many workflows and how many other graphs were restored.

    Raises:
        WorkflowFormatError: The file is not N-Quads or a workflow graph is not a workflow.
        EmbedderMismatchError: The backup records another embedder than the memory's.
    """
    from em_plugin.embedding.record import check_recorded
    from provenance.stores.graph_families import EMBEDDER

    backup = read_backup(path)
    for _, triples in backup.of(EMBEDDER):
        check_recorded(triples, memory.embedder, where="this backup")
    if scope is not None:
        workflows = [w.replace(scope=scope) for w in backup.workflows]
        if workflows:
            memory.save_many(workflows, batch_size=len(workflows))
        return len(workflows), restore_graphs(memory.store, backup.graphs)
    counts = restore_backup(memory.store, backup)
    if any(counts):
        memory._engine.sync(force=True)  # catch up with the store as after another writer
    return counts
