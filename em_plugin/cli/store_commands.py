"""Store commands of ``em-plugin``: import, export, list, query, show, stats, delete, validate."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import click

from em_plugin.cli import render
from em_plugin.cli.base import (
    NotFoundError,
    check_scope,
    cli,
    open_cli_memory,
    open_cli_store,
    owning_scope,
    store_options,
    store_path,
)
from em_plugin.cli.output import echo_json, emit_mapping, emit_records, format_option
from em_plugin.cli.progress import progress_bar
from provenance.errors import QueryError
from provenance.export import STORE_FORMATS

__all__ = [
    "EXPORT_FORMATS",
    "delete",
    "export",
    "import_",
    "list_",
    "query",
    "show",
    "stats",
    "validate",
]

# --------------------------------------------------------------------------- import / export


@cli.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_options
@click.option("--scope", default=None, help="Put every imported workflow in this scope.")
@click.option("--skip-invalid", is_flag=True, help="Import the valid workflows, list the bad ones.")
@click.option("--validate", is_flag=True, help="Check each workflow against the SHACL shapes.")
@click.pass_context
def import_(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    skip_invalid: bool,
    validate: bool,
) -> None:
    """Import workflows from a Workflow JSON file (docs/workflow-json.md), or a backup.

    FILE is .jsonl (one workflow per line) or a .json document holding one workflow or a list
    of them. The other export formats (Turtle, TriG, JSON-LD, PROV-JSON, PROV-N) are not read
    back: export --format jsonl or nq for a file import reads. A malformed workflow stops the
    import before anything is stored and is reported as
    file:line: reason (file:[index] in a .json list); with --skip-invalid the valid ones are
    imported and the skipped ones listed on stderr. Saving an id that exists replaces that
    workflow. Secrets in tool args (API keys, tokens, passwords) are redacted before anything
    is stored. A .nq file made by 'em-plugin export --format nq' is a full backup: its
    workflows, suggestion records and lifecycle records (versions, retirements, procedures)
    are restored as they were (docs/lifecycle.md).

    \b
    Example:
      em-plugin import workflows.jsonl --scope team-a
      em-plugin import backup.nq --store ~/restored-store
    """
    from em_plugin.state.backup import restore_to_memory
    from provenance.stores.backup import BACKUP_SUFFIXES
    from provenance.workflow_files import check_import_format, read_workflow_file

    start = time.perf_counter()
    check_import_format(file)
    if file.suffix.lower() in BACKUP_SUFFIXES:
        with open_cli_memory(ctx, store_spec, update_url) as memory:
            restored = restore_to_memory(memory, file, scope=scope)
        count, records = restored.workflows, restored.graphs
        click.echo(
            f"restored {count} workflow{'s' if count != 1 else ''} and {records} record "
            f"graph{'s' if records != 1 else ''} into {store_path(store_spec)}"
            f" in {time.perf_counter() - start:.2f} s"
        )
        return
    with progress_bar("import") as progress:
        numbered, skipped = read_workflow_file(
            file, skip_invalid=skip_invalid, scope=scope, validate=validate, progress=progress
        )
        for error in skipped:
            click.echo(f"skipped {error}", err=True)
        workflows = [w for _, w in numbered]
        progress("saving", 0, len(workflows))
        with open_cli_memory(ctx, store_spec, update_url) as memory:
            # One batch = one store transaction: the file is imported whole or not at all.
            memory.save_many(
                workflows,
                batch_size=max(1, len(workflows)),
                progress=lambda done: progress("saving", done, len(workflows)),
            )
    elapsed = time.perf_counter() - start
    count = len(numbered)
    click.echo(
        f"imported {count} workflow{'s' if count != 1 else ''}"
        f"{f', skipped {len(skipped)}' if skipped else ''} into {store_path(store_spec)}"
        f" in {elapsed:.2f} s"
    )


EXPORT_FORMATS = STORE_FORMATS


@cli.command()
@store_options
@click.option("--scope", default=None, help="Export only this scope (default: every scope).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help=(
        "Workflow JSON lines, Turtle, TriG, JSON-LD, PROV-JSON, PROV-N, or nq: a full backup "
        "(N-Quads of the workflows with their suggestion and lifecycle records; import FILE.nq "
        "restores it)."
    ),
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file instead of stdout.",
)
def export(
    store_spec: str, update_url: str | None, scope: str | None, fmt: str, output: Path | None
) -> None:
    """Export stored workflows as Workflow JSON lines or as PROV/RDF.

    jsonl gives back the imported lines (same ids and keys); ttl, trig and jsonld are the PROV
    graphs; provjson and provn go through the prov package. nq is a full backup: every
    workflow graph, suggestion record and lifecycle record, as N-Quads; 'em-plugin import
    FILE.nq' restores it.

    \b
    Example:
      em-plugin export --format trig -o memory.trig
    """
    from provenance.export import export_store

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        check_scope(store, scope)
        text = export_store(store, format=fmt, scope=scope)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


# --------------------------------------------------------------------------- list


LIST_COLUMNS = ("id", "scope", "steps", "calls", "title")


@cli.command("list")
@store_options
@click.option("--scope", default=None, help="List only this scope (default: every scope).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="At most this many workflows, in id order (0: all).",
)
@format_option()
def list_(store_spec: str, update_url: str | None, scope: str | None, limit: int, fmt: str) -> None:
    """List the stored workflows: id, scope, leaf steps, calls and title.

    \b
    Example:
      em-plugin list --scope team-a --limit 20
    """
    from provenance.summary import list_workflows

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        check_scope(store, scope)
        summaries, total = list_workflows(store, scope=scope, limit=limit)
    records = [dataclasses.asdict(summary) for summary in summaries]
    shown = f"{len(records)} of {total}" if len(records) < total else f"{total}"
    more = " (--limit 0 lists all)" if len(records) < total else ""
    noun = "workflow" if total == 1 else "workflows"
    emit_records(LIST_COLUMNS, records, fmt, footer=f"{shown} {noun}{more}")


# --------------------------------------------------------------------------- query


@cli.command()
@click.argument("name", required=False)
@store_options
@click.option("--sparql", default=None, metavar="TEXT", help="Run this SPARQL text.")
@click.option(
    "--bind",
    "binds",
    multiple=True,
    metavar="K=V",
    help="Bind ?K to the string V, or to an IRI with K=<iri> (or for an (iri) parameter). "
    "Repeatable.",
)
@format_option()
@click.option("--scope", default=None, help="Query only the workflows of this scope.")
@click.option("--list", "list_", is_flag=True, help="List the named queries and their parameters.")
def query(
    name: str | None,
    store_spec: str,
    update_url: str | None,
    sparql: str | None,
    binds: tuple[str, ...],
    fmt: str,
    scope: str | None,
    list_: bool,
) -> None:
    """Run a named query, a .rq file or SPARQL text against the store (read-only).

    Query text (--sparql or a .rq file) may use the project's prefixes without declaring them
    (prov, p-plan, wf, pl, dcterms, rdf, rdfs, xsd, workflow, graph, tool, agent, ...). Its
    default graph merges the workflow graphs and lifecycle records, each triple once; GRAPH ?g
    ranges over those and the suggestion records (docs/sparql.md). --bind k=v binds the plain
    string literal "v"; --bind k=<iri> binds an IRI, and so does a plain value for a parameter
    that --list documents as (iri). JSON output is a list of objects keyed by column.

    \b
    Example:
      em-plugin query tool-pairs --bind tool=product_extractor --format csv
      em-plugin query --sparql 'SELECT (COUNT(*) AS ?n) WHERE { ?c wf:tool ?t }'
    """
    from em_plugin.cli.io import parse_binding, resolve_query

    if list_:
        _list_queries(fmt)
        return
    try:
        text, named = resolve_query(name, sparql)
        bindings = dict(parse_binding(b, named) for b in binds)
    except QueryError as exc:  # a bad NAME, FILE.rq or --bind value: bad usage (exit 2)
        raise click.UsageError(str(exc)) from None
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        check_scope(store, scope)
        if named is not None and sparql is None and not Path(name or "").suffix == ".rq":
            # Named queries match inside GRAPH ?g already: run them in place (fast), by name,
            # so the store does not take them for ad-hoc text (which runs over the union).
            result = store.query(name, bindings, scope=scope)
        else:
            result = store.query(text, bindings, scope=scope)
    _print_result(result, fmt)


def _print_result(result: Any, fmt: str) -> None:
    if isinstance(result, bool):
        if fmt in ("json", "jsonl"):
            echo_json(result)
        else:
            click.echo("true" if result else "false")
        return
    if not hasattr(result, "columns"):  # CONSTRUCT / DESCRIBE: an rdflib Graph
        rdf_format = "json-ld" if fmt in ("json", "jsonl") else "turtle"
        click.echo(result.serialize(format=rdf_format), nl=False)
        return
    columns = list(result.columns)
    records = result.records()
    emit_records(
        columns, records, fmt, footer=f"{len(records)} row{'s' if len(records) != 1 else ''}"
    )


def _list_queries(fmt: str) -> None:
    from provenance.queries import list_queries

    records = [
        {
            "name": named.name,
            "description": named.description,
            "parameters": [f"{p.name} ({p.kind}): {p.description}" for p in named.parameters],
            "columns": list(named.columns),
        }
        for named in list_queries()
    ]
    if fmt == "table":
        render.make_console().print(render.query_listing(records))
    else:
        emit_records(["name", "description", "parameters", "columns"], records, fmt)


# --------------------------------------------------------------------------- inspect / manage


@cli.command()
@click.argument("workflow_id", metavar="ID")
@store_options
@click.option("--scope", default=None, help="The workflow's scope (when several hold the id).")
@format_option("table", "json", "jsonl")
def show(
    workflow_id: str, store_spec: str, update_url: str | None, scope: str | None, fmt: str
) -> None:
    """Print a stored workflow as an indented tree (failed calls are marked).

    Ids are per scope: --scope picks one when several scopes hold the id. --format json prints
    the Workflow JSON object (jsonl: on one line).

    \b
    Example:
      em-plugin show sample/pfas-1
    """
    from provenance.workflow_json import dumps_workflow, workflow_to_json

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        check_scope(store, scope)
        workflow = store.load(workflow_id, scope)
    if fmt == "json":
        echo_json(workflow_to_json(workflow))
    elif fmt == "jsonl":
        click.echo(dumps_workflow(workflow))
    else:
        console = render.make_console()
        console.print(render.workflow_tree(workflow, width=console.width))


@cli.command()
@store_options
@format_option()
def stats(store_spec: str, update_url: str | None, fmt: str) -> None:
    """Show how many workflows, steps, tools and triples the store holds, per scope.

    With shown suggestions on record, also their online hit rate per scope (acceptance@1 and
    @3 over the last 50 sessions, docs/suggestions.md).

    \b
    Example:
      em-plugin stats --format json
    """
    from em_plugin.suggest.acceptance import store_stats

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        data = store_stats(store)
    emit_mapping(data, fmt, title=store_path(store_spec))


def _stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


@cli.command()
@click.argument("workflow_id", metavar="[ID]", required=False)
@store_options
@click.option("--scope", default=None, help="Delete every workflow of this scope.")
@click.option("--dry-run", is_flag=True, help="Print what would be deleted; delete nothing.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask (needed when stdin is not a terminal).")
@click.pass_context
def delete(
    ctx: click.Context,
    workflow_id: str | None,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    dry_run: bool,
    yes: bool,
) -> None:
    """Delete one workflow by id, or a whole scope (its graphs and its index entries).

    ID alone deletes that workflow; ID with --scope the one of that scope (ids are per scope);
    --scope alone the whole scope. Asks before deleting when stdin is a terminal; otherwise
    --yes is required. --dry-run lists what would go.

    \b
    Example:
      em-plugin delete --scope team-a --dry-run
      em-plugin delete --scope team-a --yes
    """
    if workflow_id is None and scope is None:
        raise click.UsageError("give an ID, --scope, or both")
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        if workflow_id is not None:
            scope = owning_scope(store, store_spec, workflow_id, scope)
            doomed = [workflow_id]
            what = f"workflow {workflow_id} of scope {scope!r}"
        else:
            check_scope(store, scope)
            doomed = store.ids(scope)
            what = f"{len(doomed)} workflow{'s' if len(doomed) != 1 else ''} of scope {scope!r}"
    if dry_run:
        for doomed_id in doomed:
            click.echo(doomed_id)
        click.echo(f"would delete {what} (dry run: nothing deleted)")
        return
    if not yes:
        if not _stdin_is_terminal():
            raise click.UsageError(  # exit 2
                f"refusing to delete {what} without --yes (stdin is not a "
                "terminal to ask; --dry-run lists them)"
            )
        if not click.confirm(f"Delete {what} from {store_path(store_spec)}?", err=True):
            click.echo("nothing deleted", err=True)  # the user's answer, not an error
            return
    with open_cli_memory(ctx, store_spec, update_url, must_exist=True) as memory:
        if workflow_id is not None:
            assert scope is not None
            if not memory.with_scope(scope).delete(workflow_id):
                raise NotFoundError(f"no workflow {workflow_id!r} in scope {scope!r}")
            click.echo(f"deleted {workflow_id} (scope {scope!r})")
        else:
            assert scope is not None
            removed = memory.forget(scope)
            click.echo(
                f"deleted {len(removed)} workflow{'s' if len(removed) != 1 else ''} "
                f"of scope {scope!r}"
            )


@cli.command()
@store_options
@click.option("--scope", default=None, help="Validate only this scope.")
@format_option()
def validate(store_spec: str, update_url: str | None, scope: str | None, fmt: str) -> None:
    """Check every stored workflow against the SHACL shapes; exit 1 listing the violations.

    The table format prints one "ID: violation" line each; json, jsonl and csv give records
    with the workflow id and the violation. The summary goes to stderr.

    \b
    Example:
      em-plugin validate --format csv
    """
    from provenance.validation import validate_store

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        check_scope(store, scope)
        with progress_bar("validate") as progress:
            checked, problems = validate_store(store, scope=scope, progress=progress)
    if fmt == "table":
        for workflow_id, violation in problems:
            click.echo(f"{workflow_id}: {violation}")
    else:
        records = [{"workflow": w, "violation": v} for w, v in problems]
        emit_records(["workflow", "violation"], records, fmt)
    if problems:
        click.echo(f"{len(problems)} violation(s) in {checked} workflow(s)", err=True)
        raise SystemExit(1)
    summary = f"{checked} workflow{'s' if checked != 1 else ''} valid"
    click.echo(summary, err=fmt != "table")
