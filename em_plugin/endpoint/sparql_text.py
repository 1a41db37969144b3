"""What the endpoint reads and adds to SPARQL text: dataset clauses, a base IRI, ``USING``.

A small lexer skips what may hold a keyword or a brace without being one (IRIs, strings,
comments, prefixed names, variables), so that only keywords at the top level of an operation
(outside every ``{ … }``) are read or written around.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

__all__ = ["declares_dataset", "query_form", "with_base", "with_using"]

_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<comment>\#[^\n\r]*)
    | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$]\w+)
    | (?P<pname>[^\W\d]?[\w.\-]*:(?:[\w.\-:%]|\\.)*)
    | (?P<word>[^\W\d][\w\-]*)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _top_words(text: str) -> Iterator[tuple[str, int, str | None]]:
    """Yield ``(WORD, start, previous WORD)`` for each keyword outside every brace."""
    depth = 0
    previous: str | None = None
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "word" and depth == 0:
            word = match.group().upper()
            yield word, match.start(), previous
            previous = word
        elif kind == "other" and match.group() == ";" and depth == 0:
            previous = None


def declares_dataset(update: str) -> bool:
    """Tell whether an update names its own dataset (``USING`` or ``WITH`` in an operation).

    Args:
        update: The SPARQL update.

    Returns:
        True when a ``USING`` or ``WITH`` keyword stands outside every group.
    """
    return any(word in ("USING", "WITH") for word, _, _ in _top_words(update))


def with_using(update: str, default: Sequence[str], named: Sequence[str]) -> str:
    """Return ``update`` with the protocol's dataset as ``USING`` clauses of each operation.

    The Protocol's ``using-graph-uri`` / ``using-named-graph-uri`` mean the same as ``USING`` /
    ``USING NAMED`` in every ``DELETE``/``INSERT … WHERE`` of the request; ``DELETE WHERE`` and
    the operations without a ``WHERE`` take no dataset.

    Args:
        update: The SPARQL update (one naming no dataset itself).
        default: The ``using-graph-uri`` graphs.
        named: The ``using-named-graph-uri`` graphs.

    Returns:
        The update with ``USING <g> … USING NAMED <h> …`` before each operation's ``WHERE``.
    """
    if not default and not named:
        return update
    clause = " ".join([*(f"USING <{g}>" for g in default), *(f"USING NAMED <{g}>" for g in named)])
    starts = [start for word, start, before in _top_words(update)
              if word == "WHERE" and before != "DELETE"]  # fmt: skip
    for start in reversed(starts):
        update = f"{update[:start]}{clause} {update[start:]}"
    return update


def with_base(text: str, base: str) -> str:
    """Return ``text`` with ``BASE <base>`` in front, unless it declares its own base.

    Args:
        text: A SPARQL query or update.
        base: The base IRI (the endpoint's URL).

    Returns:
        The text a server resolves relative IRIs of against ``base``.
    """
    if any(word == "BASE" for word, _, _ in _top_words(text)):
        return text
    return f"BASE <{base}> {text}"


def query_form(text: str) -> str | None:
    """Return the form of a query: ``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``.

    Args:
        text: The query.

    Returns:
        The form's keyword, or ``None`` when none stands outside every group.
    """
    for word, _, _ in _top_words(text):
        if word in ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE"):
            return word
    return None
