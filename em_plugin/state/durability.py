"""Background saves that outlive their turn: finished at ``close()``, at exit and on SIGTERM.

A save the user is told about must reach the store. Saves that run in the background (an
autosave past the turn's budget) go through a :class:`BackgroundWriter`: one worker thread per
memory, so a session's saves apply in order, and a process-wide registry of the unfinished ones.
They are finished:

* by ``EpisodicMemory.close()`` (:meth:`BackgroundWriter.flush`, before the store closes);
* at interpreter exit (an ``atexit`` handler flushes every writer);
* on SIGTERM: when the process has no handler of its own, the first writer installs one that
  turns the signal into ``SystemExit(143)`` in the main thread, so ``finally`` blocks and the
  ``atexit`` flush run instead of the process dying mid-write.

A process that installs its own SIGTERM handler (a server framework) keeps it; a graceful
shutdown then runs the ``atexit`` flush too.
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from types import FrameType
from typing import Any, TypeVar

__all__ = ["SIGTERM_EXIT", "BackgroundWriter", "flush_all"]

log = logging.getLogger("em_plugin.memory")

T = TypeVar("T")

#: Exit status after SIGTERM (128 + 15, what a shell reports for a process killed by it).
SIGTERM_EXIT = 128 + signal.SIGTERM

_writers: weakref.WeakSet[BackgroundWriter] = weakref.WeakSet()
_registry_lock = threading.Lock()
_atexit_installed = False
_signal_installed = False


class BackgroundWriter:
    """Runs a memory's background writes in order, and finishes them before the process ends.

    Args:
        name: Names the worker thread (for logs and debuggers).
    """

    def __init__(self, name: str = "episodic-memory-writer") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: set[Future[Any]] = set()
        with _registry_lock:
            _writers.add(self)
        _install_hooks()

    def submit(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Run ``function(*args, **kwargs)`` on the writer's thread, after earlier writes.

        Returns:
            The future of its result; it stays registered until it finishes.
        """
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            future = self._pool.submit(function, *args, **kwargs)
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    @property
    def pending(self) -> int:
        """How many submitted writes have not finished yet."""
        with self._lock:
            return len(self._pending)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted write has finished.

        Args:
            timeout: Seconds to wait at most (``None``: until they finish).

        Returns:
            True when nothing is left pending.
        """
        with self._lock:
            pending = list(self._pending)
        if pending:
            wait_futures(pending, timeout=timeout)
        return self.pending == 0

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.warning("a background save failed: %s", future.exception())


def flush_all(timeout: float | None = None) -> bool:
    """Finish every live writer's pending writes (what the ``atexit`` handler runs).

    Returns:
        True when no write is left pending.
    """
    with _registry_lock:
        writers = list(_writers)
    return all([writer.flush(timeout) for writer in writers])


def _at_exit() -> None:
    if not flush_all():
        log.warning("some background saves did not finish before the process exited")


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Unwind the main thread (releasing the memory's locks) and let atexit flush the writes.
    raise SystemExit(SIGTERM_EXIT)


def _install_hooks() -> None:
    global _atexit_installed, _signal_installed
    with _registry_lock:
        if not _atexit_installed:
            _atexit_installed = True
            atexit.register(_at_exit)
        if _signal_installed or threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread: a later writer may
        _signal_installed = True
        try:
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _on_sigterm)
        except (ValueError, OSError):  # an embedded interpreter without signals
            pass
