"""The ``mcp`` command of ``em-plugin``: serve the memory to MCP clients (docs/mcp.md).

It reaches ``em-plugin`` through the ``em_plugin.commands`` entry point (pyproject.toml), like
``ui``; importing this module also adds it to the group.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import click

from em_plugin.cli import cli
from em_plugin.cli.base import (
    NotFoundError,
    embedder_setting,
    is_memory_spec,
    store_options,
    store_path,
)
from integrations.cli import MissingExtraError

__all__ = ["MCP_REQUIREMENTS", "mcp", "missing_mcp_requirements"]

MCP_REQUIREMENTS: dict[str, str] = {"mcp": "mcp", "uvicorn": "uvicorn"}
"""Module -> distribution of what the ``[mcp]`` extra installs."""


def missing_mcp_requirements() -> list[str]:
    """Return the distributions of the ``[mcp]`` extra that are not installed."""
    return [d for m, d in MCP_REQUIREMENTS.items() if importlib.util.find_spec(m) is None]


@click.command()
@store_options
@click.option("--scope", default=None, help="Serve this scope only (default: each call names one).")
@click.option(
    "--transport",
    type=click.Choice(("stdio", "http")),
    default="stdio",
    show_default=True,
    help="stdio: one client that starts the server; http: streamable HTTP on --host/--port.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (http).")
@click.option(
    "--port",
    default=8766,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="TCP port (http); 0 picks a free one (the URL is printed once it answers).",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Require bearer tokens, each opening read or read-write access to named scopes "
    "(the file of 'em-plugin serve'; http only, needed for a non-loopback --host).",
)
@click.option(
    "--allow-write",
    is_flag=True,
    help="Offer save_workflow (read-only without it; a disk store is then opened read-only).",
)
@click.pass_context
def mcp(
    ctx: click.Context,
    store_spec: str,
    update_url: str | None,
    scope: str | None,
    transport: str,
    host: str,
    port: int,
    token_file: Path | None,
    allow_write: bool,
) -> None:
    """Serve the memory over MCP: recall, suggest, save, list, named queries, PROV resources.

    Read-only unless --allow-write, so it runs beside a live crew. stdio (the default) is for an
    assistant that starts the server itself; --transport http serves stateless streamable HTTP
    at http://HOST:PORT/mcp, on 127.0.0.1 unless --token-file gives per-scope tokens.

    \b
    Examples:
      em-plugin mcp --store ~/.em-plugin/store
      em-plugin mcp --transport http --port 8766 --token-file tokens.toml
    """
    missing = missing_mcp_requirements()
    if missing:
        raise MissingExtraError(
            f"the MCP server needs {', '.join(missing)}: pip install 'em-plugin[mcp]' "
            "(or pip install -e '.[mcp]' in a clone)"
        )
    from integrations.mcp.http_server import check_bind

    tokens = _tokens(token_file, transport)
    try:
        check_bind(host, tokens)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    spec = store_path(store_spec)
    server = _server(ctx, spec, update_url, scope, allow_write, tokens, host)
    try:
        if transport == "stdio":
            import anyio

            anyio.run(server.run_stdio)
        else:
            _serve_http(server, spec, host, port)
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    finally:
        server.close()


def _tokens(token_file: Path | None, transport: str) -> Any:
    if token_file is None:
        return None
    if transport != "http":
        raise click.UsageError(
            "--token-file needs --transport http (a stdio server has one client: the process "
            "that started it)"
        )
    from em_plugin.access import TokenTable
    from em_plugin.errors import ConfigurationError

    try:
        return TokenTable.load(token_file)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--token-file") from exc


def _server(
    ctx: click.Context,
    spec: str,
    update_url: str | None,
    scope: str | None,
    allow_write: bool,
    tokens: Any,
    host: str,
) -> Any:
    from integrations.mcp.server import MemoryServer
    from integrations.mcp.settings import MCPSettings
    from provenance.errors import StoreError
    from provenance.stores import open_store

    disk = not (is_memory_spec(spec) or "://" in spec)
    if disk and not allow_write and not Path(spec.removeprefix("file:")).exists():
        raise NotFoundError(
            f"no store at {spec} (check --store or $EM_PLUGIN_STORE; a read-only server never "
            "creates one)"
        )
    try:
        store = open_store(spec, update_url=update_url, read_only=disk and not allow_write)
    except StoreError as exc:
        if "read_only=True" in str(exc):  # the library's advice names its Python argument
            raise click.ClickException(
                f"the store {spec} is open for writing in another process (a crew or an "
                "em-plugin command); leave out --allow-write to serve it read-only beside it"
            ) from exc
        raise click.ClickException(f"cannot open the store {spec}: {exc}") from exc
    try:
        settings = MCPSettings(
            store=spec,
            update_url=update_url,
            scope=scope,
            allow_write=allow_write,
            tokens=tokens,
            embedder=embedder_setting(ctx, store),
            host=host,
        )
        return MemoryServer(settings, store=store)
    except BaseException:
        store.close()
        raise


def _serve_http(server: Any, spec: str, host: str, port: int) -> None:
    from integrations.mcp.http_server import MCP_PATH, listen, serve_http

    try:
        sock = listen(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot bind {host}:{port}: {exc}") from exc
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}{MCP_PATH}"

    def ready() -> None:
        tokens = server.settings.tokens
        guard = f"; {len(tokens)} token(s)" if tokens is not None else ""
        mode = "read-write" if server.settings.allow_write else "read-only"
        click.echo(f"em-plugin MCP server over {spec} ({mode}{guard}); Ctrl-C stops", err=True)
        # Printed last and flushed: scripts wait for this line.
        click.echo(url)
        sys.stdout.flush()

    serve_http(server, sock, ready=ready)


cli.add_command(mcp)
