"""Retrieval for long workflows: the recent leaves, when the whole workflow matches nothing.

The paper's rule (docs/retrieval.md) aligns the *whole* current leaf sequence with each stored
one. A long session (many requests, or a long tool chain) rarely has a stored workflow that
holds all of it above ``T``: on the repository's long airline sessions retrieval finds nothing
for half of the targets after ten leaves, and the suggestions then cite nothing
(docs/retrieval.md, "Recent leaves"). When the whole matches nothing, the same rule is applied
to the last ``n // 2`` leaves, then ``n // 4``, ... down to :data:`SHORTEST` leaves (the
``window`` of :class:`~em_plugin.retrieval.reference.MatchConfig`); the longest window that
retrieves anything is used. Its matches are ordinary matches of that window: their score is
the mean step similarity over the window, they pass ``T``, and their continuation starts after
the stored leaf matched to the current last leaf, as for the whole workflow.
"""

from __future__ import annotations

from collections.abc import Callable

from em_plugin.retrieval.reference import Match

__all__ = ["SHORTEST", "retrieve_recent", "windows"]

#: The shortest window tried: one leaf matches too much to be evidence of anything.
SHORTEST = 2


def windows(length: int, *, shortest: int = SHORTEST) -> list[int]:
    """Return the window sizes tried for ``length`` leaves, longest first.

    Args:
        length: Leaves of the current workflow (or of its configured window).
        shortest: The smallest window.

    Returns:
        ``length // 2``, ``length // 4``, ... while at least ``shortest``.
    """
    out = []
    size = length // 2
    while size >= max(shortest, 1):
        out.append(size)
        size //= 2
    return out


def retrieve_recent(
    match: Callable[[int | None], list[Match]], length: int, *, window: int | None = None
) -> tuple[list[Match], int | None]:
    """Retrieve for the whole workflow, else for its longest recent window that matches.

    Args:
        match: The paper's rule on the last ``k`` leaves of the current workflow (``None``:
            all of them).
        length: Leaves of the current workflow.
        window: The configured window (``RetrievalSettings.window``; ``None``: all leaves).

    Returns:
        The matches and the window they are for (``window`` when it matched or nothing did).
    """
    found = match(window)
    if found:
        return found, window
    for size in windows(min(length, window or length)):
        found = match(size)
        if found:
            return found, size
    return [], window
