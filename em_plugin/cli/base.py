"""The ``em-plugin`` command group and what every command shares: store options, errors, exits.

Commands live in :mod:`em_plugin.cli.store_commands` (import, export, list, query, show, stats,
delete, validate) and :mod:`em_plugin.cli.engine_commands` (reindex, suggest, eval, bench);
import :mod:`em_plugin.cli` to get the group with all of them. Packages above ``em_plugin`` add
commands through the ``em_plugin.commands`` entry-point group (``demo`` comes from
:mod:`integrations.cli` that way), so the engine never imports them.

Every error prints as one line, ``error: <what is wrong>``, on stderr, with the exit status of
:data:`EXIT_CODES`; ``em-plugin --debug ...`` shows the traceback instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import click

from em_plugin.errors import EmbedderMismatchError, EpisodicMemoryError, MissingExtraError
from provenance.errors import ProvenanceError, WorkflowNotFound

__all__ = [
    "DEFAULT_STORE",
    "ENTRY_POINT_GROUP",
    "EXIT_CODES",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_MISSING_EXTRA",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_USAGE",
    "NotFoundError",
    "check_scope",
    "cli",
    "owning_scope",
    "remember_group_store",
    "embedder_setting",
    "group_store",
    "is_memory_spec",
    "open_cli_memory",
    "open_cli_store",
    "store_options",
    "store_path",
    "subcommand_store_options",
]

DEFAULT_STORE = "~/.em-plugin/store"
"""Where the store lives when neither ``--store`` nor ``$EM_PLUGIN_STORE`` is given."""
ENTRY_POINT_GROUP = "em_plugin.commands"
"""Entry-point group through which installed packages add commands (``name = module:command``)."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_MISSING_EXTRA = 4
EXIT_INTERRUPTED = 130
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_ERROR: "the command failed or found problems (bad file, store error, SHACL violations)",
    EXIT_USAGE: "bad usage: unknown option, bad value, missing argument or confirmation",
    EXIT_NOT_FOUND: "not found: no such store, scope or workflow (the message lists what exists)",
    EXIT_MISSING_EXTRA: "an optional extra is not installed (the message names it)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C): nothing more was done",
}
"""Exit statuses of every ``em-plugin`` command (documented in docs/cli.md)."""

_F = TypeVar("_F", bound=Callable[..., Any])
# The variable a remote store reads its bearer token from (provenance/stores/remote.py).
_TOKEN_VARIABLE = "EM_PLUGIN_STORE_TOKEN"
_MEMORY_SPECS = ("memory:", "memory://", ":memory:")


class NotFoundError(click.ClickException):
    """A store, scope or workflow the command was asked about does not exist (exit 3)."""

    exit_code = EXIT_NOT_FOUND


class _MissingExtra(click.ClickException):
    """An optional extra is not installed (exit 4); the message names it."""

    exit_code = EXIT_MISSING_EXTRA


