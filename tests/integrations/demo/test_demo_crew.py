"""TOOLS and CREW_DESCRIPTION describe a consistent, framework-neutral crew."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import integrations.demo.pfas as demo
from em_plugin.suggest.crew import CrewDescription, coerce_crew
from integrations.demo.pfas import (
    COORDINATOR,
    CREW_DESCRIPTION,
    SUB_AGENTS,
    TITLES,
    TOOLS,
    agent_for_tool,
)

DEMO_DIR = Path(demo.__file__).parent
FRAMEWORKS = {"langchain", "langchain_core", "langgraph", "beeai_framework"}


def test_each_sub_agent_owns_one_tool_and_all_tools_are_covered() -> None:
    assert COORDINATOR.name == "chemist" and TITLES[COORDINATOR.name] == "Chemist Agent"
    assert CREW_DESCRIPTION.agents == (COORDINATOR, *SUB_AGENTS)
    assert COORDINATOR.tools == ()
    assert [len(agent.tools) for agent in SUB_AGENTS] == [1, 1, 1, 1]
    assert sorted(CREW_DESCRIPTION.tool_names) == sorted(TOOLS)
    for tool in TOOLS:
        assert tool in CREW_DESCRIPTION.tool_names
        agent = agent_for_tool(tool)
        assert agent.endswith("_agent") and agent in TITLES


def test_the_crew_is_the_engines_crew_description_type() -> None:
    assert isinstance(CREW_DESCRIPTION, CrewDescription)
    assert coerce_crew(CREW_DESCRIPTION) is CREW_DESCRIPTION
    text = CREW_DESCRIPTION.to_text()
    assert "Agent chemist - Coordinator of the chemist crew" in text
    assert "  - tool pfas_classifier: Classify molecules as PFAS" in text


def test_unknown_tool_names_the_crews_tools() -> None:
    with pytest.raises(KeyError, match="tools: product_extractor, pfas_classifier"):
        agent_for_tool("web_search")


def test_crew_description_is_json_data() -> None:
    data = json.loads(json.dumps(CREW_DESCRIPTION.to_dict()))
    assert data["agents"][0]["name"] == "chemist"
    assert [[t["name"] for t in a["tools"]] for a in data["agents"][1:]] == [[t] for t in TOOLS]
    assert all(a["description"] and a["role"] for a in data["agents"])
    assert CrewDescription.from_mapping(data) == CREW_DESCRIPTION


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_has_a_one_paragraph_description(name: str) -> None:
    doc = TOOLS[name].__doc__ or ""
    summary, _, rest = doc.strip().partition("\n\n")
    assert len(summary) < 100 and summary.endswith(".")
    assert len(rest.split("\n\n")[0]) > 200  # the paragraph an LLM reads as the description


def test_tool_outputs_are_json_serialisable() -> None:
    extracted = TOOLS["product_extractor"](file="aquashield_spray_sds.txt")
    classified = TOOLS["pfas_classifier"](ingredients=extracted["ingredients"])
    assessed = TOOLS["hazard_assessment"](ingredients=classified, pfas_only=True)
    table = TOOLS["markdown_table"](rows=assessed["results"], columns=["name", "conclusion"])
    for out in (extracted, classified, assessed, table):
        assert json.loads(json.dumps(out)) == out


def test_demo_package_imports_no_agent_framework() -> None:
    for path in sorted(DEMO_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            assert not {n.split(".")[0] for n in names} & FRAMEWORKS, f"{path.name} imports {names}"
