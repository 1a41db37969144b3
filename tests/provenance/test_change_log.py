"""The change log's ``since``: what changed after an index's position, or ``None`` when the log
cannot tell (trimmed, the whole scope erased, or a log of another history)."""

from __future__ import annotations

from provenance.stores._changes import ChangeEntry, ChangeMarker


def log(*entries: tuple[int, str, frozenset[str] | None]) -> ChangeMarker:
    return ChangeMarker(
        "crew", tuple(ChangeEntry(s, t, ids, everything=ids is None) for s, t, ids in entries)
    )


def test_since_lists_the_ids_written_after_a_position() -> None:
    marker = log((1, "a", frozenset({"w1"})), (2, "b", frozenset({"w2"})))
    assert marker.since(1, "a") == {"w2"}
    assert marker.since(0, "") == {"w1", "w2"}
    assert marker.since(2, "b") == frozenset()


def test_a_concurrent_write_at_the_same_sequence_counts_as_later() -> None:
    marker = log((1, "a", frozenset({"w1"})), (1, "c", frozenset({"w3"})))
    assert marker.since(1, "a") == {"w3"}
    assert marker.since(1, "a|c") == frozenset()


def test_a_log_of_another_history_cannot_tell() -> None:
    # The store was wiped and written again: sequence 1 exists, but not the index's write.
    marker = log((1, "new", frozenset({"w9"})))
    assert marker.since(1, "old") is None


def test_a_trimmed_log_or_an_erased_scope_cannot_tell() -> None:
    assert log((5, "e", frozenset({"w5"}))).since(2, "b") is None
    assert log((1, "a", frozenset({"w1"})), (2, "x", None)).since(1, "a") is None
