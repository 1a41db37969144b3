"""Workflow JSON v1: round trips, located errors, limits."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from provenance import (
    CallStep,
    InstructionStep,
    LimitError,
    Workflow,
    WorkflowFormatError,
    read_jsonl,
    workflow_from_json,
    workflow_to_json,
    write_jsonl,
)
from provenance.workflow_json import dumps_workflow, loads_workflow
from tests.data_files import benchmark_file
from tests.strategies import workflows


@given(workflows)
@settings(max_examples=150, deadline=None)
def test_json_round_trip_is_lossless(workflow: Workflow) -> None:
    assert workflow_from_json(workflow_to_json(workflow)) == workflow
    assert loads_workflow(dumps_workflow(workflow)) == workflow


def test_unknown_keys_survive_unchanged() -> None:
    line = {
        "id": "w1",
        "custom": {"nested": [1, 2]},
        "steps": [
            {
                "kind": "instruction",
                "text": "go",
                "mood": "ok",
                "steps": [{"kind": "call", "name": "t", "args": {}, "output": None, "x-cost": 3}],
            }
        ],
    }
    workflow = workflow_from_json(line)
    assert workflow.extra == {"custom": {"nested": [1, 2]}}
    assert workflow_to_json(workflow) == line


def test_defaults_args_and_scope() -> None:
    workflow = workflow_from_json({"id": "w", "steps": [{"kind": "call", "name": "t"}]})
    assert workflow.scope == "default"
    assert workflow.steps[0] == CallStep(name="t")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[]", "must be a JSON object"),
        ('{"steps": []}', "needs 'id'"),
        ('{"id": "a"}', "needs 'steps'"),
        ('{"id": "a", "steps": [{"kind": "tool"}]}', "steps[0].kind must be one of"),
        ('{"id": "a", "steps": [{"kind": "call"}]}', "steps[0]: a call needs 'name'"),
        (
            '{"id": "a", "steps": [{"kind": "call", "name": "t", "args": [1]}]}',
            "args must be a JSON object",
        ),
        ('{"id": "a", "steps": [{"kind": "instruction", "text": "  "}]}', "must not be empty"),
        (
            '{"id": "a", "steps": [{"kind": "instruction", "text": "x", "steps": [{"kind": "call", "name": 3}]}]}',  # noqa: E501
            "steps[0].steps[0]: call name must be a string",
        ),
        ('{"id": "a", "created": "yesterday", "steps": []}', "not an ISO 8601"),
    ],
)
def test_bad_lines_are_located(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "steps": []}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(WorkflowFormatError) as info:
        read_jsonl(path)
    assert str(info.value).startswith(f"{path}:3: ")
    assert reason in str(info.value)
    assert info.value.line == 3


def test_skip_invalid_keeps_the_good_lines(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"id": "a", "steps": []}\n{oops\n{"id": "b", "steps": []}\n', encoding="utf-8")
    assert [w.id for w in read_jsonl(path, skip_invalid=True)] == ["a", "b"]


def test_duplicate_ids_in_one_file_are_an_error() -> None:
    text = '{"id": "a", "steps": []}\n{"id": "a", "steps": []}\n'
    with pytest.raises(WorkflowFormatError, match="duplicate workflow id 'a'"):
        read_jsonl(io.StringIO(text))


def test_limits_give_clear_errors() -> None:
    with pytest.raises(LimitError, match="over the limit"):
        InstructionStep(text="x" * 200_000)
    with pytest.raises(LimitError, match="over the limit"):
        CallStep(name="t", args={"blob": "y" * 3_000_000})
    deep: CallStep = CallStep(name="leaf")
    for _ in range(40):
        deep = CallStep(name="handoff", steps=(deep,))
    with pytest.raises(LimitError, match="nests deeper"):
        Workflow(id="deep", steps=(deep,))


def test_non_json_values_are_rejected() -> None:
    with pytest.raises(WorkflowFormatError, match="not a JSON value"):
        CallStep(name="t", args={"x": object()})
    with pytest.raises(WorkflowFormatError, match="not a JSON value"):
        CallStep(name="t", output=float("nan"))


def test_leaves_prefix_and_paths() -> None:
    workflow = Workflow(
        id="w",
        steps=(
            InstructionStep(
                "extract", steps=(CallStep("a"), CallStep("h", steps=(CallStep("b"),)))
            ),
            InstructionStep("answer without tools"),
            CallStep("c"),
        ),
    )
    assert [getattr(s, "name", None) or s.text for s in workflow.leaves()] == [
        "a",
        "b",
        "answer without tools",
        "c",
    ]
    assert workflow.leaf_paths() == ["0.0", "0.1.0", "1", "2"]
    prefix = workflow.prefix(2)
    assert [getattr(s, "name", None) for s in prefix.leaves()] == ["a", "b"]
    assert workflow.step_at("0.1.0") == CallStep("b")
    with pytest.raises(KeyError):
        workflow.step_at("5")


@pytest.mark.parametrize("name", ["tau2_retail.jsonl", "galaxy_iwc.jsonl", "helpdesk.jsonl"])
def test_benchmark_files_round_trip(name: str, tmp_path: Path) -> None:
    source = benchmark_file(name)
    out = tmp_path / "out.jsonl"
    write_jsonl(read_jsonl(source), out)
    original = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    again = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert again == original
