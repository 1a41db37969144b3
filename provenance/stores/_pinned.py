"""A read-only reader's own hard links to a disk store's files, so no compaction deletes them.

A read-only RocksDB open reads the writer's file list (the MANIFEST) but opens the table files
(``NNNNNN.sst``) only when a read first needs them (RocksDB opens at most 16 up front when its
table cache is bounded, as Oxigraph bounds it). A file that the writer's compaction deletes
before then is missing: the read fails with "No such file ... While open a file for random
read". In pyoxigraph 0.5 that failure is worse than an error: Oxigraph's quad iterator repeats
it on every call, and the operators that gather their input first (GROUP BY, ORDER BY, hash
joins, OPTIONAL) keep each error and keep reading, so one query grows the process by gigabytes
within seconds.

A pin is a directory inside the store (``.readers/PID-N``; RocksDB ignores subdirectories)
holding a copy of ``CURRENT`` and of the MANIFEST it names, and hard links to every table file
and write-ahead log. Opened read-only, it reads the store as of the copy, and its files live as
long as the pin: the writer's deletions only drop the store's own names. The pin is complete
when the writer deleted none of those files while it was made, except files the pin already
held (:class:`~provenance.stores._table_watch.TableWatch`); otherwise making it is tried again.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
from pathlib import Path

from provenance.errors import StoreError
from provenance.stores._table_watch import TableWatch

__all__ = ["PIN_DIRECTORY", "Incomplete", "pin", "unpin"]

PIN_DIRECTORY = ".readers"
"""The subdirectory of a store that holds the pins of its readers."""
_LINKED = re.compile(r"\d+\.(?:sst|log)|OPTIONS-\d+")
_COPIED = ("IDENTITY",)
_numbers = itertools.count()


class Incomplete(StoreError):
    """The writer deleted a file while the pin was made (make it again; never reaches users)."""


def pin(store: Path) -> Path:
    """Return a new pin of the store's files as they are now.

    Raises:
        Incomplete: The writer deleted a file meanwhile.
        OSError: The pin cannot be made (no write permission, links not supported, not POSIX).
    """
    if os.name != "posix":
        raise OSError("pins are made on POSIX systems only")
    readers = store / PIN_DIRECTORY
    readers.mkdir(exist_ok=True)
    _sweep(readers)
    target = readers / f"{os.getpid()}-{next(_numbers)}"
    target.mkdir()
    try:
        watch = TableWatch(store)
        held: list[str] = []  # the files the pin holds so far
        try:
            # The MANIFEST first: every file it names existed when it was copied, so linking
            # what is there afterwards, with no deletion in between, links all of them.
            current = (store / "CURRENT").read_bytes()
            manifest = current.decode("ascii").strip()
            shutil.copyfile(store / manifest, target / manifest)
            held.append(manifest)
            for name in _COPIED:
                if (store / name).is_file():
                    shutil.copyfile(store / name, target / name)
            with os.scandir(store) as entries:
                for entry in entries:
                    if _LINKED.fullmatch(entry.name):
                        os.link(entry.path, target / entry.name)
                        held.append(entry.name)
            (target / "CURRENT").write_bytes(current)
        except FileNotFoundError as exc:
            raise Incomplete(str(exc)) from exc
        finally:
            # A file deleted after it was linked or copied is held by the pin: only one
            # deleted before (so missing from the pin) makes the pin incomplete. File numbers
            # only grow, so a held name is never a newer file of the same name.
            deleted = watch.deleted(held=held)
        if deleted:
            raise Incomplete(f"the writer deleted files of {store} meanwhile")
    except BaseException:
        unpin(target)
        raise
    return target


def unpin(target: Path) -> None:
    """Delete a pin (its links only: the store keeps its own names)."""
    shutil.rmtree(target, ignore_errors=True)


def _sweep(readers: Path) -> None:
    """Delete the pins that processes no longer running left behind (killed readers)."""
    try:
        entries = list(os.scandir(readers))
    except OSError:
        return
    for entry in entries:
        pid = entry.name.partition("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            unpin(Path(entry.path))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists but is not ours to signal
    return True
