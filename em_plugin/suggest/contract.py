"""The suggester contract: checks every suggester must pass, runnable without pytest.

A suggester author runs them on a factory of the new suggester::

    from em_plugin.suggest.contract import run_contract

    failures = run_contract(MySuggester)
    assert not failures, failures

or, under pytest, one test per check::

    import pytest
    from em_plugin.suggest.contract import CHECKS

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
    def test_contract(check):
        check(MySuggester())

Each :class:`Check` takes a fresh suggester and raises :class:`SuggesterContractFailure` (an
``AssertionError``) when it breaks a promise. The checks run it on real scope state: a
:class:`~em_plugin.state.scope_memory.ScopeMemory` holding hand-made workflows
(:func:`sample_workflows`) and building the per-scope models the suggester declares
(``scope_models``), with retrieval by the paper's rule over the same arrays and a
deterministic embedder. They cover what the chain relies on: suggestions of the right type
with finite scores, ``limit`` respected, no exception on an empty scope or without one, only
workflows the scope holds cited (at positions they have), nothing read from another scope, the
declared models kept up to date by saves and deletes (the same answers as models built afresh),
no change to the scope, the same answer twice and from ``asuggest``. The recipes are in
docs/extending.md.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from em_plugin.embedding import FakeEmbedder
from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.retrieval.reference import MatchConfig
from em_plugin.state.matching import match_scope, query_leaves
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.state.scope_models import ScopeModelSpec
from em_plugin.suggest.base import Suggester, SuggestionRequest
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, InstructionStep, Workflow

__all__ = [
    "CHECKS",
    "Check",
    "SuggesterContractFailure",
    "run_contract",
    "sample_workflows",
]

#: The limits every check asks for, ``None`` (all) included.
_LIMITS: tuple[int | None, ...] = (None, 1, 2)
#: Scores compared across two builds of the models agree to this (a last-bit cosine).
_TOLERANCE = 1e-6


class SuggesterContractFailure(AssertionError):
    """A suggester broke the contract; the message says which promise."""


@dataclass(frozen=True)
class Check:
    """One named promise of the contract.

    Attributes:
        name: A short identifier, e.g. ``"respects_limit"``.
        run: Called with a fresh suggester; raises :class:`SuggesterContractFailure` on a
            broken promise.
    """

    name: str
    run: Callable[[Suggester], None]

    def __call__(self, suggester: Suggester) -> None:
        """Run the check on a suggester.

        Raises:
            SuggesterContractFailure: When the suggester breaks this promise.
        """
        self.run(suggester)


def _instr(text: str, *calls: CallStep) -> InstructionStep:
    return InstructionStep(text, calls)


def sample_workflows() -> dict[str, list[Workflow]]:
    """Return hand-made workflows of two scopes with no tool in common, by scope name.

    ``"chemistry"`` screens products for PFAS (instructions repeat, some workflows add a hazard
    step or repeat a call); ``"travel"`` books trips. The last workflow of each scope is the one
    the checks save and delete.
    """
    chemistry = [
        Workflow(
            id=f"screen-{i}",
            steps=(
                _instr(
                    f"extract the ingredients of product{i}.pdf",
                    CallStep("product_extractor", {"file": f"product{i}.pdf"}),
                ),
                _instr("which ingredients are PFAS", CallStep("pfas_classifier")),
                *(
                    (_instr("assess their hazards", CallStep("hazard_assessment")),)
                    if i % 2
                    else ()
                ),
                _instr("write it up", CallStep("markdown_table"), CallStep("markdown_table")),
            ),
        )
        for i in range(5)
    ]
    travel = [
        Workflow(
            id=f"trip-{i}",
            steps=(
                _instr(f"book a flight to city{i}", CallStep("search_flights"), CallStep("book")),
                _instr("pay for it", CallStep("charge_card")),
                *((_instr("tell the traveller", CallStep("send_email")),) if i % 2 else ()),
            ),
        )
        for i in range(4)
    ]
    return {"chemistry": chemistry, "travel": travel}


def _currents(scope: str) -> list[Workflow]:
    """Current workflows to ask about: empty, unfamiliar, and prefixes of a stored kind."""
    if scope == "travel":
        first = _instr("book a flight to city9", CallStep("search_flights"))
        prefixes = [(first,), (first, _instr("pay for it", CallStep("charge_card")))]
    else:
        first = _instr("extract the ingredients of beta.pdf", CallStep("product_extractor"))
        prefixes = [
            (first,),
            (first, _instr("which ingredients are PFAS", CallStep("pfas_classifier"))),
            (_instr("extract the ingredients of gamma.pdf"),),
        ]
    return [
        Workflow(id="current-empty"),
        Workflow(id="current-unfamiliar", steps=(_instr("what is the weather like on Mars"),)),
        *(Workflow(id=f"current-{i}", steps=steps) for i, steps in enumerate(prefixes)),
    ]


class _Scope:
    """A scope's state with the suggester's declared models, and requests over it."""

    def __init__(self, suggester: Suggester, workflows: Iterable[Workflow] = ()) -> None:
        self.embedder = CachedEmbedder(FakeEmbedder(64))
        self.specs = _declared(suggester)
        self.state = ScopeMemory(self.embedder.dimension, self.embedder.embed, models=self.specs)
        self.stored: dict[str, Workflow] = {}
        self.save(list(workflows))

    def save(self, workflows: Sequence[Workflow]) -> None:
        self.state.add_many(workflows)
        self.stored.update((w.id, w) for w in workflows)

    def delete(self, workflow_id: str) -> None:
        self.state.remove(workflow_id)
        del self.stored[workflow_id]

    def request(self, current: Workflow) -> SuggestionRequest:
        """What a memory hands its chain: retrieval by the paper's rule, the query, loaders."""
        config = MatchConfig()
        leaves = query_leaves(self.embedder, current)
        found = match_scope(leaves, self.state.arrays, config, "fast")
        matches = tuple(m for m in found if m.workflow_id != current.id)
        return SuggestionRequest(
            current,
            matches,
            self.state,
            self.state.query(current, exclude=(current.id,)),
            load=self.stored.get,
            prefetch=lambda ids: None,
            threshold=config.threshold,
        )


