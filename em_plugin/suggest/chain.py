"""The suggestion chain: suggesters in order, duplicates removed (docs/suggestions.md).

There are three named chains (:data:`CHAINS`, built by :func:`build_chain`):

* ``continuation`` (the default): episodic (continuation model) → procedural → fallback;
* ``paper``: the paper's rule as written (:class:`PaperSuggester`) → fallback, for reference;
* ``llm``: the LLM suggester first (the paper's design: the model writes the suggestions from
  the retrieved workflows, or from the crew description), then the ``continuation`` chain fills
  the remaining places and takes over when the model fails (Figure 4's deterministic path).

Each suggestion names the suggester that produced it (:attr:`Suggestion.source`). A suggestion
whose tool, or (without a tool) whose text, was already suggested is dropped. Every suggester's
output then goes through the same three steps: the evidence rules
(:mod:`em_plugin.suggest.evidence`), the lift to the user's level
(:mod:`em_plugin.suggest.user_level`) and argument binding (:mod:`em_plugin.suggest.arguments`),
then the suggester's own last step, :meth:`~em_plugin.suggest.base.BaseSuggester.finish` (the
episodic suggester keeps the evidence the paper's rule lets it cite).

:func:`build_chain` takes ``extra=[...]``: suggesters added to a named chain ahead of its own.
A chain collects the per-scope models its suggesters declare (:meth:`SuggestionChain.scope_models`)
for the memory's scopes to build.

A remote suggester's suggestion that names no tool and cites no workflow (an LLM's free text,
:func:`~em_plugin.suggest.llm.is_grounded`) never outranks evidence: it is held back until every
suggester has run, and fills only the places left.

When the LLM suggester fails, the chain logs the failure and goes on with the deterministic
suggesters, unless ``raise_suggester_errors`` is set (then the :class:`SuggestionError`
propagates; ``EpisodicMemory(raise_suggester_errors=...)`` spells it the same way). It was
``strict`` before this release, a name the integrations use for memory failures.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

from em_plugin._deprecation import deprecated
from em_plugin.errors import ConfigurationError, SuggestionError
from em_plugin.state.scope_models import ScopeModelSpec
from em_plugin.suggest.arguments import bind_arguments
from em_plugin.suggest.base import BaseSuggester, Suggester, SuggestionRequest
from em_plugin.suggest.cited import CitedWorkflows
from em_plugin.suggest.episodic import EpisodicSuggester
from em_plugin.suggest.evidence import admissible, repeat_needs_support
from em_plugin.suggest.fallback import FallbackSuggester
from em_plugin.suggest.llm import LLMSuggester, is_grounded
from em_plugin.suggest.outcomes import weigh_outcomes
from em_plugin.suggest.paper import PaperSuggester
from em_plugin.suggest.procedural import ProceduralSuggester
from em_plugin.suggest.types import Suggestion
from em_plugin.suggest.user_level import handoff_routes, lift, nested_routes

__all__ = ["CHAINS", "DEFAULT_CHAIN", "SuggestionChain", "build_chain", "default_chain"]

#: The named chains, for ``EpisodicMemory(chain=...)`` and ``em-plugin eval --chain``.
CHAINS: tuple[str, ...] = ("continuation", "llm", "paper")
DEFAULT_CHAIN = "continuation"

log = logging.getLogger(__name__)

#: The members of the Suggester protocol, named when an item lacks some.
_MEMBERS = ("name", "remote", "suggest", "asuggest")


def _key(suggestion: Suggestion) -> tuple[str, str]:
    if suggestion.tool:
        return ("tool", suggestion.tool)
    return ("text", " ".join(suggestion.text.casefold().split()))


def _checked(suggester: object) -> Suggester:
    if isinstance(suggester, Suggester):
        return suggester
    if callable(getattr(suggester, "suggest", None)):
        # Before the protocol had remote and asuggest, a suggester was anything with suggest():
        # such a one keeps working, as a local suggester, for one release.
        warnings.warn(
            f"{type(suggester).__name__} only has suggest(); subclass "
            "em_plugin.suggest.BaseSuggester (the bare form goes in the next release)",
            DeprecationWarning,
            stacklevel=4,
        )
        return _Legacy(suggester)
    missing = [m for m in _MEMBERS if not hasattr(suggester, m)]
    raise ConfigurationError(
        f"{suggester!r} is not a Suggester (it lacks {', '.join(missing)}); "
        "subclass em_plugin.suggest.BaseSuggester and implement suggest()"
    )


class _Legacy(BaseSuggester):
    """A suggester written before the protocol was complete (``suggest`` only)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Call the wrapped suggester."""
        found: list[Suggestion] = self.inner.suggest(request, limit)
        return found


class SuggestionChain:
    """Runs suggesters in order and merges their suggestions without duplicates.

    Args:
        suggesters: The suggesters, highest priority first.
        raise_suggester_errors: Let a failing suggester's :class:`SuggestionError` propagate
            instead of going on with the next suggester.
        name: The chain's name (one of :data:`CHAINS` for the built-in ones).
        strict: Deprecated spelling of ``raise_suggester_errors`` (warns).

    Raises:
        ConfigurationError: When an item is not a :class:`Suggester`, when two suggesters
            declare different per-scope models under one name, or on both
            ``raise_suggester_errors`` and ``strict``.
    """

    def __init__(
        self,
        suggesters: Sequence[Suggester],
        *,
        raise_suggester_errors: bool = False,
        name: str = "custom",
        strict: bool | None = None,
    ) -> None:
        self.suggesters = tuple(_checked(suggester) for suggester in suggesters)
        self.raise_suggester_errors = _renamed_strict(
            "SuggestionChain", raise_suggester_errors, strict
        )
        self.name = name
        self.cited = CitedWorkflows()
        self._models = _declared_models(self.suggesters)

    def scope_models(self) -> tuple[ScopeModelSpec, ...]:
        """Return the per-scope models the suggesters declare, each name once, in chain order.

        A memory's scopes build these and keep them up to date (``BaseSuggester.scope_models``).
        """
        return self._models

    @property
    def strict(self) -> bool:
        """Deprecated alias of :attr:`raise_suggester_errors`."""
        deprecated("SuggestionChain.strict", "SuggestionChain.raise_suggester_errors")
        return self.raise_suggester_errors

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
        held: list[Suggestion] = []
        last = repeat_needs_support(request)
        routes = self._routes(request)
        for suggester in self.suggesters:
            if limit is not None and len(merged) >= limit:
                break
            if guard is None:
                called = self._call(suggester, request, limit)
                refined = self._refine(suggester, request, called, last, routes)
                self._merge(merged, _hold_back(suggester, refined, held))
                continue
            found = self._call(suggester, request, limit) if suggester.remote else None
            with guard:
                if found is None:
                    found = self._call(suggester, request, limit)
                refined = self._refine(suggester, request, found, last, routes)
                self._merge(merged, _hold_back(suggester, refined, held))
        self._merge(merged, held)
        if guard is None:
            ranked = weigh_outcomes(request, list(merged.values()))
        else:
            with guard:
                ranked = weigh_outcomes(request, list(merged.values()))
        return ranked[:limit] if limit is not None else ranked

    async def asuggest(
        self,
        request: SuggestionRequest,
        limit: int | None = 3,
        *,
        offload: Callable[[Callable[[], list[Suggestion]]], Awaitable[list[Suggestion]]]
        | None = None,
    ) -> list[Suggestion]:
        """Async twin of :meth:`suggest`.

        Remote suggesters (the LLM) are awaited through ``asuggest``; the others are called
        through ``offload`` when given (e.g. in a worker thread holding the memory's lock).
        """
        merged: dict[tuple[str, str], Suggestion] = {}
        held: list[Suggestion] = []
        last = repeat_needs_support(request)
        routes = self._routes(request)
        for suggester in self.suggesters:
            if limit is not None and len(merged) >= limit:
                break
            if suggester.remote:
                try:
                    found = await suggester.asuggest(request, limit)
                except SuggestionError as exc:
                    found = self._failed(suggester, exc)
                found = (
                    await offload(partial(self._refine, suggester, request, found, last, routes))
                    if offload is not None
                    else self._refine(suggester, request, found, last, routes)
                )
            elif offload is not None:
                found = await offload(
                    partial(self._called_refined, suggester, request, limit, last, routes)
                )
            else:
                found = self._called_refined(suggester, request, limit, last, routes)
            self._merge(merged, _hold_back(suggester, found, held))
        self._merge(merged, held)
        values = list(merged.values())
        ranked = (
            await offload(partial(weigh_outcomes, request, values))
            if offload is not None
            else weigh_outcomes(request, values)
        )
        return ranked[:limit] if limit is not None else ranked

    @staticmethod
    def _routes(request: SuggestionRequest) -> dict[str, str]:
        """Handoff routes of this round: the crew description's, else what the workflows show."""
        routes = handoff_routes(request.crew)
        return routes if routes else nested_routes(request.workflow)

    def _learn_routes(
        self, request: SuggestionRequest, found: list[Suggestion], routes: dict[str, str]
    ) -> None:
        """Add the handoffs the cited workflows show (a crew with no description names none)."""
        if request.crew is not None and request.crew.tool_names:
            return
        view = request.view
        for workflow_id in dict.fromkeys(e.workflow_id for s in found for e in s.evidence):
            # The index keeps each stored workflow's routes: parse the workflow only when they
            # are unknown (an index written before routes were kept).
            known = view.routes(workflow_id) if view is not None else None
            if known is None:
                workflow, _ = self.cited._get(request, workflow_id)
                known = nested_routes(workflow) if workflow is not None else {}
            for tool, route in known.items():
                routes.setdefault(tool, route)

    def _refine(
        self,
        suggester: Suggester,
        request: SuggestionRequest,
        found: list[Suggestion],
        last: str | None,
        routes: dict[str, str],
    ) -> list[Suggestion]:
        """Apply the evidence rules, lift to the user's level, bind arguments, then ``finish``.

        ``routes`` (sub-agent tool -> handoff) grows with the workflows this round cites, so
        that a later suggester's evidence-free suggestion of a sub-agent's tool is lifted too.
        """
        out = []
        self._learn_routes(request, found, routes)
        if request.prefetch is not None:
            # Lifting and binding read each suggestion's first cited workflow, and outcomes
            # (weigh_outcomes) every cited one: fetch them in one go (a remote store answers
            # one request instead of one per workflow).
            request.prefetch(list(dict.fromkeys(e.workflow_id for s in found for e in s.evidence)))
        for suggestion in found:
            if not admissible(request, suggestion, last):
                continue
            if not suggestion.evidence and not routes and not suggestion.args:
                out.append(suggestion)  # nothing to lift or bind (the common fallback case)
                continue
            lifted = lift(request, suggestion, self.cited, routes)
            out.append(bind_arguments(request, lifted, self.cited))
        # The rules and the lift read every supporting position; the suggester's own last step
        # comes after them (the episodic suggester cites what the paper's rule allows).
        finish = getattr(suggester, "finish", None)
        return finish(request, out) if finish is not None else out

    def _called_refined(
        self,
        suggester: Suggester,
        request: SuggestionRequest,
        limit: int | None,
        last: str | None,
        routes: dict[str, str],
    ) -> list[Suggestion]:
        return self._refine(suggester, request, self._call(suggester, request, limit), last, routes)

    def _call(
        self, suggester: Suggester, request: SuggestionRequest, limit: int | None
    ) -> list[Suggestion]:
        try:
            return suggester.suggest(request, limit)
        except SuggestionError as exc:
            return self._failed(suggester, exc)

    def _failed(self, suggester: Suggester, exc: SuggestionError) -> list[Suggestion]:
        if self.raise_suggester_errors:
            raise exc
        log.warning("suggester %s failed (%s); using the others", suggester.name, exc)
        return []

    @staticmethod
    def _merge(merged: dict[tuple[str, str], Suggestion], found: list[Suggestion]) -> None:
        for suggestion in found:
            merged.setdefault(_key(suggestion), suggestion)


def _hold_back(
    suggester: Suggester, found: list[Suggestion], held: list[Suggestion]
) -> list[Suggestion]:
    """Return what ranks now; put a remote suggester's ungrounded suggestions on ``held``."""
    if not suggester.remote:
        return found
    held.extend(s for s in found if not is_grounded(s))
    return [s for s in found if is_grounded(s)]


def _declared_models(suggesters: Sequence[Suggester]) -> tuple[ScopeModelSpec, ...]:
    """The suggesters' per-scope models, each name once (first declaration, chain order).

    Raises:
        ConfigurationError: When a declaration is not a model spec, or two suggesters declare
            different models under one name.
    """
    found: dict[str, tuple[ScopeModelSpec, str]] = {}
    for suggester in suggesters:
        for spec in getattr(suggester, "scope_models", ()):
            if not isinstance(spec, ScopeModelSpec):
                raise ConfigurationError(
                    f"suggester {suggester.name!r} declares {spec!r} in scope_models, which is "
                    "not a model spec: give it a name and a build(scope) method "
                    "(em_plugin.state.scope_models.ScopeModelSpec)"
                )
            held = found.setdefault(spec.name, (spec, suggester.name))
            if held[0] != spec:
                raise ConfigurationError(
                    f"suggesters {held[1]!r} and {suggester.name!r} declare different models "
                    f"named {spec.name!r}: {held[0]!r} and {spec!r}; give one another name"
                )
    return tuple(spec for spec, _ in found.values())


def _renamed_strict(owner: str, raise_suggester_errors: bool, strict: bool | None) -> bool:
    """``raise_suggester_errors``, or the deprecated ``strict`` (warned) when it is given.

    The warning points at the caller of ``owner`` (``owner`` calls this directly).
    """
    if strict is None:
        return raise_suggester_errors
    if raise_suggester_errors:
        raise ConfigurationError(
            f"{owner} got both raise_suggester_errors= and strict=: pass raise_suggester_errors="
        )
    deprecated(f"{owner}(strict=...)", f"{owner}(raise_suggester_errors=...)", stacklevel=4)
    return strict


def build_chain(
    name: str = DEFAULT_CHAIN,
    llm: Any = None,
    *,
    extra: Sequence[Suggester] = (),
    raise_suggester_errors: bool = False,
    strict: bool | None = None,
) -> SuggestionChain:
    """Build a named chain (see the module doc).

    Args:
        name: One of :data:`CHAINS`.
        llm: The chat model of the ``llm`` chain (a LangChain or BeeAI chat model, a callable,
            or an :class:`LLMSuggester`); with ``paper`` it goes first too (the paper's flow).
        extra: Suggesters added to the named chain, in order, ahead of its own (after the LLM
            suggester of ``llm``): a suggester added on purpose is trusted first, and the
            episodic suggester, which ranks every tool of the scope, would otherwise leave it
            no place. Their declared per-scope models come with them. For another order, build
            a :class:`SuggestionChain` from a list.
        raise_suggester_errors: See :class:`SuggestionChain`.
        strict: Deprecated spelling of ``raise_suggester_errors`` (warns).

    Returns:
        The chain.

    Raises:
        ConfigurationError: An unknown name, ``llm`` without a chat model, a chat model
            given to the ``continuation`` chain (which would silently ignore it), an ``extra``
            item that is not a :class:`Suggester` or declares a model in conflict with the
            chain's, or both ``raise_suggester_errors`` and ``strict``.
    """
    raise_suggester_errors = _renamed_strict("build_chain", raise_suggester_errors, strict)
    if name not in CHAINS:
        raise ConfigurationError(f"unknown chain {name!r}; choose from {', '.join(CHAINS)}")
    if name == "llm" and llm is None:
        raise ConfigurationError("chain 'llm' needs a chat model (llm=...)")
    if name == "continuation" and llm is not None:
        raise ConfigurationError(
            "chain 'continuation' uses no chat model; pass chain='llm' to use llm=..."
        )
    suggesters: list[Suggester]
    if name == "paper":
        suggesters = [*extra, PaperSuggester(), FallbackSuggester()]
    else:
        suggesters = [*extra, EpisodicSuggester(), ProceduralSuggester(), FallbackSuggester()]
    if llm is not None:
        suggesters.insert(0, llm if isinstance(llm, LLMSuggester) else LLMSuggester(llm))
    return SuggestionChain(suggesters, raise_suggester_errors=raise_suggester_errors, name=name)


def default_chain(
    llm: Any = None,
    *,
    extra: Sequence[Suggester] = (),
    raise_suggester_errors: bool = False,
    strict: bool | None = None,
) -> SuggestionChain:
    """Build the default chain: ``llm`` with a chat model, else ``continuation``.

    Args:
        llm: A chat model (see :class:`LLMSuggester`), or ``None`` for the deterministic chain.
        extra: Suggesters added ahead of the chain's own (see :func:`build_chain`).
        raise_suggester_errors: See :class:`SuggestionChain`.
        strict: Deprecated spelling of ``raise_suggester_errors`` (warns).

    Raises:
        ConfigurationError: On both ``raise_suggester_errors`` and ``strict``.
    """
    raise_suggester_errors = _renamed_strict("default_chain", raise_suggester_errors, strict)
    name = "continuation" if llm is None else "llm"
    return build_chain(name, llm, extra=extra, raise_suggester_errors=raise_suggester_errors)
