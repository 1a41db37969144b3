"""Per-scope change logs: a cheap "what changed since write N" for indexes and readers.

Every write of :class:`~provenance.stores.workflow_store.WorkflowStore` adds, **in the same
transaction**, one small named graph per scope it touches, ``changes_graph_iri(scope, entry)``:
a log entry with a sequence number (one more than the highest the writer saw), a random token
naming the write, and the workflow ids it saved or deleted (or "everything", for a write that
changed the whole scope, such as erasing it).

Entries are only ever added (old ones are trimmed later), never rewritten, so:

* a batch of new workflows stays a pure load (no graph of the batch exists yet), the fastest
  write path of the embedded store;
* two processes writing at once never overwrite each other's entry: both appear, maybe with the
  same sequence number, and a reader reloads the ids of both.

A derived index records the position ``(sequence, tokens)`` it reflects. Comparing it with the
store's current position is one small query, so a reader can poll it, and a process that died
between the store's commit and its own bookkeeping finds out at the next open (the store is
ahead). :meth:`ChangeMarker.since` turns the log into the ids to reload, or ``None`` when the log
no longer reaches back (then the scope is reloaded from the store).

The bookkeeping terms live in their own namespace: they describe the store, not workflows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rdflib import Literal, URIRef
from rdflib.namespace import RDF, XSD

from provenance.stores._terms import Triple
from provenance.vocab import changes_graph_iri

__all__ = [
    "LOG_ENTRIES",
    "LOG_IDS",
    "STORE_NS",
    "ChangeEntry",
    "ChangeMarker",
    "entry_triples",
]

STORE_NS = "https://w3id.org/em-plugin/store#"
CHANGE = URIRef(f"{STORE_NS}Change")
SCOPE = URIRef(f"{STORE_NS}scope")
SEQUENCE = URIRef(f"{STORE_NS}sequence")
TOKEN = URIRef(f"{STORE_NS}token")
CHANGED = URIRef(f"{STORE_NS}changed")
EVERYTHING = URIRef(f"{STORE_NS}everything")

#: A scope keeps at most this many log entries, and entries naming at most LOG_IDS ids; a
#: reader further behind reloads the whole scope.
LOG_ENTRIES = 64
LOG_IDS = 4096


@dataclass(frozen=True)
class ChangeEntry:
    """One logged write of a scope."""

    sequence: int
    """Its sequence number (racing writers may share one)."""
    token: str
    """The random token naming it."""
    ids: frozenset[str] | None = None
    """The workflow ids it saved or deleted; ``None``: the whole scope, or not read."""
    everything: bool = False
    """Whether it changed the whole scope."""

    @property
    def graph(self) -> str:
        """The local name of its graph."""
        return f"{self.sequence}-{self.token}"


@dataclass(frozen=True)
class ChangeMarker:
    """A scope's change log, oldest entry first."""

    scope: str
    """The scope."""
    entries: tuple[ChangeEntry, ...] = ()
    """The logged writes, by sequence."""

    @property
    def sequence(self) -> int:
        """The highest sequence number (0: no recorded write)."""
        return max((e.sequence for e in self.entries), default=0)

    @property
    def position(self) -> tuple[int, str]:
        """``(sequence, tokens)``: what an index records after reading the whole log."""
        top = self.sequence
        return top, "|".join(sorted(e.token for e in self.entries if e.sequence == top))

    def since(self, sequence: int, tokens: str) -> frozenset[str] | None:
        """Return the ids changed after the position ``(sequence, tokens)``.

        Returns:
            The ids (empty when nothing changed), or ``None`` when the log cannot tell: the
            position is older than the log, or a later write changed the whole scope.
        """
        if (sequence, tokens) == self.position:
            return frozenset()
        seen = set(tokens.split("|")) if tokens else set()
        if sequence > 0 and not any(
            e.sequence == sequence and e.token in seen for e in self.entries
        ):
            # Trimmed away (the log no longer reaches back), or a log of another history: the
            # store was wiped or replaced and its sequence numbers started again.
            return None
        later = [
            e
            for e in self.entries
            if e.sequence > sequence or (e.sequence == sequence and e.token not in seen)
        ]
        if {e.sequence for e in later if e.sequence > sequence} != set(
            range(sequence + 1, self.sequence + 1)
        ):
            return None
        changed: set[str] = set()
        for entry in later:
            if entry.everything or entry.ids is None:
                return None
            changed.update(entry.ids)
        return frozenset(changed)

    def after(self, entry: ChangeEntry) -> ChangeMarker:
        """Return the log with one more entry."""
        return ChangeMarker(self.scope, (*self.entries, entry))

    def trimmed(self) -> list[ChangeEntry]:
        """Return the oldest entries to drop so the log fits LOG_ENTRIES and LOG_IDS."""
        keep, ids = 0, 0
        for entry in reversed(self.entries):
            size = len(entry.ids or ())
            if keep >= LOG_ENTRIES or (keep and ids + size > LOG_IDS):
                break
            keep, ids = keep + 1, ids + size
        return list(self.entries[: len(self.entries) - keep])


def entry_triples(scope: str, entry: ChangeEntry) -> list[Triple]:
    """Return the triples of a log entry's graph."""
    node = changes_graph_iri(scope, entry.graph)
    out: list[Triple] = [
        (node, RDF.type, CHANGE),
        (node, SCOPE, Literal(scope)),
        (node, SEQUENCE, Literal(entry.sequence, datatype=XSD.integer)),
        (node, TOKEN, Literal(entry.token)),
    ]
    if entry.everything:
        out.append((node, CHANGED, EVERYTHING))
    else:
        out.extend((node, CHANGED, Literal(i)) for i in sorted(entry.ids or ()))
    return out


# ?g ?scope ?sequence ?token of every log entry (bind ?scope for one scope).
ENTRIES_QUERY = f"""SELECT ?g ?scope ?sequence ?token WHERE {{ GRAPH ?g {{
  ?g a <{CHANGE}> ; <{SCOPE}> ?scope ; <{SEQUENCE}> ?sequence ; <{TOKEN}> ?token }} }}"""
# ?g ?changed of one scope's entries.
CHANGED_QUERY = f"""SELECT ?g ?changed WHERE {{ GRAPH ?g {{
  ?g a <{CHANGE}> ; <{SCOPE}> ?scope ; <{CHANGED}> ?changed }} }}"""


def markers_from_rows(
    rows: Iterable[tuple[object, ...]],
    changed: Iterable[tuple[object, ...]] | None = None,
) -> dict[str, ChangeMarker]:
    """Build markers from :data:`ENTRIES_QUERY` rows (and :data:`CHANGED_QUERY` rows for ids)."""
    ids: dict[str, set[str]] = {}
    everything: set[str] = set()
    for graph, value in changed or ():
        if value == EVERYTHING:
            everything.add(str(graph))
        else:
            ids.setdefault(str(graph), set()).add(str(value))
    found: dict[str, list[ChangeEntry]] = {}
    for graph, scope, sequence, token in rows:
        name = str(graph)
        entry = ChangeEntry(
            int(str(sequence)),
            str(token),
            frozenset(ids.get(name, ())) if changed is not None else None,
            name in everything,
        )
        found.setdefault(str(scope), []).append(entry)
    return {
        scope: ChangeMarker(scope, tuple(sorted(entries, key=lambda e: (e.sequence, e.token))))
        for scope, entries in found.items()
    }
