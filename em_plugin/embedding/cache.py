"""An embedding cache keyed by text hash, in memory or persisted in SQLite beside the store.

The key is the SHA-256 of the model name and the text, so one cache file can serve several
models and a changed model never returns another model's vectors. Misses of one ``embed`` call
are embedded in a single batch by the wrapped embedder. New vectors reach the file in batches
(:data:`WRITE_BATCH`, :data:`WRITE_AFTER_SECONDS`, and at :meth:`CachedEmbedder.close`): a
commit waits for the disk, and a query embeds only a text or two.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from em_plugin.embedding.embedders import Embedder
from em_plugin.errors import EmbedderError

#: Vectors kept in memory when the cache is persisted; the rest stay in SQLite.
DEFAULT_MEMORY_ENTRIES = 50_000

#: New vectors written to the file in one transaction (and at the latest after
#: :data:`WRITE_AFTER_SECONDS`, and at :meth:`CachedEmbedder.close`). A commit waits for the disk
#: (about 50 ms on a busy machine), so a query's one or two new texts do not each pay one.
WRITE_BATCH = 256

#: Seconds a new vector may wait for its batch before the next ``embed`` call writes it.
WRITE_AFTER_SECONDS = 5.0

#: SQLite page size of a new cache file: rows of up to ~4 KB (1024-d float32) stay inline.
_PAGE_SIZE = 16384

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    key BLOB PRIMARY KEY,
    model TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL
) WITHOUT ROWID
"""


def open_cache(
    embedder: Embedder, directory: Path | None, *, read_only: bool = False
) -> CachedEmbedder:
    """Wrap the embedder in a cache, persisted in ``directory`` when there is one.

    Args:
        embedder: The embedder (a cache is unwrapped first).
        directory: A store's ``derived_dir`` (the file is ``embeddings.sqlite`` there), or
            ``None`` for a cache in memory.
        read_only: Never write the file.

    Returns:
        The cached embedder.
    """
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    if directory is None:
        return embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(inner)
    return CachedEmbedder(inner, directory / "embeddings.sqlite", read_only=read_only)


