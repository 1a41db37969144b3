"""The registry of graph families: every kind of named graph the store holds, declared once.

A store holds more than workflows. Each kind of graph is a :class:`GraphFamily`, and
:data:`FAMILIES` lists them all; the code that lists, drops, backs up, restores, queries or
guards graphs asks this registry instead of knowing namespaces itself, so a new family is one
entry here (docs/sparql.md, docs/stores.md):

==============  ==============================================  =========  =====  ======  ======
family          IRI (after ``https://w3id.org/em-plugin/id/``)  query      erase  backup  token
==============  ==============================================  =========  =====  ======  ======
``workflows``   ``graph/{id}``, ``graph/{scope}/{id}``          default    yes    yes     rw
``lifecycle``   ``lifecycle/{scope}/workflow|procedure/{id}``   default    yes    yes     rw
``suggestions`` ``suggestions/{session}``, ``…/{scope}/{s}``    named      yes    yes     rw
``journal``     ``journal/{scope}/journal``, ``…/{s}/{chunk}``  --         yes    yes     rw
``changes``     ``changes/{scope}``, ``changes/{scope}/{e}``    --         yes    no      rw
``embedder``    ``store/embedder``                              --         no     yes     read
==============  ==============================================  =========  =====  ======  ======

*query*: ``default`` graphs are merged into the default graph of an ad-hoc query and are its
named graphs; ``named`` ones are named graphs only; ``--`` ones are the store's bookkeeping,
read by the store's own code. *erase*: :meth:`WorkflowStore.delete_scope` drops the scope's
graphs of the family. *token*: what a bearer token of the graph's scope may do with it
(``rw``: read, and write with a read-write token); the embedder record belongs to no scope, so
a token may read it and never write it (docs/sparql.md argues why).

The scope is read from the IRI alone: ``workflows`` and ``suggestions`` keep the default scope's
graphs one segment deep (``graph/{id}``) and put any other scope before the id; every other
scoped family names its scope first. A name with the wrong number of segments, an empty or
undecodable segment, belongs to no family, so no token opens it.

Example:
    >>> from provenance.stores.graph_families import family_of, graph_scope
    >>> iri = "https://w3id.org/em-plugin/id/lifecycle/team/workflow/w1"
    >>> family_of(iri).name, graph_scope(iri)
    ('lifecycle', 'team')
    >>> graph_scope("https://w3id.org/em-plugin/id/graph/w1")
    'default'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from rdflib import URIRef

from provenance.model import DEFAULT_SCOPE
from provenance.vocab import BASE, decode_segment, encode_segment

__all__ = [
    "CHANGES",
    "EMBEDDER",
    "FAMILIES",
    "JOURNAL",
    "LIFECYCLE",
    "SUGGESTIONS",
    "WORKFLOWS",
    "GraphFamily",
    "TokenAccess",
    "dataset_families",
    "family_of",
    "graph_scope",
    "in_default_graph",
    "in_query_dataset",
    "token_may_read",
    "token_may_write",
]

#: What a bearer token may do with a family's graphs (:attr:`GraphFamily.token`).
TokenAccess = str
_SCOPED = "scope"  # read by a token of the graph's scope; written by a read-write one
_READ_ANY = "read"  # a graph of no scope: every token reads it, none writes it


@dataclass(frozen=True)
class GraphFamily:
    """One kind of named graph of the store.

    Attributes:
        name: The family's name (``workflows``, ``lifecycle`` ...).
        namespace: The IRI every graph of the family starts with.
        pattern: The IRI pattern, for people (docs, messages).
        segments: How many path segments follow :attr:`namespace` (inclusive range); a fixed
            name (the embedder record) has ``(0, 0)``.
        short_default: The default scope's graphs have one segment fewer (no scope segment).
        default_graph: An ad-hoc query's default graph merges the family's graphs.
        named_graph: An ad-hoc query sees the family's graphs as named graphs (``GRAPH ?g``).
        erased_with_scope: Erasing a scope drops its graphs of this family.
        backup: A full backup holds the family's graphs (and a restore writes them back).
        logged: Every write of the family adds a change-log entry (so a cached copy of the
            graphs can tell it is stale by the change markers alone).
        token: ``"scope"``: a token of the graph's scope reads it, a read-write one writes it;
            ``"read"``: a graph of no scope that every token reads and none writes.
        writer: Who writes it, through which store call (for the docs and the reader).
    """

    name: str
    namespace: str
    pattern: str
    segments: tuple[int, int]
    short_default: bool = False
    default_graph: bool = False
    named_graph: bool = False
    erased_with_scope: bool = True
    backup: bool = True
    logged: bool = False
    token: TokenAccess = _SCOPED
    writer: str = ""

    def owns(self, iri: str) -> bool:
        """Whether ``iri`` is a well-formed graph name of this family."""
        parts = self._parts(iri)
        if parts is None:
            return False
        return self.token == _READ_ANY or self._scope(parts) is not None

    def scope_of(self, iri: str) -> str | None:
        """Return the scope of a graph of this family (``None``: not one, or of no scope)."""
        parts = self._parts(iri)
        return None if parts is None else self._scope(parts)

    def prefix(self, scope: str | None = None) -> str:
        """Return the IRI every graph of the family (of one scope, when given) starts with.

        The default scope's graphs of a :attr:`short_default` family share no prefix that
        other scopes' graphs lack; ask :meth:`scope_of` for those instead.
        """
        if scope is None or self.token == _READ_ANY:
            return self.namespace
        return f"{self.namespace}{encode_segment(scope)}/"

    def iri(self, *segments: str) -> URIRef:
        """Return the graph name made of ``segments`` (each percent-encoded) in this family.

        Raises:
            ValueError: When the segments do not make a name of the family.
        """
        iri = self.namespace + "/".join(encode_segment(s) for s in segments)
        if not self.owns(iri):
            raise ValueError(
                f"{iri!r} is not a graph name of the {self.name} family ({self.pattern})"
            )
        return URIRef(iri)

    def _parts(self, iri: str) -> list[str] | None:
        if not iri.startswith(self.namespace):
            return None
        rest = iri[len(self.namespace) :]
        parts = rest.split("/") if rest else []
        low, high = self.segments
        if not low <= len(parts) <= high or not all(parts):
            return None
        return parts

    def _scope(self, parts: list[str]) -> str | None:
        if self.token == _READ_ANY:
            return None
        if self.short_default and len(parts) == self.segments[0]:
            return DEFAULT_SCOPE
        try:
            return decode_segment(parts[0])
        except UnicodeDecodeError:
            return None


_ID = BASE
WORKFLOWS = GraphFamily(
    name="workflows",
    namespace=f"{_ID}graph/",
    pattern="graph/{id} (default scope), graph/{scope}/{id}",
    segments=(1, 2),
    short_default=True,
    default_graph=True,
    named_graph=True,
    logged=True,
    writer="WorkflowStore.commit (saves and deletes, with the scopes' change-log entries)",
)
LIFECYCLE = GraphFamily(
    name="lifecycle",
    namespace=f"{_ID}lifecycle/",
    pattern="lifecycle/{scope}/workflow/{id}, lifecycle/{scope}/procedure/{id}",
    segments=(3, 3),
    default_graph=True,
    named_graph=True,
    writer="WorkflowStore.commit(records=...) (provenance/lifecycle.py builds the triples)",
)
SUGGESTIONS = GraphFamily(
    name="suggestions",
    namespace=f"{_ID}suggestions/",
    pattern="suggestions/{session} (default scope), suggestions/{scope}/{session}",
    segments=(1, 2),
    short_default=True,
    named_graph=True,
    writer="WorkflowStore.record_suggestions (provenance/suggestion_record.py)",
)
JOURNAL = GraphFamily(
    name="journal",
    namespace=f"{_ID}journal/",
    pattern="journal/{scope}/journal, journal/{scope}/{session}/saved, "
    "journal/{scope}/{session}/{chunk}",
    segments=(2, 3),
    writer="WorkflowStore.write_graphs / drop_scope_graphs (em_plugin/session/journal.py)",
)
CHANGES = GraphFamily(
    name="changes",
    namespace=f"{_ID}changes/",
    pattern="changes/{scope}/{sequence-token}",
    segments=(1, 2),
    backup=False,  # rebuilt by every write: a restore writes the scopes' entries anew
    writer="WorkflowStore (every write, in its transaction; provenance/stores/_changes.py)",
)
EMBEDDER = GraphFamily(
    name="embedder",
    namespace=f"{_ID}store/embedder",
    pattern="store/embedder",
    segments=(0, 0),
    erased_with_scope=False,
    token=_READ_ANY,
    writer="WorkflowStore.write_graphs (em_plugin/embedding/record.py), never through a token",
)

#: Every family, the workflows first.
FAMILIES: tuple[GraphFamily, ...] = (WORKFLOWS, LIFECYCLE, SUGGESTIONS, JOURNAL, CHANGES, EMBEDDER)


def family_of(iri: str | URIRef) -> GraphFamily | None:
    """Return the family of a graph name, or ``None`` for a graph of no family."""
    return _family_of(str(iri))


@lru_cache(maxsize=1 << 16)
def _family_of(text: str) -> GraphFamily | None:
    # Cached: every ad-hoc query sorts the store's graph names into families.
    for family in FAMILIES:
        if family.owns(text):
            return family
    return None


def graph_scope(iri: str | URIRef) -> str | None:
    """Return the scope whose graph ``iri`` is (``None``: a graph of no scope or no family)."""
    family = family_of(iri)
    return None if family is None else family.scope_of(str(iri))


def in_default_graph(iri: str | URIRef) -> bool:
    """Whether an ad-hoc query's default graph merges this graph."""
    family = family_of(iri)
    return family is not None and family.default_graph


def in_query_dataset(iri: str | URIRef) -> bool:
    """Whether an ad-hoc query sees this graph (as a named graph, and maybe in the default)."""
    family = family_of(iri)
    return family is not None and family.named_graph


def dataset_families() -> tuple[GraphFamily, ...]:
    """Return the families an ad-hoc query sees, those of the default graph first."""
    return tuple(sorted((f for f in FAMILIES if f.named_graph), key=lambda f: not f.default_graph))


def token_may_read(iri: str | URIRef, scopes: Iterable[str]) -> bool:
    """Whether a token opening ``scopes`` may read the graph ``iri``."""
    family = family_of(iri)
    if family is None:
        return False
    if family.token == _READ_ANY:
        return True
    return family.scope_of(str(iri)) in set(scopes)


def token_may_write(iri: str | URIRef, scopes: Iterable[str]) -> bool:
    """Whether a read-write token opening ``scopes`` may write (or drop) the graph ``iri``."""
    family = family_of(iri)
    if family is None or family.token != _SCOPED:
        return False
    return family.scope_of(str(iri)) in set(scopes)
