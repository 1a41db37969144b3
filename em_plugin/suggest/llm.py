"""The LLM suggester: a chat model proposes next steps from retrieved workflows.

See docs/suggestions.md.

With retrieved workflows the prompt shows the current workflow and the retrieved ones (their
continuations marked); with none, the fallback prompt shows the crew description. The model is
reached through :class:`~em_plugin.suggest.chat.ChatModel`: LangChain and BeeAI chat models are
adapted by their integrations (see :mod:`em_plugin.suggest.chat`). A failing model or an answer
without a numbered list raises :class:`~em_plugin.errors.SuggestionError`.

Only a step that names a tool of the crew (or of the scope's memory, or one the current workflow
called) is *grounded*: it cites the retrieved workflows and is scored ``1 / rank``. A step that
names no such tool is the model's free text, which a small model fills with anything ("Toxicology
laboratory"): it comes after the grounded steps, cites nothing, scores a tenth of what its rank
would give (:data:`UNGROUNDED_WEIGHT`, so at most 0.1), and the chain ranks it after every
suggestion that has evidence or a tool (:mod:`em_plugin.suggest.chain`).
"""

from __future__ import annotations

from typing import Any

from em_plugin.errors import ConfigurationError
from em_plugin.suggest.base import BaseSuggester, SuggestionRequest, first
from em_plugin.suggest.chat import ChatModel, ainvoke_chat, as_chat_model, invoke_chat
from em_plugin.suggest.prompts import (
    SYSTEM_PROMPT,
    fallback_prompt,
    parse_numbered,
    retrieved_prompt,
)
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep, InstructionStep, Workflow

__all__ = ["UNGROUNDED_WEIGHT", "LLMSuggester", "is_grounded"]

#: The score of a step that names no known tool, as a share of ``1 / rank``.
UNGROUNDED_WEIGHT = 0.1


class LLMSuggester(BaseSuggester):
    """Asks a chat model for the next steps.

    Args:
        model: A :class:`~em_plugin.suggest.chat.ChatModel`, or anything
            :func:`~em_plugin.suggest.chat.as_chat_model` adapts (a LangChain or BeeAI chat
            model with its integration installed, a callable ``messages -> str``).
        limit: How many steps to ask for.
        max_workflows: How many retrieved workflows go into the prompt.

    Raises:
        ConfigurationError: When no adapter takes ``model`` or a number is below 1.
    """

    name = "llm"
    remote = True  # a slow call: the chain does not hold the memory's lock around it

    def __init__(self, model: Any, *, limit: int = 3, max_workflows: int = 5) -> None:
        if model is None:
            raise ConfigurationError("LLMSuggester needs a chat model")
        if limit < 1 or max_workflows < 1:
            raise ConfigurationError("limit and max_workflows must be >= 1")
        self.model: ChatModel = as_chat_model(model)
        self.limit = limit
        self.max_workflows = max_workflows

    def messages(
        self, request: SuggestionRequest, limit: int | None = None
    ) -> list[tuple[str, str]]:
        """Return the ``(role, text)`` messages for a request; empty when there is nothing to ask.

        The retrieved-workflows prompt when memory matched something, else the crew prompt,
        else nothing (no crew and no match: the model would only guess).
        """
        count = limit or self.limit
        retrieved = self._retrieved(request)
        if retrieved:
            prompt = retrieved_prompt(request.workflow, retrieved, count)
        elif request.crew is not None:
            prompt = fallback_prompt(request.workflow, request.crew, count)
        else:
            return []
        return [("system", SYSTEM_PROMPT), ("human", prompt)]

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Ask the model (synchronously) and parse its numbered list."""
        messages = self.messages(request, limit)
        if not messages:
            return []
        return self._parse(invoke_chat(self.model, messages), request, limit)

    async def asuggest(
        self, request: SuggestionRequest, limit: int | None = None
    ) -> list[Suggestion]:
        """Async twin of :meth:`suggest`."""
        messages = self.messages(request, limit)
        if not messages:
            return []
        return self._parse(await ainvoke_chat(self.model, messages), request, limit)

    def _retrieved(self, request: SuggestionRequest) -> list[tuple[Workflow, int, float]]:
        out = []
        for match in request.matches[: self.max_workflows]:
            workflow = request.load(match.workflow_id) if request.load is not None else None
            if workflow is None and request.view is not None:
                workflow = _from_episode(request, match.workflow_id)
            if workflow is not None:
                out.append((workflow, match.end + 1, match.score))
        return out

    def _parse(
        self, answer: str, request: SuggestionRequest, limit: int | None
    ) -> list[Suggestion]:
        known = set(request.crew.tool_names) if request.crew is not None else set()
        if request.view is not None:
            known.update(request.view.tools())
        known.update(request.called)
        # Nothing known: every bracketed name would be taken, so none may ground a step.
        steps = parse_numbered(answer, known or {""})
        evidence = tuple(
            Evidence(m.workflow_id, m.end + 1, round(m.score, 6))
            for m in request.matches[: self.max_workflows]
        )
        grounded = [s for s in steps if s.tool is not None]
        return first(
            [
                Suggestion(step.text, step.tool, None, 1.0 / rank, "llm", evidence)
                for rank, step in enumerate(grounded, start=1)
            ]
            + [
                Suggestion(step.text, None, None, UNGROUNDED_WEIGHT / rank, "llm")
                for rank, step in enumerate(
                    (s for s in steps if s.tool is None), start=len(grounded) + 1
                )
            ],
            limit or self.limit,
        )


def is_grounded(suggestion: Suggestion) -> bool:
    """Tell whether a suggestion names a tool or cites a stored workflow.

    An LLM step that does neither is the model's free text (see the module doc): it must never
    rank above evidence.
    """
    return suggestion.tool is not None or bool(suggestion.evidence)


def _from_episode(request: SuggestionRequest, workflow_id: str) -> Workflow | None:
    """A stand-in workflow (calls only) when the stored one cannot be loaded."""
    assert request.view is not None
    episode = request.view.episode(workflow_id)
    if episode is None:
        return None
    steps = [
        CallStep(name=t) if t is not None else InstructionStep(text=c or "instruction")
        for t, c in zip(episode.tools, episode.contexts, strict=True)
    ]
    return Workflow(id=workflow_id, steps=tuple(steps))
