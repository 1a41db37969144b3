"""Workflow JSON v1: round trips, located errors, limits."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance import (
    CallStep,
    InstructionStep,
    Workflow,
    WorkflowFormatError,
    dumps_workflow,
    loads_workflow,
    read_jsonl,
    write_jsonl,
)
from provenance.errors import LimitError
from provenance.workflow_json import workflow_from_json, workflow_to_json
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


# ------------------------------------------------------------------ hostile input (issue 13.8/9)

_SURROGATE_LINES = [
    ('{"id": "\\ud800", "steps": []}', "workflow id contains a lone surrogate"),
    ('{"id": "a", "title": "x\\udfff", "steps": []}', "workflow title contains a lone surrogate"),
    (
        '{"id": "a", "steps": [{"kind": "instruction", "text": "hi \\ud800"}]}',
        "steps[0]: instruction text contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [{"kind": "call", "name": "t\\ud800"}]}',
        "steps[0]: call name contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [{"kind": "call", "name": "t", "id": "\\ud800"}]}',
        "steps[0]: call 't' id contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [{"kind": "call", "name": "t", "args": {"q": [1, {"z": "\\ud800"}]}}]}',  # noqa: E501
        "steps[0]: call 't' args['q'][1]['z'] contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [{"kind": "call", "name": "t", "args": {"\\ud800": 1}}]}',
        "steps[0]: call 't' args key '\\ud800' contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [{"kind": "call", "name": "t", "output": "\\ud800"}]}',
        "steps[0]: call 't' output contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [], "failed": [{"kind": "call", "name": "t", "error": "\\ud800"}]}',
        "failed[0]: failed call 't' error contains a lone surrogate",
    ),
    (
        '{"id": "a", "steps": [], "note": "\\ud800"}',
        "workflow extra['note'] contains a lone surrogate",
    ),
]


@pytest.mark.parametrize(("line", "reason"), _SURROGATE_LINES)
def test_lone_surrogates_are_refused_naming_the_field(
    tmp_path: Path, line: str, reason: str
) -> None:
    with pytest.raises(WorkflowFormatError) as info:
        loads_workflow(line)
    assert reason in str(info.value)
    path = tmp_path / "s.jsonl"
    path.write_text('{"id": "ok", "steps": []}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(WorkflowFormatError, match=f"^{path}:2: "):
        read_jsonl(path)
    assert [w.id for w in read_jsonl(path, skip_invalid=True)] == ["ok"]


def test_lone_surrogates_in_model_values_are_refused() -> None:
    with pytest.raises(WorkflowFormatError, match="instruction text contains a lone surrogate"):
        InstructionStep(text="\ud800")
    with pytest.raises(WorkflowFormatError, match=r"call 't' args\['k'\] contains a lone"):
        CallStep(name="t", args={"k": "\udc80"})
    with pytest.raises(WorkflowFormatError, match="call 't' agent contains a lone surrogate"):
        CallStep(name="t", agent="\ud800")


def test_args_nested_too_deep_are_refused_by_the_model() -> None:
    deep: object = "leaf"
    for _ in range(500):
        deep = [deep]
    with pytest.raises(LimitError, match="call 't' args nests deeper than 64 levels"):
        CallStep(name="t", args={"k": deep})
    with pytest.raises(LimitError, match="output nests deeper"):
        CallStep(name="t", output={"a": deep})
    ok: object = 1
    for _ in range(60):
        ok = {"k": ok}
    assert CallStep(name="t", args={"k": ok}).args["k"] == ok
    line = '{"id": "a", "steps": [{"kind": "call", "name": "t", "args": {"k": %s}}]}' % (
        "[" * 500 + "]" * 500
    )
    with pytest.raises(LimitError, match="nests deeper than 64"):
        loads_workflow(line)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"id": null, "steps": []}', "'id' must be a string, not null"),
        ('{"id": 7, "steps": []}', "'id' must be a string, not a number"),
        (
            '{"id": "a", "steps": [{"kind": "call", "name": "t", "args": {"n": %s}}]}'
            % ("9" * 5000),
            "invalid JSON: an integer has more than 4300 digits",
        ),
        (
            '{"id": "a", "steps": %s}'
            % ('[{"kind": "call", "name": "t", "steps": ' * 900 + "[]" + "}]" * 900),
            "nested too deeply",
        ),
    ],
)
def test_type_and_size_errors_are_clean_and_located(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "steps": []}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(WorkflowFormatError) as info:
        read_jsonl(path)
    assert str(info.value) == f"{path}:2: {info.value.reason}"
    assert reason in info.value.reason
    errors: list[WorkflowFormatError] = []
    assert [w.id for w in read_jsonl(path, skip_invalid=True, errors=errors)] == ["ok"]
    assert [e.line for e in errors] == [2]


def test_not_utf8_and_duplicate_ids_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        b'{"id": "a", "steps": []}\n\n{"id": "b", "steps": []}\n'
        b'{"id": "c", "title": "\xff", "steps": []}\n{"id": "a", "steps": []}\n'
    )
    with pytest.raises(WorkflowFormatError) as info:
        read_jsonl(path)
    assert str(info.value).startswith(f"{path}:4: not UTF-8 text")
    errors: list[WorkflowFormatError] = []
    assert [w.id for w in read_jsonl(path, skip_invalid=True, errors=errors)] == ["a", "b"]
    assert [str(e) for e in errors] == [
        f"{path}:4: not UTF-8 text: invalid start byte at byte 22",
        f"{path}:5: duplicate workflow id 'a' (first on line 1)",
    ]
    path.write_bytes(b'{"id": "a", "steps": []}\n{"id": "a", "steps": []}\n')
    with pytest.raises(
        WorkflowFormatError, match=r":2: duplicate workflow id 'a' \(first on line 1\)"
    ):
        read_jsonl(path)
    with pytest.raises(WorkflowFormatError, match=r"^<stream>:2: duplicate"):
        read_jsonl(io.StringIO('{"id": "a", "steps": []}\n{"id": "a", "steps": []}\n'))


# Arbitrary text, arbitrary JSON, and valid lines cut or spliced: the parser returns a workflow
# or raises WorkflowFormatError, never anything else.
_json_anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_field_values = st.sampled_from(
    [None, 0, -1, 1.5, True, [], {}, "", " ", "\ud800", "x\x00", "2026-13-40", [None], {"k": None}]
)


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_parser_never_raises_anything_but_format_errors_on_text(text: str) -> None:
    try:
        loads_workflow(text)
    except WorkflowFormatError:
        pass


@given(_json_anything)
@settings(max_examples=300, deadline=None)
def test_parser_never_raises_anything_but_format_errors_on_json(value: object) -> None:
    try:
        workflow_from_json(value)
        loads_workflow(json.dumps(value))
    except WorkflowFormatError:
        pass


@given(workflows, st.data())
@settings(max_examples=200, deadline=None)
def test_parser_handles_any_field_replaced_by_a_bad_value(
    workflow: Workflow, data: st.DataObject
) -> None:
    obj = workflow_to_json(workflow)
    target = obj
    if obj["steps"] and data.draw(st.booleans()):
        target = obj["steps"][data.draw(st.integers(0, len(obj["steps"]) - 1))]
    key = data.draw(st.sampled_from([*target.keys(), "id", "kind", "steps", "args", "output"]))
    target[key] = data.draw(_field_values | _json_anything)
    try:
        parsed = loads_workflow(json.dumps(obj))
    except WorkflowFormatError:
        return
    assert loads_workflow(dumps_workflow(parsed)) == parsed


@given(workflows, st.integers(min_value=0, max_value=400))
@settings(max_examples=200, deadline=None)
def test_parser_handles_truncated_lines(workflow: Workflow, cut: int) -> None:
    line = dumps_workflow(workflow)
    try:
        loads_workflow(line[: min(cut, len(line) - 1)])
    except WorkflowFormatError:
        pass


def test_the_cli_reader_locates_and_skips_the_same_lines(tmp_path: Path) -> None:
    # em-plugin import reads files through provenance.workflow_files, which parses with
    # loads_workflow.
    from provenance.workflow_files import read_workflow_file

    path = tmp_path / "import.jsonl"
    lines = [
        '{"id": "a", "steps": []}',
        '{"id": null, "steps": []}',
        '{"id": "b", "steps": [{"kind": "call", "name": "t", "args": {"n": %s}}]}' % ("1" * 5000),
        '{"id": "c", "steps": [{"kind": "instruction", "text": "\\ud800"}]}',
        '{"id": "d", "steps": []}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(WorkflowFormatError, match=rf"^{path}:2: 'id' must be a string, not null"):
        read_workflow_file(path)
    workflows, skipped = read_workflow_file(path, skip_invalid=True)
    assert [(n, w.id) for n, w in workflows] == [(1, "a"), (5, "d")]
    assert [(e.line, e.reason.split(":")[0]) for e in skipped] == [
        (2, "'id' must be a string, not null"),
        (3, "invalid JSON"),
        (4, "steps[0]"),
    ]
