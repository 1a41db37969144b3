"""Rebuild a store's step index from the store alone (``em-plugin reindex``).

The step index is derived state (docs/state.md): everything in it can be rebuilt from the
store. A disk store keeps it beside itself (``STORE.em-index/``); :func:`reindex_store` throws
it away and indexes every stored workflow again, for the embedder the store records (or, with
``force``, for another one, which the store then records). Use it after copying a store, after
writing to one without em-plugin, or to switch a store to another embedder.

Example:
    >>> from em_plugin.state.reindex import reindex_store
    >>> from provenance.stores import open_store
    >>> with open_store("memory:") as store:
    ...     reindex_store(store, embedder="fake:8")
    Reindexed(workflows=0, path=None)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from em_plugin.embedding.cache import open_cache
from em_plugin.embedding.embedders import resolve_embedder
from em_plugin.embedding.record import check_embedder, write_record
from em_plugin.state.step_index import StepIndex
from em_plugin.state.workflow_copies import erase
from provenance.model import Workflow
from provenance.stores import WorkflowStore

__all__ = ["Reindexed", "reindex_store"]


@dataclass(frozen=True)
class Reindexed:
    """What :func:`reindex_store` did."""

    workflows: int
    """How many workflows were indexed."""
    path: Path | None
    """Where the index is kept (``None``: a store whose index is rebuilt on every open)."""


def reindex_store(
    store: WorkflowStore,
    *,
    embedder: Any = None,
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> Reindexed:
    """Rebuild the step index from the store alone (persisted beside a disk store).

    Args:
        store: The store, opened writable to record the embedder (read-only: the index is
            rebuilt, the record left as it is).
        embedder: Anything :func:`~em_plugin.embedding.resolve_embedder` accepts (``None``: the
            default model).
        force: Rebuild for ``embedder`` even when the store records another one (the record
            then names ``embedder``).
        progress: Called as ``progress("", done, total)`` as workflows are read.

    Returns:
        How many workflows were indexed, and where the index is kept.

    Raises:
        EmbedderMismatchError: The store records another embedder and ``force`` is False.
    """
    resolved = resolve_embedder(embedder)
    if not force:
        check_embedder(store, resolved)  # another app's index is not ours to rebuild
    directory = store.derived_dir
    if directory is not None:
        # A remote store's slot also holds workflow copies that follow its index: a rebuilt
        # index starts without them (they fill again as suggestions read workflows).
        erase(directory)
    cached = open_cache(resolved, directory)
    steps = directory / "steps" if directory is not None else None
    index = StepIndex(cached, path=steps)
    try:
        total = len(store)

        def counted() -> Iterator[Workflow]:
            for done, workflow in enumerate(store.iter_workflows(), start=1):
                yield workflow
                if progress is not None:
                    progress("", done, total)

        count = index.rebuild(counted())
        if not store.read_only:
            write_record(store, resolved)
    finally:
        index.close()
        close = getattr(cached, "close", None)
        if close is not None:
            close()
    return Reindexed(workflows=count, path=steps)