class _Group(click.Group):
    """A click group with one error style, documented exit codes and plug-in commands."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_plugin_entry_points()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in _plugin_entry_points():
            command = _plugin_entry_points()[cmd_name].load()
            self.add_command(command, cmd_name)
        if command is not None:
            _accept_root_options(command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise
        except Exception as exc:  # the CLI boundary: never show a traceback
            if ctx.params.get("debug"):
                raise
            if isinstance(exc, WorkflowNotFound):
                raise NotFoundError(_one_line(exc)) from None
            if isinstance(exc, MissingExtraError):
                raise _MissingExtra(_one_line(exc)) from None
            if isinstance(exc, EmbedderMismatchError):
                raise click.UsageError(_one_line(exc)) from None
            raise click.ClickException(_one_line(exc)) from None

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            _fail(f"{exc.format_message()}{hint}", EXIT_USAGE)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except (click.Abort, EOFError, KeyboardInterrupt):
            # Ctrl-C (or end of input at a prompt): the user stopped it, not a failure.
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.find_root().params["debug"] = True
        ctx.find_object(_Settings).debug = True  # type: ignore[union-attr]


def _set_embedder(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_object(_Settings).embedder = value  # type: ignore[union-attr]


def _accept_root_options(command: click.Command) -> None:
    """Let ``--debug`` and ``--embedder`` follow the command too (``list --debug``).

    They are the group's options; each command (and subcommand) gets hidden twins that set the
    same settings, so a user need not know where a global option goes.
    """
    if getattr(command, "_root_options", False):
        return
    names = {name for param in command.params for name in getattr(param, "opts", ())}
    if "--debug" not in names:
        command.params.append(
            click.Option(
                ["--debug"], is_flag=True, hidden=True, expose_value=False, callback=_set_debug
            )
        )
    if "--embedder" not in names:
        command.params.append(
            click.Option(["--embedder"], hidden=True, expose_value=False, callback=_set_embedder)
        )
    command._root_options = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_root_options(sub)


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


_PLUGINS: dict[str, metadata.EntryPoint] | None = None


def _plugin_entry_points() -> dict[str, metadata.EntryPoint]:
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return _PLUGINS


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ProvenanceError | EpisodicMemoryError | OSError):
        message = _cli_advice(str(exc) or type(exc).__name__)
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}"
    else:
        message = f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"
    return " ".join(message.split())


def _cli_advice(message: str) -> str:
    # The library's advice for a second writer names the Python API; say it for the CLI.
    if "open it with read_only=True" in message:
        head = message.split(";")[0]
        return (
            f"{head} (an agent or another em-plugin command). The read commands (list, query, "
            "show, stats, export, validate) work beside it; stop that process to import, "
            "delete or reindex"
        )
    # A token endpoint (em-plugin serve --token-file): say where the CLI's token comes from.
    if "answered HTTP 401" in message:
        message += (
            f"; set ${_TOKEN_VARIABLE} to a token of the server's token file (the CLI sends it "
            "as the bearer token)"
        )
    elif "answered HTTP 403" in message:
        message += f"; the token in ${_TOKEN_VARIABLE} does not grant this (its scopes or access)"
    # The store's advice for an id that several scopes hold names its Python argument.
    return message.replace("pass scope= to choose one", "add --scope to choose one")


class _Settings:
    """Global options shared by every command (stored on the click context)."""

    def __init__(self, debug: bool, embedder: str | None) -> None:
        self.debug = debug
        self.embedder = embedder


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=(
        "Exit status: 0 success, 1 failure, 2 bad usage, 3 not found, 4 missing extra, "
        "130 interrupted."
    ),
)
@click.option("--debug", is_flag=True, help="Show the full traceback when a command fails.")
@click.option(
    "--embedder",
    envvar="EM_PLUGIN_EMBEDDER",
    metavar="E",
    default=None,
    help=(
        "Embedder: a sentence-transformers model name or path, 'default' (all-MiniLM-L6-v2), "
        "or module:function for a custom list[str] -> array callable ($EM_PLUGIN_EMBEDDER). "
        "Default: the one the store was indexed with."
    ),
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


_GROUP_STORE = "em_plugin.group_store"


def remember_group_store(
    ctx: click.Context, store_spec: str, update_url: str | None, scope: str | None
) -> None:
    """Keep a command group's store options for its subcommands (:func:`group_store`)."""
    ctx.meta[_GROUP_STORE] = (store_spec, update_url, scope)


def subcommand_store_options(function: _F) -> _F:
    """Add ``--store``, ``--update-url`` and ``--scope`` to a group's subcommand.

    With these, ``sessions abandon --store S`` means what ``sessions --store S abandon`` does;
    :func:`group_store` reads whichever was given.
    """
    function = click.option("--scope", default=None, help="The scope (default: the group's).")(
        function
    )
    return store_options(function)


def group_store(ctx: click.Context) -> tuple[str, str | None, str | None]:
    """The store, update URL and scope of a subcommand: its own options, else its group's.

    Only a value typed after the subcommand overrides the group's: ``$EM_PLUGIN_STORE`` fills
    both, and must not undo a ``--store`` typed before the subcommand.
    """
    spec, url, scope = ctx.meta[_GROUP_STORE]
    typed = click.core.ParameterSource.COMMANDLINE
    if ctx.get_parameter_source("store_spec") == typed:
        spec = ctx.params["store_spec"]
    if ctx.params.get("update_url") is not None:
        url = ctx.params["update_url"]
    if ctx.params.get("scope") is not None:
        scope = ctx.params["scope"]
    return spec, url, scope


def store_path(store_spec: str) -> str:
    """Expand a leading ``~`` in a store spec."""
    return str(Path(store_spec).expanduser()) if store_spec.startswith("~") else store_spec


def is_memory_spec(store_spec: str) -> bool:
    """Tell whether a store spec names a private in-memory store."""
    return store_spec.strip() in _MEMORY_SPECS


def _require_existing(spec: str) -> None:
    # A read must never create a store: a mistyped --store would silently read an empty one.
    if is_memory_spec(spec) or "://" in spec:
        return
    path = Path(spec[len("file:") :] if spec.startswith("file:") else spec)
    hint = ""
    if spec.strip().rstrip(":/").lower() == "memory":
        hint = "; did you mean 'memory:' (a private in-memory store)?"
    if not path.exists():
        raise NotFoundError(
            f"no store at {path} (check --store or $EM_PLUGIN_STORE; "
            f"'em-plugin import FILE --store PATH' creates one){hint}"
        )
    if path.is_file():
        raise NotFoundError(
            f"no store at {path}: it is a file, and a store is a directory (check --store or "
            f"$EM_PLUGIN_STORE; 'em-plugin import FILE --store PATH' creates one)"
        )
    if path.is_dir() and not (path / "CURRENT").is_file():
        what = "is empty" if not any(path.iterdir()) else "holds no Oxigraph store"
        raise NotFoundError(
            f"no store at {path}: the directory {what} (check --store or $EM_PLUGIN_STORE; "
            f"'em-plugin import FILE --store PATH' creates one){hint}"
        )


