"""``EpisodicMemory(store, *, ...)``: the settings objects, and the old spellings that still work
for one release with a DeprecationWarning naming the new one."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from em_plugin import EpisodicMemory, RankingSettings, RetrievalSettings
from em_plugin.errors import ConfigurationError
from em_plugin.state.step_index import StepIndex
from em_plugin.suggest.continuation import ContinuationConfig
from em_plugin.suggest.crew import CrewDescription
from provenance.model import CallStep, InstructionStep, Workflow

CREW = {"name": "chemist", "agents": [{"name": "a", "tools": [{"name": "pfas_classifier"}]}]}


def sds(wid: str, *tools: str) -> Workflow:
    calls = tuple(CallStep(t) for t in tools)
    return Workflow(id=wid, steps=(InstructionStep("screen acme_sds.pdf for PFAS", calls),))


def test_everything_after_store_is_keyword_only() -> None:
    parameters = list(inspect.signature(EpisodicMemory).parameters.values())
    assert parameters[0].name == "store"
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    public = [p for p in parameters[1:] if not p.name.startswith("_")]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in public)
    assert "use_text" not in {p.name for p in parameters}  # an evaluation setting, not a user one
    assert len(public) <= 13


def test_settings_objects_are_frozen_validated_and_applied() -> None:
    retrieval = RetrievalSettings(threshold=0.4, max_workflows=2, window=5)
    ranking = RankingSettings(c=2.0, edge_similarity=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        retrieval.threshold = 0.9  # type: ignore[misc]
    with EpisodicMemory("memory:", embedder="fake:32", retrieval=retrieval, ranking=ranking) as m:
        assert m.retrieval is retrieval and m.ranking is ranking
        assert (m.retrieval.threshold, m.retrieval.max_workflows, m.retrieval.window) == (0.4, 2, 5)
        assert m.threshold == 0.4
        m.threshold = 0.3  # the setter replaces the retrieval settings, which retrieval reads
        assert m.retrieval.threshold == m.retrieval.match_config().threshold == 0.3
        assert isinstance(m.index, StepIndex)
        state = m.scope_memory()
        graph = state.model("procedural")
        assert (graph.c, graph.similarity_threshold) == (2.0, 0.5)
    defaults = RankingSettings()
    assert defaults.continuation == ContinuationConfig()
    for bad, match in [
        (lambda: RetrievalSettings(threshold=3), "threshold"),
        (lambda: RetrievalSettings(max_workflows=0), "max_workflows"),
        (lambda: RetrievalSettings(window=0), "window"),
        (lambda: RankingSettings(c=-1), "c must be"),
        (lambda: RankingSettings(edge_similarity=2), "edge_similarity"),
        (lambda: RankingSettings(continuation={"max_order": 2}), "ContinuationConfig"),
    ]:
        with pytest.raises(ConfigurationError, match=match):
            bad()


def test_old_positional_spelling_warns_and_works() -> None:
    with pytest.deprecated_call(match=r"by position") as caught:
        memory = EpisodicMemory("memory:", "fake:32", "team")
    assert [str(w.message).split(" to ")[0] for w in caught] == [
        "passing embedder",
        "passing scope",
    ]
    assert "use EpisodicMemory(store, embedder=...)" in str(caught[0].message)
    with memory:
        assert memory.scope == "team"
    with pytest.raises(TypeError, match="multiple values for argument 'embedder'"):
        EpisodicMemory("memory:", "fake", embedder="fake")


@pytest.mark.parametrize(
    ("old", "new", "check"),
    [
        ({"threshold": 0.3}, r"retrieval=RetrievalSettings\(threshold=...\)",
         lambda m: m.retrieval.match_config().threshold == 0.3),
        ({"max_workflows": 2, "window": 4},
         r"retrieval=RetrievalSettings\(max_workflows=..., window=...\)",
         lambda m: (m.retrieval.max_workflows, m.retrieval.window) == (2, 4)),
        ({"c": 2.0}, r"ranking=RankingSettings\(c=...\)", lambda m: m.ranking.c == 2.0),
        ({"edge_similarity": 0.5, "continuation": ContinuationConfig(max_order=2)},
         r"ranking=RankingSettings\(continuation=..., edge_similarity=...\)",
         lambda m: m.ranking.continuation.max_order == 2 and m.ranking.edge_similarity == 0.5),
        ({"crew": CREW}, r"EpisodicMemory\(crew_description=...\)",
         lambda m: isinstance(m.crew_description, CrewDescription)),
        ({"strict": True}, r"EpisodicMemory\(raise_suggester_errors=...\)",
         lambda m: m.chain.raise_suggester_errors is True),
        ({"use_text": False}, r"evaluate\(use_text=False\)", lambda m: True),
    ],
)  # fmt: skip
def test_old_keyword_spellings_warn_with_the_new_one(old, new, check) -> None:
    with pytest.deprecated_call(match=new) as caught:
        memory = EpisodicMemory("memory:", embedder="fake:32", **old)
    assert {w.filename for w in caught if w.category is DeprecationWarning} == {__file__}
    with memory:
        assert check(memory)


def test_use_text_ablation_still_reaches_the_state() -> None:
    with pytest.deprecated_call():
        memory = EpisodicMemory("memory:", embedder="fake:32", use_text=False)
    with memory:
        assert memory.scope_memory().use_text is False
    with EpisodicMemory("memory:", embedder="fake:32", _use_text=False) as evaluation:
        assert evaluation.scope_memory().use_text is False


def test_a_flat_knob_is_merged_into_a_given_settings_object() -> None:
    with pytest.deprecated_call():
        memory = EpisodicMemory(
            "memory:", embedder="fake", retrieval=RetrievalSettings(max_workflows=3), threshold=0.2
        )
    with memory:
        assert memory.retrieval == RetrievalSettings(threshold=0.2, max_workflows=3)


def test_new_and_old_names_together_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="crew_description= only"):
        EpisodicMemory("memory:", embedder="fake", crew=CREW, crew_description=CREW)


def test_crew_attribute_is_a_deprecated_alias() -> None:
    with EpisodicMemory("memory:", embedder="fake:32", crew_description=CREW) as memory:
        with pytest.deprecated_call(match="crew_description"):
            assert memory.crew is memory.crew_description
        memory.save(sds("w1", "product_extractor", "pfas_classifier"))
        assert memory.suggest(sds("now", "product_extractor"))[0].tool == "pfas_classifier"
