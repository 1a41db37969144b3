"""Whether a writer deleted files of a RocksDB directory during a window.

:mod:`provenance.stores._pinned` links a store's files for a reader; the links are a consistent
view only if the writer deleted none of the files that a reader needs (table files
``NNNNNN.sst``, write-ahead logs ``NNNNNN.log``, ``MANIFEST-NNNNNN``) while they were made.
:class:`TableWatch` tells whether it did. On Linux it listens with inotify, so it also sees a
file that was created and deleted within the window (a log recycled by renaming counts as
deleted); elsewhere it compares the files listed before and after.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import sys
from collections.abc import Collection
from pathlib import Path

__all__ = ["TableWatch"]

_TABLE = re.compile(rb"\d+\.(?:sst|log)|MANIFEST-\d+")
# inotify(7): the events and flags used here, and struct inotify_event's fixed part.
_IN_MOVED_FROM = 0x00000040
_IN_DELETE = 0x00000200
_IN_Q_OVERFLOW = 0x00004000
_EVENT = struct.Struct("iIII")


def _tables(directory: Path) -> frozenset[bytes]:
    """Return the names of the watched files in the directory (empty when it cannot be read)."""
    try:
        with os.scandir(os.fsencode(directory)) as entries:
            return frozenset(e.name for e in entries if _TABLE.fullmatch(e.name))
    except OSError:
        return frozenset()


def _listen(directory: Path) -> int | None:
    """Return an inotify descriptor watching deletions in the directory, or ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    if libc.inotify_add_watch(fd, os.fsencode(directory), _IN_DELETE | _IN_MOVED_FROM) < 0:
        os.close(fd)
        return None
    return fd


def _heard_a_deletion(fd: int, held: frozenset[bytes]) -> bool:
    """Read the pending events: whether one deleted a watched file not in ``held``, or moved one."""
    heard = False
    while True:
        try:
            buffer = os.read(fd, 65536)
        except BlockingIOError:
            return heard
        except OSError:
            return True  # cannot tell: count it as a deletion
        if not buffer:
            return heard
        offset = 0
        while offset + _EVENT.size <= len(buffer):
            _, mask, _, length = _EVENT.unpack_from(buffer, offset)
            start = offset + _EVENT.size
            name = buffer[start : start + length].rstrip(b"\0")
            offset = start + length
            if mask & _IN_Q_OVERFLOW:
                heard = True
            elif _TABLE.fullmatch(name) and (mask & _IN_MOVED_FROM or name not in held):
                heard = True


class TableWatch:
    """Watches a RocksDB directory for deleted files, from construction on.

    Args:
        directory: The store directory.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._fd = _listen(directory)
        self._before = _tables(directory)

    def deleted(self, *, held: Collection[str] = ()) -> bool:
        """Return whether a watched file was deleted since the watch began, and stop watching.

        Args:
            held: Names of files the caller already holds (a hard link or a copy made while
                watching): their deletion by name loses nothing, since the holder keeps the
                content. A file moved away still counts, as a recycled log is rewritten in
                place.

        Returns:
            Whether a deletion may have taken a file the caller needs.
        """
        kept = frozenset(os.fsencode(name) for name in held)
        heard = False
        if self._fd is not None:
            try:
                heard = _heard_a_deletion(self._fd, kept)
            finally:
                self.close()
        return heard or bool(self._before - _tables(self._directory) - kept)

    def close(self) -> None:
        """Stop watching (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
