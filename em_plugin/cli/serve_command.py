"""``em-plugin serve``: the store as a SPARQL 1.1 endpoint (:mod:`em_plugin.endpoint`).

The command parses its options, calls :func:`em_plugin.endpoint.start_endpoint`, prints where
the endpoint answers and waits for Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType

import click

from em_plugin.cli.base import DEFAULT_STORE, cli, store_path

__all__ = ["serve"]


@cli.command("serve")
@click.option(
    "--store",
    "store_spec",
    metavar="DIR",
    envvar="EM_PLUGIN_STORE",
    default=DEFAULT_STORE,
    show_default=True,
    help="Store directory to serve ($EM_PLUGIN_STORE), or 'memory:' for an empty one.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=7878,
    show_default=True,
    help="TCP port; 0 picks a free one.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Without --token-file only a loopback address (no authentication).",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Require bearer tokens, each opening read or read-write access to named scopes "
    "(TOML or JSON; docs/observability.md).",
)
def serve(store_spec: str, port: int, host: str, token_file: Path | None) -> None:
    """Serve the store as a SPARQL 1.1 endpoint (Query and Update protocols).

    \b
    The server OWNS the store directory while it runs: a store on disk has one
    writer, so stop crews that hold it first. Crews then use the endpoint:
        EM_PLUGIN_STORE=http://127.0.0.1:7878/query
    (or EpisodicMemory(store="http://127.0.0.1:7878/query")), and outside
    clients (rdflib SPARQLStore, SPARQLWrapper, a browser) query the same URL
    and see each save at once. Updates go to /update; a GET of /query without
    a query answers the SPARQL Service Description. A query that names no
    dataset runs over the merge of the workflow graphs and lifecycle records,
    each triple once, with the store's prefixes declared (the answer of
    'em-plugin query'). Ctrl-C stops the server.

    \b
    With --token-file, every request needs 'Authorization: Bearer TOKEN', and
    each token sees only the graphs of its scopes (docs/observability.md);
    only then may --host be another address than loopback.

    \b
    Example:
      em-plugin serve --store ~/.em-plugin/store --port 7878
    """
    from em_plugin.endpoint import ServeError, start_endpoint
    from em_plugin.errors import ConfigurationError, MissingExtraError

    spec = store_path(store_spec)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        try:
            endpoint = start_endpoint(spec, host=host, port=port, token_file=token_file)
        except MissingExtraError:
            raise  # exit 4, the extra named (docs/cli.md)
        except ConfigurationError as exc:
            hint = "--token-file" if token_file is not None and "token" in str(exc) else None
            raise click.BadParameter(str(exc), param_hint=hint or "--store/--host") from exc
        except ServeError as exc:
            raise click.ClickException(str(exc)) from exc
        try:
            where = "an empty in-memory store" if endpoint.location is None else endpoint.location
            tokens = (
                "" if endpoint.tokens is None else f"; {endpoint.tokens} token(s) from {token_file}"
            )
            click.echo(f"serving {where}{tokens}", err=True)
            if endpoint.public:
                click.echo(
                    f"listening on {host} over plain HTTP (put TLS in front); other machines "
                    "use this machine's address in place of 127.0.0.1",
                    err=True,
                )
            click.echo(f"query:  {endpoint.url}", err=True)
            click.echo(f"update: {endpoint.update_url}", err=True)
            if endpoint.tokens is None:
                click.echo(f"crews:  EM_PLUGIN_STORE={endpoint.url}   (Ctrl-C stops)", err=True)
            # Printed last and flushed: scripts wait for this line.
            click.echo(endpoint.url)
            sys.stdout.flush()
            endpoint.wait()
        except KeyboardInterrupt:
            click.echo("stopping", err=True)
        except ServeError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            endpoint.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM (a service manager, a test) stops the server like Ctrl-C does.
    raise KeyboardInterrupt
