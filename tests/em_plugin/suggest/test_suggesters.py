"""Suggesters and their chain: episodic, procedural, fallback; dedup; formatting."""

from __future__ import annotations

import asyncio

import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.errors import ConfigurationError, SuggestionError
from em_plugin.retrieval.reference import Match
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest import (
    BaseSuggester,
    EpisodicSuggester,
    FallbackSuggester,
    ProceduralSuggester,
    SuggestionChain,
    SuggestionRequest,
    build_chain,
    default_chain,
)
from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.types import Suggestion, format_suggestions
from provenance.model import CallStep, InstructionStep, Workflow

MODELS = (ContinuationModel(), ProceduralModel())

EMBEDDER = FakeEmbedder(64)
CREW = CrewDescription(
    "chemists",
    "Find PFAS in products",
    (
        AgentDescription(
            "coordinator",
            "delegates",
            (
                ToolDescription("product_extractor", "Extract ingredients from an SDS."),
                ToolDescription("pfas_classifier", "Decide which molecules are PFAS."),
                ToolDescription("hazard_assessment", "Screen for PBT properties."),
                ToolDescription("markdown_table", "Render a table."),
            ),
        ),
    ),
)


def instr(text: str, *calls: CallStep) -> InstructionStep:
    return InstructionStep(text, calls)


def memory_of(*workflows: Workflow) -> ScopeMemory:
    state = ScopeMemory(EMBEDDER.dimension, EMBEDDER.embed, models=MODELS)
    state.add_many(workflows)
    return state


def request_for(
    current: Workflow, state: ScopeMemory | None, matches=(), crew=None
) -> SuggestionRequest:
    query = state.query(current) if state is not None else None
    return SuggestionRequest(current, tuple(matches), state, query, crew)


PAST = [
    Workflow(
        id=f"past{i}",
        steps=(
            instr("extract the ingredients of acme.pdf", CallStep("product_extractor", {"f": "a"})),
            instr("which ingredients are PFAS", CallStep("pfas_classifier", {"mode": "strict"})),
            instr("assess their hazards", CallStep("hazard_assessment")),
        ),
    )
    for i in range(3)
]
CURRENT = Workflow(
    id="now", steps=(instr("extract the ingredients of beta.pdf", CallStep("product_extractor")),)
)


def test_episodic_suggests_the_continuation_with_args_text_and_evidence() -> None:
    state = memory_of(*PAST)
    found = EpisodicSuggester().suggest(request_for(CURRENT, state), limit=3)
    top = found[0]
    assert top.tool == "pfas_classifier" and top.source == "episodic"
    assert top.text == "which ingredients are PFAS"  # the instruction that call opened
    # Past values are examples, with the workflow they come from, never values to use.
    assert top.args is None and top.args_from == "example"
    assert top.example_args == {"mode": "strict"}
    assert top.example_from == top.evidence[0].workflow_id
    assert {e.workflow_id for e in top.evidence} <= {"past0", "past1", "past2"}
    assert all(e.position == 1 for e in top.evidence)
    # hazard_assessment only ever followed pfas_classifier: frequency only, ranked after it,
    # and left to the other suggesters when agreement is required.
    assert [s.tool for s in found[:2]] == ["pfas_classifier", "hazard_assessment"]
    strict = EpisodicSuggester(min_order=1).suggest(request_for(CURRENT, state))
    assert [s.tool for s in strict] == ["pfas_classifier"]


def test_episodic_cites_retrieved_workflows_first() -> None:
    state = memory_of(*PAST)
    match = Match("past2", 0.9, (0,))
    top = EpisodicSuggester().suggest(request_for(CURRENT, state, [match]))[0]
    assert top.evidence[0].workflow_id == "past2" and top.evidence[0].score == 0.9


def test_episodic_offers_an_instruction_answered_without_tools() -> None:
    past = Workflow(
        id="p",
        steps=(instr("extract acme.pdf", CallStep("product_extractor")), instr("thanks, bye")),
    )
    state = memory_of(past)
    found = EpisodicSuggester().suggest(request_for(CURRENT, state, [Match("p", 0.8, (0,))]))
    assert any(s.tool is None and s.text == "thanks, bye" for s in found)


