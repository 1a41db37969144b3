"""The LLM suggester with scripted chat models that check the prompt they receive."""

from __future__ import annotations

import asyncio

import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.errors import ConfigurationError, SuggestionError
from em_plugin.memory import EpisodicMemory
from em_plugin.retrieval.reference import Match
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest import LLMSuggester, SuggestionRequest, default_chain
from em_plugin.suggest.chat import AsyncChatModel, as_chat_model, invoke_chat
from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.prompts import parse_numbered
from provenance.model import CallStep, InstructionStep, Workflow

MODELS = (ContinuationModel(), ProceduralModel())

CREW = CrewDescription(
    "chemists",
    "Find PFAS in products",
    (
        AgentDescription(
            "extractor",
            "Reads SDS files",
            (ToolDescription("product_extractor", "Extract ingredients from an SDS."),),
        ),
        AgentDescription(
            "classifier", "Finds PFAS", (ToolDescription("pfas_classifier", "Classify PFAS."),)
        ),
    ),
)
PAST = Workflow(
    id="past-1",
    title="SDS screening",
    steps=(
        InstructionStep("extract acme.pdf", (CallStep("product_extractor", {"file": "acme.pdf"}),)),
        InstructionStep("which are PFAS?", (CallStep("pfas_classifier"),)),
    ),
)
CURRENT = Workflow(
    id="now",
    steps=(InstructionStep("extract beta.pdf", (CallStep("product_extractor", {"file": "b"}),)),),
)
ANSWER = "Here you go:\n1. Check which ingredients are PFAS [pfas_classifier]\n2) Summarise it\n"


class ScriptedChatModel:
    """A ChatModel: complete(messages) -> text; records and checks prompts."""

    def __init__(self, answer: str, *expected: str) -> None:
        self.answer, self.expected, self.prompts = answer, expected, []

    def complete(self, messages):
        roles = [role for role, _ in messages]
        assert roles == ["system", "human"]
        prompt = messages[1][1]
        for text in self.expected:
            assert text in prompt, f"{text!r} missing from the prompt:\n{prompt}"
        self.prompts.append(prompt)
        return self.answer

    async def acomplete(self, messages):
        return self.complete(messages)


class AsyncOnlyModel(AsyncChatModel):
    """An async-only model: the sync call runs it to completion."""

    def __init__(self, answer: str) -> None:
        self.answer, self.received = answer, []

    async def acomplete(self, messages):
        self.received.append(messages[1][1])
        return self.answer


def state_with(*workflows: Workflow) -> ScopeMemory:
    embedder = FakeEmbedder(32)
    state = ScopeMemory(32, embedder.embed, models=MODELS)
    state.add_many(workflows)
    return state


def request(matches=(), crew=CREW, state=None) -> SuggestionRequest:
    state = state if state is not None else state_with(PAST)
    loaded = {"past-1": PAST}
    return SuggestionRequest(CURRENT, tuple(matches), state, state.query(CURRENT), crew, loaded.get)


def test_retrieved_prompt_holds_current_and_retrieved_workflows() -> None:
    model = ScriptedChatModel(
        ANSWER,
        'instruction "extract beta.pdf"',
        'call product_extractor {"file": "b"}',
        "SDS screening (similarity 0.80)",
        "- next: call pfas_classifier",
        "List the 3 most likely next steps",
    )
    found = LLMSuggester(model).suggest(request([Match("past-1", 0.8, (0,))]))
    assert [(s.text, s.tool, s.source) for s in found] == [
        ("Check which ingredients are PFAS", "pfas_classifier", "llm"),
        ("Summarise it", None, "llm"),
    ]
    assert found[0].score > found[1].score
    assert found[0].evidence[0].workflow_id == "past-1" and found[0].evidence[0].position == 1
    assert "Extract ingredients from an SDS" not in model.prompts[0]  # no crew prompt here


def test_fallback_prompt_holds_the_crew_when_nothing_was_retrieved() -> None:
    model = ScriptedChatModel(
        "1. Classify the ingredients [pfas_classifier]",
        "Crew: chemists",
        "Agent extractor - Reads SDS files",
        "tool product_extractor: Extract ingredients from an SDS.",
        "Nothing similar is in memory",
    )
    found = LLMSuggester(model, limit=2).suggest(request())
    assert [s.tool for s in found] == ["pfas_classifier"] and found[0].evidence == ()


def test_no_crew_and_no_match_means_no_model_call() -> None:
    model = ScriptedChatModel(ANSWER)
    assert LLMSuggester(model).suggest(request(crew=None)) == []
    assert model.prompts == []


