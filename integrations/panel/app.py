"""The panel's ASGI app: routes, templates, error pages (docs/ui.md).

:func:`create_app` returns a Starlette app over one :class:`~integrations.panel.state.PanelState`.
Every page is a server-side Jinja2 template; the only script is the PROV drawing
(Cytoscape.js, shipped in ``static/``). Store work runs in Starlette's thread pool. Any failure is
shown as a one-line message on an error page with a status (400 bad input, 403 refused, 404 not
found, 500 otherwise), never as a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from em_plugin.errors import EpisodicMemoryError
from integrations.panel import pages
from integrations.panel.security import PanelAccess
from integrations.panel.state import PanelSettings, PanelState
from integrations.panel.web import PanelError, ScopeChoice, render
from provenance.errors import ProvenanceError, QueryError, WorkflowNotFound
from provenance.stores import WorkflowStore

__all__ = ["create_app"]

log = logging.getLogger("integrations.panel")


def create_app(settings: PanelSettings, *, store: WorkflowStore | None = None) -> Starlette:
    """Return the panel's ASGI app.

    Args:
        settings: Store, write permission, token, embedder.
        store: An open store to serve instead of opening ``settings.store`` (kept open).

    Returns:
        The app; its state is opened on startup and closed on shutdown. ``app.state.panel``
        holds the :class:`PanelState` while it runs.
    """
    templates = Jinja2Templates(env=_environment())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state = PanelState(settings, store=store)
        app.state.panel = state
        if settings.warm:
            threading.Thread(target=state.warm, name="panel-warm-up", daemon=True).start()
        else:
            state.warmed.set()
        try:
            yield
        finally:
            state.close()

    routes = [
        Route("/", pages.scopes_page),
        Route("/workflows", pages.workflows_page),
        Route("/workflow", pages.workflow_page),
        Route("/workflow/download", pages.workflow_download),
        Route("/workflow/{action:str}", pages.workflow_action, methods=["GET", "POST"]),
        Route("/suggest", pages.suggest_page, methods=["GET", "POST"]),
        Route("/procedures", pages.procedures_page),
        Route("/procedures/{action:str}", pages.procedure_action, methods=["POST"]),
        Route("/sparql", pages.sparql_page, methods=["GET", "POST"]),
        Route("/sparql.csv", pages.sparql_csv, methods=["GET", "POST"]),
        Route("/tools", pages.tools_page),
        Mount("/static", app=StaticFiles(packages=[("integrations.panel", "static")])),
    ]
    # The errors the panel expects get their own handlers: Starlette answers those and is done.
    # Only what no handler names reaches the Exception handler, whose response Starlette sends
    # before re-raising for the server to log the traceback (docs/ui.md: tracebacks for 500s).
    expected = (
        HTTPException,
        PanelError,
        WorkflowNotFound,
        QueryError,
        ValueError,
        ProvenanceError,
        EpisodicMemoryError,
    )
    handlers = {kind: _error_page for kind in (Exception, *expected)}
    # Starlette picks the most specific class's handler: a scope choice is a page, not an error.
    handlers[ScopeChoice] = _scope_chooser
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=handlers)
    app.state.templates = templates
    app.state.settings = settings
    app.add_middleware(PanelAccess, token=settings.token)
    return app


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("integrations.panel", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda value: "" if value is None else f"{100 * value:.1f} %"
    return env


async def _scope_chooser(request: Request, exc: Exception) -> Response:
    """Ask which scope a page is for: one link per scope to the same page (GET)."""
    assert isinstance(exc, ScopeChoice)
    kept = [(k, v) for k, v in request.query_params.multi_items() if k not in ("scope", "token")]
    links = [
        (scope, f"{request.url.path}?{urlencode([('scope', scope), *kept])}")
        for scope in exc.scopes
    ]
    request.state.scope_names = exc.scopes
    page = request.url.path.strip("/").split("/")[0] or "scopes"
    return render(request, "choose_scope.html", {"links": links, "page": page})


async def _error_page(request: Request, exc: Exception) -> Response:
    status, message = _status_and_message(exc)
    if status >= 500:
        log.error("panel request %s failed", request.url.path, exc_info=exc)
    elif status != 404:
        log.info("panel request %s answered %d: %s", request.url.path, status, message)
    templates: Jinja2Templates = request.app.state.templates
    settings = request.app.state.settings
    context = {
        "message": message,
        "status": status,
        "settings": settings,
        # The header says the panel's mode on every page, its error pages included.
        "read_only": not settings.allow_write,
    }
    try:
        return templates.TemplateResponse(request, "error.html", context, status_code=status)
    except Exception:  # the error page itself failed: a plain line still says what happened  # noqa: BLE001
        return HTMLResponse(f"<p>error: {_escape(message)}</p>", status_code=status)


def _status_and_message(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, PanelError):
        return exc.status, str(exc)
    if isinstance(exc, HTTPException):
        return exc.status_code, str(exc.detail)
    if isinstance(exc, WorkflowNotFound):
        return 404, _one_line(exc)
    if isinstance(exc, QueryError | ValueError):
        return 400, _one_line(exc)
    if isinstance(exc, ProvenanceError | EpisodicMemoryError):
        return 500, _one_line(exc)
    return 500, f"unexpected {type(exc).__name__}: {_one_line(exc)} (see the server log)"


def _one_line(exc: BaseException) -> str:
    return " ".join((str(exc) or type(exc).__name__).split())


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
