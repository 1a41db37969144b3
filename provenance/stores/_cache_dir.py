"""A local directory for the derived data of a store that has none (a remote endpoint).

A disk store keeps its indexes beside it (``PATH.em-index``). A remote store lives elsewhere, so
each process that opens it would rebuild its indexes over HTTP (19 s for 10k workflows on
``oxigraph serve``). This module gives such a store a directory in a local cache instead::

    $EM_PLUGIN_CACHE_DIR/remote/<digest of the endpoint URLs>/slot-<k>/

A **slot** belongs to one process at a time, held by an exclusive ``flock`` on its ``.lock``
file until the store is closed (or the process dies: the kernel drops the lock). Several workers
on one machine therefore never write the same index files: each claims the first free slot, and a
restarted worker usually gets its old slot back, current up to the store's change markers
(``docs/state.md``). ``$EM_PLUGIN_CACHE_DIR`` defaults to ``$XDG_CACHE_HOME/em-plugin``, else
``~/.cache/em-plugin``; the value ``none`` turns the cache off (indexes are rebuilt in memory).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger("provenance.stores")

#: Environment variable naming the root of the local cache of derived data.
CACHE_DIR_ENV = "EM_PLUGIN_CACHE_DIR"
# More workers than this on one machine and one store rebuild their index in memory.
_SLOTS = 64

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, so no shared slots
    fcntl = None  # type: ignore[assignment]


@dataclass
class CacheSlot:
    """A claimed slot: its directory and the open lock file that holds it."""

    path: Path
    _lock: IO[bytes]

    def release(self) -> None:
        """Release the slot (its files stay for the next process)."""
        if not self._lock.closed:
            self._lock.close()  # closing the descriptor drops the flock


def cache_root() -> Path | None:
    """Return the root of the local cache, ``None`` when ``$EM_PLUGIN_CACHE_DIR`` is ``none``."""
    raw = os.environ.get(CACHE_DIR_ENV, "").strip()
    if raw.lower() == "none":
        return None
    if raw:
        return Path(raw).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "em-plugin"


def store_dir(key: str) -> Path | None:
    """Return the directory holding every slot of the store identified by ``key``."""
    root = cache_root()
    if root is None:
        return None
    return root / "remote" / hashlib.sha256(key.encode()).hexdigest()[:24]


def claim_slot(key: str) -> CacheSlot | None:
    """Claim the first free slot of a store's cache; ``None`` when there is no usable one.

    Args:
        key: What identifies the store across processes (its endpoint URLs).

    Returns:
        The slot, held until :meth:`CacheSlot.release`; ``None`` when the cache is off, not
        writable, every slot is taken, or the platform has no ``flock``.
    """
    base = store_dir(key)
    if base is None or fcntl is None:
        return None
    try:
        base.mkdir(parents=True, exist_ok=True)
        (base / "store.txt").write_text(key + "\n", encoding="utf-8")
        for k in range(_SLOTS):
            path = base / f"slot-{k}"
            path.mkdir(exist_ok=True)
            lock = (path / ".lock").open("ab")
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock.close()
                continue
            return CacheSlot(path, lock)
    except OSError as exc:
        log.warning("no local cache for %s (indexes are rebuilt in memory): %s", key, exc)
        return None
    log.warning("all %d cache slots of %s are in use: the index is rebuilt in memory", _SLOTS, key)
    return None


def idle_slots(key: str) -> Iterator[Path]:
    """Yield the slots of a store's cache that no process holds now."""
    base = store_dir(key)
    if base is None or fcntl is None or not base.is_dir():
        return
    for path in sorted(base.glob("slot-*")):
        try:
            with (path / ".lock").open("ab") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                yield path
        except OSError:
            continue  # held by a live process, which reconciles with the store itself


def erase_idle_slots(key: str) -> int:
    """Delete the files of every slot no process holds (after a scope was erased).

    Returns:
        How many slots were emptied.
    """
    count = 0
    for path in idle_slots(key):
        for child in path.iterdir():
            if child.name == ".lock":
                continue
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        count += 1
    return count