class CachedEmbedder:
    """Wraps an :class:`~em_plugin.embedding.Embedder` with a cache keyed by text hash.

    It is itself an ``Embedder`` (same ``name`` and ``dimension`` as the wrapped one).

    Args:
        inner: The embedder whose vectors are cached.
        path: SQLite file for a persistent cache; ``None`` keeps every vector in memory.
        memory_entries: How many vectors a persistent cache also keeps in memory (LRU).
        read_only: Read the SQLite file but never write it (a reader beside a writer): new
            vectors stay in memory.
    """

    def __init__(
        self,
        inner: Embedder,
        path: str | Path | None = None,
        *,
        memory_entries: int = DEFAULT_MEMORY_ENTRIES,
        read_only: bool = False,
    ) -> None:
        if isinstance(inner, CachedEmbedder):
            inner = inner.inner
        self.inner: Embedder = inner
        self.path = Path(path) if path is not None else None
        self._memory: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._limit = memory_entries if self.path is not None else None
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        # Vectors not written to the file yet (rows by key), and since when the oldest waits.
        self._unwritten: dict[bytes, tuple[bytes, str, int, bytes]] = {}
        self._unwritten_since = 0.0
        self.hits = 0
        self.misses = 0
        self.read_only = read_only
        if self.path is not None and read_only and not self.path.exists():
            self.path, self._limit = None, None  # nothing to read, and nothing may be written
        if self.path is not None:
            try:
                if read_only:
                    uri = f"{self.path.resolve().as_uri()}?mode=ro"
                    self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
                else:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._db = sqlite3.connect(self.path, check_same_thread=False)
                    # Erasure: deleted vectors are overwritten, not left in free pages.
                    self._db.execute("PRAGMA secure_delete = ON")
                    # Before the first table (no effect on an existing file): a 384-d row is
                    # 1.6 KB, more than a 4 KB page keeps inline in a WITHOUT ROWID table, so
                    # each row took a page and a half (35 MB for 7.5k vectors, 2.3x the data).
                    self._db.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
                    self._db.execute(_SCHEMA)
                    self._db.commit()
            except sqlite3.Error as exc:
                raise EmbedderError(f"cannot open embedding cache {self.path}: {exc}") from exc

    @property
    def name(self) -> str:
        """The wrapped embedder's name."""
        return self.inner.name

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (the same as :meth:`embed`).

        A memory's embedder is also the ``list[str] -> array`` callable that
        ``EpisodicMemory(embedder=...)`` takes.
        """
        return self.embed(texts)

    def warm_up(self) -> None:
        """Warm the wrapped embedder up when it can (a model loaded on first use).

        The probe text is not cached.
        """
        warm = getattr(self.inner, "warm_up", None)
        if callable(warm):
            warm()

    def key(self, text: str) -> bytes:
        """Return the cache key of a text for this model."""
        return hashlib.sha256(f"{self.name}\x00{text}".encode()).digest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return the vectors of ``texts``, embedding only the ones not cached yet.

        Args:
            texts: The texts.

        Returns:
            A ``len(texts) x dimension`` float32 array of unit-norm rows.

        Raises:
            EmbedderError: When the wrapped embedder fails or returns another dimension than
                cached vectors have.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            keys = [self.key(t) for t in texts]
            found = self._lookup(keys)
            missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
            self.hits += len(keys) - sum(1 for k in keys if k in missing)
            if missing:
                self.misses += len(missing)
                vectors = np.asarray(self.inner.embed(list(missing.values())), dtype=np.float32)
                fresh = dict(zip(missing, vectors, strict=True))
                self._store(fresh)
                found.update(fresh)
            self._write_due()
            out = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        if out.shape[1] != self.dimension:
            raise EmbedderError(
                f"cached vectors have dimension {out.shape[1]}, the embedder {self.name!r} has "
                f"{self.dimension}"
            )
        return out

    def discard(self, texts: Iterable[str]) -> int:
        """Forget the vectors of ``texts`` (e.g. when their scope is deleted).

        Returns:
            How many cache entries were removed.
        """
        with self._lock:
            keys = [self.key(t) for t in texts]
            removed = sum(self._memory.pop(k, None) is not None for k in keys)
            # Not written yet: never written now (an erased vector stays erased).
            unwritten = sum(self._unwritten.pop(k, None) is not None for k in keys)
            if self._db is not None and not self.read_only:
                before = self._db.total_changes
                self._db.executemany("DELETE FROM embeddings WHERE key = ?", [(k,) for k in keys])
                self._db.commit()
                removed = self._db.total_changes - before + unwritten
            return removed

    def __len__(self) -> int:
        with self._lock:
            if self._db is None:
                return len(self._memory)
            self._write()
            row = self._db.execute(
                "SELECT COUNT(*) FROM embeddings WHERE model = ?", (self.name,)
            ).fetchone()
            return int(row[0])

    def close(self) -> None:
        """Write the vectors not written yet and close the SQLite file.

        A memory cache has nothing to close. Vectors of a process that ends without closing
        its cache since the last write are embedded again when next asked for.
        """
        with self._lock:
            if self._db is not None:
                self._write()
                self._db.close()
                self._db = None

    def _lookup(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for k in keys:
            vector = self._memory.get(k)
            if vector is None and k in self._unwritten:  # beyond the memory's entries already
                _, _, dimension, blob = self._unwritten[k]
                vector = np.frombuffer(blob, dtype=np.float32, count=dimension)
            if vector is not None:
                found[k] = vector
                if self._limit is not None:
                    self._memory.move_to_end(k)
        rest = list({k for k in keys if k not in found})
        if self._db is None or not rest:
            return found
        # SQLite limits the number of host parameters; query in chunks.
        for start in range(0, len(rest), 500):
            chunk = rest[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, dimension, vector FROM embeddings WHERE key IN ({marks})", chunk
            ).fetchall()
            for k, dimension, blob in rows:
                found[bytes(k)] = np.frombuffer(blob, dtype=np.float32, count=dimension)
        self._remember({k: found[k] for k in rest if k in found})
        return found

    def _store(self, fresh: dict[bytes, np.ndarray]) -> None:
        self._remember(fresh)
        if self._db is None or self.read_only:
            return
        if not self._unwritten:
            self._unwritten_since = time.monotonic()
        for k, v in fresh.items():
            blob = np.ascontiguousarray(v, dtype=np.float32).tobytes()
            self._unwritten[k] = (k, self.name, int(v.shape[0]), blob)

    def _write_due(self) -> None:
        """Write the vectors not written yet once a batch is full or its oldest has waited."""
        if self._unwritten and (
            len(self._unwritten) >= WRITE_BATCH
            or time.monotonic() - self._unwritten_since >= WRITE_AFTER_SECONDS
        ):
            self._write()

    def _write(self) -> None:
        """Write the vectors not written yet, in one transaction."""
        if self._db is None or self.read_only or not self._unwritten:
            return
        rows = list(self._unwritten.values())
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
        self._unwritten.clear()

    def _remember(self, entries: dict[bytes, np.ndarray]) -> None:
        self._memory.update(entries)
        if self._limit is not None:
            while len(self._memory) > self._limit:
                self._memory.popitem(last=False)
