"""The rules every suggestion of the chain obeys, whichever suggester made it.

* A memory suggestion (episodic, paper rule, procedural) exists only when at least one stored
  workflow supports it, and it cites that workflow: one without evidence is dropped.
* No suggestion scores 0 (or less): a score of 0 says that nothing supports it.
* The step just taken (the current workflow's last leaf, when it is a call) is suggested again
  only when a cited stored workflow repeats it at that point (the cited leaf is a call of the
  same tool right after a call of that tool), or when the current workflow has already repeated
  it (two calls of it in a row: the session is in a loop that memory need not confirm).
"""

from __future__ import annotations

from em_plugin.suggest.base import SuggestionRequest
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep

__all__ = ["MEMORY_SOURCES", "admissible", "just_taken", "repeat_needs_support", "repeats_here"]

#: Sources whose suggestions must cite stored workflows.
MEMORY_SOURCES = frozenset({"episodic", "paper", "procedural"})


def just_taken(request: SuggestionRequest) -> str | None:
    """The tool of the current workflow's last leaf, or ``None`` when that leaf is no call."""
    leaves = request.workflow.leaves()
    last = leaves[-1] if leaves else None
    return last.name if isinstance(last, CallStep) else None


def repeat_needs_support(request: SuggestionRequest) -> str | None:
    """The step just taken, unless the current workflow already called it twice in a row.

    Returns:
        The tool whose repetition a suggestion must show in a cited stored workflow, or
        ``None`` when no such check applies.
    """
    last = just_taken(request)
    if last is None:
        return None
    tools = [s.name if isinstance(s, CallStep) else None for s in request.workflow.leaves()]
    looping = any(a == b == last for a, b in zip(tools, tools[1:], strict=False))
    return None if looping else last


def repeats_here(request: SuggestionRequest, suggestion: Suggestion) -> bool:
    """Whether a cited stored workflow calls ``suggestion.tool`` right after calling it."""
    view = request.view
    if view is None:
        return False
    for evidence in suggestion.evidence:
        episode = view.episode(evidence.workflow_id)
        if episode is None or not 0 < evidence.position < len(episode):
            continue
        here = episode.tools[evidence.position]
        if here == suggestion.tool and episode.tools[evidence.position - 1] == suggestion.tool:
            return True
    return False


def admissible(request: SuggestionRequest, suggestion: Suggestion, last: str | None) -> bool:
    """Whether a suggestion obeys the rules of the module doc.

    Args:
        request: The current workflow and memory.
        suggestion: A suggestion from any suggester.
        last: The step just taken, when repeating it needs support
            (:func:`repeat_needs_support`).

    Returns:
        ``False`` for a memory suggestion without evidence, a score of 0 or less, or the step
        just taken when no cited workflow repeats it there.
    """
    if suggestion.score <= 0:
        return False
    if suggestion.source in MEMORY_SOURCES and not suggestion.evidence:
        return False
    if suggestion.tool is not None and suggestion.tool == last:
        return repeats_here(request, suggestion)
    return True