def test_async_only_model_sync_and_async() -> None:
    model = AsyncOnlyModel("1. Classify [pfas_classifier]")
    llm = LLMSuggester(model)
    assert [s.tool for s in llm.suggest(request())] == ["pfas_classifier"]
    found = asyncio.run(llm.asuggest(request([Match("past-1", 0.9, (0,))])))
    assert found[0].tool == "pfas_classifier"
    assert "SDS screening" in model.received[1]


def test_model_failures_become_suggestion_errors() -> None:
    class Down(ScriptedChatModel):
        def complete(self, messages):
            raise TimeoutError("no answer")

    with pytest.raises(SuggestionError, match="no answer"):
        LLMSuggester(Down("")).suggest(request())
    with pytest.raises(SuggestionError, match="no usable numbered list"):
        LLMSuggester(ScriptedChatModel("I would rather not.")).suggest(request())
    with pytest.raises(ConfigurationError, match="em_plugin.suggest.ChatModel"):
        LLMSuggester(object())
    with pytest.raises(SuggestionError, match="answered int, not text"):
        LLMSuggester(lambda messages: 42).suggest(request())


def test_chain_with_llm_first_then_deterministic_fill() -> None:
    model = ScriptedChatModel("1. Classify them [pfas_classifier]\n2. Summarise the findings")
    found = default_chain(model).suggest(request([Match("past-1", 0.8, (0,))]), limit=3)
    assert (found[0].source, found[0].tool) == ("llm", "pfas_classifier")
    # The step without a tool cites nothing: it comes after every suggestion that does.
    assert found[-1].text == "Summarise the findings" and found[-1].evidence == ()
    failing = ScriptedChatModel("no list")
    assert default_chain(failing).suggest(request(), limit=1)[0].source != "llm"


def test_parse_numbered_variants() -> None:
    steps = parse_numbered(
        "1. Do A [tool_a]\n**2.** Do B `tool_b`\n3. Do C [unknown]\n4. do a [tool_a]\nnot a step",
        {"tool_a", "tool_b"},
    )
    assert [(s.text, s.tool) for s in steps] == [
        ("Do A", "tool_a"),
        ("Do B", "tool_b"),
        ("Do C [unknown]", None),
    ]


def test_memory_passes_llm_and_records_prompt(tmp_path) -> None:
    model = ScriptedChatModel("1. Classify [pfas_classifier]", "Crew: chemists")
    with EpisodicMemory(
        "memory:", embedder="fake:32", llm=model, crew_description=CREW.to_dict()
    ) as memory:
        found = memory.suggest(CURRENT)
        assert found[0].source == "llm" and found[0].tool == "pfas_classifier"
        assert asyncio.run(memory.asuggest(CURRENT))[0].source == "llm"
    assert invoke_chat(as_chat_model(lambda messages: "1. x"), [("human", "hi")]) == "1. x"


# The local SmolLM2 answered this for the PFAS demo (the issue "The second day", item 4).
GIBBERISH = (
    "1. Listed three possible actions before the task was completed\n2. Toxicology laboratory"
)


def test_llm_steps_that_name_no_crew_tool_come_last_cite_nothing_and_score_low() -> None:
    found = LLMSuggester(ScriptedChatModel(GIBBERISH + "\n3. Classify [pfas_classifier]")).suggest(
        request([Match("past-1", 0.8, (0,))])
    )
    assert (found[0].tool, found[0].score) == ("pfas_classifier", 1.0) and found[0].evidence
    assert [(s.tool, s.evidence) for s in found[1:]] == [(None, ())] * 2
    assert [round(s.score, 3) for s in found[1:]] == [0.05, 0.033]


def test_llm_steps_with_an_unknown_tool_are_not_grounded() -> None:
    found = LLMSuggester(ScriptedChatModel("1. Ask the oracle about it [oracle]")).suggest(
        request([Match("past-1", 0.8, (0,))])
    )
    assert [(s.tool, s.score, s.evidence) for s in found] == [(None, 0.1, ())]


@pytest.mark.parametrize("run", ["sync", "async"])
def test_an_llm_answer_naming_no_tool_never_outranks_evidence(run: str) -> None:
    chain = default_chain(ScriptedChatModel(GIBBERISH))
    asked = request([Match("past-1", 0.8, (0,))])
    if run == "sync":
        found = chain.suggest(asked, limit=3)
    else:
        found = asyncio.run(chain.asuggest(asked, limit=3))
    assert found[0].tool == "pfas_classifier" and found[0].evidence
    llm = [i for i, s in enumerate(found) if s.source == "llm"]
    assert all(i > 0 for i in llm)
    assert all(0 < found[i].score <= 0.1 and not found[i].evidence for i in llm)
