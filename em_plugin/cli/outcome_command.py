"""``em-plugin outcome ID success|failure|abandoned``: record how a workflow's run ended."""

from __future__ import annotations

import click

from em_plugin.cli.base import cli, open_cli_memory, open_cli_store, owning_scope, store_options
from provenance.model import OUTCOMES

__all__ = ["outcome"]


@cli.command("outcome")
@click.argument("workflow_id", metavar="ID")
@click.argument("value", metavar="OUTCOME", type=click.Choice(OUTCOMES))
@store_options
@click.option("--scope", default=None, help="The workflow's scope (needed when ID is in several).")
@click.pass_context
def outcome(
    ctx: click.Context,
    workflow_id: str,
    value: str,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
) -> None:
    """Record how a stored workflow's run ended: success, failure or abandoned.

    The outcome is written in the workflow (Workflow JSON "outcome", wf:outcome in PROV);
    suggestions mark steps that failed before and do not rank on mostly failed evidence.

    \b
    Example:
      em-plugin outcome session/thread-42 failure
    """
    with open_cli_store(store_spec, update_url, read_only=True) as store:
        scope = owning_scope(store, store_spec, workflow_id, scope)
    with open_cli_memory(ctx, store_spec, update_url, must_exist=True) as memory:
        memory.with_scope(scope).lifecycle.set_outcome(workflow_id, value)
    click.echo(f"{workflow_id} (scope {scope!r}): outcome {value}")
