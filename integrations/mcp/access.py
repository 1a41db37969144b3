"""Which scopes a call may read or write: the server's scope, the caller's token, the store.

A scope is chosen per server (``--scope``) or per call (the tool's ``scope`` argument); without
either, the caller's only visible scope is used, and with several the error lists them. Over
HTTP with ``--token-file`` a caller sees only the scopes its token opens (the grants of
``em-plugin serve``, :mod:`em_plugin.access.tokens`), and writes need a read-write grant as well
as the server's ``--allow-write``. Refusals never name scopes the caller cannot see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from em_plugin.access import AccessDenied, Grant, TokenTable
from integrations.mcp.errors import MemoryToolError
from provenance.model import DEFAULT_SCOPE

__all__ = ["Caller", "ScopeGate"]


@dataclass(frozen=True)
class Caller:
    """Who makes a call: the grant of its bearer token (``None``: no tokens are configured)."""

    grant: Grant | None = None

    def can_read(self, scope: str) -> bool:
        """Whether the caller may read ``scope``."""
        return self.grant is None or self.grant.can_read(scope)

    def can_write(self, scope: str) -> bool:
        """Whether the caller's token allows writes to ``scope``."""
        return self.grant is None or self.grant.can_write(scope)


class ScopeGate:
    """Resolve and check the scope of each call.

    Args:
        scope: The server's scope (``None``: per call).
        tokens: The token table (``None``: every caller sees every scope).
        allow_write: Whether the server accepts writes at all.
    """

    def __init__(self, *, scope: str | None, tokens: TokenTable | None, allow_write: bool) -> None:
        self.scope = scope
        self.tokens = tokens
        self.allow_write = allow_write

    def caller(self, authorization: str | None) -> Caller:
        """Return the caller of a request from its ``Authorization`` header value.

        Raises:
            MemoryToolError: Tokens are configured and the header is missing or unknown.
        """
        if self.tokens is None:
            return Caller()
        try:
            return Caller(self.tokens.authenticate(authorization))
        except AccessDenied as exc:
            raise MemoryToolError(f"refused: {exc}") from None

    def visible(self, caller: Caller, existing: Sequence[str]) -> list[str]:
        """Return the scopes the caller sees among ``existing`` (only the server's, if set)."""
        pool = [self.scope] if self.scope is not None else list(existing)
        return [s for s in pool if caller.can_read(s)]

    def read_scope(self, caller: Caller, asked: str | None, existing: Sequence[str]) -> str:
        """Return the scope a read goes to.

        Args:
            caller: The caller.
            asked: The call's ``scope`` argument.
            existing: The scopes that hold workflows.

        Raises:
            MemoryToolError: The scope is outside the server's or the token's scopes, holds no
                workflows, or must be chosen among several (the message lists the valid ones).
        """
        scope = self._chosen(caller, asked, existing)
        if scope not in existing:
            shown = ", ".join(repr(s) for s in self.visible(caller, existing)) or "none"
            raise MemoryToolError(f"scope {scope!r} has no workflows; your scopes: {shown}")
        return scope

    def write_scope(self, caller: Caller, asked: str | None, existing: Sequence[str]) -> str:
        """Return the scope a save goes to (it may be a new scope).

        Raises:
            MemoryToolError: The server is read-only, or the caller may not write the scope.
        """
        if not self.allow_write:
            raise MemoryToolError(
                "this memory server is read-only: restart it with --allow-write to save workflows"
            )
        scope = self._chosen(caller, asked, existing, writing=True)
        if not caller.can_write(scope):
            raise MemoryToolError(f"your token may read scope {scope!r} but not write it")
        return scope

    def _chosen(
        self, caller: Caller, asked: str | None, existing: Sequence[str], *, writing: bool = False
    ) -> str:
        if asked is not None and not asked.strip():
            raise MemoryToolError("scope must be a non-empty string (or left out)")
        if self.scope is not None:
            if asked is not None and asked != self.scope:
                raise MemoryToolError(
                    f"this server serves scope {self.scope!r} only; leave scope out or pass "
                    f"{self.scope!r}"
                )
            asked = self.scope
        if asked is not None:
            if not caller.can_read(asked):
                granted = caller.grant.scopes if caller.grant is not None else ()
                opened = ", ".join(repr(s) for s in sorted(granted))
                raise MemoryToolError(
                    f"your token does not open scope {asked!r}; it opens {opened}"
                )
            return asked
        return self._only(caller, existing, writing=writing)

    def _only(self, caller: Caller, existing: Sequence[str], *, writing: bool) -> str:
        visible = self.visible(caller, existing)
        if len(visible) == 1:
            return visible[0]
        if not visible:
            grant_scopes = sorted(caller.grant.scopes) if caller.grant is not None else []
            if len(grant_scopes) == 1:
                return grant_scopes[0]
            if writing and caller.grant is None:
                return DEFAULT_SCOPE
            if not grant_scopes:
                raise MemoryToolError("the memory holds no workflows yet")
            visible = grant_scopes
        listed = ", ".join(repr(s) for s in visible)
        raise MemoryToolError(f"choose a scope: pass scope= one of {listed}")
