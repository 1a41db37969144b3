"""What a running MCP server holds: the open store and the memory built on first use.

The store is opened once, read-only unless the server may write, so the server runs beside a
crew that holds a disk store for writing; a read-only view is brought up to the writer's latest
commit at most once a second, so the crew's saves show up. The
:class:`~em_plugin.memory.EpisodicMemory`, and with it the embedding model, is made only when a
tool needs it (recall, suggest, save).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from em_plugin.memory import EpisodicMemory
from provenance.stores import WorkflowStore

__all__ = ["MemoryState"]

T = TypeVar("T")
_REFRESH_SECONDS = 1.0


class MemoryState:
    """The store (owned: closed by :meth:`close`) and the lazily built memory of one server.

    Args:
        store: The open store.
        embedder: The embedder setting for the memory (``None``: the one the store records,
            else the default model).
    """

    def __init__(self, store: WorkflowStore, *, embedder: Any = None) -> None:
        self.store = store
        self.embedder = _recorded(store) if embedder is None else embedder
        self._memory: EpisodicMemory | None = None
        self._lock = threading.Lock()
        self._refreshed = 0.0

    def memory(self, scope: str) -> EpisodicMemory:
        """Return the memory over the store as a view of ``scope`` (built on first use)."""
        with self._lock:
            if self._memory is None:
                self._memory = EpisodicMemory(store=self.store, embedder=self.embedder)
            return self._memory.with_scope(scope)

    def refresh(self) -> None:
        """Let a read-only view see the writes committed since (at most once a second)."""
        if not self.store.read_only:
            return
        with self._lock:
            now = time.monotonic()
            if now - self._refreshed < _REFRESH_SECONDS:
                return
            self._refreshed = now
        self.store.refresh()

    async def run(self, work: Callable[[], T]) -> T:
        """Run blocking memory work in a worker thread (the event loop keeps serving)."""
        return await anyio.to_thread.run_sync(work)

    def close(self) -> None:
        """Close the memory and the store."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None
        self.store.close()


def _recorded(store: WorkflowStore) -> str | None:
    """The embedder the store records, as a setting (``None``: none, or a custom callable)."""
    from em_plugin.embedding.record import cli_spec, read_record

    record = read_record(store)
    return None if record is None else cli_spec(record)
