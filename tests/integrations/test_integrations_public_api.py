"""The integrations' public API: ``__all__`` is the sorted public names, about half a dozen per
framework; the names dropped in this release still import from the package, with a warning."""

from __future__ import annotations

import importlib

import pytest

from tests.api_surface import public_names

pytest.importorskip("langgraph")
pytest.importorskip("beeai_framework")

ALL = {
    "integrations.langgraph": [
        "EpisodicMemoryMiddleware",
        "EpisodicMemoryNode",
        "SUGGESTIONS_EVENT",
        "TrajectoryRecorder",
        "crew_description",
        "recall_workflows_tool",
        "reply_text",
        "with_episodic_memory",
    ],
    "integrations.beeai": [
        "EpisodicMemoryAgent",
        "EpisodicMemoryMiddleware",
        "SUGGESTIONS_EVENT",
        "SessionMemoryManager",
        "SuggestionsEvent",
        "crew_description",
        "recall_workflows_tool",
    ],
}
DEPRECATED = {
    "integrations.langgraph": {
        "CAPTURE_KEY": "integrations.langgraph._turns",
        "EpisodicAgentState": "integrations.langgraph._middleware",
        "EpisodicMemoryState": "integrations.langgraph._turns",
        "TRACE_KEY": "integrations.langgraph._trace",
        "append_to_message": "integrations.langgraph._node",
        "crew_view": "integrations.langgraph._memory_messages",
        "is_handoff": "integrations.langgraph._messages",
        "is_memory_traffic": "integrations.langgraph._memory_messages",
        "memory_kind": "integrations.langgraph._memory_messages",
        "message_text": "integrations.langgraph._messages",
        "tools_of": "integrations.langgraph._tools",
        "trajectory_from_messages": "integrations.langgraph._messages",
    },
    "integrations.beeai": {
        "CallRecorder": "integrations.beeai._capture",
        "EpisodicMemoryAgentOutput": "integrations.beeai._agent",
        "RECALL_DESCRIPTION": "integrations.beeai._tools",
        "RecallInput": "integrations.beeai._tools",
        "RecallWorkflowsTool": "integrations.beeai._tools",
        "deployment_session": "integrations.beeai._deployment",
        "instruction_text": "integrations.beeai._capture",
    },
}


@pytest.mark.parametrize("package", sorted(ALL))
def test_all_is_the_sorted_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(ALL[package]) == public_names(package)
    assert len(module.__all__) <= 8


@pytest.mark.parametrize(
    ("package", "name"), [(p, n) for p, names in sorted(DEPRECATED.items()) for n in names]
)
def test_dropped_name_warns_and_still_imports(package: str, name: str) -> None:
    module = importlib.import_module(package)
    where = DEPRECATED[package][name]
    with pytest.deprecated_call(match=rf"importing {name} from {package} .* {where}\.{name}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(where), name)
    assert name not in vars(module)  # not cached: every use warns


@pytest.mark.parametrize("package", sorted(ALL))
def test_from_import_of_a_dropped_name_points_at_the_caller(package: str) -> None:
    name = next(iter(DEPRECATED[package]))
    with pytest.deprecated_call() as caught:
        exec(f"from {package} import {name}", {})
    assert all(w.filename == "<string>" for w in caught if w.category is DeprecationWarning)


@pytest.mark.parametrize("package", sorted(ALL))
def test_unknown_name_is_an_attribute_error(package: str) -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        importlib.import_module(package).nope  # noqa: B018
