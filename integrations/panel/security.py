"""Who may talk to the panel: the loopback rule, the token, and same-origin form posts.

* Without a token the panel serves loopback only: it must be bound to a loopback address
  (:func:`check_bind`; :func:`em_plugin.access.is_loopback` is the rule), and a request whose
  ``Host`` is not a loopback name is refused, so a web page cannot reach it through a DNS name
  rebound to 127.0.0.1.
* With a token every request must carry it: ``?token=...`` (the panel then sets an HttpOnly,
  SameSite=Strict cookie so that links and forms work), ``Authorization: Bearer ...``, or that
  cookie. Tokens are compared in constant time.
* A form post (every write) must come from the panel's own pages: a cross-site ``Origin`` is
  refused.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

from em_plugin.access import is_loopback

__all__ = ["COOKIE", "PanelAccess", "check_bind"]

COOKIE = "em_panel_token"
"""Cookie that carries the token after a request with a good ``?token=``."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve a non-loopback address without a token.

    Raises:
        ValueError: ``host`` is not loopback and ``token`` is empty (the message says what to do).
    """
    if not is_loopback(host) and not token:
        raise ValueError(
            f"refusing to serve on {host} without --token: the panel shows the whole memory; "
            "bind to 127.0.0.1 (the default) or pass --token SECRET (every request must then "
            "carry it)"
        )


class PanelAccess:
    """ASGI middleware enforcing the module's rules before the app sees a request.

    Args:
        app: The wrapped ASGI app.
        token: The required token (``None``: loopback only).
    """

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token or None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request that breaks the rules; pass the rest (and non-HTTP scopes) on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _plain(send, *refusal)
            return
        presented = _query_token(scope)
        if self.token is not None and presented is not None:
            await self.app(scope, receive, _with_cookie(send, self.token))
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        host = _hostname(headers.get("host", ""))
        if self.token is None:
            if not is_loopback(host):
                shown = host or "(none)"
                return 403, f"refused: host {shown!r} is not loopback and no token is set"
        elif not self._token_ok(scope, headers):
            return 401, "refused: this panel needs its token (?token=..., or a bearer header)"
        if scope["method"] not in ("GET", "HEAD") and not _same_origin(headers):
            return 403, "refused: a form post from another site"
        return None

    def _token_ok(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        candidates = [_query_token(scope)]
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            candidates.append(auth[7:].strip())
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is no token  # noqa: BLE001
            cookie = SimpleCookie()
        if COOKIE in cookie:
            candidates.append(cookie[COOKIE].value)
        expected = self.token.encode()
        return any(c is not None and hmac.compare_digest(c.encode(), expected) for c in candidates)


def _query_token(scope: Scope) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same_origin(headers: dict[str, str]) -> bool:
    origin = headers.get("origin")
    if origin is None or origin == "null":
        # Browsers send Origin on cross-site posts; a missing one is a non-browser client,
        # which passed the host and token checks already.
        return origin is None
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()


def _with_cookie(send: Send, token: str) -> Send:
    async def wrapped(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
            message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
        await send(message)

    return wrapped


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
