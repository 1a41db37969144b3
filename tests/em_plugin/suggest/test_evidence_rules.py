"""Only evidence-backed suggestions: each rule of em_plugin.suggest.evidence, pinned."""

from __future__ import annotations

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory
from em_plugin.retrieval.reference import Match
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest import (
    BaseSuggester,
    EpisodicSuggester,
    FallbackSuggester,
    PaperSuggester,
    ProceduralSuggester,
    SuggestionChain,
    SuggestionRequest,
    build_chain,
)
from em_plugin.suggest.evidence import admissible, just_taken
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep, InstructionStep, Workflow

MODELS = (ContinuationModel(), ProceduralModel())

EMBEDDER = FakeEmbedder(64)


def state_of(*workflows: Workflow) -> ScopeMemory:
    state = ScopeMemory(EMBEDDER.dimension, EMBEDDER.embed, models=MODELS)
    state.add_many(workflows)
    return state


def request(current: Workflow, state: ScopeMemory | None, matches=()) -> SuggestionRequest:
    query = state.query(current) if state is not None else None
    return SuggestionRequest(current, tuple(matches), state, query)


def calls(*names: str) -> tuple[CallStep, ...]:
    return tuple(CallStep(n) for n in names)


def test_empty_memory_gives_no_episodic_suggestion_from_the_current_steps_alone() -> None:
    # Issue 14 found: on an empty memory, [A, B] -> B came back labelled episodic. Only the
    # session itself supports B: it is labelled "session" and cites no workflow (the session's
    # own is not a past one).
    current = Workflow(id="now", steps=calls("A", "B", "A"))
    found = EpisodicSuggester().suggest(request(current, state_of()))
    assert [(s.tool, s.source) for s in found] == [("B", "session")]
    assert found[0].evidence == ()
    chained = build_chain().suggest(request(current, state_of()), None)
    assert all(s.source != "episodic" for s in chained)


def test_every_episodic_suggestion_cites_a_stored_workflow() -> None:
    state = state_of(
        Workflow(id="w1", steps=calls("A", "B", "C")),
        Workflow(id="w2", steps=calls("A", "B", "D")),
    )
    current = Workflow(id="now", steps=calls("X", "A", "B"))  # X: only the current one knows it
    found = EpisodicSuggester().suggest(request(current, state))
    assert found, "memory supports C and D after A, B"
    assert {s.tool for s in found} <= {"A", "B", "C", "D"}
    assert {s.tool for s in found if s.source == "episodic"} == {"C", "D"}
    for suggestion in found:
        assert suggestion.score > 0
        # Without a cited workflow whose match passes T, a suggestion is not episodic.
        assert bool(suggestion.evidence) == (suggestion.source == "episodic")
        for evidence in suggestion.evidence:
            assert evidence.score > 0.65
            episode = state.episode(evidence.workflow_id)
            assert episode is not None and episode.tools[evidence.position] == suggestion.tool


def test_a_workflow_below_t_is_not_cited_and_its_step_is_not_episodic() -> None:
    # The case: memory [A,B,C], [A,X,Y], [A,Z,B,D] (calls only), current [A,B].
    from em_plugin.memory import EpisodicMemory

    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        for i, tools in enumerate((("A", "B", "C"), ("A", "X", "Y"), ("A", "Z", "B", "D"))):
            memory.save(Workflow(id=f"w{i}", steps=calls(*tools)))
        found = memory.suggest(Workflow(id="now", steps=calls("A", "B")), limit=None)
    episodic = {s.tool: s for s in found if s.source == "episodic"}
    assert list(episodic) == ["C", "D"]
    assert all(e.workflow_id != "w1" for s in found for e in s.evidence)  # [A,X,Y]: 0.5 < T
    x = next(s for s in found if s.tool == "X")
    assert x.source == "pattern" and x.evidence == ()


def test_an_unknown_tool_gets_no_episodic_suggestion() -> None:
    from em_plugin.memory import EpisodicMemory

    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        memory.save(Workflow(id="w0", steps=calls("A", "B", "C")))
        found = memory.suggest(Workflow(id="now", steps=calls("Q")), limit=None)
    assert found and all(s.source != "episodic" and not s.evidence for s in found)


def test_the_step_just_taken_is_suggested_again_only_where_memory_repeats_it() -> None:
    no_repeat = state_of(Workflow(id="w1", steps=calls("extract", "classify", "table")))
    current = Workflow(id="now", steps=calls("extract"))
    for suggester in (EpisodicSuggester(), ProceduralSuggester(), FallbackSuggester()):
        tools = [s.tool for s in suggester.suggest(request(current, no_repeat))]
        assert "extract" not in tools, suggester.name
    chain = build_chain().suggest(request(current, no_repeat), None)
    assert [s.tool for s in chain][0] == "classify"
    assert "extract" not in [s.tool for s in chain]

    repeats = state_of(Workflow(id="w2", steps=calls("extract", "extract", "classify")))
    found = build_chain().suggest(request(current, repeats), None)
    again = [s for s in found if s.tool == "extract"]
    assert again, "w2 extracts twice in a row: suggesting it again is supported"
    assert any(e.workflow_id == "w2" and e.position == 1 for e in again[0].evidence)


