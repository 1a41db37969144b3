"""SPARQL syntax errors for a person: the line and column of the fault in the text as typed.

A parser reports where it gave up and every token it could have taken there: Oxigraph says
``error at 1:25: expected one of LATERAL, SERVICE, [_]`` for ``{ ?s ?p }`` (a triple pattern
without its object), rdflib's parser ``at char 0`` for a fault at the end of an update. Every
door (``WorkflowStore.query``, ``em-plugin query``, ``em-plugin serve`` with and without tokens)
turns such a message into one line with :func:`syntax_error_message`, which reads the text
itself for the common faults:

* a triple pattern missing its object (``{ ?s ?p }``, ``?s ?p ?o ; ?q }``);
* a ``{`` never closed, or a ``}`` that closes nothing;
* a prefix nobody declared (``foo:Bar``; the store's standard prefixes are declared for the
  query, :func:`provenance.stores.union.with_standard_prefixes`).

Anything else is named by the token where the parser gave up, with the parser's list of what it
expected when that list is short.

Example:
    >>> syntax_error_message("SELECT * WHERE { ?s ?p }", "error at 1:25: expected one of LATERAL")
    'line 1, column 24: the triple pattern `?s ?p` has no object'
"""

from __future__ import annotations

import re

from provenance.stores._sparql import _tokens
from provenance.vocab import PREFIXES

__all__ = ["syntax_error_message"]

_MAX_CHARS = 300
_MAX_EXPECTED = 80
_OXIGRAPH_AT = re.compile(r"(?<![\d.])(\d+):(\d+)(?![\d.])")
_PYPARSING_AT = re.compile(r"\(at char (\d+)\)")
_EXPECTED = re.compile(r"expected (?:one of )?(.*)$", re.DOTALL)
_TERMS = ("var", "iri", "pname", "string", "word")
_ENDS = (".", "}")  # a triple pattern ends at either


def syntax_error_message(text: str, message: str, *, shift: int = 0) -> str:
    """Return one line naming a SPARQL syntax fault: ``line L, column C: what is wrong``.

    Args:
        text: The query or update as typed.
        message: The parser's message (Oxigraph's ``error at L:C: ...`` or pyparsing's
            ``... (at char N) ...``); its position is where the parser gave up.
        shift: How many characters the parsed text had in front of ``text`` on its first line
            (the standard prefixes declared for it).

    Returns:
        At most 300 characters, no line break.
    """
    offset = _offset(text, message, shift)
    tokens = list(_tokens(text))
    fault = (
        _unknown_prefix(text, message, tokens, offset)
        or _brace_fault(text, tokens, offset)
        or _missing_object(text, tokens, offset)
        or _unexpected(text, message, tokens, offset)
    )
    line = " ".join(fault.split())
    return line if len(line) <= _MAX_CHARS else line[: _MAX_CHARS - 1] + "…"


def _offset(text: str, message: str, shift: int) -> int | None:
    """Where the parser gave up, as an offset into ``text`` (None: the message does not say)."""
    found = _OXIGRAPH_AT.search(message)
    if found is not None:
        line, column = int(found.group(1)), int(found.group(2))
        starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        if line == 1:
            column -= shift
        if not 0 < line <= len(starts):
            return None
        return max(0, min(len(text), starts[line - 1] + column - 1))
    found = _PYPARSING_AT.search(message)
    if found is not None:
        at = int(found.group(1)) - shift
        # pyparsing backtracks to the start of the failing statement: char 0 says nothing.
        return at if at > 0 else None
    return None


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def _unknown_prefix(
    text: str, message: str, tokens: list[tuple[str, str, int]], offset: int | None
) -> str | None:
    if "Prefix not found" not in message and "Unknown namespace prefix" not in message:
        return None
    declared = _declared(tokens) | set(PREFIXES)
    unknown = [
        (token, start)
        for kind, token, start in tokens
        if kind == "pname" and token.partition(":")[0] not in declared
    ]
    if offset is not None:  # the one the parser stopped at, else the first one
        before = [u for u in unknown if u[1] <= offset]
        unknown = before[-1:] or unknown
    yours = ", ".join(f"{p}:" for p in PREFIXES)
    if not unknown:
        return f"unknown prefix (declared for you: {yours}; declare others with PREFIX)"
    token, start = unknown[0]
    return (
        f"{_where(text, start)}: unknown prefix {token.partition(':')[0]}: "
        f"(declared for you: {yours}; declare others with PREFIX)"
    )


def _declared(tokens: list[tuple[str, str, int]]) -> set[str]:
    names: set[str] = set()
    previous = ""
    for kind, token, _ in tokens:
        if previous == "PREFIX" and kind == "pname":
            names.add(token.partition(":")[0])
        previous = token.upper() if kind == "word" else ""
    return names


def _brace_fault(text: str, tokens: list[tuple[str, str, int]], offset: int | None) -> str | None:
    opened: list[int] = []
    for kind, _, start in tokens:
        if kind == "open":
            opened.append(start)
        elif kind == "close":
            if not opened:
                return f"{_where(text, start)}: this `}}` closes no `{{`"
            opened.pop()
    at_end = offset is None or offset >= len(text.rstrip())
    if opened and at_end:
        return (
            f"{_where(text, len(text.rstrip()))}: the text ends before the `{{` at "
            f"{_where(text, opened[-1])} is closed"
        )
    return None


def _missing_object(
    text: str, tokens: list[tuple[str, str, int]], offset: int | None
) -> str | None:
    if offset is None:
        return None
    at = _token_at(tokens, offset)
    if at is None or tokens[at][1] not in _ENDS:
        return None
    terms: list[str] = []
    for kind, token, _ in reversed(tokens[:at]):
        if kind in _TERMS and token.upper() not in ("GRAPH", "WHERE", "OPTIONAL", "MINUS"):
            terms.append(token)
            continue
        where = _where(text, tokens[at][2])
        if token in ("{", ".") and len(terms) == 2:
            return f"{where}: the triple pattern `{' '.join(reversed(terms))}` has no object"
        if token == ";" and len(terms) == 1:
            return f"{where}: the predicate `{terms[0]}` after `;` has no object"
        return None
    return None


def _token_at(tokens: list[tuple[str, str, int]], offset: int) -> int | None:
    """The token the parser stopped at: the last one that starts at or before ``offset``."""
    found = None
    for index, (_, _, start) in enumerate(tokens):
        if start > offset:
            break
        found = index
    return found


def _unexpected(
    text: str, message: str, tokens: list[tuple[str, str, int]], offset: int | None
) -> str:
    expected = _EXPECTED.search(" ".join(message.split()))
    hint = ""
    if expected is not None and len(expected.group(1)) <= _MAX_EXPECTED:
        hint = f" (expected {expected.group(1).strip()})"
    if offset is None:
        reason = _EXPECTED.sub("", " ".join(message.split())).rstrip(" ,:")
        return f"{reason or 'the text does not parse'}{hint}"
    if offset >= len(text.rstrip()):
        return f"{_where(text, len(text.rstrip()))}: the text does not parse up to its end{hint}"
    at = _token_at(tokens, offset)
    if at is None:
        return f"{_where(text, offset)}: the text does not parse{hint}"
    token, start = tokens[at][1], tokens[at][2]
    shown = token if len(token) <= 40 else token[:39] + "…"
    return f"{_where(text, start)}: unexpected `{shown}`{hint}"
