"""What one running panel holds: its settings, the open store, the catalog, the lazy memory.

The store is opened once, read-only unless the panel may write, so the panel works beside a live
crew that holds a disk store open for writing; a read-only view is reopened on the writer's
latest commit when the store's files changed (looked at most once a second), so that the crew's
saves show up and an idle store is never reopened. The
:class:`~em_plugin.memory.EpisodicMemory`, and with it the embedding model, is made only when a
page needs it (suggestions, lifecycle actions).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from em_plugin.memory import EpisodicMemory
from integrations.panel.catalog import Catalog
from provenance.stores import WorkflowStore, open_store

__all__ = ["PanelSettings", "PanelState"]

_REFRESH_SECONDS = 1.0
log = logging.getLogger("integrations.panel")


@dataclass(frozen=True)
class PanelSettings:
    """How a panel runs.

    Args:
        store: A store spec (directory, ``memory:``, SPARQL endpoint URL).
        update_url: The SPARQL Update endpoint of a remote store, when it differs.
        allow_write: Offer retire, restore, delete and procedure actions.
        token: When set, every request must carry it (``?token=``, a bearer header or the
            cookie the panel sets after one good ``?token=``).
        embedder: The embedder setting for suggestions (``None``: the default model).
        page_size: Rows per page of the workflow table.
        warm: Build every scope's workflow table and tool counts in the background at startup
            (otherwise the first look at each builds it).
    """

    store: str
    update_url: str | None = None
    allow_write: bool = False
    token: str | None = None
    embedder: Any = None
    page_size: int = 50
    warm: bool = True


class PanelState:
    """The open store, its catalog and the lazily built memory of one panel.

    Args:
        settings: The panel's settings.
        store: An already open store to use instead of opening ``settings.store`` (the caller
            keeps owning it).
    """

    def __init__(self, settings: PanelSettings, *, store: WorkflowStore | None = None) -> None:
        self.settings = settings
        self._owns_store = store is None
        if store is None:
            read_only = not settings.allow_write and _is_disk(settings.store)
            store = open_store(settings.store, update_url=settings.update_url, read_only=read_only)
        self.store = store
        self.catalog = Catalog(store)
        self._memory: EpisodicMemory | None = None
        self._memory_lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._refreshed = 0.0
        self._files: frozenset[tuple[str, int, int]] | None = None
        if store.read_only and _is_disk(settings.store):
            self._directory: Path | None = Path(settings.store.strip()).expanduser()
            self._files = _files(self._directory)
        else:
            self._directory = None
        self.warmed = threading.Event()
        """Set once :meth:`warm` has finished (whatever its outcome)."""

    @property
    def memory_loaded(self) -> bool:
        """Whether the memory (and so the embedder) has been built."""
        return self._memory is not None

    def refresh(self) -> None:
        """Let a read-only view see the writes committed since (looked at once a second).

        A disk store is reopened only when its files changed (a commit grows the write-ahead
        log, a bulk load or compaction changes the file set): reopening costs tens of
        milliseconds at 100k workflows and starts with cold caches, which every page after it
        would pay.
        """
        if not self.store.read_only:
            return
        with self._refresh_lock:
            now = time.monotonic()
            if now - self._refreshed < _REFRESH_SECONDS:
                return
            self._refreshed = now
            if self._directory is not None:
                files = _files(self._directory)
                if files is not None and files == self._files:
                    return
                self._files = files
        self.store.refresh()

    def warm(self) -> None:
        """Build every scope's workflow table now (run in the background at startup).

        The first look at a large scope then does not wait for it; failures are only logged.
        """
        try:
            scopes = self.store.scopes()
            for scope in scopes:
                self.catalog.table(scope).rows()
            self.catalog.scopes()
            for scope in scopes:
                self.catalog.tools(scope)
        except Exception as exc:  # a page will meet (and show) the same failure  # noqa: BLE001
            log.warning("could not prepare the workflow tables: %s", exc)
        finally:
            self.warmed.set()

    def memory(self, scope: str) -> EpisodicMemory:
        """Return the memory over the panel's store, as a view of ``scope`` (built on first use)."""
        with self._memory_lock:
            if self._memory is None:
                self._memory = EpisodicMemory(store=self.store, embedder=self.settings.embedder)
            return self._memory.with_scope(scope)

    def close(self) -> None:
        """Close the memory and the store this state opened."""
        with self._memory_lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None
        if self._owns_store:
            self.store.close()


def _files(directory: Path) -> frozenset[tuple[str, int, int]] | None:
    """Return the name, size and modification time of each file of a store directory.

    ``None`` when it cannot be listed (then every look counts as a change).
    """
    found = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                # RocksDB's own diagnostics, and the readers' pins of the files (.readers, see
                # provenance/stores/_pinned.py): not data.
                if entry.name.startswith(("LOG", ".")):
                    continue
                try:
                    info = entry.stat()
                except FileNotFoundError:  # compacted away while listed
                    continue
                found.append((entry.name, info.st_size, info.st_mtime_ns))
    except OSError:
        return None
    return frozenset(found)


def _is_disk(spec: str) -> bool:
    text = spec.strip()
    return not (text in ("memory:", "memory://", ":memory:") or "://" in text)
