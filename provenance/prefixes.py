"""The store's standard prefixes, declared in front of SPARQL text that lacks them.

Every door that takes ad-hoc SPARQL (``em-plugin query``, ``em-plugin serve`` with and without
tokens) runs the text through :func:`with_prefixes`, so one query text gives one answer at each:
``SELECT (COUNT(*) AS ?n) WHERE { ?wf a pl:Workflow }`` needs no ``PREFIX pl:`` anywhere.
"""

from __future__ import annotations

import re

from provenance.vocab import PREFIXES

__all__ = ["declared_prefixes", "with_prefixes"]

_DECLARED = re.compile(r"\bPREFIX\s+([A-Za-z][\w\-.]*)?\s*:", re.IGNORECASE)


def declared_prefixes(text: str) -> set[str]:
    """Return the prefix names ``text`` declares itself (``""`` for the empty prefix)."""
    return {name or "" for name in _DECLARED.findall(text)}


def with_prefixes(text: str) -> str:
    """Return ``text`` with the store's prefixes declared in front (those it lacks).

    The declarations share one line with the start of the text, so an error's line number is
    the line of the text as written.

    Args:
        text: A SPARQL query or update.

    Returns:
        The text, with ``PREFIX`` declarations for the standard prefixes it does not declare.

    Example:
        >>> with_prefixes("PREFIX wf: <urn:x#> SELECT * { ?s wf:p ?o }").count("PREFIX wf:")
        1
    """
    declared = declared_prefixes(text)
    head = " ".join(
        f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items() if name not in declared
    )
    return f"{head} {text}" if head else text
