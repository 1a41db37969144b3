"""Append-only numpy storage the per-scope state is made of.

:class:`GrowArray` and :class:`GrowRows` grow by amortised doubling; :class:`StringTable` keeps
distinct strings once with int32 ids; :class:`Postings` maps keys (tool or text ids) to slots as a
CSR plus a small unsorted tail; :func:`gather_index` flattens runs of a flat per-leaf array.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["GrowArray", "GrowRows", "Postings", "StringTable", "gather_index"]

#: Bytes from which :class:`GrowRows` grows by a quarter instead of doubling.
_LARGE = 64 << 20


class GrowArray:
    """A 1-D append-only numpy array with amortised doubling.

    Args:
        dtype: Element type.
    """

    def __init__(self, dtype: type | np.dtype) -> None:
        self._data = np.empty(64, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray | Sequence[int]) -> None:
        """Append values."""
        values = np.asarray(values, dtype=self._data.dtype)
        end = self.size + len(values)
        if end > len(self._data):
            grown = np.empty(max(end, 2 * len(self._data)), self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : end] = values
        self.size = end

    def view(self) -> np.ndarray:
        """Return the filled part (a view: valid until the next ``extend``)."""
        return self._data[: self.size]


class GrowRows:
    """A 2-D append-only float32 array (rows of one width) with amortised doubling.

    Args:
        width: Row width.
    """

    def __init__(self, width: int) -> None:
        # Empty until the first rows: a scope of a few workflows (one of many tenants) would
        # otherwise hold 16 unused rows (24 KB at 384 dimensions) per table.
        self._data = np.zeros((0, width), dtype=np.float32)
        self.size = 0

    def extend(self, rows: np.ndarray) -> None:
        """Append rows."""
        rows = np.asarray(rows, dtype=np.float32).reshape(-1, self._data.shape[1])
        end = self.size + len(rows)
        if end > len(self._data):
            self._grow(end)
        self._data[self.size : end] = rows
        self.size = end

    def _grow(self, end: int) -> None:
        have, width = len(self._data), self._data.shape[1]
        # Doubling while small; by a quarter once large (a million 384-d rows are 1.5 GB, so
        # doubling would hold up to twice the rows' memory).
        step = have if have * width * 4 < _LARGE else have // 4
        capacity = max(end, have + step)
        try:
            # In place: the allocator moves a large block by remapping its pages, so the old
            # and the new rows are never both in memory (a copy briefly holds both).
            self._data.resize((capacity, width), refcheck=True)
        except ValueError:  # a view of the rows is still alive, or they are not ours
            grown = np.zeros((capacity, width), np.float32)
            grown[: self.size] = self._data[: self.size]
            self._data = grown

    @classmethod
    def of(cls, rows: np.ndarray, *, size: int | None = None) -> GrowRows:
        """Return rows holding ``rows`` itself (no copy when it is float32 and contiguous).

        Args:
            rows: The rows.
            size: How many of them are filled (the rest is room to grow); ``None``: all.
        """
        grown = cls(int(rows.shape[1]))
        grown._data = np.ascontiguousarray(rows, dtype=np.float32)
        grown.size = len(grown._data) if size is None else size
        return grown

    def view(self) -> np.ndarray:
        """Return the filled rows (a view: valid until the next ``extend``)."""
        return self._data[: self.size]


class StringTable:
    """Distinct strings of a scope, each stored once, with int32 ids (``-1`` stands for None)."""

    def __init__(self, values: Sequence[str] = ()) -> None:
        self.values: list[str] = list(values)
        self._ids: dict[str, int] | None = None

    @property
    def ids(self) -> dict[str, int]:
        """String → id (built on first use: a table that is only read never needs it)."""
        if self._ids is None:
            self._ids = {v: i for i, v in enumerate(self.values)}
        return self._ids

    def __len__(self) -> int:
        return len(self.values)

    def encode(self, values: Sequence[str | None]) -> np.ndarray:
        """Return the ids of ``values``, adding the new ones."""
        out = np.empty(len(values), dtype=np.int32)
        ids = self.ids
        for i, value in enumerate(values):
            if value is None:
                out[i] = -1
                continue
            found = ids.get(value)
            if found is None:
                found = ids[value] = len(self.values)
                self.values.append(value)
            out[i] = found
        return out

    def decode(self, codes: np.ndarray) -> tuple[str | None, ...]:
        """Return the strings of ``codes``."""
        values = self.values
        return tuple(values[c] if c >= 0 else None for c in codes.tolist())


class Postings:
    """Key → slots, as a CSR built in batches plus an unsorted tail of recent pairs.

    Pairs are never removed: dead slots are filtered by the caller, and compaction rebuilds the
    whole scope. The CSR is rebuilt when the tail grows past 1/16 of it, so appends cost
    amortised O(log n) and a lookup scans at most a small tail.
    """

    def __init__(self) -> None:
        self._keys = GrowArray(np.int32)
        self._slots = GrowArray(np.int32)
        self._indptr = np.zeros(1, dtype=np.int64)
        self._sorted = np.zeros(0, dtype=np.int32)
        self._built = 0
        self._tail_counts = np.zeros(0, dtype=np.int64)

    def add(self, keys: np.ndarray, slot: int) -> None:
        """Record that ``slot`` uses each of ``keys`` (unique)."""
        self.add_pairs(keys, np.full(len(keys), slot, dtype=np.int32))

    def add_pairs(self, keys: np.ndarray, slots: np.ndarray) -> None:
        """Record ``(key, slot)`` pairs (each pair new)."""
        self._keys.extend(keys)
        self._slots.extend(slots)
        if len(keys):
            top = int(keys.max()) + 1
            if top > len(self._tail_counts):
                grown = np.zeros(max(2 * len(self._tail_counts), top), np.int64)
                grown[: len(self._tail_counts)] = self._tail_counts
                self._tail_counts = grown
            np.add.at(self._tail_counts, keys, 1)
        if self._keys.size - self._built > max(4096, self._built // 16):
            self.build()

    def build(self) -> None:
        """Fold the tail into the CSR."""
        keys, slots = self._keys.view(), self._slots.view()
        order = np.argsort(keys, kind="stable")
        self._sorted = slots[order].copy()
        top = int(keys.max()) + 2 if len(keys) else 1
        self._indptr = np.zeros(top, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=top - 1), out=self._indptr[1:])
        self._built = len(keys)
        self._tail_counts[:] = 0

    def counts(self, keys: np.ndarray) -> np.ndarray:
        """Return how many slots each key has (dead slots included)."""
        inside = keys < len(self._indptr) - 1
        out = np.zeros(len(keys), dtype=np.int64)
        k = keys[inside]
        out[inside] = self._indptr[k + 1] - self._indptr[k]
        if self._keys.size > self._built:
            tail = keys < len(self._tail_counts)
            out[tail] += self._tail_counts[keys[tail]]
        return out

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(which, slots)``: each posting's index into ``keys`` and its slot.

        Args:
            keys: Distinct keys.
        """
        keys = np.asarray(keys, dtype=np.int64)
        inside = keys < len(self._indptr) - 1
        starts = np.where(inside, self._indptr[np.where(inside, keys, 0)], 0)
        ends = np.where(inside, self._indptr[np.where(inside, keys + 1, 0)], 0)
        lengths = ends - starts
        which = np.repeat(np.arange(len(keys)), lengths)
        slots = self._sorted[gather_index(starts, lengths)]
        if self._keys.size > self._built:
            tail_keys = self._keys.view()[self._built :]
            tail_slots = self._slots.view()[self._built :]
            order = np.argsort(keys)
            hit = np.isin(tail_keys, keys)
            where = order[np.searchsorted(keys[order], tail_keys[hit])]
            which = np.concatenate((which, where))
            slots = np.concatenate((slots, tail_slots[hit]))
        return which, slots


def gather_index(offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Flat indexes of the elements of runs given by their offsets and lengths, run by run."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if not len(lengths):
        return np.zeros(0, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    total = int(lengths.sum())
    if np.array_equal(offsets[1:], offsets[:-1] + lengths[:-1]):
        # Runs that follow one another (a scope's live slots before any removal): one range.
        return np.arange(int(offsets[0]), int(offsets[0]) + total, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    shift = np.repeat(offsets - starts, lengths)
    return shift + np.arange(total, dtype=np.int64)