@contextmanager
def open_cli_store(
    store_spec: str, update_url: str | None, *, read_only: bool = False
) -> Iterator[Any]:
    """Open the store named by the CLI options and close it afterwards.

    Args:
        store_spec: ``--store`` (a directory, ``memory:`` or an endpoint URL; ``~`` expanded).
        update_url: ``--update-url`` of a remote store.
        read_only: The command only reads: a disk store must exist already and is opened
            read-only, so the command works beside a process that holds it open for writing.

    Yields:
        The :class:`~provenance.stores.WorkflowStore`.

    Raises:
        NotFoundError: ``read_only`` and no store exists at that path.
    """
    from provenance.stores import open_store

    spec = store_path(store_spec)
    if read_only:
        _require_existing(spec)
    # An in-memory store is private to this process: read-only would only refuse to open it.
    read_only = read_only and not is_memory_spec(spec)
    store = open_store(spec, update_url=update_url, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def open_cli_memory(
    ctx: click.Context,
    store_spec: str,
    update_url: str | None,
    *,
    scope: str | None = None,
    must_exist: bool = False,
) -> Iterator[Any]:
    """Open an :class:`~em_plugin.memory.EpisodicMemory` over the CLI's store (writable).

    Writes go through the memory so the step index beside the store stays in sync.

    Args:
        ctx: The click context (its ``--embedder`` setting is used).
        store_spec: ``--store``.
        update_url: ``--update-url``.
        scope: The memory's scope (default: ``"default"``).
        must_exist: Refuse to create a disk store (the command only reads or deletes).

    Yields:
        The memory; it and the store are closed afterwards.

    Raises:
        NotFoundError: ``must_exist`` and no store exists at that path.
    """
    from em_plugin.memory import EpisodicMemory

    if must_exist:
        _require_existing(store_path(store_spec))
    with open_cli_store(store_spec, update_url) as store:
        kwargs: dict[str, Any] = {
            "store": store,
            "embedder": embedder_setting(ctx, store),
            "warm_up": False,  # one command: the model loads when (if) it embeds
        }
        if scope is not None:
            kwargs["scope"] = scope
        memory = EpisodicMemory(**kwargs)
        try:
            yield memory
        finally:
            memory.close()


def embedder_setting(ctx: click.Context, store: Any = None) -> Any:
    """The embedder a command uses (:func:`~em_plugin.embedding.opener.embedder_from_setting`).

    Raises:
        click.UsageError: The store records a custom embedder and ``--embedder`` is missing.
        ConfigurationError: ``module:function`` cannot be imported.
    """
    from em_plugin.embedding.opener import embedder_from_setting

    try:
        return embedder_from_setting(ctx.obj.embedder, store)
    except EmbedderMismatchError as exc:
        raise click.UsageError(str(exc)) from None


def check_scope(store: Any, scope: str | None) -> None:
    """Raise :class:`NotFoundError` naming the existing scopes when ``scope`` holds nothing.

    Args:
        store: The :class:`~provenance.stores.WorkflowStore`.
        scope: The ``--scope`` value (``None`` passes).
    """
    if scope is None or store.ids(scope):
        return
    existing = store.scopes()
    listed = ", ".join(repr(s) for s in existing) if existing else "none: the store is empty"
    raise NotFoundError(f"scope {scope!r} has no workflows; existing scopes: {listed}")


def owning_scope(store: Any, store_spec: str, workflow_id: str, scope: str | None) -> str:
    """Return the scope that holds a workflow id: ``scope`` when given, else the only one.

    Args:
        store: The :class:`~provenance.stores.WorkflowStore`.
        store_spec: The ``--store`` value, named in the message when no scope holds the id.
        workflow_id: The workflow id (ids are per scope).
        scope: The ``--scope`` value, or ``None``.

    Raises:
        NotFoundError: When the scope (or no scope) holds the id.
        click.UsageError: When several scopes hold it and ``scope`` is ``None``.
    """
    owners = store.scopes_of(workflow_id)
    if scope is not None and scope not in owners:
        check_scope(store, scope)
        raise NotFoundError(f"no workflow {workflow_id!r} in scope {scope!r}")
    if not owners:
        raise NotFoundError(f"no workflow {workflow_id!r} in {store_path(store_spec)}")
    if scope is None and len(owners) > 1:
        listed = ", ".join(repr(o) for o in owners)
        raise click.UsageError(
            f"workflow {workflow_id!r} is in several scopes ({listed}); add --scope"
        )
    return scope or owners[0]
