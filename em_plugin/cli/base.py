"""The ``em-plugin`` command group and what every command shares: store options, error handling.

Commands live in :mod:`em_plugin.cli.store_commands` (import, export, query, show, stats, delete,
validate) and :mod:`em_plugin.cli.engine_commands` (reindex, suggest, eval, bench); import
:mod:`em_plugin.cli` to get the group with all of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from em_plugin.errors import EpisodicMemoryError
from provenance.errors import ProvenanceError

__all__ = [
    "DEFAULT_STORE",
    "cli",
    "echo_json",
    "embedder_setting",
    "open_cli_memory",
    "open_cli_store",
    "store_options",
    "store_path",
]

DEFAULT_STORE = "~/.em-plugin/store"
"""Where the store lives when neither ``--store`` nor ``$EM_PLUGIN_STORE`` is given."""

_F = TypeVar("_F", bound=Callable[..., Any])


class _Group(click.Group):
    """A click group that turns library errors into one line on stderr (or a traceback with
    ``--debug``)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise
        except Exception as exc:  # noqa: BLE001 - the CLI boundary: never show a traceback
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(_one_line(exc)) from None


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ProvenanceError | EpisodicMemoryError | OSError):
        message = str(exc) or type(exc).__name__
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}"
    else:
        message = f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"
    return " ".join(message.split())


class _Settings:
    """Global options shared by every command (stored on the click context)."""

    def __init__(self, debug: bool, embedder: str | None) -> None:
        self.debug = debug
        self.embedder = embedder


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show the full traceback when a command fails.")
@click.option(
    "--embedder",
    envvar="EM_PLUGIN_EMBEDDER",
    hidden=True,
    default=None,
    help="Embedding model name or path, or 'fake' (tests). Default: all-MiniLM-L6-v2.",
)
@click.version_option(package_name="em-plugin", prog_name="em-plugin")
@click.pass_context
def cli(ctx: click.Context, debug: bool, embedder: str | None) -> None:
    """Episodic memory for agent crews: workflows as W3C PROV, SPARQL, next-step suggestions."""
    ctx.obj = _Settings(debug=debug, embedder=embedder)


# --------------------------------------------------------------------------- shared options


def store_options(function: _F) -> _F:
    """Add ``--store`` and ``--update-url`` to a command."""
    function = click.option(
        "--update-url",
        metavar="URL",
        default=None,
        help="SPARQL Update endpoint of a remote store, when it differs from the query URL.",
    )(function)
    return click.option(
        "--store",
        "store_spec",
        metavar="S",
        envvar="EM_PLUGIN_STORE",
        default=DEFAULT_STORE,
        show_default=True,
        help="Store directory, 'memory:' or a SPARQL endpoint URL ($EM_PLUGIN_STORE).",
    )(function)


def store_path(store_spec: str) -> str:
    """Expand a leading ``~`` in a store spec."""
    return str(Path(store_spec).expanduser()) if store_spec.startswith("~") else store_spec


@contextmanager
def open_cli_store(
    store_spec: str, update_url: str | None, *, read_only: bool = False
) -> Iterator[Any]:
    """Open the store named by the CLI options and close it afterwards.

    Args:
        store_spec: ``--store`` (a directory, ``memory:`` or an endpoint URL; ``~`` expanded).
        update_url: ``--update-url`` of a remote store.
        read_only: Open a disk store read-only, so the command works beside a process that
            holds it open for writing (ignored for ``memory:``, which would only be empty).

    Yields:
        The :class:`~provenance.stores.WorkflowStore`.
    """
    from provenance.stores import open_store

    spec = store_path(store_spec)
    # An in-memory store is private to this process: read-only would only refuse to open it.
    read_only = read_only and spec.strip() not in ("memory:", "memory://", ":memory:")
    store = open_store(spec, update_url=update_url, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def open_cli_memory(
    ctx: click.Context, store_spec: str, update_url: str | None, *, scope: str | None = None
) -> Iterator[Any]:
    """Open an :class:`~em_plugin.memory.EpisodicMemory` over the CLI's store (writable).

    Writes go through the memory so the step index beside the store stays in sync.

    Args:
        ctx: The click context (its ``--embedder`` setting is used).
        store_spec: ``--store``.
        update_url: ``--update-url``.
        scope: The memory's scope (default: ``"default"``).

    Yields:
        The memory; it and the store are closed afterwards.
    """
    from em_plugin.memory import EpisodicMemory

    with open_cli_store(store_spec, update_url) as store:
        kwargs: dict[str, Any] = {"store": store, "embedder": embedder_setting(ctx)}
        if scope is not None:
            kwargs["scope"] = scope
        memory = EpisodicMemory(**kwargs)
        try:
            yield memory
        finally:
            memory.close()


def embedder_setting(ctx: click.Context) -> str | None:
    """The --embedder setting; ``None`` or ``"default"`` mean the default model."""
    name = ctx.obj.embedder
    return None if name in (None, "", "default") else name


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept as is)."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
