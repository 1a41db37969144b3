"""``em-plugin accept ID`` and ``em-plugin dismiss ID``: say what became of a shown suggestion.

A suggestion's id is ``[scope/]session/time#rank`` (``em-plugin query suggestion-acceptance``
lists them). The verdict is recorded in the suggestion's PROV record (docs/suggestions.md,
"Acceptance"); a dismissed suggestion is not suggested again in its session.
"""

from __future__ import annotations

import click

from em_plugin.cli.base import cli, open_cli_memory, store_options
from provenance.errors import MappingError
from provenance.model import DEFAULT_SCOPE
from provenance.suggestion_record import parse_suggestion_id

__all__ = ["accept", "dismiss"]


def _say(
    ctx: click.Context, suggestion_id: str, verdict: str, store_spec: str, url: str | None
) -> None:
    try:
        scope = parse_suggestion_id(suggestion_id).scope
    except MappingError as exc:
        raise click.UsageError(str(exc)) from None
    with open_cli_memory(ctx, store_spec, url, scope=scope, must_exist=True) as memory:
        said = memory.accept_suggestion if verdict == "accepted" else memory.dismiss_suggestion
        recorded = said(suggestion_id)
    where = "" if scope == DEFAULT_SCOPE else f" (scope {scope!r})"
    click.echo(f"{recorded}{where}: {verdict}")


@cli.command("accept")
@click.argument("suggestion_id", metavar="ID")
@store_options
@click.pass_context
def accept(ctx: click.Context, suggestion_id: str, store_spec: str, update_url: str | None) -> None:
    """Record that a shown suggestion was accepted.

    \b
    Example:
      em-plugin accept 'thread-42/2026-12-07T10%3A00%3A00%2B00%3A00#1'
    """
    _say(ctx, suggestion_id, "accepted", store_spec, update_url)


@cli.command("dismiss")
@click.argument("suggestion_id", metavar="ID")
@store_options
@click.pass_context
def dismiss(
    ctx: click.Context, suggestion_id: str, store_spec: str, update_url: str | None
) -> None:
    """Record that a shown suggestion was dismissed (not suggested again in its session).

    \b
    Example:
      em-plugin dismiss 'thread-42/2026-12-07T10%3A00%3A00%2B00%3A00#2'
    """
    _say(ctx, suggestion_id, "dismissed", store_spec, update_url)
