"""The SPARQL 1.1 Protocol's requests, read and checked once for every door of ``serve``.

:func:`read_request` turns an HTTP request (method, target, headers, body) into a
:class:`SparqlRequest`, or refuses it with a :class:`ProtocolError` carrying the status the
Protocol gives: a method other than GET/POST for a query (405), an update by GET (405), a
POST body without or with another media type than the form or the direct one (415), a body
that is not UTF-8 (415 for another ``charset``, 400 for bytes that do not decode), none or
several ``query``/``update`` parameters (400), protocol dataset parameters beside ``USING`` /
``WITH`` in the update (400). A GET of the query endpoint without a query asks for the
service description.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.message import Message

from em_plugin.endpoint.sparql_text import declares_dataset
from em_plugin.errors import EpisodicMemoryError

__all__ = [
    "QUERY_PATH",
    "UPDATE_PATH",
    "ProtocolError",
    "SparqlRequest",
    "endpoint_path",
    "read_request",
]

QUERY_PATH = "/query"
UPDATE_PATH = "/update"
_FORM = "application/x-www-form-urlencoded"
_DIRECT = {QUERY_PATH: "application/sparql-query", UPDATE_PATH: "application/sparql-update"}
_TEXT_FIELD = {QUERY_PATH: "query", UPDATE_PATH: "update"}
_DATASET_FIELDS = {
    QUERY_PATH: ("default-graph-uri", "named-graph-uri"),
    UPDATE_PATH: ("using-graph-uri", "using-named-graph-uri"),
}


class ProtocolError(EpisodicMemoryError):
    """A request the Protocol refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400, allow: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.allow = allow
        """The methods to list in an ``Allow`` header (405)."""


@dataclass(frozen=True)
class SparqlRequest:
    """A checked SPARQL request."""

    path: str
    """:data:`QUERY_PATH` or :data:`UPDATE_PATH`."""
    text: str | None
    """The query or update; ``None``: the service description is asked for."""
    default_graphs: tuple[str, ...] = ()
    """``default-graph-uri`` (queries) or ``using-graph-uri`` (updates)."""
    named_graphs: tuple[str, ...] = ()
    """``named-graph-uri`` (queries) or ``using-named-graph-uri`` (updates)."""
    extra: tuple[tuple[str, str], ...] = field(default=())
    """Other parameters (e.g. Oxigraph's ``union-default-graph``), in order."""

    @property
    def is_update(self) -> bool:
        """Whether it is an update."""
        return self.path == UPDATE_PATH

    @property
    def names_dataset(self) -> bool:
        """Whether the protocol parameters name the dataset."""
        return bool(self.default_graphs or self.named_graphs)


def endpoint_path(target: str) -> str:
    """Return the path of a request target, without its query string or trailing slash.

    Args:
        target: The request target (``/query/?query=…``).

    Returns:
        The path (``/query``), ``/`` for the root.
    """
    return urllib.parse.urlsplit(target).path.rstrip("/") or "/"


def read_request(
    method: str, target: str, headers: Mapping[str, str] | Message, body: bytes
) -> SparqlRequest:
    """Read a request to :data:`QUERY_PATH` or :data:`UPDATE_PATH` as the Protocol says.

    Args:
        method: The HTTP method.
        target: The request target (path and query string).
        headers: The request headers (``Content-Type`` is read).
        body: The request body.

    Returns:
        The checked request.

    Raises:
        ProtocolError: With the status to answer.
    """
    path = endpoint_path(target)
    if path not in _DIRECT:
        raise ProtocolError(f"no such endpoint {path}; use {QUERY_PATH} or {UPDATE_PATH}", 404)
    allowed = "GET, POST" if path == QUERY_PATH else "POST"
    if method not in allowed.split(", "):
        what = "a query" if path == QUERY_PATH else "an update"
        raise ProtocolError(f"{method} cannot send {what}; use {allowed}", 405, allowed)
    params = urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query, keep_blank_values=True)
    field_name = _TEXT_FIELD[path]
    if method == "POST":
        params += _body_params(path, headers.get("Content-Type"), body)
    texts = [value for key, value in params if key == field_name]
    if method == "GET" and not texts and not params:
        return SparqlRequest(path, None)
    if len(texts) != 1 or not texts[0].strip():
        found = "none" if not texts else f"{len(texts)}" if len(texts) > 1 else "an empty one"
        raise ProtocolError(f"send exactly one '{field_name}' (got {found})")
    default_key, named_key = _DATASET_FIELDS[path]
    request = SparqlRequest(
        path,
        texts[0],
        tuple(v for k, v in params if k == default_key),
        tuple(v for k, v in params if k == named_key),
        tuple((k, v) for k, v in params if k not in (field_name, default_key, named_key)),
    )
    if request.is_update and request.names_dataset and declares_dataset(texts[0]):
        raise ProtocolError(
            "the update names its dataset twice: with using-graph-uri/using-named-graph-uri "
            "and with USING/WITH; keep one"
        )
    return request


def _body_params(path: str, content_type: str | None, body: bytes) -> list[tuple[str, str]]:
    """The parameters a POST body carries (a direct body is the text field)."""
    if content_type is None:
        raise ProtocolError(f"a POST needs a Content-Type: {_FORM} or {_DIRECT[path]}", 415)
    media, _, options = content_type.partition(";")
    media = media.strip().lower()
    if media not in (_FORM, _DIRECT[path]):
        raise ProtocolError(
            f"cannot read a {media or 'body without media type'}; send {_FORM} or {_DIRECT[path]}",
            415,
        )
    for option in options.split(";"):
        key, _, value = option.partition("=")
        charset = value.strip().strip('"').lower()
        if key.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
            raise ProtocolError(f"the body must be UTF-8, not {charset}", 415)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"the body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    if media == _FORM:
        try:
            return urllib.parse.parse_qsl(text, keep_blank_values=True, errors="strict")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"the form is not UTF-8: {exc.reason}") from None
    return [(_TEXT_FIELD[path], text)]