def _declared(suggester: Suggester) -> list[ScopeModelSpec]:
    specs = list(getattr(suggester, "scope_models", ()))
    for spec in specs:
        if not isinstance(spec, ScopeModelSpec):
            raise SuggesterContractFailure(
                f"scope_models holds {spec!r}, which has no name and build(scope) "
                "(em_plugin.state.scope_models.ScopeModelSpec)"
            )
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise SuggesterContractFailure(f"scope_models names a model twice: {names}")
    return specs


def _suggest(
    suggester: Suggester, request: SuggestionRequest, limit: int | None
) -> list[Suggestion]:
    try:
        found = suggester.suggest(request, limit)
    except Exception as exc:
        raise SuggesterContractFailure(
            f"suggest({request.workflow.id!r}, limit={limit}) raised {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(found, list):
        raise SuggesterContractFailure(f"suggest() returned {type(found).__name__}, not a list")
    return found


def _filled(suggester: Suggester, scope: str = "chemistry") -> _Scope:
    return _Scope(suggester, sample_workflows()[scope])


def _answers(suggester: Suggester, scope: _Scope, name: str) -> dict[str, list[Suggestion]]:
    return {c.id: _suggest(suggester, scope.request(c), None) for c in _currents(name)}


def _key(suggestion: Suggestion) -> tuple[Any, ...]:
    evidence = tuple(sorted((e.workflow_id, e.position) for e in suggestion.evidence))
    return (suggestion.tool or "", suggestion.text, suggestion.source, evidence)


def _same(a: Sequence[Suggestion], b: Sequence[Suggestion]) -> bool:
    """The same suggestions with the same scores (to a last-bit cosine), ties in any order."""
    if len(a) != len(b):
        return False
    first, second = sorted(a, key=_key), sorted(b, key=_key)
    return all(
        _key(x) == _key(y) and math.isclose(x.score, y.score, abs_tol=_TOLERANCE)
        for x, y in zip(first, second, strict=True)
    )


# ------------------------------------------------------------------------------------- checks


def check_declared_models_build(suggester: Suggester) -> None:
    """Its declared models have distinct names and build over an empty and a filled scope."""
    for workflows in ([], sample_workflows()["chemistry"]):
        try:
            scope = _Scope(suggester, workflows)
        except SuggesterContractFailure:
            raise
        except Exception as exc:
            raise SuggesterContractFailure(
                f"its models did not build over {len(workflows)} workflows: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        for spec in scope.specs:
            model = scope.state.model(spec.name)
            if not (callable(getattr(model, "added", None)) and callable(model.removed)):
                raise SuggesterContractFailure(f"model {spec.name!r} has no added()/removed()")


def check_returns_suggestions(suggester: Suggester) -> None:
    """It returns a list of Suggestion with text, a finite score and a source."""
    scope = _filled(suggester)
    for current, found in _answers(suggester, scope, "chemistry").items():
        for suggestion in found:
            if not isinstance(suggestion, Suggestion):
                raise SuggesterContractFailure(f"{current}: {suggestion!r} is not a Suggestion")
            if not suggestion.text or not isinstance(suggestion.text, str):
                raise SuggesterContractFailure(
                    f"{current}: a suggestion without text: {suggestion!r}"
                )
            if not math.isfinite(suggestion.score):
                raise SuggesterContractFailure(f"{current}: score {suggestion.score} is not finite")
            if not suggestion.source:
                raise SuggesterContractFailure(f"{current}: a suggestion without a source")


def check_respects_limit(suggester: Suggester) -> None:
    """``limit`` bounds the answer; ``None`` returns every suggestion."""
    scope = _filled(suggester)
    for current in _currents("chemistry"):
        request = scope.request(current)
        every = _suggest(suggester, request, None)
        for limit in _LIMITS[1:]:
            assert limit is not None
            found = _suggest(suggester, request, limit)
            if len(found) > limit:
                raise SuggesterContractFailure(
                    f"{current.id}: {len(found)} suggestions for limit={limit}"
                )
            if len(found) < min(limit, len(every)):
                raise SuggesterContractFailure(
                    f"{current.id}: {len(found)} suggestions for limit={limit}, while "
                    f"limit=None returns {len(every)}"
                )


def check_empty_scope(suggester: Suggester) -> None:
    """An empty scope, or none at all (no view, no query), is answered without an exception."""
    scope = _Scope(suggester)
    for current in _currents("chemistry"):
        for limit in _LIMITS:
            _suggest(suggester, scope.request(current), limit)
            _suggest(suggester, SuggestionRequest(current), limit)


def check_cites_stored_workflows(suggester: Suggester) -> None:
    """Evidence names workflows the scope holds, at positions they have."""
    scope = _filled(suggester)
    for current, found in _answers(suggester, scope, "chemistry").items():
        for suggestion in found:
            for evidence in suggestion.evidence:
                episode = scope.state.episode(evidence.workflow_id)
                if episode is None:
                    raise SuggesterContractFailure(
                        f"{current}: {suggestion.tool or suggestion.text!r} cites "
                        f"{evidence.workflow_id!r}, which the scope does not hold"
                    )
                if not 0 <= evidence.position < len(episode):
                    raise SuggesterContractFailure(
                        f"{current}: position {evidence.position} of {evidence.workflow_id!r} "
                        f"is outside its {len(episode)} leaves"
                    )


def check_scope_isolation(suggester: Suggester) -> None:
    """Asked in one scope, it neither cites nor suggests another scope's workflows or tools."""
    samples = sample_workflows()
    chemistry = _Scope(suggester, samples["chemistry"])
    travel = _Scope(suggester, samples["travel"])
    foreign_ids = set(chemistry.stored)
    foreign_tools = set(chemistry.state.tools()) - set(travel.state.tools())
    _answers(suggester, chemistry, "chemistry")  # the other scope was read first
    for current, found in _answers(suggester, travel, "travel").items():
        for suggestion in found:
            cited = {e.workflow_id for e in suggestion.evidence} & foreign_ids
            if cited or suggestion.tool in foreign_tools:
                raise SuggesterContractFailure(
                    f"{current}: asked in 'travel', it answered {suggestion.tool!r} citing "
                    f"{sorted(cited)} of 'chemistry'"
                )


def check_models_follow_saves_and_deletes(suggester: Suggester) -> None:
    """After a save and a delete its answers equal those over models built afresh."""
    workflows = sample_workflows()["chemistry"]
    kept, changing = workflows[:-1], workflows[-1]
    scope = _Scope(suggester, kept[:2])
    for workflow in kept[2:]:
        scope.save([workflow])  # one by one: each save reaches the models as it comes
    scope.save([changing])
    fresh = _Scope(suggester, [*kept, changing])
    _compare(suggester, scope, fresh, "after a save")
    scope.delete(changing.id)
    _compare(suggester, scope, _Scope(suggester, kept), "after a delete")


def _compare(suggester: Suggester, kept: _Scope, fresh: _Scope, when: str) -> None:
    ours, theirs = _answers(suggester, kept, "chemistry"), _answers(suggester, fresh, "chemistry")
    for current, found in ours.items():
        if not _same(found, theirs[current]):
            raise SuggesterContractFailure(
                f"{current}: {when}, the models kept up to date answer "
                f"{[s.tool or s.text for s in found]}, models built afresh "
                f"{[s.tool or s.text for s in theirs[current]]}"
            )


def check_changes_nothing(suggester: Suggester) -> None:
    """Suggesting leaves the scope as it was (ids and their versions)."""
    scope = _filled(suggester)
    before = {i: scope.state.version(i) for i in scope.state.ids()}
    _answers(suggester, scope, "chemistry")
    after = {i: scope.state.version(i) for i in scope.state.ids()}
    if after != before:
        raise SuggesterContractFailure("suggesting changed the scope's workflows")


def check_deterministic(suggester: Suggester) -> None:
    """The same request gets the same answer, in the same order."""
    scope = _filled(suggester)
    for current in _currents("chemistry"):
        request = scope.request(current)
        first, again = _suggest(suggester, request, None), _suggest(suggester, request, None)
        if [_key(s) for s in first] != [_key(s) for s in again]:
            raise SuggesterContractFailure(f"{current.id}: two calls answered differently")


def check_async_twin(suggester: Suggester) -> None:
    """``asuggest`` answers what ``suggest`` does."""
    scope = _filled(suggester)
    for current in _currents("chemistry"):
        request = scope.request(current)
        for limit in _LIMITS:
            try:
                found = asyncio.run(suggester.asuggest(request, limit))
            except Exception as exc:
                raise SuggesterContractFailure(
                    f"asuggest({current.id!r}) raised {type(exc).__name__}: {exc}"
                ) from exc
            if [_key(s) for s in found] != [_key(s) for s in _suggest(suggester, request, limit)]:
                raise SuggesterContractFailure(
                    f"{current.id}: asuggest and suggest answered differently"
                )


#: Every check, in a stable order.
CHECKS: tuple[Check, ...] = tuple(
    Check(function.__name__.removeprefix("check_"), function)
    for function in (
        check_declared_models_build,
        check_returns_suggestions,
        check_respects_limit,
        check_empty_scope,
        check_cites_stored_workflows,
        check_scope_isolation,
        check_models_follow_saves_and_deletes,
        check_changes_nothing,
        check_deterministic,
        check_async_twin,
    )
)


def run_contract(make: Callable[[], Suggester]) -> dict[str, str]:
    """Run every check, each on a fresh suggester, and return the failures.

    Args:
        make: Returns a new suggester (a class with no required arguments will do).

    Returns:
        ``{check name: failure message}``, empty when the suggester keeps every promise.
    """
    failures: dict[str, str] = {}
    for check in CHECKS:
        try:
            check(make())
        except SuggesterContractFailure as exc:
            failures[check.name] = str(exc)
        except Exception as exc:  # noqa: BLE001 - an unexpected error is a failure of the check
            failures[check.name] = f"{type(exc).__name__}: {exc}"
    return failures
