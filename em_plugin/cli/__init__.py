"""The ``em-plugin`` command line: import, export, query and inspect an episodic memory store.

Every command is thin: parse the options, call the public API, print. Errors from the library
(:class:`~provenance.errors.ProvenanceError`, :class:`~em_plugin.errors.EpisodicMemoryError`,
:class:`OSError`, and anything unexpected) print as one line on stderr with exit status 1;
``em-plugin --debug ...`` shows the traceback instead.

The store is ``--store`` (a directory for the embedded Oxigraph store, ``memory:`` or an
``http(s)://.../query`` SPARQL endpoint), else ``$EM_PLUGIN_STORE``, else ``~/.em-plugin/store``.
Commands that only read (export, query, show, stats, validate) open a disk store read-only, so
they work beside a running agent that holds it open for writing.

The ``em-plugin`` console script is :func:`integrations.cli.main`, which adds ``demo``;
``python -m em_plugin`` runs this group without it.

Example::

    $ em-plugin import workflows.jsonl --scope team-a
    $ em-plugin query tool-pairs --bind tool=product_extractor --format csv
    $ em-plugin show sample/pfas-1
"""

from __future__ import annotations

# Importing the command modules registers their commands on the group.
from em_plugin.cli import engine_commands, store_commands  # noqa: F401
from em_plugin.cli.base import DEFAULT_STORE, cli

__all__ = ["DEFAULT_STORE", "cli", "main"]


def main(argv: list[str] | None = None) -> None:
    """Run the command line (the ``em-plugin`` console script without the ``demo`` command).

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
    """
    cli.main(args=argv, prog_name="em-plugin")
