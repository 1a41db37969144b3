"""Reading Workflow JSON files as em-plugin import does: .jsonl, .json documents, located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provenance.errors import WorkflowFormatError
from provenance.workflow_files import (
    IMPORT_FORMATS,
    check_import_format,
    read_one_workflow,
    read_workflow_file,
)

ONE = {"id": "w1", "steps": [{"kind": "call", "name": "reader"}]}


def test_a_jsonl_file_reads_with_line_numbers_and_a_scope(tmp_path: Path) -> None:
    path = tmp_path / "flows.jsonl"
    path.write_text(json.dumps(ONE) + "\n\n" + json.dumps({**ONE, "id": "w2"}) + "\n")
    workflows, skipped = read_workflow_file(path, scope="team")
    assert [(n, w.id, w.scope) for n, w in workflows] == [(1, "w1", "team"), (3, "w2", "team")]
    assert skipped == []


def test_a_repeated_id_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "flows.jsonl"
    path.write_text(json.dumps(ONE) + "\n" + json.dumps(ONE) + "\n")
    with pytest.raises(
        WorkflowFormatError, match=r":2: duplicate workflow id 'w1' \(first on line 1\)"
    ):
        read_workflow_file(path)


def test_a_json_list_locates_errors_by_index(tmp_path: Path) -> None:
    path = tmp_path / "flows.json"
    path.write_text(json.dumps([ONE, {"id": 3}, {**ONE, "id": "w2"}]))
    with pytest.raises(WorkflowFormatError, match=r"workflow \[1\]: 'id' must be a string"):
        read_workflow_file(path)
    workflows, skipped = read_workflow_file(path, skip_invalid=True)
    assert [(n, w.id) for n, w in workflows] == [(1, "w1"), (3, "w2")]
    assert len(skipped) == 1 and skipped[0].file == str(path)


def test_a_file_that_is_no_json_names_the_formats_read(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("hello\n")
    with pytest.raises(WorkflowFormatError) as caught:
        read_workflow_file(path)
    assert IMPORT_FORMATS in str(caught.value) and ":1:" in str(caught.value)


def test_prov_json_and_rdf_suffixes_are_refused_with_advice(tmp_path: Path) -> None:
    provjson = tmp_path / "export.json"
    provjson.write_text(json.dumps({"prefix": {"prov": "http://www.w3.org/ns/prov#"}}))
    with pytest.raises(WorkflowFormatError, match="this is PROV-JSON"):
        read_workflow_file(provjson)
    with pytest.raises(WorkflowFormatError, match="this is Turtle.*--format jsonl"):
        check_import_format(tmp_path / "memory.ttl")
    check_import_format(tmp_path / "flows.jsonl")  # read: no error
    check_import_format(tmp_path / "backup.nq")


def test_read_one_workflow_takes_an_object_or_a_single_line(tmp_path: Path) -> None:
    pretty = tmp_path / "current.json"
    pretty.write_text(json.dumps(ONE, indent=2))
    assert read_one_workflow(pretty).id == "w1"
    lines = tmp_path / "current.jsonl"
    lines.write_text(json.dumps(ONE) + "\n" + json.dumps({**ONE, "id": "w2"}) + "\n")
    with pytest.raises(WorkflowFormatError, match="expected one workflow, found 2"):
        read_one_workflow(lines)


def test_validate_checks_the_shapes_and_counts_progress(tmp_path: Path) -> None:
    path = tmp_path / "flows.jsonl"
    path.write_text(json.dumps(ONE) + "\n" + json.dumps({"id": 7}) + "\n")
    seen: list[tuple[str, int, int]] = []
    workflows, skipped = read_workflow_file(
        path, skip_invalid=True, validate=True, progress=lambda *a: seen.append(a)
    )
    assert [w.id for _, w in workflows] == ["w1"] and [e.line for e in skipped] == [2]
    assert seen == [("shapes", 1, 1)]