def test_no_suggestion_scores_zero_in_any_chain() -> None:
    state = state_of(
        Workflow(id="w1", steps=(InstructionStep("extract it", calls("extract", "classify")),)),
        Workflow(id="w2", steps=(InstructionStep("extract it", calls("extract")),)),
    )
    current = Workflow(id="now", steps=(InstructionStep("extract it", calls("extract")),))
    matches = (Match("w1", 0.9, (0, 1)), Match("w2", 0.8, (0, 1)))
    for name in ("continuation", "paper"):
        found = build_chain(name).suggest(request(current, state, matches), None)
        assert found and all(s.score > 0 for s in found), name
    assert just_taken(request(current, state)) == "extract"


def test_chain_drops_unsupported_memory_suggestions_from_any_suggester() -> None:
    class Loose(BaseSuggester):
        name = "loose"

        def suggest(self, request, limit=None):
            return [
                Suggestion("zero", tool="a", score=0.0, source="fallback"),
                Suggestion("no evidence", tool="b", score=0.7, source="episodic"),
                Suggestion("fine", tool="c", score=0.5, source="procedural",
                           evidence=(Evidence("w1", 1, 0.5),)),
            ]  # fmt: skip

    state = state_of(Workflow(id="w1", steps=calls("x", "c")))
    found = SuggestionChain([Loose()]).suggest(request(Workflow(id="n"), state), None)
    assert [s.tool for s in found] == ["c"]
    assert not admissible(request(Workflow(id="n"), state), Suggestion("t", score=0.0), None)


def test_paper_rule_cites_the_voting_workflows() -> None:
    state = state_of(
        Workflow(id="w1", steps=calls("A", "B")),
        Workflow(id="w2", steps=calls("A", "C")),
        Workflow(id="w3", steps=calls("A", "B")),
    )
    current = Workflow(id="now", steps=calls("A"))
    matches = (Match("w1", 0.9, (0,)), Match("w2", 0.95, (0,)), Match("w3", 0.7, (0,)))
    found = PaperSuggester().suggest(request(current, state, matches))
    assert [s.tool for s in found] == ["B", "C"]  # 0.9 + 0.7 against 0.95
    assert {e.workflow_id for e in found[0].evidence} == {"w1", "w3"}
    assert all(s.source == "paper" for s in found)
    assert PaperSuggester().suggest(request(current, state)) == []  # nothing retrieved


def test_memory_readme_case_no_repeat_after_the_same_call() -> None:
    # README's ten-line example used to suggest product_extractor right after it was called.
    memory = EpisodicMemory(store="memory:", embedder="fake", scope="team")
    try:
        steps = (CallStep("product_extractor"), CallStep("pfas_classifier"))
        memory.save(Workflow(id="w1", steps=(InstructionStep("classify the SDS", steps),)))
        current = Workflow(id="now", steps=(InstructionStep("classify this SDS", steps[:1]),))
        found = memory.suggest(current, limit=None)
        assert [s.tool for s in found][:1] == ["pfas_classifier"]
        assert "product_extractor" not in [s.tool for s in found]
        assert all(s.score > 0 for s in found)
        assert all(s.evidence for s in found if s.source == "episodic")
    finally:
        memory.close()


def test_a_loop_the_current_workflow_is_in_may_continue() -> None:
    # The session already called "retry" twice in a row: suggesting it again needs no stored
    # repeat. No stored workflow's match passes T there (w1 never repeats it), so it is the
    # session's own pattern and cites nothing.
    state = state_of(Workflow(id="w1", steps=calls("open", "retry", "close")))
    looping = Workflow(id="now", steps=calls("open", "retry", "retry"))
    found = build_chain().suggest(request(looping, state), None)
    again = [s for s in found if s.tool == "retry"]
    assert again and again[0].source in ("session", "pattern") and again[0].evidence == ()
    once = Workflow(id="now", steps=calls("open", "retry"))
    assert "retry" not in [s.tool for s in EpisodicSuggester().suggest(request(once, state))]


def test_a_loop_no_stored_workflow_knows_may_continue() -> None:
    # Galaxy IWC (goseq, goseq -> goseq) lost a hit when the check kept the "episodic" label:
    # a step only the session supports, in a loop the session is in, is the session's pattern.
    state = state_of(Workflow(id="w1", steps=calls("open", "close")))
    looping = Workflow(id="now", steps=calls("goseq", "goseq"))
    found = build_chain().suggest(request(looping, state), None)
    assert [(s.tool, s.source, s.evidence) for s in found][:1] == [("goseq", "session", ())]
