"""The ``em-plugin`` command line: import, export, query and inspect an episodic memory store.

Every command is thin: parse the options, call the public API, print. Errors from the library
(:class:`~provenance.errors.ProvenanceError`, :class:`~em_plugin.errors.EpisodicMemoryError`,
:class:`OSError`) print as one line on stderr with exit status 1; ``--debug`` shows the traceback.

The store is ``--store`` (a directory for the embedded Oxigraph store, ``memory:`` or an
``http://`` SPARQL endpoint), else ``$EM_PLUGIN_STORE``, else ``~/.em-plugin/store``.

Example::

    $ em-plugin import workflows.jsonl --scope team-a
    $ em-plugin query tool-usage --format csv
    $ em-plugin show sample/pfas-1
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from em_plugin import cli_render as render
from em_plugin.errors import EpisodicMemoryError
from provenance.errors import ProvenanceError, WorkflowFormatError, WorkflowNotFound

DEFAULT_STORE = "~/.em-plugin/store"
"""Where the store lives when neither ``--store`` nor ``$EM_PLUGIN_STORE`` is given."""

_F = TypeVar("_F", bound=Callable[..., Any])


class _Group(click.Group):
    """A click group that turns library errors into one line on stderr (or a traceback with
    ``--debug``)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise
        except Exception as exc:  # noqa: BLE001 - the CLI boundary: never show a traceback
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(_one_line(exc)) from None


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ProvenanceError | EpisodicMemoryError | OSError):
        message = str(exc) or type(exc).__name__
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}"
    else:
        message = f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"
    return " ".join(message.split())


class _Settings:
    """Global options shared by every command (stored on the click context)."""

    def __init__(self, debug: bool, embedder: str | None) -> None:
        self.debug = debug
        self.embedder = embedder


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show the full traceback when a command fails.")
@click.option(
    "--embedder",
    envvar="EM_PLUGIN_EMBEDDER",
    hidden=True,
    default=None,
    help="Embedding model name or path, or 'fake' (tests). Default: all-MiniLM-L6-v2.",
)
@click.version_option(package_name="em-plugin", prog_name="em-plugin")
@click.pass_context
def cli(ctx: click.Context, debug: bool, embedder: str | None) -> None:
    """Episodic memory for agent crews: workflows as W3C PROV, SPARQL, next-step suggestions."""
    ctx.obj = _Settings(debug=debug, embedder=embedder)


def main(argv: list[str] | None = None) -> None:
    """Run the command line (the ``em-plugin`` console script without the ``demo`` command)."""
    cli.main(args=argv, prog_name="em-plugin")


# --------------------------------------------------------------------------- shared options


def store_options(function: _F) -> _F:
    """Add ``--store`` and ``--update-url`` to a command."""
    function = click.option(
        "--update-url",
        metavar="URL",
        default=None,
        help="SPARQL Update endpoint of a remote store, when it differs from the query URL.",
    )(function)
    return click.option(
        "--store",
        "store_spec",
        metavar="S",
        envvar="EM_PLUGIN_STORE",
        default=DEFAULT_STORE,
        show_default=True,
        help="Store directory, 'memory:' or a SPARQL endpoint URL ($EM_PLUGIN_STORE).",
    )(function)


def _spec(store_spec: str) -> str:
    return str(Path(store_spec).expanduser()) if store_spec.startswith("~") else store_spec


