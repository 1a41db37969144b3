"""A real BeeAI crew for the integration tests and the benchmark, driven by scripted models.

The crew: a ``coordinator`` RequirementAgent with two ``HandoffTool`` sub-agents, ``extractor``
(tool ``product_extractor``) and ``classifier`` (tool ``pfas_classifier``), plus its own
``write_report`` tool. Every model is an :class:`~integrations.beeai.testing.ScriptedChatModel`;
the ``turn_*`` helpers append one turn's script to each model. Tools fail on demand, like a flaky
service.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flaky_tools
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.memory import UnconstrainedMemory
from beeai_framework.tools import tool
from beeai_framework.tools.handoff import HandoffTool
from flaky_tools import FLAKY

from em_plugin.embedding import FakeEmbedder
from integrations.beeai.testing import ScriptedChatModel, call, final

EXTRACT = "Extract the ingredients from the SDS file acme.pdf"
CLASSIFY = "Classify the extracted ingredients as PFAS or not"
EXTRACT_NEW = "Extract the ingredients from the SDS file beta.pdf"


product_extractor = tool(flaky_tools.product_extractor)
pfas_classifier = tool(flaky_tools.pfas_classifier)
write_report = tool(flaky_tools.write_report)


@dataclass
class Crew:
    """The coordinator, its two sub-agents and their scripted models."""

    coordinator: RequirementAgent
    coordinator_llm: ScriptedChatModel
    extractor_llm: ScriptedChatModel
    classifier_llm: ScriptedChatModel
    answers: list[str] = field(default_factory=list)

    @property
    def models(self) -> tuple[ScriptedChatModel, ...]:
        return (self.coordinator_llm, self.extractor_llm, self.classifier_llm)

    def model_calls(self) -> int:
        """How many times any model of the crew was called."""
        return sum(len(m.calls) for m in self.models)

    def turn_extract(self, file: str = "acme.pdf", *, flaky: bool = False) -> str:
        """Script one extraction turn; with ``flaky`` the tool fails once, then succeeds."""
        answer = f"{file} contains PFOA and water."
        self.coordinator_llm.extend(
            [call("extractor", task=f"Extract the ingredients of {file}"), final(answer)]
        )
        attempts = [call("product_extractor", file=file)]
        if flaky:
            FLAKY.fail_once("product_extractor")
            attempts.append(call("product_extractor", file=file))
        self.extractor_llm.extend([*attempts, final("PFOA, water")])
        self.answers.append(answer)
        return answer

    def turn_classify(self) -> str:
        """Script one classification turn through the classifier sub-agent."""
        answer = "PFOA is a PFAS; water is not."
        self.coordinator_llm.extend(
            [call("classifier", task="Classify PFOA and water"), final(answer)]
        )
        self.classifier_llm.extend(
            [call("pfas_classifier", names=["PFOA", "water"]), final("PFOA: PFAS")]
        )
        self.answers.append(answer)
        return answer

    def turn_report(self) -> str:
        """Script one turn where the coordinator uses its own tool."""
        answer = "Report written."
        self.coordinator_llm.extend([call("write_report", summary="PFOA found"), final(answer)])
        self.answers.append(answer)
        return answer

    def turn_plain(self, answer: str = "Hello!") -> str:
        """Script a turn the coordinator answers without tools."""
        self.coordinator_llm.extend([final(answer)])
        self.answers.append(answer)
        return answer


# The flaky tool is retried with the same arguments (a transient timeout); BeeAI's tool-call
# cycle checker would refuse an identical consecutive call, so the test crews turn it off.
def build_crew(
    *, middlewares: list[Any] | None = None, sub_middlewares: list[Any] | None = None
) -> Crew:
    """Build a fresh crew with empty scripts and its own conversation memory."""
    extractor_llm = ScriptedChatModel(name="extractor_llm")
    classifier_llm = ScriptedChatModel(name="classifier_llm")
    coordinator_llm = ScriptedChatModel(name="coordinator_llm")
    extractor = RequirementAgent(
        llm=extractor_llm,
        tools=[product_extractor],
        name="extractor",
        description="Extracts ingredients from SDS files.",
        middlewares=list(sub_middlewares or []),
        tool_call_checker=False,
    )
    classifier = RequirementAgent(
        llm=classifier_llm,
        tools=[pfas_classifier],
        name="classifier",
        description="Classifies chemicals as PFAS or not.",
        middlewares=list(sub_middlewares or []),
        tool_call_checker=False,
    )
    coordinator = RequirementAgent(
        llm=coordinator_llm,
        tools=[HandoffTool(extractor), HandoffTool(classifier), write_report],
        memory=UnconstrainedMemory(),
        name="coordinator",
        description="Coordinates the chemistry crew.",
        middlewares=list(middlewares or []),
        tool_call_checker=False,
    )
    return Crew(coordinator, coordinator_llm, extractor_llm, classifier_llm)


def make_memory(**kwargs: Any) -> Any:
    """A real EpisodicMemory over an in-memory store (or ``store=``), with FakeEmbedder."""
    from em_plugin.memory import EpisodicMemory
    from provenance.stores import open_store

    kwargs.setdefault("embedder", FakeEmbedder(64))
    kwargs.setdefault("store", open_store("memory:"))
    return EpisodicMemory(**kwargs)


def leaf_names(workflow: Any) -> list[str]:
    """The leaf sequence as names (calls) and texts (instruction leaves)."""
    return [getattr(s, "name", None) or s.text for s in workflow.leaves()]
