"""The memory panel: see, search and steer an episodic memory in a browser (``em-plugin ui``).

A Starlette app with server-side Jinja2 pages over any store (embedded, ``oxigraph serve``, a
SPARQL endpoint); every asset (Cytoscape.js included) ships in the package, so it works offline.
It needs the ``[ui]`` extra. See docs/ui.md.

Example::

    from integrations.panel import PanelSettings, create_app
    app = create_app(PanelSettings(store="~/.em-plugin/store"))  # any ASGI server runs it
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from integrations.panel.app import create_app
    from integrations.panel.state import PanelSettings

__all__ = ["PanelSettings", "create_app"]


def __getattr__(name: str) -> Any:
    # Lazy: `em-plugin ui --help` and the command's checks work without the [ui] extra.
    if name == "create_app":
        from integrations.panel.app import create_app

        return create_app
    if name == "PanelSettings":
        from integrations.panel.state import PanelSettings

        return PanelSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
