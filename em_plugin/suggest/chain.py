"""The suggestion chain: suggesters in order, duplicates removed (DESIGN §8).

The default chain is episodic → procedural → fallback; with a chat model configured, the LLM
suggester goes first (the paper's design: the model writes the suggestions from the retrieved
workflows) and the deterministic ones fill the remaining places. A suggestion whose tool, or
(without a tool) whose text, was already suggested is dropped.

When the LLM suggester fails, the chain logs the failure and goes on with the deterministic
suggesters, unless ``strict`` is set (then the :class:`SuggestionError` propagates).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

from em_plugin.errors import ConfigurationError, SuggestionError
from em_plugin.suggest.base import Suggester, SuggestionRequest
from em_plugin.suggest.episodic import EpisodicSuggester
from em_plugin.suggest.fallback import FallbackSuggester
from em_plugin.suggest.llm import LLMSuggester
from em_plugin.suggest.procedural import ProceduralSuggester
from em_plugin.suggest.types import Suggestion

__all__ = ["SuggestionChain", "default_chain"]

log = logging.getLogger(__name__)


def _key(suggestion: Suggestion) -> tuple[str, str]:
    if suggestion.tool:
        return ("tool", suggestion.tool)
    return ("text", " ".join(suggestion.text.casefold().split()))


class SuggestionChain:
    """Runs suggesters in order and merges their suggestions without duplicates.

    Args:
        suggesters: The suggesters, highest priority first.
        strict: Let a failing suggester's :class:`SuggestionError` propagate.

    Raises:
        ConfigurationError: When a suggester lacks ``suggest``.
    """

    def __init__(self, suggesters: Sequence[Suggester], *, strict: bool = False) -> None:
        for suggester in suggesters:
            if not callable(getattr(suggester, "suggest", None)):
                raise ConfigurationError(f"{suggester!r} has no suggest(request, limit) method")
        self.suggesters = tuple(suggesters)
        self.strict = strict

    def suggest(
        self,
        request: SuggestionRequest,
        limit: int | None = 3,
        *,
        guard: AbstractContextManager[Any] | None = None,
    ) -> list[Suggestion]:
        """Return at most ``limit`` merged suggestions (all of them for ``None``).

        Args:
            request: The current workflow and memory.
            limit: How many suggestions.
            guard: Held around the suggesters that read memory (all but remote ones such as
                the LLM), e.g. the memory's lock; a slow chat model then blocks nobody.
        """
        merged: dict[tuple[str, str], Suggestion] = {}
        for suggester in self.suggesters:
            if limit is not None and len(merged) >= limit:
                break
            if guard is None or getattr(suggester, "remote", False):
                self._merge(merged, self._call(suggester, request, limit))
                continue
            with guard:
                self._merge(merged, self._call(suggester, request, limit))
        return list(merged.values())[:limit] if limit is not None else list(merged.values())

    async def asuggest(
        self,
        request: SuggestionRequest,
        limit: int | None = 3,
        *,
        offload: Callable[[Callable[[], list[Suggestion]]], Awaitable[list[Suggestion]]]
        | None = None,
    ) -> list[Suggestion]:
        """Async twin of :meth:`suggest`.

        Suggesters with ``asuggest`` (the LLM) are awaited; the others are called through
        ``offload`` when given (e.g. in a worker thread holding the memory's lock).
        """
        merged: dict[tuple[str, str], Suggestion] = {}
        for suggester in self.suggesters:
            if limit is not None and len(merged) >= limit:
                break
            asuggest = getattr(suggester, "asuggest", None)
            if asuggest is not None:
                try:
                    found = await asuggest(request, limit)
                except SuggestionError as exc:
                    found = self._failed(suggester, exc)
            elif offload is not None:
                found = await offload(partial(self._call, suggester, request, limit))
            else:
                found = self._call(suggester, request, limit)
            self._merge(merged, found)
        return list(merged.values())[:limit] if limit is not None else list(merged.values())

    def _call(
        self, suggester: Suggester, request: SuggestionRequest, limit: int | None
    ) -> list[Suggestion]:
        try:
            return suggester.suggest(request, limit)
        except SuggestionError as exc:
            return self._failed(suggester, exc)

    def _failed(self, suggester: Any, exc: SuggestionError) -> list[Suggestion]:
        if self.strict:
            raise exc
        log.warning("suggester %s failed (%s); using the others", suggester.name, exc)
        return []

    @staticmethod
    def _merge(merged: dict[tuple[str, str], Suggestion], found: list[Suggestion]) -> None:
        for suggestion in found:
            merged.setdefault(_key(suggestion), suggestion)


def default_chain(llm: Any = None, *, strict: bool = False) -> SuggestionChain:
    """Build the default chain: [LLM →] episodic → procedural → fallback.

    Args:
        llm: A chat model (see :class:`LLMSuggester`), or ``None`` for the deterministic chain.
        strict: See :class:`SuggestionChain`.
    """
    suggesters: list[Suggester] = [EpisodicSuggester(), ProceduralSuggester(), FallbackSuggester()]
    if llm is not None:
        suggesters.insert(0, llm if isinstance(llm, LLMSuggester) else LLMSuggester(llm))
    return SuggestionChain(suggesters, strict=strict)
