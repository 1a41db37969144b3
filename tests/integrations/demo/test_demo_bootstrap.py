"""The bootstrap memory is deterministic, well-formed and visibly synthetic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from integrations.demo.pfas import CREW_DESCRIPTION, TOOLS, agent_for_tool
from integrations.demo.pfas.bootstrap import (
    BOOTSTRAP_JSONL,
    SCENARIOS,
    SOURCE,
    TEMPLATES,
    dumps_jsonl,
    generate_bootstrap,
    write_bootstrap,
)
from provenance.workflow_json import read_jsonl


@pytest.fixture(scope="module")
def workflows() -> list[dict]:
    return generate_bootstrap()


def test_regenerating_gives_exactly_the_committed_file(workflows: list[dict]) -> None:
    committed = BOOTSTRAP_JSONL.read_text(encoding="utf-8")
    assert dumps_jsonl(workflows) == committed, (
        "bootstrap.jsonl is stale: run `python -m integrations.demo.pfas.bootstrap`"
    )


def test_write_bootstrap_round_trips_through_workflow_json(tmp_path: Path) -> None:
    path = write_bootstrap(tmp_path / "b.jsonl", n=8, seed=3)
    loaded = read_jsonl(path)
    assert [w.id for w in loaded] == [f"bootstrap/{i:04d}" for i in range(1, 9)]
    assert all(w.source == SOURCE and w.extra == {"synthetic": True} for w in loaded)
    assert all(w.crew == CREW_DESCRIPTION.name for w in loaded)


def test_at_least_60_synthetic_workflows_with_sequential_ids(workflows: list[dict]) -> None:
    assert len(workflows) >= 60
    assert [w["id"] for w in workflows] == [f"bootstrap/{i:04d}" for i in range(1, 65)]
    assert all(w["source"] == SOURCE and w["synthetic"] is True for w in workflows)


def test_steps_are_instructions_over_the_four_tools(workflows: list[dict]) -> None:
    used = set()
    for workflow in workflows:
        for instruction in workflow["steps"]:
            assert instruction["kind"] == "instruction" and instruction["text"]
            assert "{" not in instruction["text"], "unfilled template placeholder"
            assert instruction["steps"], "every bootstrap instruction calls a tool"
            for call in instruction["steps"]:
                assert call["kind"] == "call" and call["name"] in TOOLS
                assert call["agent"] == agent_for_tool(call["name"])
                assert isinstance(call["args"], dict) and call["output"] is not None
                used.add(call["name"])
    assert used == set(TOOLS)


def test_both_kinds_of_instruction_occur(workflows: list[dict]) -> None:
    sizes = [len(i["steps"]) for w in workflows for i in w["steps"]]
    assert 1 in sizes, "single-tool instructions"
    assert max(sizes) >= 2, "multi-step instructions"


def test_every_scenario_is_used(workflows: list[dict]) -> None:
    def pattern(title: str) -> str:
        return "^" + re.escape(title).replace(r"\{file\}", ".+").replace(r"\{subject\}", ".+") + "$"

    for title, _ in SCENARIOS:
        assert any(re.match(pattern(title), w["title"]) for w in workflows), title


def test_templates_have_paraphrases() -> None:
    assert all(len(texts) >= 3 for texts in TEMPLATES.values())


def test_hazard_steps_only_follow_products_with_pfas(workflows: list[dict]) -> None:
    for workflow in workflows:
        for instruction in workflow["steps"]:
            for call in instruction["steps"]:
                if call["name"] == "hazard_assessment" and "ingredients" in call["args"]:
                    assert call["args"]["ingredients"], workflow["id"]


def test_same_seed_same_workflows_other_seed_other_workflows() -> None:
    assert generate_bootstrap(12, seed=7) == generate_bootstrap(12, seed=7)
    assert generate_bootstrap(12, seed=7) != generate_bootstrap(12, seed=8)
