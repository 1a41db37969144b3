"""Per-scope models: a scope builds what its chain's suggesters declare, and keeps it current."""

from __future__ import annotations

import importlib

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.settings import RankingSettings
from em_plugin.suggest import BaseSuggester, FallbackSuggester, SuggestionChain, build_chain
from em_plugin.suggest.continuation import ContinuationConfig
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, InstructionStep, Workflow


def wf(wid: str, *tools: str) -> Workflow:
    return Workflow(
        id=wid, steps=(InstructionStep("screen it", tuple(CallStep(t) for t in tools)),)
    )


def test_a_scope_builds_the_declared_models_and_the_rest_on_demand() -> None:
    with EpisodicMemory("memory:", embedder="fake", chain="paper") as memory:
        memory.save(wf("w1", "extract", "classify"))
        state = memory.scope_memory()
        assert set(state.models) == {"procedural"}  # the paper chain declares the graph only
        continuation = state.model("continuation")  # built when first asked for
        assert set(state.models) == {"procedural", "continuation"}
        memory.save(wf("w2", "extract", "report"))  # and kept current from then on
        ranked = continuation.rank(state.query(wf("now", "extract")))
        assert {c.tool for c in ranked} >= {"classify", "report"}


def test_the_memory_configures_the_built_in_models_from_its_ranking_settings() -> None:
    ranking = RankingSettings(continuation=ContinuationConfig(max_order=2), c=2.0)
    with EpisodicMemory("memory:", embedder="fake", ranking=ranking) as memory:
        memory.save(wf("w1", "a", "b"))
        state = memory.scope_memory()
        assert state.model("continuation").config.max_order == 2
        assert state.model("procedural").c == 2.0


def test_an_unknown_model_names_the_models_held() -> None:
    with EpisodicMemory("memory:", embedder="fake") as memory:
        with pytest.raises(ConfigurationError, match="no model 'mine'.*continuation, procedural"):
            memory.scope_memory().model("mine")


class OldStyle(BaseSuggester):
    """Written before declarations: asks the view for continuations directly."""

    name = "old"

    def suggest(self, request, limit=None):
        ranked = request.view.continuations(request.query)
        return [
            Suggestion(f"Call {c.tool}", c.tool, score=c.probability, source="old") for c in ranked
        ]


def test_a_suggester_on_the_old_view_methods_keeps_working_with_a_warning() -> None:
    chain = SuggestionChain([OldStyle(), FallbackSuggester()])  # nothing declares continuation
    with EpisodicMemory("memory:", embedder="fake", chain=chain) as memory:
        memory.save(wf("w1", "extract", "classify"))
        with pytest.warns(DeprecationWarning, match=r'view.model\("continuation"\)'):
            found = memory.suggest(wf("now", "extract"))
    assert (found[0].source, found[0].tool) == ("old", "classify")


def test_the_old_import_path_of_the_continuation_model_warns() -> None:
    old = importlib.import_module("em_plugin.state.continuation")
    with pytest.warns(
        DeprecationWarning, match="em_plugin.suggest.continuation.ContinuationConfig"
    ):
        assert old.ContinuationConfig is ContinuationConfig


def test_a_chain_that_declares_nothing_builds_nothing() -> None:
    assert [m.name for m in build_chain("paper").scope_models()] == ["procedural"]
    with EpisodicMemory("memory:", embedder="fake", chain=SuggestionChain([OldStyle()])) as memory:
        memory.save(wf("w1", "extract", "classify"))
        assert memory.scope_memory().models == {}


def test_the_old_model_attributes_warn_and_keep_working() -> None:
    with EpisodicMemory("memory:", embedder="fake") as memory:
        memory.save(wf("w1", "extract", "classify"))
        state = memory.scope_memory()
        with pytest.warns(DeprecationWarning, match=r'model\("procedural"\)'):
            assert state.graph is state.model("procedural")
        with pytest.warns(DeprecationWarning, match=r'model\("continuation"\)'):
            assert state.continuation is state.model("continuation")
