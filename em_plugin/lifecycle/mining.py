"""Procedures mined from repetition: tool sequences that recur across a scope's workflows.

A workflow's leaf sequence is split into runs of consecutive call leaves (an instruction leaf
ends a run). Every contiguous sub-run of 2 to :data:`MAX_LENGTH` tools is a pattern; a pattern in
at least :data:`MIN_SUPPORT` distinct workflows is a candidate procedure. Only **closed** patterns
are kept: a pattern is dropped when one tool longer pattern containing it has the same support
(it adds nothing that the longer one does not say).

Mining reads the step index, never the store, and counts with numpy: per length, every window
of consecutive calls is paired with its workflow and the distinct pairs are found by one sort,
so identical sequences cost no Python work per workflow (``benchmarks/procedure_mining.py``
measures it against a per-workflow enumeration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from em_plugin.state.scope_index import ScopeIndex

__all__ = ["MAX_LENGTH", "MIN_SUPPORT", "Pattern", "Uses", "mine", "occurrences", "outcomes"]

#: Longest tool sequence considered.
MAX_LENGTH = 8
#: Distinct workflows a pattern needs to become a candidate.
MIN_SUPPORT = 2


@dataclass(frozen=True)
class Uses:
    """Outcomes of the workflows a pattern occurs in."""

    uses: int
    successes: int


@dataclass(frozen=True)
class Pattern:
    """A recurring tool sequence and the workflows it occurs in."""

    tools: tuple[str, ...]
    workflows: tuple[str, ...]

    @property
    def support(self) -> int:
        """How many distinct workflows contain it."""
        return len(self.workflows)


def _call_runs(codes: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf: its workflow's number, and the call leaves that follow it.

    The count is of the call leaves of the same workflow that follow from it without an instruction
    leaf in between (0 on an instruction leaf).
    """
    size = len(codes)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    ends = np.repeat(np.cumsum(lengths), lengths)  # one past the workflow's last leaf
    barrier = np.where(codes >= 0, size, np.arange(size))
    # The first instruction leaf at or after each position (or the end of the leaves).
    following = np.minimum.accumulate(barrier[::-1])[::-1] if size else barrier
    return owner, np.minimum(following, ends) - np.arange(size)


