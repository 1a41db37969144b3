"""Crew descriptions (from mappings, as prompt text) and secret redaction."""

from __future__ import annotations

import pytest

from em_plugin.capture.redaction import REDACTED, is_secret_key, redact_args, redact_workflow
from em_plugin.errors import ConfigurationError
from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription, coerce_crew
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow


def test_crew_from_mapping_round_trip_and_text() -> None:
    data = {
        "name": "chemists",
        "description": "Find PFAS",
        "coordinator": {"name": "chemist", "role": "coordinates"},
        "agents": [
            {"name": "x", "role": "reads", "tools": ["product_extractor"]},
            {"name": "y", "tools": [{"name": "pfas_classifier", "description": "Classify."}]},
        ],
    }
    crew = CrewDescription.from_mapping(data)
    assert [a.name for a in crew.agents] == ["chemist", "x", "y"]
    assert crew.tool_names == ("product_extractor", "pfas_classifier")
    assert crew.tool("pfas_classifier") == ToolDescription("pfas_classifier", "Classify.")
    assert crew.tool("nope") is None
    assert CrewDescription.from_mapping(crew.to_dict()) == crew
    text = crew.to_text()
    assert text.splitlines()[:2] == ["Crew: chemists", "Purpose: Find PFAS"]
    assert "  - tool pfas_classifier: Classify." in text


def test_coerce_crew_accepts_demo_style_objects() -> None:
    class Demo:
        def to_dict(self) -> dict:
            return {"name": "demo", "agents": [{"name": "a", "tools": ["t"]}]}

    assert coerce_crew(Demo()).tool_names == ("t",)  # type: ignore[union-attr]
    assert coerce_crew(None) is None
    crew = CrewDescription("c")
    assert coerce_crew(crew) is crew
    with pytest.raises(ConfigurationError, match="crew must be"):
        coerce_crew(42)
    with pytest.raises(ConfigurationError, match="crew name"):
        CrewDescription.from_mapping({"agents": []})
    with pytest.raises(ConfigurationError, match="a tool must be"):
        CrewDescription.from_mapping({"name": "c", "agents": [{"name": "a", "tools": [3]}]})
    with pytest.raises(ConfigurationError, match="tool name"):
        AgentDescription("a", tools=(ToolDescription(""),))


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("apiKey", True),
        ("OPENAI_API_KEY", True),
        ("access_token", True),
        ("password", True),
        ("Authorization", True),
        ("client_secret", True),
        ("max_tokens", False),
        ("keyboard", False),
        ("author", False),
        ("file", False),
    ],
)
def test_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_redaction_walks_nested_values_and_failed_calls() -> None:
    args = {
        "headers": {"Authorization": "x"},
        "items": [{"token": "t"}],
        "note": "Bearer abcdefghij",
    }
    assert redact_args(args) == {
        "headers": {"Authorization": REDACTED},
        "items": [{"token": REDACTED}],
        "note": REDACTED,
    }
    workflow = Workflow(
        id="w",
        steps=(InstructionStep("go", (CallStep("login", {"password": "hunter2", "user": "u"}),)),),
        failed=(FailedCall(CallStep("login", {"password": "p"}), "denied"),),
    )
    clean = redact_workflow(workflow)
    assert clean.steps[0].steps[0].args == {"password": REDACTED, "user": "u"}
    assert clean.failed[0].call.args == {"password": REDACTED}
    harmless = Workflow(id="h", steps=(CallStep("a", {"q": 1}),))
    assert redact_workflow(harmless) is harmless


def test_structure_under_a_secret_looking_key_is_walked_not_replaced() -> None:
    # Galaxy's text tools take a ``token_set`` list: structure, not a credential.
    args = {"token_set": [{"line": "x", "password": "p"}], "token": "t", "auth": {"user": "u"}}
    assert redact_args(args) == {
        "token_set": [{"line": "x", "password": REDACTED}],
        "token": REDACTED,
        "auth": REDACTED,
    }
