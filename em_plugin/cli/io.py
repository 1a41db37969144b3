"""The steps behind the command line that are more than one call into the public API.

Reading a ``.jsonl`` file with precise ``file:line`` errors, turning ``--bind k=v`` into RDF
terms, walking a store for export or SHACL validation. Nothing here
prints; :mod:`em_plugin.cli` prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.errors import QueryError, WorkflowFormatError
from provenance.model import Workflow
from provenance.workflow_json import dumps_workflow, loads_workflow, workflow_from_json

if TYPE_CHECKING:
    from provenance.queries import NamedQuery
    from provenance.stores import WorkflowStore

__all__ = [
    "IMPORT_FORMATS",
    "NumberedWorkflow",
    "check_import_format",
    "check_shapes",
    "export_text",
    "jsonl_text",
    "parse_binding",
    "read_one_workflow",
    "read_workflows",
    "resolve_query",
    "validate_store",
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


def read_workflows(
    path: Path, *, skip_invalid: bool = False, scope: str | None = None
) -> tuple[list[NumberedWorkflow], list[WorkflowFormatError]]:
    """Read a Workflow JSON file, locating every error as ``file:line: reason``.

    A ``.jsonl`` file holds one workflow per line. A ``.json`` file (or any file whose text
    starts with ``[``) is one JSON document: a workflow object or a list of them; its errors are
    located as ``file: workflow [i]: reason``.

    Args:
        path: The file.
        skip_invalid: Collect the bad lines' errors instead of raising on the first one.
        scope: When given, every workflow is moved into this scope.

    Returns:
        The valid workflows with their line numbers, in file order, and the skipped lines' errors.

    Raises:
        WorkflowFormatError: On the first bad line (unless ``skip_invalid``) or when the file
            cannot be read. A repeated id is a bad line too.
    """
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


def check_shapes(
    workflows: list[NumberedWorkflow],
    file: str,
    *,
    skip_invalid: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[list[NumberedWorkflow], list[WorkflowFormatError]]:
    """Validate each workflow's PROV graph against the SHACL shapes (about 0.2 s each).

    Args:
        workflows: The workflows with their line numbers.
        file: The file name for error locations.
        skip_invalid: Collect the violations instead of raising on the first one.
        progress: Called as ``progress("shapes", done, total)`` after each workflow.

    Returns:
        The conforming workflows, and one located error per workflow that violates the shapes.

    Raises:
        WorkflowFormatError: On the first violating workflow, unless ``skip_invalid``.
    """
    from provenance.mapping import workflow_to_graph
    from provenance.validation import validate_graph

    kept: list[NumberedWorkflow] = []
    errors: list[WorkflowFormatError] = []
    for done, (number, workflow) in enumerate(workflows, start=1):
        problems = validate_graph(workflow_to_graph(workflow))
        if progress is not None:
            progress("shapes", done, len(workflows))
        if not problems:
            kept.append((number, workflow))
            continue
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        error = WorkflowFormatError(
            f"violates the SHACL shapes: {'; '.join(problems[:3])}{more}", file=file, line=number
        )
        if not skip_invalid:
            raise error
        errors.append(error)
    return kept, errors


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
    except OSError as exc:
        raise WorkflowFormatError(f"cannot read: {exc.strerror}", file=name) from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        workflows, _ = read_workflows(path)
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


def resolve_query(name: str | None, sparql: str | None) -> tuple[str, NamedQuery | None]:
    """Return the SPARQL text to run and, for a named or documented query, its description.

    Args:
        name: A named query (``tool-pairs``) or a ``.rq`` file path.
        sparql: Query text given with ``--sparql``.

    Raises:
        QueryError: When both or neither are given, the name is unknown or the file unreadable.
    """
    from provenance.queries import load_query, parse_query

    if (name is None) == (sparql is None):
        raise QueryError("give a query NAME, a FILE.rq or --sparql TEXT (exactly one)")
    if sparql is not None:
        return sparql, None
    assert name is not None
    path = Path(name)
    if path.suffix == ".rq" or path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise QueryError(f"cannot read query file {path}: {exc.strerror}") from None
        # A .rq file with the documenting header gets its parameter kinds; a bare one runs as is.
        if "# description:" not in text:
            return text, None
        named = parse_query(text, path.stem)
        return named.text, named
    named = load_query(name)
    return named.text, named


def parse_binding(text: str, query: NamedQuery | None = None) -> tuple[str, Any]:
    """Turn a ``--bind`` value into ``(variable, RDF term)``.

    ``k=<iri>`` binds an IRI. Anything else binds a plain string literal (``k=3`` is the string
    ``"3"``), except that a parameter the named query documents as ``(iri)`` binds an IRI. A
    leading ``?`` or ``$`` on the variable is dropped.

    Raises:
        QueryError: Without ``=``, for a name that is not a variable name, for a bad IRI, or for
            a name the named query does not take (the message lists the ones it takes).
    """
    from rdflib import Literal, URIRef

    name, sep, value = text.partition("=")
    name = name.strip().lstrip("?$")
    if not sep or not name or not name.replace("_", "a").isalnum():
        raise QueryError(f"--bind expects NAME=VALUE or NAME=<iri>, got {text!r}")
    if len(value) >= 2 and value.startswith("<") and value.endswith(">"):
        term: Any = URIRef(_check_iri(name, value[1:-1]))
    else:
        term = Literal(value)
    if query is not None:
        kinds = {p.name: p.kind for p in query.parameters}
        if name not in kinds:
            valid = ", ".join(kinds) or "none"
            raise QueryError(f"query {query.name!r} has no parameter {name!r}; valid: {valid}")
        if kinds[name] == "iri" and isinstance(term, Literal):
            term = URIRef(_check_iri(name, value))
    return name, term


def _check_iri(name: str, iri: str) -> str:
    if not iri or any(c in iri for c in '<>" {}|\\^`\n\r\t'):
        raise QueryError(f"--bind {name}: {iri!r} is not a valid IRI")
    return iri


def export_text(store: WorkflowStore, *, scope: str | None, fmt: str) -> str:
    """Serialize the store (one scope, or all) as ``jsonl``, a backup or an RDF/PROV format.

    The RDF/PROV formats hold what an ad-hoc query's default graph merges: the workflows and
    the lifecycle records (versions, retirements, procedures;
    :func:`provenance.export.store_items`), so the export answers PROV-O and P-Plan queries as
    the live store does.
    """
    if fmt == "nq":  # a full backup: every family the store backs up (docs/sparql.md)
        from provenance.stores.backup import backup_text

        return backup_text(store, scope)
    if fmt == "jsonl":
        return jsonl_text(store.iter_workflows(scope))
    from provenance.export import export, store_items

    return export(store_items(store, scope=scope), fmt)


def jsonl_text(workflows: Iterable[Workflow]) -> str:
    """Return workflows as Workflow JSON lines (each line ends with a newline)."""
    return "".join(dumps_workflow(w) + "\n" for w in workflows)


def validate_store(
    store: WorkflowStore,
    *,
    scope: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Check every stored workflow graph (as stored, not re-mapped) against the SHACL shapes.

    Args:
        store: The store.
        scope: Only this scope's workflows.
        progress: Called as ``progress("", done, total)`` after each workflow.

    Returns:
        How many workflows were checked, and one ``(id, violation)`` pair per problem.
    """
    from provenance.mapping import graph_iri
    from provenance.validation import validate_graph

    # Ids are per scope: each workflow's graph is named by its scope and id.
    pairs = [(s, i) for s in ([scope] if scope else store.scopes()) for i in store.ids(s)]
    problems: list[tuple[str, str]] = []
    for done, (workflow_scope, workflow_id) in enumerate(pairs, start=1):
        graph = store.backend.triples(graph_iri(workflow_id, workflow_scope))
        problems.extend((workflow_id, line) for line in validate_graph(graph))
        if progress is not None:
            progress("", done, len(pairs))
    return len(pairs), problems
