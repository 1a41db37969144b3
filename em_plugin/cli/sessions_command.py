"""``em-plugin sessions``: list journaled sessions nobody saved; ``abandon`` closes idle ones."""

from __future__ import annotations

import re
from datetime import timedelta

import click

from em_plugin.cli.base import (
    cli,
    group_store,
    open_cli_memory,
    open_cli_store,
    remember_group_store,
    store_options,
    subcommand_store_options,
)

__all__ = ["sessions"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def _duration(_ctx: click.Context, _param: click.Parameter, value: str) -> timedelta:
    match = _DURATION.match(value)
    if match is not None and not match.group(2):
        # A bare number is ambiguous (seconds? hours?): say so instead of guessing.
        raise click.BadParameter(
            f"{value!r} has no unit; add s, m, h or d ({value.strip()}h for hours, "
            f"{value.strip()}d for days)"
        )
    if match is None:
        raise click.BadParameter(
            f"{value!r} is not a duration; use a number with s, m, h or d (90s, 30m, 1h, 2d)"
        )
    number, unit = match.groups()
    return timedelta(seconds=float(number) * _UNITS[unit])


@cli.group("sessions", invoke_without_command=True)
@store_options
@click.option("--scope", default=None, help="Only this scope's sessions.")
@click.pass_context
def sessions(
    ctx: click.Context, store_spec: str, update_url: str | None, scope: str | None
) -> None:
    """List the journaled sessions (BeeAI, engine-level) that no save covers.

    One line each: scope, session, journaled events, last activity (UTC). LangGraph sessions
    live in the graph's checkpointed state and are not listed.

    \b
    Example:
      em-plugin sessions
      em-plugin sessions abandon --older-than 1h
    """
    remember_group_store(ctx, store_spec, update_url, scope)
    if ctx.invoked_subcommand is not None:
        return
    from em_plugin.session import unsaved_sessions

    with open_cli_store(store_spec, update_url, read_only=True) as store:
        unsaved = unsaved_sessions(store, scope=scope)
    if not unsaved:
        click.echo("No unsaved sessions.")
    for session in unsaved:
        click.echo(
            f"{session.scope}\t{session.session_id}\t{session.events} events\t"
            f"last activity {session.last_activity}"
        )


@sessions.command("abandon")
@subcommand_store_options
@click.option(
    "--older-than",
    required=True,
    callback=_duration,
    metavar="DURATION",
    help="Idle time: a number with s, m, h or d (90s, 30m, 1h, 2d).",
)
@click.pass_context
def abandon(ctx: click.Context, older_than: timedelta, **_: object) -> None:
    """Save each unsaved session idle longer than DURATION as a workflow with outcome abandoned.

    The workflow gets the id a /save gives (session/<session id>); the session then counts as
    saved.

    \b
    Example:
      em-plugin sessions abandon --older-than 1h
    """
    store_spec, update_url, scope = group_store(ctx)
    with open_cli_memory(ctx, store_spec, update_url, must_exist=True) as memory:
        saved = memory.abandon_idle(older_than=older_than, scope=scope)
    for workflow_id in saved:
        click.echo(f"{workflow_id}: outcome abandoned")
    click.echo(f"{len(saved)} session{'s' if len(saved) != 1 else ''} abandoned.")
