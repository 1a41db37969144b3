"""Input and output helpers behind the command line: reading files, bindings, export, validation.

These are the few steps the commands need that are more than one call into the public API
(reading a ``.jsonl`` file with precise line errors, turning ``k=v`` into an RDF term, walking a
store for export or validation). They print nothing; :mod:`em_plugin.cli` prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from provenance.errors import QueryError, WorkflowFormatError
from provenance.model import Workflow
from provenance.workflow_json import dumps_workflow, loads_workflow, workflow_from_json


def read_workflows(
    path: Path, *, skip_invalid: bool = False, scope: str | None = None
) -> tuple[list[Workflow], list[WorkflowFormatError]]:
    """Read a Workflow JSON ``.jsonl`` file, locating every error as ``file:line: reason``.

    Args:
        path: The file.
        skip_invalid: Return the bad lines' errors instead of raising on the first one.
        scope: When given, every workflow is moved into this scope.

    Returns:
        The valid workflows in file order, and the errors of skipped lines.

    Raises:
        WorkflowFormatError: On the first bad line (unless ``skip_invalid``), when the file cannot
            be read, or when an id repeats (a repeated id is a bad line too).
    """
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise WorkflowFormatError(f"cannot read: {exc.strerror}", file=name) from None
    workflows: list[Workflow] = []
    skipped: list[WorkflowFormatError] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            workflow = _parse_line(line)
            if workflow.id in first_line:
                raise WorkflowFormatError(
                    f"duplicate workflow id {workflow.id!r} (first on line {first_line[workflow.id]})"
                )
            if scope is not None:
                workflow = workflow.replace(scope=scope)
        except WorkflowFormatError as exc:
            located = exc.at(file=name, line=number)
            if not skip_invalid:
                raise located from None
            skipped.append(located)
            continue
        first_line[workflow.id] = number
        workflows.append(workflow)
    return workflows, skipped


def _parse_line(line: bytes) -> Workflow:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    return loads_workflow(text.rstrip("\r"))


def read_one_workflow(path: Path) -> Workflow:
    """Read the current workflow for ``suggest``: one JSON object, or a ``.jsonl`` with one line.

    Raises:
        WorkflowFormatError: When the file holds no workflow, several, or a malformed one.
    """
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowFormatError(f"not UTF-8 text: {exc.reason}", file=name) from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        workflows, _ = read_workflows(path)
        if len(workflows) != 1:
            raise WorkflowFormatError(
                f"expected one workflow, found {len(workflows)}", file=name
            ) from None
        return workflows[0]
    try:
        return workflow_from_json(obj)
    except WorkflowFormatError as exc:
        raise exc.at(file=name) from None


def parse_binding(text: str) -> tuple[str, Any]:
    """Turn a ``--bind`` value into ``(variable, RDF term)``.

    ``k=<iri>`` binds an IRI; anything else binds a plain string literal (``k=3`` is the string
    ``"3"``). A leading ``?`` or ``$`` on the variable is dropped.

    Raises:
        QueryError: When there is no ``=`` or the variable name is not a SPARQL variable name.
    """
    from rdflib import Literal, URIRef

    name, sep, value = text.partition("=")
    name = name.strip().lstrip("?$")
    if not sep or not name or not name.replace("_", "a").isalnum():
        raise QueryError(f"--bind expects NAME=VALUE or NAME=<iri>, got {text!r}")
    if len(value) >= 2 and value.startswith("<") and value.endswith(">"):
        iri = value[1:-1]
        if any(c in iri for c in '<>" {}|\\^`') or not iri:
            raise QueryError(f"--bind {name}: {value!r} is not a valid IRI")
        return name, URIRef(iri)
    return name, Literal(value)


def jsonl_text(workflows: Iterable[Workflow]) -> str:
    """Return workflows as Workflow JSON lines (each line ends with a newline)."""
    return "".join(dumps_workflow(w) + "\n" for w in workflows)
