"""Reading Workflow JSON files as ``em-plugin import`` does, every error located in the file.

:func:`read_workflow_file` reads a ``.jsonl`` file (one workflow per line) or a ``.json``
document (one workflow, or a list of them) and locates each error as ``file:line: reason``
(``file: workflow [i]: reason`` in a list); with ``skip_invalid`` the bad records are collected
instead, so the valid ones can be imported. :func:`read_one_workflow` reads a file that holds
one workflow (``em-plugin suggest FILE``). :func:`check_import_format` refuses, by its suffix, a
file of an export format that is not read back (Turtle, TriG, JSON-LD, PROV), naming the
formats that are (:data:`IMPORT_FORMATS`). The line format itself is
:mod:`provenance.workflow_json` (docs/workflow-json.md).

Example:
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "flows.jsonl"
    >>> lines = [{"id": "w1", "steps": []}, {"id": 2}]
    >>> _ = path.write_text("".join(json.dumps(x) + chr(10) for x in lines), encoding="utf-8")
    >>> workflows, skipped = read_workflow_file(path, skip_invalid=True)
    >>> [(line, w.id) for line, w in workflows]
    [(1, 'w1')]
    >>> print(str(skipped[0]).replace(str(path), "flows.jsonl"))
    flows.jsonl:2: 'id' must be a string, not a number
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from provenance.errors import WorkflowFormatError
from provenance.model import Workflow
from provenance.workflow_json import loads_workflow, workflow_from_json

__all__ = [
    "IMPORT_FORMATS",
    "NumberedWorkflow",
    "check_import_format",
    "read_one_workflow",
    "read_workflow_file",
]

NumberedWorkflow = tuple[int, Workflow]
"""A workflow with the 1-based line it was read from."""


IMPORT_FORMATS = (
    "Workflow JSON (.jsonl: one workflow per line; .json: one workflow or a list of them) "
    "and a full backup (.nq, from 'em-plugin export --format nq')"
)
"""What ``em-plugin import`` reads, named by every error about a file of another format."""

# Export formats import cannot read back (PROV graphs lose the Workflow JSON fields), by suffix.
_RDF_SUFFIXES = {
    ".ttl": "Turtle",
    ".turtle": "Turtle",
    ".trig": "TriG",
    ".jsonld": "JSON-LD",
    ".json-ld": "JSON-LD",
    ".provn": "PROV-N",
    ".provjson": "PROV-JSON",
    ".nt": "N-Triples",
    ".n3": "N3",
    ".rdf": "RDF/XML",
    ".owl": "RDF/XML",
    ".xml": "XML",
}
_EXPORT_ADVICE = "export with --format jsonl (the workflows) or nq (a full backup) to re-import"


def check_import_format(path: Path) -> None:
    """Refuse a file whose suffix names a format ``em-plugin import`` does not read.

    Args:
        path: The file (only its suffix is looked at).

    Raises:
        WorkflowFormatError: For an RDF or PROV serialisation (what ``export`` writes besides
            ``jsonl`` and ``nq``); the message names :data:`IMPORT_FORMATS`.
    """
    kind = _RDF_SUFFIXES.get(path.suffix.lower())
    if kind is not None:
        raise WorkflowFormatError(
            f"this is {kind}, which import does not read: import reads {IMPORT_FORMATS}; "
            f"{_EXPORT_ADVICE}",
            file=str(path),
        )


def _not_json(error: WorkflowFormatError) -> WorkflowFormatError:
    """``error`` with the formats import reads, for a file that is no JSON from its start."""
    return WorkflowFormatError(f"{error.reason}; import reads {IMPORT_FORMATS}", file=error.file)


def read_workflow_file(
    path: Path,
    *,
    skip_invalid: bool = False,
    scope: str | None = None,
    validate: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[list[NumberedWorkflow], list[WorkflowFormatError]]:
    """Read a Workflow JSON file, locating every error as ``file:line: reason``.

    A ``.jsonl`` file holds one workflow per line. A ``.json`` file (or any file whose text
    starts with ``[``) is one JSON document: a workflow object or a list of them; its errors are
    located as ``file: workflow [i]: reason``.

    Args:
        path: The file.
        skip_invalid: Collect the bad lines' errors instead of raising on the first one.
        scope: When given, every workflow is moved into this scope.
        validate: Also check each workflow against the SHACL shapes
            (:func:`provenance.validation.validate_workflows`, about 0.2 s each); a violation
            is a bad line.
        progress: Called as ``progress("shapes", done, total)`` while validating.

    Returns:
        The valid workflows with their line numbers, in file order, and the skipped lines'
        errors in line order.

    Raises:
        WorkflowFormatError: On the first bad line (unless ``skip_invalid``) or when the file
            cannot be read. A repeated id is a bad line too.
    """
    numbered, skipped = _read_file(path, skip_invalid=skip_invalid, scope=scope)
    if validate:
        from provenance.validation import validate_workflows

        numbered, invalid = validate_workflows(
            numbered, file=str(path), skip_invalid=skip_invalid, progress=progress
        )
        skipped = sorted([*skipped, *invalid], key=lambda e: e.line or 0)
    return numbered, skipped


def _read_file(
    path: Path, *, skip_invalid: bool, scope: str | None
) -> tuple[list[NumberedWorkflow], list[WorkflowFormatError]]:
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise WorkflowFormatError(f"cannot read: {exc.strerror}", file=name) from None
    if path.suffix.lower() == ".json" or raw.lstrip()[:1] == b"[":
        return _read_document(raw, name, skip_invalid=skip_invalid, scope=scope)
    workflows: list[NumberedWorkflow] = []
    skipped: list[WorkflowFormatError] = []
    first_line: dict[str, int] = {}
    # JSON strings cannot hold a raw newline, so splitting the bytes on b"\n" finds the records.
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            workflow = _parse_line(line)
            if workflow.id in first_line:
                first = first_line[workflow.id]
                raise WorkflowFormatError(
                    f"duplicate workflow id {workflow.id!r} (first on line {first})"
                )
            if scope is not None:
                workflow = workflow.replace(scope=scope)
        except WorkflowFormatError as exc:
            located = exc.at(file=name, line=number)
            if not skip_invalid:
                if not workflows and exc.reason.startswith("invalid JSON"):
                    located = _not_json(located).at(line=number)
                raise located from None
            skipped.append(located)
            continue
        first_line[workflow.id] = number
        workflows.append((number, workflow))
    return workflows, skipped


def _read_document(
    raw: bytes, name: str, *, skip_invalid: bool, scope: str | None
) -> tuple[list[NumberedWorkflow], list[WorkflowFormatError]]:
    try:
        document = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise WorkflowFormatError(f"not UTF-8 text: {exc.reason}", file=name) from None
    except json.JSONDecodeError as exc:
        raise _not_json(
            WorkflowFormatError(
                f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", file=name
            )
        ) from None
    except RecursionError:
        raise WorkflowFormatError("invalid JSON: nested too deeply", file=name) from None
    if isinstance(document, dict) and "prefix" in document and "id" not in document:
        # PROV-JSON (export --format provjson) keys its top level by PROV relation.
        raise WorkflowFormatError(
            f"this is PROV-JSON, which import does not read: import reads {IMPORT_FORMATS}; "
            f"{_EXPORT_ADVICE}",
            file=name,
        )
    if isinstance(document, dict):
        items = [document]
    elif isinstance(document, list):
        items = document
    else:
        raise WorkflowFormatError(
            f"expected a workflow object or a list of them, got {type(document).__name__}",
            file=name,
        )
    workflows: list[NumberedWorkflow] = []
    skipped: list[WorkflowFormatError] = []
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"workflow [{index}]: " if isinstance(document, list) else ""
        try:
            workflow = workflow_from_json(item)
            if workflow.id in first:
                raise WorkflowFormatError(
                    f"duplicate workflow id {workflow.id!r} (first at [{first[workflow.id]}])"
                )
        except WorkflowFormatError as exc:
            located = WorkflowFormatError(f"{where}{exc.reason}", file=name)
            if not skip_invalid:
                raise located from None
            skipped.append(located)
            continue
        first[workflow.id] = index
        workflows.append((index + 1, workflow if scope is None else workflow.replace(scope=scope)))
    return workflows, skipped


def _parse_line(line: bytes) -> Workflow:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    return loads_workflow(text.rstrip("\r"))


def read_one_workflow(path: Path) -> Workflow:
    """Read a file that holds one workflow: one JSON object, or a ``.jsonl`` with one line.

    ``em-plugin suggest FILE`` reads the current workflow this way.

    Args:
        path: The file.

    Returns:
        The workflow.

    Raises:
        WorkflowFormatError: When the file holds no workflow, several, or a malformed one.
    """
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowFormatError(f"not UTF-8 text: {exc.reason}", file=name) from None
    except OSError as exc:
        raise WorkflowFormatError(f"cannot read: {exc.strerror}", file=name) from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        workflows, _ = read_workflow_file(path)
        if len(workflows) != 1:
            raise WorkflowFormatError(
                f"expected one workflow, found {len(workflows)}", file=name
            ) from None
        return workflows[0][1]
    except RecursionError:
        raise WorkflowFormatError("invalid JSON: nested too deeply", file=name) from None
    try:
        return workflow_from_json(obj)
    except WorkflowFormatError as exc:
        raise exc.at(file=name) from None
