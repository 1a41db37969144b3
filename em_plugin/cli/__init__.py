"""The ``em-plugin`` command line: import, export, query and inspect an episodic memory store.

Every command is thin: parse the options, call the public API, print. Every error prints as
one line, ``error: ...``, on stderr, with a documented exit status
(:data:`~em_plugin.cli.base.EXIT_CODES`, docs/cli.md); ``em-plugin --debug ...`` shows the
traceback instead. Output formats: ``--format table|json|jsonl|csv`` where it applies.

The store is ``--store`` (a directory for the embedded Oxigraph store, ``memory:`` or an
``http(s)://.../query`` SPARQL endpoint), else ``$EM_PLUGIN_STORE``, else ``~/.em-plugin/store``.
Commands that only read (export, list, query, show, stats, validate) open a disk store
read-only, so they work beside a running agent that holds it open for writing, and never
create one.

Packages above the engine add commands through the ``em_plugin.commands`` entry-point group
(``demo`` from :mod:`integrations.cli`), so ``em-plugin`` and ``python -m em_plugin`` are the
same command line.

Example::

    $ em-plugin import workflows.jsonl --scope team-a
    $ em-plugin query tool-pairs --bind tool=product_extractor --format csv
    $ em-plugin show sample/pfas-1
"""

from __future__ import annotations

# Importing the command modules registers their commands on the group.
from em_plugin.cli import (  # noqa: F401
    engine_commands,
    feedback_commands,
    lifecycle_commands,
    outcome_command,
    serve_command,
    sessions_command,
    store_commands,
)
from em_plugin.cli.base import DEFAULT_STORE, cli
from em_plugin.cli.exiting import run_program

__all__ = ["DEFAULT_STORE", "cli", "main"]


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
