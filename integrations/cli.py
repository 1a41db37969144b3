"""The ``em-plugin`` console script: the engine's command group plus the ``demo`` command.

``demo`` lives here, not in :mod:`em_plugin.cli`, because the demo crew is built on the
integrations (LangGraph, BeeAI) and the engine must not import upward.
"""

from __future__ import annotations

import click

from em_plugin.cli import cli

__all__ = ["cli", "main"]


@cli.command()
@click.option(
    "--store",
    "store_spec",
    metavar="S",
    default=None,
    help="Store to import the sample into (default: a fresh temporary directory).",
)
@click.pass_context
def demo(ctx: click.Context, store_spec: str | None) -> None:
    """Import the bundled PFAS-assessment workflows and show what SPARQL finds in them.

    Example: em-plugin demo
    """
    from em_plugin.cli_render import make_console
    from integrations.demo import run_demo

    run_demo(store_spec, make_console(), embedder=ctx.obj.embedder)


def main(argv: list[str] | None = None) -> None:
    """Run the ``em-plugin`` command line."""
    cli.main(args=argv, prog_name="em-plugin")
