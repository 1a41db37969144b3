"""A reentrant readers-writer lock: reads of the memory run together, writes alone.

``with lock:`` takes it exclusively (saves, deletes, reloads), reentrantly for its owner;
``with lock.shared:`` takes it shared (retrieval and suggestions), so that many read-only calls
run at once while numpy and FAISS release the GIL. A writer waiting keeps new readers out, so
a stream of suggestions never starves a save. A thread that holds the lock exclusively may
take it shared (it already excludes everyone); a thread that holds it shared must not ask for
it exclusively (that upgrade could deadlock with another reader doing the same):
:meth:`ReadWriteLock.reading` tells code that would upgrade to skip instead.
"""

from __future__ import annotations

import threading
from types import TracebackType

__all__ = ["ReadWriteLock"]


class _Shared:
    """The shared side of a :class:`ReadWriteLock` (reusable, reentrant)."""

    def __init__(self, lock: ReadWriteLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire_shared()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._lock.release_shared()


class ReadWriteLock:
    """Many readers or one writer; reentrant on both sides, writers first."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0  # threads holding it shared (each counted once)
        self._writer: int | None = None  # the thread holding it exclusively
        self._depth = 0  # its exclusive holds
        self._waiting = 0  # writers waiting
        self._local = threading.local()
        #: The shared side: ``with lock.shared:``.
        self.shared = _Shared(self)

    # ------------------------------------------------------------------------ exclusive

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock exclusively (reentrant); return whether it was taken.

        Raises:
            RuntimeError: When the calling thread holds it shared only (no upgrades).
        """
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._depth += 1
                return True
            if self._shared_depth():
                raise RuntimeError("the memory's lock is held shared by this thread: no upgrade")
            self._waiting += 1
            try:
                ok = self._cond.wait_for(
                    lambda: self._writer is None and self._readers == 0,
                    None if timeout < 0 else timeout,
                ) if blocking else (self._writer is None and self._readers == 0)  # fmt: skip
            finally:
                self._waiting -= 1
            if not ok:
                self._cond.notify_all()  # readers held back by this writer may go on
                return False
            self._writer, self._depth = me, 1
            return True

    def release(self) -> None:
        """Release one exclusive hold."""
        with self._cond:
            if self._writer != threading.get_ident():
                raise RuntimeError("release of a lock this thread does not hold exclusively")
            self._depth -= 1
            if self._depth == 0:
                self._writer = None
                self._cond.notify_all()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    # ------------------------------------------------------------------------ shared

    def acquire_shared(self) -> None:
        """Take the lock shared (reentrant; granted at once to its exclusive holder)."""
        depth = self._shared_depth()
        if depth:
            self._local.depth = depth + 1
            return
        if self._writer == threading.get_ident():
            # Its exclusive hold already keeps everyone out: not counted as a reader.
            self._local.depth, self._local.counted = 1, False
            return
        with self._cond:
            self._cond.wait_for(lambda: self._writer is None and self._waiting == 0)
            self._readers += 1
        self._local.depth, self._local.counted = 1, True

    def release_shared(self) -> None:
        """Release one shared hold."""
        depth = self._shared_depth()
        if depth <= 0:
            raise RuntimeError("release of a lock this thread does not hold shared")
        self._local.depth = depth - 1
        if depth > 1 or not self._local.counted:
            return
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    def reading(self) -> bool:
        """Whether the calling thread holds the lock shared but not exclusively."""
        return self._shared_depth() > 0 and self._writer != threading.get_ident()

    def _shared_depth(self) -> int:
        return int(getattr(self._local, "depth", 0))