@contextmanager
def open_cli_store(
    store_spec: str, update_url: str | None, *, read_only: bool = False
) -> Iterator[Any]:
    """Open the store named by the CLI options and close it afterwards."""
    from provenance.stores import open_store

    store = open_store(_spec(store_spec), update_url=update_url, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def open_cli_memory(
    ctx: click.Context, store_spec: str, update_url: str | None, *, scope: str | None = None
) -> Iterator[Any]:
    """Open an :class:`~em_plugin.memory.EpisodicMemory` over the CLI's store."""
    from em_plugin.memory import EpisodicMemory

    with open_cli_store(store_spec, update_url) as store:
        kwargs: dict[str, Any] = {"store": store, "embedder": ctx.obj.embedder}
        if scope is not None:
            kwargs["scope"] = scope
        memory = EpisodicMemory(**kwargs)
        try:
            yield memory
        finally:
            memory.close()


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


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
    """Import workflows from a Workflow JSON ``.jsonl`` file.

    A malformed line stops the import before anything is stored and is reported as
    ``file:line: reason``; with --skip-invalid the valid lines are imported and the skipped ones
    are listed on stderr. Saving an id that exists replaces that workflow.

    Example: em-plugin import workflows.jsonl --scope team-a
    """
    from em_plugin.cli_io import read_workflows, validation_errors

    start = time.perf_counter()
    workflows, skipped = read_workflows(file, skip_invalid=skip_invalid, scope=scope)
    if validate:
        workflows, invalid = validation_errors(workflows, str(file), skip_invalid=skip_invalid)
        skipped.extend(invalid)
    for error in skipped:
        click.echo(f"skipped {error}", err=True)
    with open_cli_memory(ctx, store_spec, update_url) as memory:
        memory.save_many(workflows)
    elapsed = time.perf_counter() - start
    click.echo(
        f"imported {len(workflows)} workflow{'s' if len(workflows) != 1 else ''}"
        f"{f', skipped {len(skipped)}' if skipped else ''} in {elapsed:.2f} s"
    )


EXPORT_FORMATS = ("jsonl", "ttl", "trig", "jsonld", "provjson", "provn")


@cli.command()
@store_options
@click.option("--scope", default=None, help="Export only this scope (default: every scope).")
@click.option(
    "--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="jsonl", show_default=True
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
    graphs; provjson and provn go through the ``prov`` package.

    Example: em-plugin export --format trig -o memory.trig
    """
    from em_plugin.cli_io import export_text

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
    help="Bind ?K to a string literal V, or to an IRI with K=<iri>. Repeatable.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("table", "json", "csv")),
    default="table",
    show_default=True,
)
@click.option("--scope", default=None, help="Bind ?scope to this scope (queries that take it).")
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

    Bindings are plain string literals (``--bind tool=product_extractor``) or IRIs
    (``--bind wf=<https://...>``); numbers stay strings. JSON output is a list of objects keyed
    by column.

    Example: em-plugin query tool-pairs --bind tool=product_extractor --format csv
    """
    from em_plugin.cli_io import parse_binding, resolve_query

    if list_:
        _list_queries(fmt)
        return
    text, columns_hint = resolve_query(name, sparql)
    bindings = dict(parse_binding(b) for b in binds)
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        if scope is not None:
            bindings.setdefault("scope", parse_binding(f"scope={scope}")[1])
        rows = store.query(text, bindings)
    rows = list(rows)
    columns = list(columns_hint) or _columns(rows)
    records = render.rows_to_records(columns, rows)
    if fmt == "json":
        _echo_json(records)
    elif fmt == "csv":
        click.echo(render.records_to_csv(columns, records), nl=False)
    else:
        console = render.make_console()
        console.print(render.records_table(columns, records))
        console.print(f"{len(records)} row{'s' if len(records) != 1 else ''}")


def _columns(rows: list[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(str(key), None)
    return list(seen)


def _list_queries(fmt: str) -> None:
    from provenance.queries import list_queries, load_query

    records = []
    for entry in list_queries():
        named = entry if hasattr(entry, "text") else load_query(entry)
        records.append(
            {
                "name": named.name,
                "description": named.description,
                "parameters": list(named.parameters),
                "columns": list(getattr(named, "columns", ()) or ()),
            }
        )
    columns = ["name", "description", "parameters", "columns"]
    if fmt == "json":
        _echo_json(records)
    elif fmt == "csv":
        flat = [
            {**r, "parameters": " ".join(r["parameters"]), "columns": " ".join(r["columns"])}
            for r in records
        ]
        click.echo(render.records_to_csv(columns, flat), nl=False)
    else:
        flat = [
            {**r, "parameters": ", ".join(r["parameters"]), "columns": ", ".join(r["columns"])}
            for r in records
        ]
        render.make_console().print(render.records_table(columns, flat, title="named queries"))


# --------------------------------------------------------------------------- inspect / manage


@cli.command()
@click.argument("workflow_id", metavar="ID")
@store_options
def show(workflow_id: str, store_spec: str, update_url: str | None) -> None:
    """Print a stored workflow as an indented tree (failed calls are marked).

    Example: em-plugin show sample/pfas-1
    """
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        workflow = store.load(workflow_id)
    render.make_console().print(render.workflow_tree(workflow))


@cli.command()
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def stats(store_spec: str, update_url: str | None, as_json: bool) -> None:
    """Show how many workflows, steps, tools and triples the store holds.

    Example: em-plugin stats --json
    """
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        data = store.stats()
    data = dict(data) if not hasattr(data, "to_json") else data.to_json()
    if as_json:
        _echo_json(data)
    else:
        render.make_console().print(render.mapping_table(data, title=_spec(store_spec)))


@cli.command()
@click.argument("workflow_id", metavar="ID", required=False)
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

    Example: em-plugin delete --scope team-a
    """
    if (workflow_id is None) == (scope is None):
        raise click.UsageError("give either ID or --scope, not both and not neither")
    with open_cli_memory(ctx, store_spec, update_url) as memory:
        if workflow_id is not None:
            if not memory.delete(workflow_id):
                raise WorkflowNotFound(f"no workflow {workflow_id!r} in the store")
            click.echo(f"deleted {workflow_id}")
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

    Example: em-plugin validate
    """
    from em_plugin.cli_io import validate_store

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        checked, problems = validate_store(store, scope=scope)
    for line in problems:
        click.echo(line)
    if problems:
        click.echo(f"{len(problems)} violation(s) in {checked} workflow(s)", err=True)
        sys.exit(1)
    click.echo(f"{checked} workflow{'s' if checked != 1 else ''} valid")


@cli.command()
@store_options
@click.pass_context
def reindex(ctx: click.Context, store_spec: str, update_url: str | None) -> None:
    """Rebuild the step index from the store alone.

    Example: em-plugin reindex
    """
    from em_plugin.cli_io import rebuild_index

    start = time.perf_counter()
    with open_cli_store(store_spec, update_url) as store:
        summary = rebuild_index(store, embedder=ctx.obj.embedder)
    click.echo(f"reindexed {summary} in {time.perf_counter() - start:.2f} s")


# --------------------------------------------------------------------------- suggest / eval / bench


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_options
@click.option("--scope", default=None, help="Retrieve from this scope (default: the workflow's).")
@click.option("--limit", default=3, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print Suggestion.to_json objects.")
@click.pass_context
def suggest(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Suggest next steps for the workflow in FILE (one Workflow JSON object or a one-line .jsonl).

    Example: em-plugin suggest current.json --limit 5
    """
    from em_plugin.cli_io import read_one_workflow
    from em_plugin.suggestions import format_suggestions

    workflow = read_one_workflow(file)
    with open_cli_memory(ctx, store_spec, update_url, scope=scope or workflow.scope) as memory:
        suggestions = memory.suggest(workflow, limit=limit)
    if as_json:
        _echo_json([s.to_json() for s in suggestions])
    else:
        click.echo(format_suggestions(suggestions, limit=limit) or "no suggestions")


@cli.command("eval")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_options
@click.option("--threshold", type=float, default=None, help="Similarity threshold T (0.65).")
@click.option("--no-text", is_flag=True, help="Ignore instruction text (tool names only).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def eval_(
    ctx: click.Context,
    file: Path,
    store_spec: str,
    update_url: str | None,
    threshold: float | None,
    no_text: bool,
    as_json: bool,
) -> None:
    """Evaluate next-tool suggestions on a file with train/test splits (hit@1, hit@3, MRR).

    Memory is the train split, saved into --store (default for eval: a fresh in-memory store).

    Example: em-plugin eval tau2_airline.jsonl --json
    """
    from em_plugin.cli_io import run_eval

    report = run_eval(
        file,
        store=_spec(store_spec),
        embedder=ctx.obj.embedder,
        threshold=threshold,
        use_text=not no_text,
    )
    if as_json:
        _echo_json(report)
    else:
        render.make_console().print(render.mapping_table(report, title=f"eval {file.name}"))


@cli.command()
@click.option(
    "--workflows",
    "n_workflows",
    type=click.IntRange(min=1),
    required=True,
    help="How many synthetic workflows to store.",
)
@click.option(
    "--queries",
    "n_queries",
    type=click.IntRange(min=1),
    default=None,
    help="How many retrievals to time.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def bench(ctx: click.Context, n_workflows: int, n_queries: int | None, as_json: bool) -> None:
    """Time save and retrieval on synthetic workflows.

    Example: em-plugin bench --workflows 1000 --queries 50
    """
    from em_plugin.cli_io import run_bench_report

    report = run_bench_report(n_workflows, n_queries, embedder=ctx.obj.embedder)
    if as_json:
        _echo_json(report)
    else:
        render.make_console().print(render.mapping_table(report, title="bench"))


__all__ = ["DEFAULT_STORE", "cli", "main", "open_cli_memory", "open_cli_store", "store_options"]
