"""The token model: a token file, the grants it holds, and the check of a bearer header."""

from __future__ import annotations

import hashlib
import hmac
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from em_plugin.errors import ConfigurationError, EpisodicMemoryError
from provenance.stores.graph_families import token_may_read, token_may_write

__all__ = ["READ", "READ_WRITE", "AccessDenied", "Grant", "TokenTable", "hash_token"]

#: Read access: queries see the grant's scopes only.
READ = "read"
#: Read-write access: also updates, on graphs of the grant's scopes only.
READ_WRITE = "read-write"
_ACCESS = (READ, READ_WRITE)
_KEYS = {"sha256", "token", "scopes", "access"}


class AccessDenied(EpisodicMemoryError):
    """A request without a valid token (``status`` 401) or beyond its grant (403)."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Grant:
    """What one token opens."""

    name: str
    """The entry's name in the token file (for logs and messages; never the token)."""
    scopes: frozenset[str]
    """The scopes it opens."""
    access: str = READ
    """:data:`READ` or :data:`READ_WRITE`."""

    def can_read(self, scope: str | None) -> bool:
        """Whether queries may see the graphs of ``scope`` (``None``: no scope's graph)."""
        return scope is not None and scope in self.scopes

    def can_write(self, scope: str | None) -> bool:
        """Whether updates may change the graphs of ``scope``."""
        return self.access == READ_WRITE and self.can_read(scope)

    def may_read(self, iri: str) -> bool:
        """Whether queries and updates may read the graph ``iri`` (by its family's rule)."""
        return token_may_read(iri, self.scopes)

    def may_write(self, iri: str) -> bool:
        """Whether updates may change the graph ``iri`` (by its family's rule)."""
        return self.access == READ_WRITE and token_may_write(iri, self.scopes)


def hash_token(token: str) -> str:
    """Return the SHA-256 of a token, in hex: what a token file stores instead of the token.

    Args:
        token: The token text.

    Returns:
        64 lowercase hex digits.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenTable:
    """The grants of a token file, by token hash.

    Args:
        grants: Each grant by the SHA-256 (hex) of its token.
    """

    def __init__(self, grants: Mapping[str, Grant]) -> None:
        self._grants = dict(grants)

    def __len__(self) -> int:
        return len(self._grants)

    @classmethod
    def load(cls, path: str | Path) -> TokenTable:
        """Read a token file: TOML (``.toml``) or JSON (any other name).

        Raises:
            ConfigurationError: When the file cannot be read or an entry is invalid.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigurationError(f"cannot read the token file {path}: {exc}") from exc
        return cls.from_mapping(data, where=str(path))

    @classmethod
    def from_mapping(cls, data: Any, *, where: str = "the token table") -> TokenTable:
        """Build the table from ``{"tokens": {name: {sha256|token, scopes, access}}}``.

        Raises:
            ConfigurationError: On a missing or invalid field (the message names the entry).
        """
        entries = data.get("tokens") if isinstance(data, Mapping) else None
        if not isinstance(entries, Mapping) or not entries:
            raise ConfigurationError(f"{where} needs a non-empty 'tokens' table of named entries")
        grants: dict[str, Grant] = {}
        for name, entry in entries.items():
            digest, grant = _entry(str(name), entry, where)
            if digest in grants:
                raise ConfigurationError(
                    f"{where}: entries {grants[digest].name!r} and {name!r} have the same token"
                )
            grants[digest] = grant
        return cls(grants)

    def authenticate(self, authorization: str | None) -> Grant:
        """Return the grant of an ``Authorization: Bearer <token>`` header value.

        Raises:
            AccessDenied: Status 401 when the header is missing, not a bearer token, or unknown.
        """
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AccessDenied("send 'Authorization: Bearer <token>'", 401)
        digest = hash_token(token.strip())
        for known, grant in self._grants.items():
            if hmac.compare_digest(known, digest):
                return grant
        raise AccessDenied("unknown token", 401)


def _entry(name: str, entry: Any, where: str) -> tuple[str, Grant]:
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where}: entry {name!r} must be a table")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: entry {name!r} has unknown keys {unknown}; valid: {sorted(_KEYS)}"
        )
    if ("sha256" in entry) == ("token" in entry):
        raise ConfigurationError(f"{where}: entry {name!r} needs exactly one of sha256, token")
    if "sha256" in entry:
        digest = str(entry["sha256"]).strip().lower().removeprefix("sha256:")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ConfigurationError(f"{where}: entry {name!r}: sha256 must be 64 hex digits")
    else:
        if not isinstance(entry["token"], str) or len(entry["token"]) < 16:
            raise ConfigurationError(
                f"{where}: entry {name!r}: a plain token must be a string of 16 characters or more"
            )
        digest = hash_token(entry["token"])
    scopes = entry.get("scopes")
    if (
        not isinstance(scopes, list)
        or not scopes
        or not all(isinstance(s, str) and s.strip() for s in scopes)
    ):
        raise ConfigurationError(f"{where}: entry {name!r}: scopes must be a list of scope names")
    access = entry.get("access", READ)
    if access not in _ACCESS:
        raise ConfigurationError(
            f"{where}: entry {name!r}: access {access!r} is not one of {list(_ACCESS)}"
        )
    return digest, Grant(name, frozenset(scopes), access)
