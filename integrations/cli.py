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
    envvar="EM_PLUGIN_STORE",
    default=None,
    help="Store of the demo's memory, seeded with the bootstrap workflows on first run "
    "(default: $EM_PLUGIN_STORE, else ~/.em-plugin/store).",
)
@click.option(
    "--framework",
    "frameworks",
    multiple=True,
    type=click.Choice(("langgraph", "beeai")),
    help="Run only this framework (repeatable; default: LangGraph, then BeeAI).",
)
@click.pass_context
def demo(ctx: click.Context, store_spec: str | None, frameworks: tuple[str, ...]) -> None:
    """Run the paper's PFAS crew with episodic memory on LangGraph and BeeAI (Figures 3 and 4).

    Offline: the crew's chat model routes by embedding similarity unless $EM_PLUGIN_LLM names
    one (ollama:<model> or openai:<model>@<base_url>). Exits 1 if a scene went wrong.

    Example: em-plugin demo --store /tmp/em-demo
    """
    from em_plugin.cli.render import make_console
    from integrations.demo import FRAMEWORKS, run_demo

    code = run_demo(store_spec, make_console(), frameworks or FRAMEWORKS, embedder=ctx.obj.embedder)
    ctx.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Run the ``em-plugin`` command line."""
    cli.main(args=argv, prog_name="em-plugin")
