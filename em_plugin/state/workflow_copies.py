"""Local copies of the stored workflows, so that suggestions read no store.

Lifting a suggestion to the user's level and binding its arguments read the memory workflows it
cites (:mod:`em_plugin.suggest.cited`). On a remote store each read is a request to the server
(3 to 6 ms on ``oxigraph serve`` on loopback, more on Virtuoso or across a network); on the disk
store it is a query plus parsing the graph back into a workflow. The engine of a writable memory
therefore keeps, beside its step index (``DIR.em-index`` of a disk store, the slot of a remote
store in the local cache, ``provenance/stores/_cache_dir.py``), each workflow it indexed as
compressed Workflow JSON (``workflows.sqlite``, about 370 bytes per synthetic workflow), and
reads cited workflows from there.

The copies follow the step index exactly: the engine writes them wherever it adds, replaces or
removes a workflow in the index (its own writes, and what the store's change logs say other
processes changed), always before it records the store position the index reflects. A process
that dies in between leaves the index behind the store, so the next open reloads those ids and
rewrites their copies. A rebuilt index starts from no copies. When a write fails, the file is
deleted and copies are off for the process: a copy is never older than the index.

Deleted rows are overwritten (SQLite ``secure_delete``), so erasing a scope leaves none of its
texts in the file.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from provenance.model import Workflow
from provenance.workflow_json import dumps_workflow, loads_workflow

__all__ = ["FILE_NAME", "WorkflowCopies", "erase"]

log = logging.getLogger("em_plugin.memory")

#: The file in a cache slot.
FILE_NAME = "workflows.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workflows (
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (scope, id)
) WITHOUT ROWID
"""
# Enough ids per statement to stay far below SQLite's variable limit.
_CHUNK = 500


class WorkflowCopies:
    """Stored workflows as compressed Workflow JSON in one SQLite file.

    Args:
        path: The SQLite file (created when missing).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False)
            db.execute("PRAGMA secure_delete = ON")
            db.execute(_SCHEMA)
            db.commit()
            self._db = db
        except sqlite3.Error as exc:
            self._give_up(f"cannot open {path}: {exc}")

    @property
    def active(self) -> bool:
        """Whether copies are kept (``False`` after a failed write, for the process)."""
        return self._db is not None

    def put_many(self, workflows: Iterable[Workflow]) -> None:
        """Keep (or replace) the copies of these workflows, in one transaction."""
        rows = [(w.scope, w.id, zlib.compress(dumps_workflow(w).encode(), 1)) for w in workflows]
        self._write("INSERT OR REPLACE INTO workflows VALUES (?, ?, ?)", rows)

    def remove(self, scope: str, workflow_ids: Iterable[str]) -> None:
        """Drop the copies of these workflows (absent ones are ignored)."""
        rows = [(scope, i) for i in workflow_ids]
        self._write("DELETE FROM workflows WHERE scope = ? AND id = ?", rows)

    def clear(self, scope: str | None = None) -> None:
        """Drop every copy, or every copy of one scope."""
        if scope is None:
            self._write("DELETE FROM workflows", [()])
        else:
            self._write("DELETE FROM workflows WHERE scope = ?", [(scope,)])

    def get_many(self, scope: str, workflow_ids: Sequence[str]) -> list[Workflow]:
        """Return the copies held of these workflows (the others are left out)."""
        with self._lock:
            if self._db is None or not workflow_ids:
                return []
            found: list[Workflow] = []
            try:
                for start in range(0, len(workflow_ids), _CHUNK):
                    chunk = list(workflow_ids[start : start + _CHUNK])
                    marks = ",".join("?" * len(chunk))
                    found += [
                        loads_workflow(zlib.decompress(body).decode())
                        for (body,) in self._db.execute(
                            f"SELECT body FROM workflows WHERE scope = ? AND id IN ({marks})",
                            [scope, *chunk],
                        )
                    ]
            except (sqlite3.Error, zlib.error, ValueError) as exc:
                log.warning("reading workflow copies from %s failed: %s", self.path, exc)
                return []
            return found

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _write(self, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        with self._lock:
            if self._db is None or not rows:
                return
            try:
                with self._db:  # one transaction: commits, or rolls back on error
                    self._db.executemany(sql, rows)
            except sqlite3.Error as exc:
                self._give_up(f"writing {self.path} failed: {exc}")

    def _give_up(self, why: str) -> None:
        """Turn copies off and delete the file, which may now be older than the index."""
        log.warning("workflow copies are off for this process: %s", why)
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None
        erase(self.path.parent)


def erase(directory: Path) -> None:
    """Delete the copies file of a cache slot (or derived directory), if there is one."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            (directory / f"{FILE_NAME}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot delete %s%s: %s", directory / FILE_NAME, suffix, exc)