def test_procedural_top_two_after_last_call() -> None:
    state = memory_of(
        *PAST,
        Workflow(id="x", steps=(CallStep("product_extractor"), CallStep("markdown_table"))),
    )
    found = ProceduralSuggester().suggest(request_for(CURRENT, state))
    assert [s.tool for s in found] == ["pfas_classifier", "markdown_table"]
    assert all(s.source == "procedural" for s in found)
    assert found[0].evidence and found[0].evidence[0].position == 1
    with pytest.raises(ConfigurationError):
        ProceduralSuggester(k=0)


def test_fallback_ranks_crew_tools_unused_first_without_memory() -> None:
    found = FallbackSuggester().suggest(request_for(CURRENT, None, crew=CREW))
    tools = [s.tool for s in found]
    # product_extractor is the step just taken: the fallback never suggests it again.
    assert set(tools) == set(CREW.tool_names) - {"product_extractor"}
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)
    assert all(s.score > 0 for s in found)
    assert found[0].text.startswith(f"Call {found[0].tool}: ")
    assert all(s.source == "fallback" and not s.evidence for s in found)


def test_fallback_uses_graph_popularity() -> None:
    state = memory_of(*PAST)
    tools = [s.tool for s in FallbackSuggester().suggest(request_for(CURRENT, state, crew=CREW))]
    # Used in memory ranks above never used; product_extractor was just taken, so absent.
    assert tools.index("pfas_classifier") < tools.index("markdown_table")
    assert "product_extractor" not in tools


def test_default_chain_order_dedup_and_limit() -> None:
    state = memory_of(*PAST)
    found = default_chain().suggest(request_for(CURRENT, state, crew=CREW), limit=None)
    tools = [s.tool for s in found]
    assert tools[0] == "pfas_classifier" and found[0].source == "episodic"
    assert len(tools) == len(set(tools))
    assert set(tools) == set(CREW.tool_names) - {"product_extractor"}  # the step just taken
    assert found[-1].source == "fallback"
    assert len(default_chain().suggest(request_for(CURRENT, state, crew=CREW), limit=2)) == 2


def test_chain_falls_back_when_a_suggester_fails_unless_raising() -> None:
    class Broken(BaseSuggester):
        name = "broken"

        def suggest(self, request, limit=None):
            raise SuggestionError("model down")

    request = request_for(CURRENT, None, crew=CREW)
    found = SuggestionChain([Broken(), FallbackSuggester()]).suggest(request)
    assert found and found[0].source == "fallback"
    with pytest.raises(SuggestionError, match="model down"):
        SuggestionChain([Broken(), FallbackSuggester()], raise_suggester_errors=True).suggest(
            request
        )
    with pytest.raises(ConfigurationError, match="lacks name, remote, suggest, asuggest"):
        SuggestionChain([object()])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("owner", "make"),
    [
        ("SuggestionChain", lambda **kw: SuggestionChain([FallbackSuggester()], **kw)),
        ("build_chain", lambda **kw: build_chain("paper", **kw)),
        ("default_chain", lambda **kw: default_chain(**kw)),
    ],
)
def test_strict_is_renamed_raise_suggester_errors(owner, make) -> None:
    """``strict`` means "memory failures raise" in the integrations; here it was the suggesters'
    errors, now spelled as on ``EpisodicMemory``. The old keyword warns once and still works."""
    assert make(raise_suggester_errors=True).raise_suggester_errors is True
    assert make().raise_suggester_errors is False
    with pytest.deprecated_call(
        match=rf"{owner}\(strict=...\) is deprecated.*{owner}\(raise_suggester_errors=...\)"
    ) as caught:
        chain = make(strict=True)
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]
    assert chain.raise_suggester_errors is True
    with pytest.deprecated_call(match=r"SuggestionChain\.strict is deprecated"):
        assert chain.strict is True
    with pytest.raises(ConfigurationError, match="both raise_suggester_errors= and strict="):
        make(raise_suggester_errors=True, strict=False)


def test_chain_dedups_tool_less_suggestions_by_text() -> None:
    class Fixed(BaseSuggester):
        name = "fixed"

        def __init__(self, *items: Suggestion) -> None:
            self.items = items

        def suggest(self, request, limit=None):
            return list(self.items)

    a = Suggestion("Summarise the  results", score=0.5, source="llm")
    b = Suggestion("summarise the results", score=0.5, source="fallback")
    c = Suggestion("Call x", tool="x", score=0.4, source="fallback")
    found = SuggestionChain([Fixed(a), Fixed(b, c)]).suggest(request_for(CURRENT, None), None)
    assert found == [a, c]


