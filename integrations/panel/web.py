"""What every page handler shares: the refusal error and the page renderer."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from em_plugin.errors import EpisodicMemoryError
from integrations.panel.state import PanelState

__all__ = ["PanelError", "ScopeChoice", "panel_state", "render"]


class PanelError(EpisodicMemoryError):
    """A request the panel refuses, with the status to answer and a message for the page.

    Args:
        message: What went wrong, in one line.
        status: The HTTP status (400 bad input by default).
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ScopeChoice(EpisodicMemoryError):
    """A page needs a scope and the store holds several (or none): the panel asks which.

    Answered with the scope chooser (status 200): a link per scope to the same page.

    Args:
        scopes: The store's scopes.
    """

    def __init__(self, scopes: list[str]) -> None:
        super().__init__(f"choose a scope: {', '.join(scopes) or 'none yet'}")
        self.scopes = scopes


def panel_state(request: Request) -> PanelState:
    """Return the running panel's state."""
    state: PanelState = request.app.state.panel
    return state


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    """Render a page with what every page shows (the settings)."""
    state: PanelState = request.app.state.panel
    templates: Jinja2Templates = request.app.state.templates
    base = {
        "settings": state.settings,
        "read_only": not state.settings.allow_write,
        # The store's scopes when the page looked them up: the header's scope chooser.
        "scope_names": getattr(request.state, "scope_names", None),
    }
    return templates.TemplateResponse(request, template, {**base, **context}, status_code=status)
