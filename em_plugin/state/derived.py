"""Where a store's derived data lives, for callers that open an index themselves.

The store owns the directory (:attr:`~provenance.stores.WorkflowStore.derived_dir`); this module
only keeps the two helpers the CLI's ``reindex`` uses.
"""

from __future__ import annotations

from pathlib import Path

from em_plugin.state.engine import open_cache
from provenance.stores import WorkflowStore

__all__ = ["derived_dir", "open_cache"]


def derived_dir(store: WorkflowStore) -> Path | None:
    """Return the directory for a disk store's derived data, ``None`` for other stores."""
    return store.derived_dir
