"""The BeeAI recall tool and the crew description derived from a coordinator."""

from __future__ import annotations

import logging

import pytest
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.tools import ToolError
from beeai_support import CLASSIFY, EXTRACT, build_crew, leaf_names, make_memory

from em_plugin.errors import ConfigurationError
from em_plugin.suggest.crew import CrewDescription
from integrations.beeai import EpisodicMemoryMiddleware, crew_description, recall_workflows_tool
from integrations.beeai._tools import RecallWorkflowsTool
from integrations.beeai.testing import ScriptedChatModel, call, final, last_tool_result


async def _memory_with_a_saved_session():
    memory = make_memory()
    mw = EpisodicMemoryMiddleware(memory)
    crew = build_crew(middlewares=[mw])
    crew.turn_extract()
    await crew.coordinator.run(EXTRACT)
    crew.turn_classify()
    await crew.coordinator.run(CLASSIFY)
    await crew.coordinator.run("/save")
    return memory, mw.workflow().id


async def test_recall_tool_describes_similar_workflows_and_is_not_a_step() -> None:
    memory, saved_id = await _memory_with_a_saved_session()
    llm = ScriptedChatModel(
        [
            call("recall_workflows", query=EXTRACT),
            lambda model_input: final(last_tool_result(model_input)),
        ],
        name="recaller",
    )
    agent = RequirementAgent(llm=llm, tools=[RecallWorkflowsTool(memory)], name="recaller")
    mw = EpisodicMemoryMiddleware(memory)

    response = await agent.run(EXTRACT).middleware(mw)

    text = response.last_message.text
    assert saved_id in text
    assert "product_extractor -> pfas_classifier" in text
    # Looking memory up is not work the crew did: the recall call is not a workflow step.
    assert leaf_names(mw.workflow()) == [EXTRACT]


async def test_recall_tool_isolates_memory_failures(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        scope = "default"
        threshold = 0.65

        def retrieve(self, workflow):
            raise RuntimeError("store is down")

    tool = recall_workflows_tool(Broken())
    with caplog.at_level(logging.WARNING, logger="integrations.beeai"):
        output = await tool.run({"query": "extract ingredients"})
    assert "unavailable" in output.get_text_content()
    assert "store is down" in caplog.text

    with pytest.raises(ToolError):
        await RecallWorkflowsTool(Broken(), strict=True).run({"query": "extract ingredients"})


def test_recall_tool_settings() -> None:
    with pytest.raises(ConfigurationError, match="limit"):
        RecallWorkflowsTool(make_memory(), limit=0)
    tool = RecallWorkflowsTool(make_memory(), name="memory_lookup")
    assert tool.name == "memory_lookup"
    assert tool.input_schema.model_json_schema()["required"] == ["query"]


def test_crew_description_covers_the_coordinator_and_its_handoff_agents() -> None:
    crew = build_crew()
    description = crew_description(crew.coordinator)

    assert isinstance(description, CrewDescription)
    assert description.name == "coordinator"
    assert [a.name for a in description.agents] == ["coordinator", "extractor", "classifier"]
    assert description.agents[0].tools[0].name == "extractor"
    assert description.tool_names == (
        "extractor",
        "classifier",
        "write_report",
        "product_extractor",
        "pfas_classifier",
    )
    assert description.agents[1].role == "Extracts ingredients from SDS files."
    assert "Extract the ingredient list" in description.tool("product_extractor").description
    with pytest.raises(ConfigurationError, match="BeeAI agent"):
        crew_description(object())


async def test_crew_description_feeds_the_fallback_when_memory_has_nothing_similar() -> None:
    crew = build_crew()
    memory = make_memory(crew_description=crew_description(crew.coordinator))
    mw = EpisodicMemoryMiddleware(memory)
    answer = crew.turn_extract()

    response = await crew.coordinator.run(EXTRACT).middleware(mw)

    head, _, tail = response.last_message.text.partition("\n\n")
    assert head == answer
    assert tail.startswith("Suggested next steps (from the crew's tools):")
    shown = mw.suggestions()
    assert {s.source for s in shown} == {"fallback"}
    assert {s.tool for s in shown} <= set(crew_description(crew.coordinator).tool_names)
