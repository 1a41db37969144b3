"""The continuation index's postings: stored positions keyed by the leaves that precede them.

A position is posted under each of its keys: the tokens of the last ``k`` leaves before it, for
``k`` up to the model's order (an opening position under the instruction token alone). Keys are
packed into one int64 (``k``, then ``width`` tokens + 2 of ``bits`` bits each) and kept in a CSR
built by one sort, plus a small dict tail of recent additions that the owner folds in by
re-indexing (:meth:`KeyPostings.post` says when).
"""

from __future__ import annotations

import numpy as np

__all__ = ["INSTRUCTION", "KeyPostings"]

#: The token of an instruction leaf.
INSTRUCTION = -1
_INSTRUCTION = INSTRUCTION


class KeyPostings:
    """Positions by key: a CSR of packed keys plus an unsorted tail.

    Args:
        width: The longest key (the model's ``max_order``).
    """

    def __init__(self, width: int) -> None:
        self.width = width
        # The CSR: sorted packed keys (see _group), their start offsets, the positions.
        self._csr_keys = np.zeros(0, dtype=np.int64)
        self._csr_ptr = np.zeros(1, dtype=np.int64)
        self._csr_bits = 0
        self._posted = np.zeros(0, dtype=np.int64)
        self._tail: dict[tuple[int, ...], list[int]] = {}
        self._tail_size = 0

    def post(
        self,
        tok: np.ndarray,
        local: np.ndarray,
        leaf: np.ndarray,
        kind: np.ndarray,
        positions: np.ndarray,
        vocabulary: int,
    ) -> bool:
        """Post new positions under their keys (the last ``k`` leaves before them).

        Args:
            tok: Per leaf of the new workflows, its token (``-1``: an instruction).
            local: Per leaf, its position in its workflow.
            leaf: Per new position, the leaf it predicts.
            kind: Per new position, 0 for a state, 1 for an opening.
            positions: The new positions' numbers.
            vocabulary: How many tools the vocabulary holds.

        Returns:
            Whether the tail outgrew the CSR: the owner should re-index (which folds it in).
        """
        width = self.width
        bits = (vocabulary + 2).bit_length()  # tokens + 2 are in [0, names + 2)
        if width.bit_length() + bits * width > 62:  # a key would not fit an int64
            self._post_rows(tok, local, leaf, kind, positions)
            return False
        packed, posted = [], []
        state = kind == 0
        # The states with at least k leaves before them, k = 1, 2, ...: each k's keys are the
        # k-1 ones with one more (older) token in front, so each k gathers one token column.
        tok = np.asarray(tok, dtype=np.int64)  # keys are int64: shift no narrower type
        chosen = state & (local[leaf] >= 1)
        ends = leaf[chosen] - 1  # the leaf before the state
        lead = local[ends + 1]
        at = positions[chosen]
        body = np.zeros(len(ends), dtype=np.int64)  # the tokens part of the key
        top = bits * (width - 1)
        for k in range(1, width + 1):
            if k > 1:
                deeper = lead >= k
                ends, lead, at, body = ends[deeper], lead[deeper], at[deeper], body[deeper]
            if not len(ends):
                break
            body = ((tok[ends - (k - 1)] + 2) << top) | (body >> bits)
            packed.append((k << (bits * width)) | body)
            posted.append(at)
        if (~state).any():  # openings: under the instruction token alone
            opening = (1 << (bits * width)) | ((_INSTRUCTION + 2) << (bits * (width - 1)))
            packed.append(np.full(int((~state).sum()), opening, dtype=np.int64))
            posted.append(positions[~state])
        if not packed:
            return False
        heads, pointers, flat = _group(np.concatenate(packed), np.concatenate(posted))
        if self._posted.size == 0 and self._tail_size == 0:
            self._csr_keys, self._csr_ptr, self._csr_bits = heads, pointers, bits
            self._posted = flat
            return False
        bounds = pointers.tolist()
        for i, key_tuple in enumerate(_unpack(heads, bits, width)):
            self._tail.setdefault(key_tuple, []).extend(flat[bounds[i] : bounds[i + 1]].tolist())
        self._tail_size += len(flat)
        return self._tail_size > max(4096, len(self._posted) // 8)

    def _post_rows(
        self,
        tok: np.ndarray,
        local: np.ndarray,
        leaf: np.ndarray,
        kind: np.ndarray,
        positions: np.ndarray,
    ) -> None:
        """:meth:`post` for keys too wide to pack (huge vocabularies, long orders)."""
        pairs: list[tuple[tuple[int, ...], int]] = []
        tokens, where, kinds = tok.tolist(), local[leaf].tolist(), kind.tolist()
        for i, (at, own, kind_of) in enumerate(zip(leaf.tolist(), where, kinds, strict=True)):
            position = int(positions[i])
            if kind_of:
                pairs.append(((_INSTRUCTION,), position))
                continue
            for k in range(1, min(self.width, own) + 1):
                pairs.append((tuple(tokens[at - k : at]), position))
        for key, position in sorted(pairs, key=lambda pair: pair[1]):
            self._tail.setdefault(key, []).append(position)
        self._tail_size += len(pairs)

    def get(self, key: tuple[int, ...]) -> np.ndarray:
        """Return the positions posted under a key (CSR first, then the tail)."""
        stored = np.zeros(0, np.int64)
        packed = _pack(key, self._csr_bits, self.width)
        if packed is not None and len(self._csr_keys):
            i = int(np.searchsorted(self._csr_keys, packed))
            if i < len(self._csr_keys) and self._csr_keys[i] == packed:
                stored = self._posted[self._csr_ptr[i] : self._csr_ptr[i + 1]]
        tail = self._tail.get(key)
        return np.concatenate((stored, np.asarray(tail, np.int64))) if tail else stored


def _group(packed: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group postings by packed key.

    Args:
        packed: Per posting its key: ``k``, then ``max_order`` tokens + 2 of ``bits`` bits
            each (the first ``k`` used, the rest 0); see :func:`_pack`.
        positions: Per posting its position.

    Returns:
        ``(keys, pointers, positions)``: the sorted distinct keys, where each key's positions
        start (one more entry for the end), and the positions, each key's ascending.
    """
    position_bits = max(1, int(positions.max()).bit_length()) if len(positions) else 1
    if int(packed.max()).bit_length() + position_bits <= 63:
        # One int64 per posting (key, then position): one sort orders keys and positions.
        merged = np.sort((packed << position_bits) | positions)
        flat = merged & ((1 << position_bits) - 1)
        codes = merged >> position_bits
    else:
        order = np.lexsort((positions, packed))
        flat, codes = positions[order], packed[order]
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))[: len(codes)])
    return codes[starts], np.append(starts, len(flat)), flat


def _pack(key: tuple[int, ...], bits: int, width: int) -> int | None:
    """The packed form of a key (``None``: a token that needs more than ``bits`` bits)."""
    if not key or len(key) > width or bits <= 0:
        return None
    packed = len(key)
    for i in range(width):
        token = key[i] + 2 if i < len(key) else 0
        if token < 0 or token >= 1 << bits:
            return None
        packed = (packed << bits) | token
    return packed


def _unpack(keys: np.ndarray, bits: int, width: int) -> list[tuple[int, ...]]:
    """The key tuples of packed keys."""
    mask = (1 << bits) - 1
    columns = [(keys >> (bits * (width - 1 - i))) & mask for i in range(width)]
    lengths = (keys >> (bits * width)).tolist()
    rows = (np.stack(columns, axis=1) - 2).tolist() if len(keys) else []
    return [tuple(row[:k]) for row, k in zip(rows, lengths, strict=True)]
