"""Per-scope change markers: a cheap "what changed since sequence N" for indexes and readers.

Every write of :class:`~provenance.stores.workflow_store.WorkflowStore` also rewrites, **in the
same transaction**, the small named graph ``changes_graph_iri(scope)`` of each scope it touches:

* a sequence number (one more per write) and a random token naming that write;
* a short log of the last writes: their sequence, token and the workflow ids they saved or
  deleted (a write that changed the whole scope, such as erasing it, logs "everything").

A derived index records the ``(sequence, token)`` it reflects. Comparing it with the store's
marker is one small read, so a reader can poll it, and a process that died between the store's
commit and its own bookkeeping finds out at the next open (the store is ahead). :func:`since`
turns the log into the set of ids to reload, or ``None`` when the log no longer reaches back
(then the scope is rebuilt from the store).

The bookkeeping terms live in their own namespace: they describe the store, not workflows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rdflib import Literal, URIRef
from rdflib.namespace import RDF, XSD

from provenance.stores._terms import Triple
from provenance.vocab import changes_graph_iri

__all__ = ["LOG_IDS", "ChangeEntry", "ChangeMarker", "advance", "marker_triples", "read_marker"]

STORE_NS = "https://w3id.org/em-plugin/store#"
CHANGE_LOG = URIRef(f"{STORE_NS}ChangeLog")
SCOPE = URIRef(f"{STORE_NS}scope")
SEQUENCE = URIRef(f"{STORE_NS}sequence")
TOKEN = URIRef(f"{STORE_NS}token")
ENTRY = URIRef(f"{STORE_NS}entry")
CHANGED = URIRef(f"{STORE_NS}changed")
EVERYTHING = URIRef(f"{STORE_NS}everything")

#: Ids kept in a scope's log; older entries go (a reader further behind rebuilds the scope).
LOG_IDS = 2048


@dataclass(frozen=True)
class ChangeEntry:
    """One logged write of a scope."""

    sequence: int
    """Its sequence number."""
    token: str
    """The random token naming it."""
    ids: frozenset[str] | None
    """The workflow ids it saved or deleted; ``None``: the whole scope changed."""


@dataclass(frozen=True)
class ChangeMarker:
    """A scope's change marker: its current sequence and token, and the recent log."""

    scope: str
    """The scope."""
    sequence: int = 0
    """How many writes the scope has seen (0: none recorded)."""
    token: str = ""
    """The token of the last write ("" before the first)."""
    entries: tuple[ChangeEntry, ...] = ()
    """The recent writes, oldest first."""

    @property
    def position(self) -> tuple[int, str]:
        """``(sequence, token)``, what an index records."""
        return self.sequence, self.token

    def holds(self, sequence: int, token: str) -> bool:
        """Whether the log has the write ``(sequence, token)``."""
        return any(e.sequence == sequence and e.token == token for e in self.entries)

    def since(self, sequence: int, token: str) -> frozenset[str] | None:
        """Return the ids changed after the write ``(sequence, token)``.

        Returns:
            The ids (empty when nothing changed), or ``None`` when the log cannot tell: the
            position is older than the log, belongs to a write another writer overwrote, or a
            later write changed the whole scope.
        """
        if (sequence, token) == self.position:
            return frozenset()
        if sequence > self.sequence:
            return None
        if sequence > 0 and not self.holds(sequence, token):
            return None
        later = [e for e in self.entries if e.sequence > sequence]
        if [e.sequence for e in later] != list(range(sequence + 1, self.sequence + 1)):
            return None
        changed: set[str] = set()
        for entry in later:
            if entry.ids is None:
                return None
            changed.update(entry.ids)
        return frozenset(changed)


def advance(marker: ChangeMarker, ids: Iterable[str] | None, token: str) -> ChangeMarker:
    """Return the marker after one more write of ``ids`` (``None``: the whole scope).

    A whole-scope write starts a fresh log, so no id of the scope's past stays in the marker.
    """
    entry = ChangeEntry(marker.sequence + 1, token, None if ids is None else frozenset(ids))
    if entry.ids is None:
        kept: list[ChangeEntry] = [entry]
    else:
        kept = [entry]
        budget = LOG_IDS - len(entry.ids)
        for old in reversed(marker.entries):
            size = 1 if old.ids is None else len(old.ids)
            if size > budget:
                break
            kept.append(old)
            budget -= size
        kept.reverse()
    return ChangeMarker(marker.scope, entry.sequence, token, tuple(kept))


def marker_triples(marker: ChangeMarker) -> list[Triple]:
    """Return the triples of a scope's change graph."""
    node = changes_graph_iri(marker.scope)
    out: list[Triple] = [
        (node, RDF.type, CHANGE_LOG),
        (node, SCOPE, Literal(marker.scope)),
        (node, SEQUENCE, Literal(marker.sequence, datatype=XSD.integer)),
        (node, TOKEN, Literal(marker.token)),
    ]
    for entry in marker.entries:
        item = URIRef(f"{node}#{entry.sequence}")
        out.append((node, ENTRY, item))
        out.append((item, SEQUENCE, Literal(entry.sequence, datatype=XSD.integer)))
        out.append((item, TOKEN, Literal(entry.token)))
        if entry.ids is None:
            out.append((item, CHANGED, EVERYTHING))
        else:
            out.extend((item, CHANGED, Literal(i)) for i in sorted(entry.ids))
    return out


def read_marker(scope: str, triples: Iterable[Triple]) -> ChangeMarker:
    """Parse a scope's change graph (no triples: a scope with no recorded write)."""
    node = changes_graph_iri(scope)
    sequence: dict[URIRef, int] = {}
    token: dict[URIRef, str] = {}
    changed: dict[URIRef, set[str] | None] = {}
    for s, p, o in triples:
        if p == SEQUENCE:
            sequence[s] = int(o)  # type: ignore[call-overload]
        elif p == TOKEN:
            token[s] = str(o)
        elif p == CHANGED:
            found = changed.setdefault(s, set())  # type: ignore[arg-type]
            if o == EVERYTHING:
                changed[s] = None  # type: ignore[index]
            elif found is not None:
                found.add(str(o))
    if node not in sequence:
        return ChangeMarker(scope)
    entries = [
        ChangeEntry(sequence[s], token.get(s, ""), _frozen(changed.get(s, set())))  # type: ignore[index]
        for s in sequence
        if s != node
    ]
    entries.sort(key=lambda e: e.sequence)
    return ChangeMarker(scope, sequence[node], token.get(node, ""), tuple(entries))  # type: ignore[index]


def _frozen(ids: set[str] | None) -> frozenset[str] | None:
    return None if ids is None else frozenset(ids)
