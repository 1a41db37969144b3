"""Store commands of ``em-plugin``: import, export, query, show, stats, delete, validate."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from em_plugin.cli import render
from em_plugin.cli.base import (
    cli,
    echo_json,
    open_cli_memory,
    open_cli_store,
    store_options,
    store_path,
)
from provenance.errors import WorkflowNotFound

__all__ = [
    "EXPORT_FORMATS",
    "delete",
    "export",
    "import_",
    "query",
    "show",
    "stats",
    "validate",
]

# --------------------------------------------------------------------------- import / export


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@store_options
@click.option("--scope", default=None, help="Put every imported workflow in this scope.")
@click.option("--skip-invalid", is_flag=True, help="Import the valid lines, list the bad ones.")
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
    """Import workflows from a Workflow JSON .jsonl file.

    A malformed line stops the import before anything is stored and is reported as
    file:line: reason; with --skip-invalid the valid lines are imported and the skipped ones
    are listed on stderr. Saving an id that exists replaces that workflow. Secrets in tool
    args (API keys, tokens, passwords) are redacted before anything is stored.

    \b
    Example:
      em-plugin import workflows.jsonl --scope team-a
    """
    from em_plugin.cli.io import check_shapes, read_workflows

    start = time.perf_counter()
    numbered, skipped = read_workflows(file, skip_invalid=skip_invalid, scope=scope)
    if validate:
        numbered, invalid = check_shapes(numbered, str(file), skip_invalid=skip_invalid)
        skipped = sorted([*skipped, *invalid], key=lambda e: e.line or 0)
    for error in skipped:
        click.echo(f"skipped {error}", err=True)
    workflows = [w for _, w in numbered]
    with open_cli_memory(ctx, store_spec, update_url) as memory:
        # One batch = one store transaction: the file is imported whole or not at all.
        memory.save_many(workflows, batch_size=max(1, len(workflows)))
    elapsed = time.perf_counter() - start
    count = len(numbered)
    click.echo(
        f"imported {count} workflow{'s' if count != 1 else ''}"
        f"{f', skipped {len(skipped)}' if skipped else ''} into {store_path(store_spec)}"
        f" in {elapsed:.2f} s"
    )


EXPORT_FORMATS = ("jsonl", "ttl", "trig", "jsonld", "provjson", "provn")


@cli.command()
@store_options
@click.option("--scope", default=None, help="Export only this scope (default: every scope).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="Workflow JSON lines, Turtle, TriG, JSON-LD, PROV-JSON or PROV-N.",
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
    graphs; provjson and provn go through the prov package.

    \b
    Example:
      em-plugin export --format trig -o memory.trig
    """
    from em_plugin.cli.io import export_text

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        text = export_text(store, scope=scope, fmt=fmt)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("table", "json", "csv")),
    help="json: a list of objects keyed by column.",
    default="table",
    show_default=True,
)
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

    --bind k=v binds the plain string literal "v" (k=3 is the string "3"); --bind k=<iri>
    binds an IRI, and so does a plain value for a parameter that --list documents as (iri).
    JSON output is a list of objects keyed by column.

    \b
    Example:
      em-plugin query tool-pairs --bind tool=product_extractor --format csv
    """
    from em_plugin.cli.io import parse_binding, resolve_query

    if list_:
        _list_queries(fmt)
        return
    text, named = resolve_query(name, sparql)
    bindings = dict(parse_binding(b, named) for b in binds)
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        result = store.query(text, bindings, scope=scope)
    _print_result(result, fmt)


def _print_result(result: Any, fmt: str) -> None:
    if isinstance(result, bool):
        if fmt == "json":
            echo_json(result)
        else:
            click.echo("true" if result else "false")
        return
    if not hasattr(result, "columns"):  # CONSTRUCT / DESCRIBE: an rdflib Graph
        click.echo(result.serialize(format="json-ld" if fmt == "json" else "turtle"), nl=False)
        return
    columns = list(result.columns)
    records = render.rows_to_records(columns, result.rows)
    if fmt == "json":
        echo_json(records)
    elif fmt == "csv":
        click.echo(render.records_to_csv(columns, records), nl=False)
    else:
        console = render.make_console()
        console.print(render.records_table(columns, records))
        console.print(f"{len(records)} row{'s' if len(records) != 1 else ''}")


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
    if fmt == "json":
        echo_json(records)
    elif fmt == "csv":
        flat = [
            {**r, "parameters": "; ".join(r["parameters"]), "columns": " ".join(r["columns"])}
            for r in records
        ]
        columns = ["name", "description", "parameters", "columns"]
        click.echo(render.records_to_csv(columns, flat), nl=False)
    else:
        render.make_console().print(render.query_listing(records))


# --------------------------------------------------------------------------- inspect / manage


@cli.command()
@click.argument("workflow_id", metavar="ID")
@store_options
def show(workflow_id: str, store_spec: str, update_url: str | None) -> None:
    """Print a stored workflow as an indented tree (failed calls are marked).

    \b
    Example:
      em-plugin show sample/pfas-1
    """
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        workflow = store.load(workflow_id)
    render.make_console().print(render.workflow_tree(workflow))


@cli.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def stats(store_spec: str, update_url: str | None, as_json: bool) -> None:
    """Show how many workflows, steps, tools and triples the store holds.

    \b
    Example:
      em-plugin stats --json
    """
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        data = store.stats()
    if as_json:
        echo_json(data)
    else:
        render.make_console().print(render.mapping_table(data, title=store_path(store_spec)))


@cli.command()
@click.argument("workflow_id", metavar="[ID]", required=False)
@store_options
@click.option("--scope", default=None, help="Delete every workflow of this scope.")
@click.pass_context
def delete(
    ctx: click.Context,
    workflow_id: str | None,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
) -> None:
    """Delete one workflow by id, or a whole scope (its graphs and its index entries).

    \b
    Example:
      em-plugin delete --scope team-a
    """
    if (workflow_id is None) == (scope is None):
        raise click.UsageError("give either ID or --scope, not both and not neither")
    with open_cli_memory(ctx, store_spec, update_url) as memory:
        if workflow_id is not None:
            owner = memory.index.scope_of(workflow_id)
            if owner is None or not memory.with_scope(owner).delete(workflow_id):
                raise WorkflowNotFound(f"no workflow {workflow_id!r} in the store")
            click.echo(f"deleted {workflow_id} (scope {owner!r})")
        else:
            removed = memory.forget(scope)
            click.echo(
                f"deleted {len(removed)} workflow{'s' if len(removed) != 1 else ''} "
                f"of scope {scope!r}"
            )


@cli.command()
@store_options
@click.option("--scope", default=None, help="Validate only this scope.")
def validate(store_spec: str, update_url: str | None, scope: str | None) -> None:
    """Check every stored workflow against the SHACL shapes; exit 1 listing the violations.

    \b
    Example:
      em-plugin validate
    """
    from em_plugin.cli.io import validate_store

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        checked, problems = validate_store(store, scope=scope)
    for line in problems:
        click.echo(line)
    if problems:
        click.echo(f"{len(problems)} violation(s) in {checked} workflow(s)", err=True)
        raise SystemExit(1)
    click.echo(f"{checked} workflow{'s' if checked != 1 else ''} valid")
