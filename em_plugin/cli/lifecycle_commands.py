"""Lifecycle commands of ``em-plugin``: history, retire, restore, procedures (docs/lifecycle.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from em_plugin.cli.base import (
    check_scope,
    cli,
    embedder_setting,
    group_store,
    open_cli_memory,
    open_cli_store,
    owning_scope,
    remember_group_store,
    store_options,
    subcommand_store_options,
)
from em_plugin.cli.output import emit_records, format_option

__all__ = ["history", "procedures", "restore", "retire"]

_PROCEDURE_COLUMNS = ["id", "status", "name", "support", "success_rate", "uses", "tools", "sources"]
_TABLE_COLUMNS = ["id", "status", "support", "success", "name", "reason", "tools"]


@contextmanager
def _reader(
    ctx: click.Context, store_spec: str, update_url: str | None, workflow_id: str, scope: str | None
) -> Iterator[Any]:
    """A memory over the store opened read-only (works beside a running writer).

    Its scope is ``scope``, else the only scope that holds ``workflow_id``.
    """
    from em_plugin.memory import EpisodicMemory

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        scope = owning_scope(store, store_spec, workflow_id, scope)
        memory = EpisodicMemory(store=store, embedder=embedder_setting(ctx), scope=scope)
        try:
            yield memory
        finally:
            memory.close()


def _procedure_row(procedure: Any, fmt: str) -> dict[str, Any]:
    row = dataclasses.asdict(procedure)
    if fmt in ("table", "csv"):
        row["tools"] = " → ".join(procedure.tools)
        shown = list(procedure.sources[:3])
        more = len(procedure.sources) - len(shown)
        row["sources"] = ", ".join(shown) + (f" (+{more})" if more > 0 else "")
    else:
        row["tools"] = list(procedure.tools)
        row["sources"] = list(procedure.sources)
    if procedure.success_rate is not None and fmt == "table":
        row["success"] = f"{procedure.success_rate:.2f}"
    return row


@cli.command()
@click.argument("workflow_id", metavar="ID")
@store_options
@click.option("--scope", default=None, help="The workflow's scope (needed when ID is in several).")
@format_option()
@click.pass_context
def history(
    ctx: click.Context,
    workflow_id: str,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    fmt: str,
) -> None:
    """List the saved versions of a workflow, oldest first.

    Saving a workflow whose id exists makes a new version; the id always names the newest,
    and an older one is stored as ID@vN (`em-plugin show ID@v1` prints it).

    \b
    Example:
      em-plugin history session/thread-42
    """
    with _reader(ctx, store_spec, update_url, workflow_id, scope) as memory:
        versions = memory.lifecycle.history(workflow_id)
    rows = [dataclasses.asdict(v) for v in versions]
    columns = ["version", "id", "created", "leaves", "superseded_by", "retired", "reason"]
    emit_records(columns, rows, fmt, title=f"versions of {workflow_id}")


@cli.command()
@click.argument("workflow_id", metavar="ID")
@store_options
@click.option("--reason", required=True, help="Why it is retired (recorded as PROV).")
@click.option("--scope", default=None, help="The workflow's scope (needed when ID is in several).")
@click.option("--agent", default="user", show_default=True, help="Who retires it.")
@click.pass_context
def retire(
    ctx: click.Context,
    workflow_id: str,
    store_spec: str,
    update_url: str | None,
    reason: str,
    scope: str | None,
    agent: str,
) -> None:
    """Retire a workflow: it stays stored, but retrieval and suggestions skip it.

    Recorded as a wf:Retirement activity (prov:wasInvalidatedBy, prov:invalidatedAtTime);
    `em-plugin restore ID` undoes it. Memories in other processes on the store stop using it
    within their poll interval.

    \b
    Example:
      em-plugin retire bootstrap/0007 --reason "used the wrong classifier"
    """
    with open_cli_memory(ctx, store_spec, update_url, must_exist=True) as memory:
        scope = owning_scope(memory.store, store_spec, workflow_id, scope)
        memory.with_scope(scope).lifecycle.retire(workflow_id, reason=reason, agent=agent)
    click.echo(f"retired {workflow_id} (scope {scope!r}): {reason}")


@cli.command()
@click.argument("workflow_id", metavar="ID")
@store_options
@click.option("--scope", default=None, help="The workflow's scope (needed when ID is in several).")
@click.option("--agent", default="user", show_default=True, help="Who restores it.")
@click.pass_context
def restore(
    ctx: click.Context,
    workflow_id: str,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    agent: str,
) -> None:
    """Restore a retired workflow: retrieval and suggestions use it again.

    \b
    Example:
      em-plugin restore bootstrap/0007
    """
    with open_cli_memory(ctx, store_spec, update_url, must_exist=True) as memory:
        scope = owning_scope(memory.store, store_spec, workflow_id, scope)
        memory.with_scope(scope).lifecycle.restore(workflow_id, agent=agent)
    click.echo(f"restored {workflow_id} (scope {scope!r})")


@cli.group(invoke_without_command=True)
@store_options
@click.option("--scope", default="default", show_default=True, help="The scope to mine.")
@click.option(
    "--status",
    type=click.Choice(["candidate", "active", "retired"]),
    default=None,
    help="Only procedures with this status.",
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=0), help="0: all.")
@format_option()
@click.pass_context
def procedures(
    ctx: click.Context,
    store_spec: str,
    update_url: str | None,
    scope: str,
    status: str | None,
    limit: int,
    fmt: str,
) -> None:
    """List the procedures of a scope: tool sequences repeated in at least two workflows.

    Each has its support (distinct workflows), success rate and source workflows. Mining
    records new candidates in the store, and retires a procedure whose success rate fell below
    0.5 after at least 5 uses. `procedures accept ID --name NAME` makes one active (it is then
    suggested as a whole); `procedures retire ID --reason R` retires one.

    \b
    Example:
      em-plugin procedures --store pfas-store
      em-plugin procedures accept p-1a2b3c4d5e6f --name "PFAS report"
    """
    remember_group_store(ctx, store_spec, update_url, scope)
    if ctx.invoked_subcommand is not None:
        return
    with open_cli_memory(ctx, store_spec, update_url, scope=scope, must_exist=True) as memory:
        check_scope(memory.store, scope)
        found = memory.lifecycle.procedures(status=status)
    total = len(found)
    if limit:
        found = found[:limit]
    rows = [_procedure_row(p, fmt) for p in found]
    noun = "procedure" if total == 1 else "procedures"
    footer = f"{len(rows)} of {total} {noun} of scope {scope!r}"
    # The table keeps what fits a terminal (the id in full, to accept one); json has it all.
    columns = _TABLE_COLUMNS if fmt == "table" else _PROCEDURE_COLUMNS
    emit_records(columns, rows, fmt, footer=footer)


def _procedure_change(name: str, option: Any, who: str) -> Callable[[Callable[..., Any]], Any]:
    """Declare a ``procedures`` subcommand that changes one procedure.

    Args:
        name: The subcommand's name.
        option: Its own required option (a ``click.option`` decorator).
        who: The help of its ``--agent`` option.

    Returns:
        A decorator: the subcommand with ID, ``option``, ``--agent``, the store options,
        ``--scope`` and ``--format``.
    """
    agent = click.option("--agent", default="user", show_default=True, help=who)
    id_argument = click.argument("procedure_id", metavar="ID")
    decorators = (procedures.command(name), id_argument, option, agent, subcommand_store_options)

    def declare(function: Callable[..., Any]) -> Any:
        function = click.pass_context(format_option()(function))
        for decorate in reversed(decorators):
            function = decorate(function)
        return function

    return declare


def _change(ctx: click.Context, fmt: str, change: Callable[[Any], Any]) -> None:
    """Apply ``change`` to the memory of the subcommand's store and scope; print the procedure."""
    store_spec, update_url, scope = group_store(ctx)
    with open_cli_memory(ctx, store_spec, update_url, scope=scope, must_exist=True) as memory:
        procedure = change(memory)
    columns = _TABLE_COLUMNS if fmt == "table" else _PROCEDURE_COLUMNS
    emit_records(columns, [_procedure_row(procedure, fmt)], fmt)


@_procedure_change(
    "accept",
    click.option("--name", required=True, help="The procedure's name, shown in suggestions."),
    "Who accepts it.",
)
def accept(
    ctx: click.Context, procedure_id: str, name: str, agent: str, fmt: str, **_: Any
) -> None:
    """Make a procedure active under a name (a p-plan:Plan in the store).

    \b
    Example:
      em-plugin procedures accept p-1a2b3c4d5e6f --name "PFAS report"
    """
    _change(
        ctx,
        fmt,
        lambda memory: memory.lifecycle.accept_procedure(procedure_id, name=name, agent=agent),
    )


@_procedure_change(
    "retire",
    click.option("--reason", required=True, help="Why it is retired."),
    "Who retires it.",
)
def retire_procedure(
    ctx: click.Context, procedure_id: str, reason: str, agent: str, fmt: str, **_: Any
) -> None:
    """Retire a procedure: it is no longer suggested.

    \b
    Example:
      em-plugin procedures retire p-1a2b3c4d5e6f --reason "replaced by a new classifier"
    """
    _change(
        ctx,
        fmt,
        lambda memory: memory.lifecycle.retire_procedure(procedure_id, reason=reason, agent=agent),
    )
