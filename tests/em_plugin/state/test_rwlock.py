"""The memory's readers-writer lock, and reads beside writes through one memory object."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from em_plugin.state.rwlock import ReadWriteLock
from provenance.model import Workflow

# Generous: only reached when the lock is broken (a test then fails instead of hanging).
_WAIT = 60


def test_readers_hold_it_together() -> None:
    lock = ReadWriteLock()
    inside = threading.Barrier(3, timeout=_WAIT)

    def read() -> None:
        with lock.shared:
            inside.wait()  # all three are inside at once, or the barrier breaks

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(_WAIT)
    assert not inside.broken


def test_a_writer_waits_for_the_readers_and_keeps_new_ones_out() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    reading, writer_waiting = threading.Event(), threading.Event()
    release_reader = threading.Event()

    def first_reader() -> None:
        with lock.shared:
            reading.set()
            release_reader.wait(_WAIT)
            order.append("reader 1 out")

    def writer() -> None:
        writer_waiting.set()
        with lock:
            order.append("writer")

    def late_reader() -> None:
        with lock.shared:
            order.append("reader 2")

    threads = [threading.Thread(target=first_reader)]
    threads[0].start()
    assert reading.wait(_WAIT)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    assert writer_waiting.wait(_WAIT)
    while not lock._waiting:  # the writer is queued on the lock
        threading.Event().wait(0.001)
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    release_reader.set()
    for thread in threads:
        thread.join(_WAIT)
    assert order == ["reader 1 out", "writer", "reader 2"]


def test_reentrant_and_no_upgrade() -> None:
    lock = ReadWriteLock()
    with lock, lock, lock.shared, lock.shared:  # the writer may read
        assert not lock.reading()
    with lock.shared, lock.shared:
        assert lock.reading()
        with pytest.raises(RuntimeError, match="no upgrade"):
            lock.acquire()
    assert not lock.reading()
    with lock:  # everything was released
        pass
    with pytest.raises(RuntimeError):
        lock.release()


def test_suggestions_beside_saves_see_one_consistent_memory(tmp_path: Path) -> None:
    """Threads save (the same workflows again) while others retrieve and suggest.

    Saving a workflow again replaces its slot (dead slots, new slots, compaction, snapshot
    writes): every read must still see the whole memory, so it answers as before the saves.
    """
    data = SyntheticMemory(0, distinct_texts=True)
    workflows = list(data.workflows(120))
    queries = list(data.queries(12))
    with EpisodicMemory(tmp_path / "store", embedder="fake:64", scope=SCOPE) as memory:
        memory.save_many(workflows, batch_size=40)

        def answer(query: Workflow) -> tuple[list[Any], list[Any]]:
            matches = [(m.workflow_id, m.score) for m in memory.retrieve(query)]
            suggested = [(s.tool, s.text, s.score) for s in memory.suggest(query, limit=None)]
            return matches, suggested

        expected = [answer(q) for q in queries]
        stop = threading.Event()

        def save() -> int:
            count = 0
            while not stop.is_set():
                memory.save(workflows[count % len(workflows)])
                count += 1
            return count

        def read(round_: int) -> list[bool]:
            return [answer(q) == e for q, e in zip(queries, expected, strict=True)]

        with ThreadPoolExecutor(6) as pool:
            savers = [pool.submit(save) for _ in range(2)]
            readers = [pool.submit(read, r) for r in range(4)]
            results = [r.result(timeout=600) for r in readers]
            stop.set()
            saved = sum(s.result(timeout=600) for s in savers)
        assert saved > 0
        assert all(all(r) for r in results)
        assert answer(queries[0]) == expected[0]