def test_format_suggestions_and_json_keys() -> None:
    state = memory_of(*PAST)
    found = default_chain().suggest(request_for(CURRENT, state, crew=CREW), limit=3)
    text = format_suggestions(found)
    assert text.startswith("Suggested next steps (from ")
    assert "1. which ingredients are PFAS [pfas_classifier]" in text
    assert set(found[0].to_json()) == {
        "tool", "text", "args", "score", "source", "evidence", "detail", "args_from",
        "example_args", "example_from", "failed_before",
    }  # fmt: skip
    assert found[0].to_json()["evidence"][0].keys() == {"workflow_id", "position", "score"}


def test_unfamiliar_question_gets_only_crew_fallback_suggestions() -> None:
    # Paper, Figure 4: nothing similar in memory, so suggestions come from the crew description.
    from em_plugin import CallStep, EpisodicMemory, FakeEmbedder, InstructionStep, Workflow
    from integrations.demo.pfas import CREW_DESCRIPTION

    memory = EpisodicMemory(
        store="memory:", embedder=FakeEmbedder(), crew_description=CREW_DESCRIPTION
    )
    for i in range(3):
        memory.save(
            Workflow(
                id=f"w{i}",
                steps=(
                    InstructionStep(
                        f"Extract all ingredients from sample{i}.txt",
                        steps=(CallStep("product_extractor", {"file": f"sample{i}.txt"}),),
                    ),
                    InstructionStep("Classify them as PFAS", steps=(CallStep("pfas_classifier"),)),
                ),
            )
        )
    odd = Workflow(id="q", steps=(InstructionStep("What is the boiling point of water on Mars?"),))
    assert {s.source for s in memory.suggest(odd)} == {"fallback"}
    known = Workflow(id="k", steps=(InstructionStep("Extract all ingredients from sample9.txt"),))
    suggestions = memory.suggest(known)
    assert suggestions[0].source == "episodic"
    assert suggestions[0].tool == "product_extractor"


def test_remote_suggesters_are_awaited_and_called_outside_the_guard() -> None:
    class Held:
        """A guard that records whether it is held."""

        held = False

        def __enter__(self) -> None:
            Held.held = True

        def __exit__(self, *exc: object) -> None:
            Held.held = False

    class Remote(BaseSuggester):
        name, remote = "remote", True

        def suggest(self, request, limit=None):
            held.append(("remote", Held.held))
            return [Suggestion("sync", tool="pfas_classifier", score=1.0, source="remote")]

        async def asuggest(self, request, limit=None):
            return [Suggestion("async", tool="pfas_classifier", score=1.0, source="remote")]

    class Local(BaseSuggester):
        name = "local"

        def suggest(self, request, limit=None):
            held.append(("local", Held.held))
            return [Suggestion("local", score=0.5, source="local")]

    held: list[tuple[str, bool]] = []
    chain = SuggestionChain([Remote(), Local()])
    request = request_for(CURRENT, None)
    found = chain.suggest(request, None, guard=Held())
    assert [s.text for s in found] == ["sync", "local"]
    assert held == [("remote", False), ("local", True)]  # only local reads hold the lock
    found = asyncio.run(chain.asuggest(request, None))
    assert [s.text for s in found] == ["async", "local"]
    assert asyncio.run(Local().asuggest(request))[0].text == "local"  # asuggest = suggest


def test_a_suggester_with_only_suggest_still_works_with_a_deprecation_warning() -> None:
    class Old:
        name = "old"

        def suggest(self, request, limit=None):
            return [Suggestion("old way", score=1.0, source="old")]

    with pytest.warns(DeprecationWarning, match="subclass em_plugin.suggest.BaseSuggester"):
        chain = SuggestionChain([Old()])
    request = request_for(CURRENT, None)
    assert [s.text for s in chain.suggest(request, None)] == ["old way"]
    assert [s.text for s in asyncio.run(chain.asuggest(request, None))] == ["old way"]