def mine(
    index: ScopeIndex | None,
    *,
    min_support: int = MIN_SUPPORT,
    max_length: int = MAX_LENGTH,
    limit: int | None = None,
) -> list[Pattern]:
    """Return the closed recurring tool sequences of a scope, best supported first.

    Windows of consecutive call leaves get integer ids length by length (a window's id is the
    rank of ``(id of its first length - 1 tools, its last tool)``), and ``(id, workflow)`` pairs
    are made distinct by one integer sort per length: no Python work per workflow or window.

    Args:
        index: The scope's step index (``None``: an empty scope).
        min_support: Distinct workflows a pattern needs.
        max_length: Longest pattern.
        limit: Return only this many (the best supported); closedness is still decided over
            every pattern.

    Returns:
        Patterns by support (descending), then length (descending), then tools.
    """
    if index is None or not len(index):
        return []
    ids, lengths, codes, *_ = index.live_leaves()
    owner, run = _call_runs(codes, lengths)
    codes64 = codes.astype(np.int64)
    width = max(len(index.tools), 1)
    workflows = max(len(lengths), 1)
    starts = np.flatnonzero(run >= 1)
    window = codes64[starts]  # per start, the id of the window of the current length
    levels: list[_Level] = []
    for length in range(2, max_length + 1):
        keep = run[starts] >= length
        starts, window = starts[keep], window[keep]
        if not len(starts):
            break
        previous = levels[-1] if levels else None
        _, inverse = np.unique(window * width + codes64[starts + length - 1], return_inverse=True)
        window = inverse.astype(np.int64).ravel()
        pairs = np.unique(window * workflows + owner[starts])
        level = _Level(length, np.bincount(pairs // workflows), pairs, workflows, min_support)
        level.first[window[::-1]] = starts[::-1]  # one start position of each window id
        level.at = np.full(len(codes), -1, dtype=np.int64)
        level.at[starts] = window
        if previous is not None:
            # A shorter pattern is not closed when a pattern one tool longer that contains it
            # (as its prefix or its suffix) has the same support.
            longer = np.flatnonzero(level.closed)
            support = level.support[longer]
            for shift in (0, 1):
                shorter = previous.at[level.first[longer] + shift]
                same = previous.support[shorter] == support
                previous.closed[shorter[same]] = False
        levels.append(level)
    ranked = sorted(
        ((-int(level.support[j]), -level.length, i, j) for i, level in enumerate(levels)
         for j in np.flatnonzero(level.closed).tolist()),
    )  # fmt: skip
    if limit is not None and len(ranked) > limit:
        # Ties at the cut are ordered by tools below, so keep every pattern tied with the last.
        floor = ranked[limit - 1][:2]
        ranked = [r for r in ranked if r[:2] <= floor]
    out = []
    for _, _, i, j in ranked:
        level = levels[i]
        at = int(level.first[j])
        members = level.members(j)
        out.append(
            Pattern(
                tuple(index.tools[c] for c in codes[at : at + level.length].tolist()),
                tuple(sorted(ids[m] for m in members.tolist())),
            )
        )
    out.sort(key=lambda p: (-p.support, -len(p.tools), p.tools))
    return out if limit is None else out[:limit]


class _Level:
    """The windows of one length: per window id its support, one start, whether it is closed."""

    def __init__(
        self, length: int, support: np.ndarray, pairs: np.ndarray, workflows: int, floor: int
    ) -> None:
        self.length = length
        self.support = support
        self.closed = support >= floor  # frequent, until a longer pattern says otherwise
        self.first = np.full(len(support), -1, dtype=np.int64)
        self.at = np.zeros(0, dtype=np.int64)
        self._pairs = pairs
        self._workflows = workflows

    def members(self, window: int) -> np.ndarray:
        """The workflows (positions in the index's live order) holding a window id."""
        bounds = [window * self._workflows, (window + 1) * self._workflows]
        lo, hi = np.searchsorted(self._pairs, bounds)
        return self._pairs[lo:hi] % self._workflows


def occurrences(index: ScopeIndex | None, tools: Sequence[str]) -> Pattern:
    """Return the workflows of a scope whose call runs contain ``tools`` in order."""
    if index is None or not len(index) or any(t not in index.tool_ids for t in tools):
        return Pattern(tuple(tools), ())
    ids, lengths, codes, *_ = index.live_leaves()
    owner, run = _call_runs(codes, lengths)
    wanted = np.array([index.tool_ids[t] for t in tools], dtype=codes.dtype)
    starts = np.flatnonzero(run >= len(wanted))
    rows = codes[starts[:, None] + np.arange(len(wanted))]
    hits = np.unique(owner[starts[np.all(rows == wanted, axis=1)]])
    return Pattern(tuple(tools), tuple(sorted(ids[i] for i in hits.tolist())))


def outcomes(
    pattern: Pattern,
    failures: Mapping[str, set[str]],
    known: Mapping[str, str] | None = None,
) -> Uses:
    """Count a pattern's uses and successes over its workflows.

    A workflow with an outcome (``known``: ``"success"``, ``"failure"``, ``"abandoned"``) counts
    by it; one without counts as a failure when a call of one of the pattern's tools failed in
    it (``failures``: workflow id -> failed tool names), else as a success.
    """
    tools = set(pattern.tools)
    successes = 0
    for workflow_id in pattern.workflows:
        outcome = (known or {}).get(workflow_id)
        if outcome is None:
            outcome = "failure" if failures.get(workflow_id, set()) & tools else "success"
        successes += outcome == "success"
    return Uses(len(pattern.workflows), successes)
