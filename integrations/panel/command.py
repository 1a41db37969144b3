"""The ``ui`` command of ``em-plugin``: serve the memory panel (docs/ui.md).

It reaches ``em-plugin`` through the ``em_plugin.commands`` entry point (pyproject.toml), like
``demo``; importing this module also adds it to the group.
"""

from __future__ import annotations

import importlib.util

import click

from em_plugin.cli import cli
from em_plugin.cli.base import embedder_setting, is_memory_spec, store_options, store_path
from em_plugin.errors import MissingExtraError

__all__ = ["UI_REQUIREMENTS", "missing_ui_requirements", "ui"]

UI_REQUIREMENTS: dict[str, str] = {
    "starlette": "starlette",
    "uvicorn": "uvicorn",
    "jinja2": "jinja2",
    "multipart": "python-multipart",
}
"""Module -> distribution of what the ``[ui]`` extra installs."""


def missing_ui_requirements() -> list[str]:
    """Return the distributions of the ``[ui]`` extra that are not installed."""
    return [d for m, d in UI_REQUIREMENTS.items() if importlib.util.find_spec(m) is None]


@click.command()
@store_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="EM_PLUGIN_UI_TOKEN",
    default=None,
    help="Every request must carry it (needed for a non-loopback --host; $EM_PLUGIN_UI_TOKEN).",
)
@click.option(
    "--allow-write",
    is_flag=True,
    help="Offer retire, restore, delete and procedure actions (read-only without it).",
)
@click.pass_context
def ui(
    ctx: click.Context,
    store_spec: str,
    update_url: str | None,
    host: str,
    port: int,
    token: str | None,
    allow_write: bool,
) -> None:
    """Serve the memory panel: scopes, workflows, PROV graphs, suggestions, SPARQL, tools.

    Read-only unless --allow-write; a disk store is then opened read-only, so the panel runs
    beside a live crew. Bound to 127.0.0.1 by default; any other --host needs --token. The
    embedding model is loaded only when a page needs it (Suggest, lifecycle actions).

    \b
    Example:
      em-plugin ui --store ~/.em-plugin/store --port 8765
    """
    missing = missing_ui_requirements()
    if missing:
        raise MissingExtraError(
            f"the panel needs {', '.join(missing)}: pip install 'em-plugin[ui]' "
            "(or pip install -e '.[ui]' in a clone)"
        )
    from integrations.panel.security import check_bind

    try:
        check_bind(host, token)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    spec = store_path(store_spec)
    if not (is_memory_spec(spec) or "://" in spec):
        from pathlib import Path

        if not Path(spec.removeprefix("file:")).exists():
            raise click.ClickException(f"no store at {spec} (check --store or $EM_PLUGIN_STORE)")
    import uvicorn

    from integrations.panel.app import create_app
    from integrations.panel.state import PanelSettings

    settings = PanelSettings(
        store=spec,
        update_url=update_url,
        allow_write=allow_write,
        token=token,
        embedder=embedder_setting(ctx),
    )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    click.echo(f"em-plugin panel on http://{shown}:{port}/ (Ctrl-C stops it)", err=True)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")


cli.add_command(ui)
