"""The ``demo`` command of ``em-plugin``, and the console script.

``demo`` lives here, not in :mod:`em_plugin.cli`, because the demo crew is built on the
integrations (LangGraph, BeeAI) and the engine must not import upward. It reaches the engine's
command group through the ``em_plugin.commands`` entry point (pyproject.toml), so both
``em-plugin demo`` and ``python -m em_plugin demo`` find it; importing this module also adds it.
"""

from __future__ import annotations

import importlib.util

import click

from em_plugin.cli import cli
from em_plugin.cli.exiting import run_program
from em_plugin.errors import MissingExtraError

__all__ = ["DEMO_REQUIREMENTS", "cli", "demo", "main", "missing_demo_requirements"]

DEMO_REQUIREMENTS: dict[str, str] = {
    "rdkit": "rdkit",
    "pypdf": "pypdf",
    "langgraph": "langgraph",
    "langchain": "langchain",
    "beeai_framework": "beeai-framework",
}
"""Module -> distribution of what the ``[demo]`` extra installs."""

DEMO_INSTALL = (
    "install the demo extra: pip install -e '.[demo]' in a clone, or pip install 'em-plugin[demo]'"
)


def missing_demo_requirements() -> list[str]:
    """Return the distributions of the ``[demo]`` extra that are not installed."""
    return [dist for module, dist in DEMO_REQUIREMENTS.items() if not _installed(module)]


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@click.command()
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
@click.option(
    "--chain",
    type=click.Choice(("continuation", "paper", "llm")),
    default=None,
    help="Suggestion chain (default: continuation; llm when $EM_PLUGIN_LLM names a model).",
)
@click.pass_context
def demo(
    ctx: click.Context, store_spec: str | None, frameworks: tuple[str, ...], chain: str | None
) -> None:
    """Run the paper's PFAS crew with episodic memory on LangGraph and BeeAI (Figures 3 and 4).

    Needs the [demo] extra. Offline: the crew's chat model routes by embedding similarity
    unless $EM_PLUGIN_LLM names one (ollama:<model> or openai:<model>@<base_url>). The output
    depends on the store: the first run seeds it with 64 bootstrap workflows, later runs reuse
    them and also retrieve the sessions saved by earlier runs. Exits 1 if a scene went wrong.

    \b
    Example:
      em-plugin demo --store /tmp/em-demo
    """
    missing = missing_demo_requirements()
    if missing:
        raise MissingExtraError(f"the demo needs {', '.join(missing)}: {DEMO_INSTALL}")
    from em_plugin.cli.render import make_console
    from integrations.demo import FRAMEWORKS, run_demo

    code = run_demo(
        store_spec, make_console(), frameworks or FRAMEWORKS, embedder=ctx.obj.embedder, chain=chain
    )
    ctx.exit(code)


cli.add_command(demo)


def main(argv: list[str] | None = None) -> None:
    """Run the ``em-plugin`` command line.

    Without ``argv`` this is the program: it reads ``sys.argv`` and ends the process, reporting
    a Ctrl-C that comes while it exits (:mod:`em_plugin.cli.exiting`). With ``argv`` it runs
    the command and raises ``SystemExit`` with its status, leaving the process to the caller.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
    """
    if argv is not None:
        # Called from Python with its own arguments: the caller owns the process and its exit.
        cli.main(args=argv, prog_name="em-plugin")
        return
    run_program(lambda: cli.main(prog_name="em-plugin"))
