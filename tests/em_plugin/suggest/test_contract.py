"""The suggester contract kit: every built-in suggester passes it, and it catches broken ones."""

from __future__ import annotations

import dataclasses

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.state.scope_models import ModelScope
from em_plugin.suggest import (
    BaseSuggester,
    EpisodicSuggester,
    FallbackSuggester,
    LLMSuggester,
    PaperSuggester,
    ProceduralSuggester,
    SuggestionChain,
    SuggestionRequest,
    build_chain,
)
from em_plugin.suggest.contract import CHECKS, run_contract
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.types import Evidence, Suggestion


class ScriptedChat:
    """A chat model answering one numbered list, whatever it is asked."""

    def complete(self, messages):
        return "1. Check which ingredients are PFAS [pfas_classifier]\n2. Summarise it\n"

    async def acomplete(self, messages):
        return self.complete(messages)


BUILT_IN = {
    "episodic": EpisodicSuggester,
    "procedural": ProceduralSuggester,
    "fallback": FallbackSuggester,
    "paper": PaperSuggester,
    "llm": lambda: LLMSuggester(ScriptedChat()),
}


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_built_in_suggester_keeps_the_contract(name: str, check) -> None:
    check(BUILT_IN[name]())


def test_the_checks_have_distinct_names() -> None:
    names = [c.name for c in CHECKS]
    assert len(set(names)) == len(names) >= 10


# ------------------------------------------------------------------------ broken suggesters


class Greedy(BaseSuggester):
    """Ignores ``limit``."""

    name = "greedy"

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        tools = request.view.tools() if request.view is not None else []
        return [Suggestion(f"Call {t}", t, score=0.5, source=self.name) for t in tools * 3]


class Inventor(BaseSuggester):
    """Cites a workflow no scope holds."""

    name = "inventor"

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        cited = (Evidence("made-up", 0, 1.0),)
        return [Suggestion("Call x", "x", score=1.0, source=self.name, evidence=cited)][:limit]


class Fragile(BaseSuggester):
    """Fails without a scope."""

    name = "fragile"

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        return [Suggestion(f"Call {t}", t, source=self.name) for t in request.view.tools()][:limit]


class Unread(BaseSuggester):
    """Reads a model it never declared."""

    name = "unread"

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        if request.view is None:
            return []
        return [Suggestion(f"Call {t}", t, source=self.name) for t in request.view.model("mine")]


class Forgetful:
    """A model that never forgets a deleted workflow: counts calls per tool."""

    def __init__(self, scope: ModelScope) -> None:
        self.scope, self.counts = scope, {}
        for slot in scope.live_slots():
            self._count(slot)

    def added(self, first_slot: int, count: int) -> None:
        for slot in range(first_slot, first_slot + count):
            self._count(slot)

    def _count(self, slot: int) -> None:
        for tool in self.scope.episode(slot).tools:
            if tool:
                self.counts[tool] = self.counts.get(tool, 0) + 1

    def removed(self, slot: int) -> None:
        pass  # the broken promise


@dataclasses.dataclass(frozen=True)
class ForgetfulModel:
    name = "counts"

    def build(self, scope: ModelScope) -> Forgetful:
        return Forgetful(scope)


class Stale(BaseSuggester):
    """Reads a model that does not follow deletes."""

    name = "stale"
    scope_models = (ForgetfulModel(),)

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        if request.view is None:
            return []
        counts = request.view.model("counts").counts
        ranked = sorted(counts, key=lambda t: (-counts[t], t))
        found = [
            Suggestion(f"Call {t}", t, score=float(counts[t]), source=self.name) for t in ranked
        ]
        return found[:limit] if limit is not None else found


@pytest.mark.parametrize(
    ("make", "broken"),
    [
        (Greedy, "respects_limit"),
        (Inventor, "cites_stored_workflows"),
        (Fragile, "empty_scope"),
        (Unread, "returns_suggestions"),
        (Stale, "models_follow_saves_and_deletes"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_the_kit_catches_a_broken_promise(make, broken: str) -> None:
    failures = run_contract(make)
    assert broken in failures, failures


def test_a_broken_promise_is_named_in_the_message() -> None:
    failures = run_contract(Stale)
    assert "after a delete" in failures["models_follow_saves_and_deletes"]
    assert "unread" not in failures  # each failure is keyed by its check


# ------------------------------------------------------------------------ the chain's part


def test_the_chain_collects_declared_models_once_per_name() -> None:
    models = build_chain().scope_models()
    assert [m.name for m in models] == ["continuation", "procedural"]
    assert build_chain("paper").scope_models() == (ProceduralModel(),)
    assert [m.name for m in build_chain(extra=[Stale()]).scope_models()] == [
        "counts",
        "continuation",
        "procedural",
    ]


def test_build_chain_extra_goes_ahead_of_the_chains_own() -> None:
    chain = build_chain(extra=[Stale()])
    assert [s.name for s in chain.suggesters] == ["stale", "episodic", "procedural", "fallback"]
    paper = build_chain("paper", extra=[Stale()])
    assert [s.name for s in paper.suggesters] == ["stale", "paper", "fallback"]
    llm = build_chain("llm", ScriptedChat(), extra=[Stale()])
    assert [s.name for s in llm.suggesters][:2] == ["llm", "stale"]


def test_two_different_models_under_one_name_fail_at_construction() -> None:
    class Other(Stale):
        name = "other"
        scope_models = (ContinuationModel(), ProceduralModel(c=2.0))

    with pytest.raises(ConfigurationError, match="'procedural'.*'other'.*'procedural'"):
        SuggestionChain([ProceduralSuggester(), Other()])


def test_a_declaration_that_is_not_a_model_fails_at_construction() -> None:
    class Wrong(Stale):
        scope_models = ("counts",)  # type: ignore[assignment]

    with pytest.raises(ConfigurationError, match="not a model spec"):
        build_chain(extra=[Wrong()])
