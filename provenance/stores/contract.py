"""The store contract: checks every backend must pass, runnable without pytest.

A backend author runs them against an empty store of the new backend::

    from provenance.stores import open_store
    from provenance.stores.contract import run_contract

    failures = run_contract(lambda: open_store("mybackend://…"))
    assert not failures, failures

or, under pytest, one test per check::

    import pytest
    from provenance.stores.contract import CHECKS

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
    def test_contract(check, empty_store):
        check(empty_store)

Each :class:`Check` takes an **empty** :class:`~provenance.stores.WorkflowStore` and raises
:class:`ContractFailure` (an ``AssertionError``) when the backend breaks the contract. The checks
cover the round trip, replace without leftovers, scopes, delete, atomic batches, hostile strings
in values and bindings, scope-confined queries, the named queries, error types, the graph
families of :mod:`provenance.stores.graph_families` (erased with their scope, backed up and
restored, seen by queries as docs/sparql.md says), and closing.
The contract itself is described in :mod:`provenance.stores.base` and ``docs/stores.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import DCTERMS, PROV, RDF

from provenance.errors import QueryError, StoreError, WorkflowNotFound
from provenance.mapping import workflow_to_triples
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow
from provenance.stores.base import QueryResult
from provenance.stores.workflow_store import WorkflowStore
from provenance.vocab import WF_NS, changes_graph_iri, graph_iri, workflow_iri

__all__ = [
    "CHECKS",
    "HOSTILE_TEXTS",
    "Check",
    "ContractFailure",
    "run_contract",
    "sample_workflows",
]

#: Strings that break naive quoting in SPARQL, N-Quads, JSON or HTTP forms.
HOSTILE_TEXTS: tuple[str, ...] = (
    '"; DROP ALL ; SELECT * WHERE { ?s ?p ?o } #',
    "line1\nline2\r\n\ttab",
    "}} GRAPH <urn:x> { <a> <b> <c> } '''",
    "naïve café — 日本語 🚀",
    "\\u0022 backslash \\",
    "<http://example.org/not-an-iri>",
    "a=b&query=ASK{}&update=DROP ALL +%20",
)
_ID_QUERY = "SELECT ?wf WHERE { ?wf <http://purl.org/dc/terms/identifier> ?id }"


class ContractFailure(AssertionError):
    """A backend broke the store contract; the message says which promise."""


@dataclass(frozen=True)
class Check:
    """One named promise of the contract.

    Attributes:
        name: A short identifier, e.g. ``"round_trip"``.
        run: Called with an empty store; raises :class:`ContractFailure` on a broken promise.
    """

    name: str
    run: Callable[[WorkflowStore], None]

    def __call__(self, store: WorkflowStore) -> None:
        """Run the check on an empty store.

        Raises:
            ContractFailure: When the backend breaks this promise.
        """
        self.run(store)


def sample_workflows() -> list[Workflow]:
    """Return hand-made workflows covering nesting, sub-agents, failures, revisions and scopes."""
    extract = CallStep(
        name="product_extractor",
        args={"file": "acme.pdf", "pages": [1, 2]},
        output={"ingredients": ["water", "PFOA"]},
        agent="extractor",
        started="2026-11-21T10:00:00+00:00",
        ended="2026-11-21T10:00:02.5+00:00",
    )
    handoff = CallStep(
        name="ask_chemist",
        args={"question": "classify"},
        agent="coordinator",
        steps=(
            CallStep(name="pfas_classifier", args={"smiles": "CCO"}, output=False, agent="chemist"),
        ),
    )
    first = Workflow(
        id="wf-1",
        title="SDS check",
        scope="tenant-a",
        session="thread-1",
        created="2026-11-21T10:00:00+00:00",
        framework="langgraph",
        steps=(
            InstructionStep(text="Extract all ingredients", steps=(extract, handoff), id="i1"),
            InstructionStep(text="Thanks!"),
        ),
        failed=(
            FailedCall(call=CallStep(name="ocr", args={"file": "x"}), error="timeout", parent="0"),
        ),
        revised=(InstructionStep(text="Extract ingredients from the old file", id="i0"),),
        extra={"x_note": "kept"},
    )
    second = Workflow(id="wf-2", scope="tenant-a", steps=(CallStep(name="A1"), CallStep(name="A8")))
    third = Workflow(id="helpdesk/3 [x]|y", scope="user/bob", steps=(CallStep(name="A1"),))
    return [first, second, third]


# -- helpers -----------------------------------------------------------------------------------


def _expect(condition: bool, promise: str) -> None:
    if not condition:
        raise ContractFailure(promise)


def _equal(actual: object, expected: object, promise: str) -> None:
    if actual != expected:
        raise ContractFailure(f"{promise}: expected {expected!r}, got {actual!r}")


@contextmanager
def _raises(kind: type[BaseException], match: str, promise: str) -> Iterator[None]:
    """Like ``pytest.raises``: the block must raise ``kind`` with ``match`` in its message."""
    try:
        yield
    except kind as exc:
        if not re.search(match, str(exc)):
            raise ContractFailure(f"{promise}: message {str(exc)!r} lacks {match!r}") from exc
    except Exception as exc:  # report the wrong error type as the failure
        raise ContractFailure(
            f"{promise}: expected {kind.__name__}, got {type(exc).__name__}: {exc}"
        ) from exc
    else:
        raise ContractFailure(f"{promise}: no {kind.__name__} was raised")


def _flat(text: str) -> str:
    """The text with control characters blanked: ids, scopes and tool names refuse them."""
    return "".join(" " if ord(c) < 32 else c for c in text)


def _snapshot(store: WorkflowStore) -> dict[URIRef, frozenset[tuple[object, ...]]]:
    """Every graph but the change markers (they advance on every write), with its triples."""
    backend = store.backend
    markers = str(changes_graph_iri("x"))[:-1]
    names = [n for n in backend.graph_names() if not str(n).startswith(markers)]
    return {name: frozenset(triples) for name, triples in backend.read_graphs(names)}


def _rows(result: object, what: str) -> QueryResult:
    if not isinstance(result, QueryResult):
        raise ContractFailure(f"{what}: a SELECT gives a QueryResult, not {type(result).__name__}")
    return result


def _graph(result: object, what: str) -> Graph:
    if not isinstance(result, Graph):
        raise ContractFailure(f"{what}: a CONSTRUCT gives a Graph, not {type(result).__name__}")
    return result


def _triple(text: str) -> tuple[URIRef, URIRef, Literal]:
    return (URIRef("urn:x:s"), DCTERMS.title, Literal(text))


# -- the checks --------------------------------------------------------------------------------


def check_round_trip(store: WorkflowStore) -> None:
    """Saved workflows load back equal; ids, len and ``in`` agree."""
    originals = sample_workflows()
    _equal(store.save_many(originals), 3, "save_many returns the number saved")
    for workflow in originals:
        _equal(store.load(workflow.id), workflow, f"load({workflow.id!r}) round-trips")
    _equal(store.ids(), sorted(w.id for w in originals), "ids() lists every workflow")
    _equal(len(store), 3, "len() counts workflows")
    _expect("wf-1" in store and "nope" not in store and 42 not in store, "`in` tests ids")


def check_replace_without_leftovers(store: WorkflowStore) -> None:
    """Saving a (scope, id) again replaces its whole graph.

    The same id in another scope is another workflow.
    """
    big, other = sample_workflows()[0], sample_workflows()[1]
    store.save_many([big, other])
    small = Workflow(id=big.id, scope=big.scope, steps=(CallStep(name="only"),))
    store.save(small)
    _equal(store.load(big.id, scope=big.scope), small, "the second save wins")
    graph = graph_iri(big.id, big.scope)
    stored = set(next(iter(store.backend.read_graphs([graph])))[1])
    _equal(stored, set(workflow_to_triples(small)), "no triple of the first save is left")
    _equal(store.load(other.id, scope=other.scope), other, "other workflows are untouched")
    elsewhere = Workflow(id=big.id, scope="tenant-b", steps=(CallStep(name="else"),))
    store.save(elsewhere)
    _equal(store.load(big.id, scope=big.scope), small, "another scope's save replaces nothing")
    _equal(store.ids(scope="tenant-b"), [big.id], "the id is stored in the other scope too")


def check_repeated_id_in_batch(store: WorkflowStore) -> None:
    """A batch that holds one id twice keeps the last."""
    a = Workflow(id="dup", steps=(CallStep(name="first"),))
    b = Workflow(id="dup", steps=(CallStep(name="second"),))
    _equal(store.save_many([a, b]), 1, "a repeated id counts once")
    _equal(store.load("dup"), b, "the last of a repeated id wins")


def check_not_found(store: WorkflowStore) -> None:
    """A missing id, or one of another scope, is WorkflowNotFound naming it."""
    store.save_many(sample_workflows())
    with _raises(WorkflowNotFound, "nope", "load of a missing id"):
        store.load("nope")
    with _raises(WorkflowNotFound, "tenant-b", "load from another scope"):
        store.load("wf-1", scope="tenant-b")


def check_scopes_and_iteration(store: WorkflowStore) -> None:
    """Listing by scope and iteration in batches."""
    store.save_many(sample_workflows())
    _equal(store.scopes(), ["tenant-a", "user/bob"], "scopes()")
    _equal(store.ids(scope="tenant-a"), ["wf-1", "wf-2"], "ids(scope=tenant-a)")
    _equal(store.ids(scope="user/bob"), ["helpdesk/3 [x]|y"], "ids(scope=user/bob)")
    _equal(store.ids(scope="nobody"), [], "ids of an unknown scope")
    listed = [w.id for w in store.iter_workflows(scope="tenant-a")]
    _equal(listed, ["wf-1", "wf-2"], "iter_workflows(scope=...)")
    _equal([w.id for w in store.iter_workflows(batch_size=1)], store.ids(), "batches of one")


def check_stats(store: WorkflowStore) -> None:
    """stats() counts workflows, scopes, tools, triples and steps."""
    _equal(store.stats()["workflows"], 0, "an empty store has no workflows")
    store.save_many(sample_workflows())
    stats = store.stats()
    _equal(stats["workflows"], 3, "stats workflows")
    _equal(stats["scopes"], {"tenant-a": 2, "user/bob": 1}, "stats scopes")
    _equal(stats["tools"], 6, "stats tools")
    expected = sum(len(workflow_to_triples(w)) for w in sample_workflows())
    stored = sum(len(triples) for triples in _snapshot(store).values())
    _equal(stored, expected, "the workflow graphs hold exactly the mapped triples")
    _equal(stats["triples"], store.backend.count_triples(), "stats triples")
    # Change markers add a few triples per scope; a server's own graphs must not count.
    _expect(expected <= stats["triples"] <= expected + 100, "triples of the store's graphs only")
    _expect(stats["steps"] > 0, "stats steps")


def check_delete(store: WorkflowStore) -> None:
    """delete() removes one workflow graph and nothing else; twice is False."""
    store.save_many(sample_workflows())
    before = _snapshot(store)
    _equal(store.delete("wf-2", "tenant-a"), True, "delete of a stored id")
    _equal(store.delete("wf-2", "tenant-a"), False, "delete of a deleted id")
    _expect("wf-2" not in store, "a deleted id is gone")
    del before[graph_iri("wf-2", "tenant-a")]
    _equal(_snapshot(store), before, "delete touches no other graph")


def check_delete_scope(store: WorkflowStore) -> None:
    """delete_scope() removes exactly one scope's workflows."""
    store.save_many(sample_workflows())
    _equal(store.delete_scope("tenant-a"), ["wf-1", "wf-2"], "delete_scope returns the ids")
    _equal(store.ids(), ["helpdesk/3 [x]|y"], "other scopes stay")
    _equal(store.scopes(), ["user/bob"], "the scope is gone")
    _equal(store.delete_scope("tenant-a"), [], "deleting an empty scope")


def check_unstorable_batch_changes_nothing(store: WorkflowStore) -> None:
    """A batch with one term that cannot be stored writes nothing, replacements included."""
    store.save_many(sample_workflows())
    before = _snapshot(store)
    replacement = (graph_iri("wf-1", "tenant-a"), [_triple("new")])
    # An IRI with a blank cannot be written as one term: the client refuses it before sending.
    broken = (URIRef("urn:x:bad"), [(URIRef("urn:x:a b"), DCTERMS.title, Literal("x"))])
    fresh = (URIRef("urn:x:fresh"), [_triple("fresh")])
    with _raises(StoreError, "", "a batch with an unstorable term"):
        store.backend.replace_graphs([replacement, broken, fresh])
    _equal(_snapshot(store), before, "a failed batch leaves the store as it was")


def check_graph_level_replace_and_drop(store: WorkflowStore) -> None:
    """The backend's graph operations: replace, empty replace drops, drop ignores absent."""
    backend = store.backend
    g, h = URIRef("urn:x:g"), URIRef("urn:x:h")
    backend.replace_graphs([(g, [_triple("a"), _triple("b")]), (h, iter([_triple("h")]))])
    _equal(backend.graph_names(), [g, h], "graph_names after replace_graphs")
    backend.replace_graphs([(g, [_triple("c")]), (h, [])])  # no triples: the graph goes
    _equal(backend.graph_names(), [g], "a graph replaced by no triples is gone")
    _equal(set(backend.triples(g)), {_triple("c")}, "replace_graphs replaces")
    with _raises(WorkflowNotFound, "", "triples() of a missing graph"):
        backend.triples(h)
    with _raises(StoreError, "twice", "one graph twice in a batch"):
        backend.replace_graphs([(g, []), (g, [])])
    backend.drop_graphs([g, URIRef("urn:x:absent")])
    _equal(backend.graph_names(), [], "drop_graphs")


def check_hostile_values(store: WorkflowStore) -> None:
    """Hostile strings in every field round-trip byte for byte and touch nothing else."""
    store.save_many(sample_workflows())
    for text in HOSTILE_TEXTS:
        before = _snapshot(store)
        hostile = Workflow(
            id=f"wf {_flat(text)}",
            title=text,
            scope=_flat(text),
            steps=(
                InstructionStep(
                    text=text,
                    steps=(CallStep(name=f"tool {_flat(text)}", args={text: text}, output=text),),
                ),
            ),
            extra={"x_note": text},
        )
        store.save(hostile)
        _equal(store.load(hostile.id), hostile, f"hostile {text!r} round-trips")
        store.save(hostile)  # again: the replace path must keep it too
        loaded = store.load(hostile.id, scope=hostile.scope)
        _equal(loaded, hostile, f"hostile {text!r} survives a replace")
        _equal(loaded.title, text, "byte-identical title")
        after = _snapshot(store)
        graph = graph_iri(hostile.id, hostile.scope)
        _expect(bool(after.pop(graph, None)), f"graph of {text!r} stored")
        _equal(after, before, f"saving {text!r} touches no other graph")
        _equal(store.ids(scope=hostile.scope), [hostile.id], f"scope {hostile.scope!r}")
        store.delete(hostile.id, hostile.scope)


def check_hostile_bindings(store: WorkflowStore) -> None:
    """Hostile strings as binding values match as values and change nothing."""
    store.save_many(sample_workflows())
    for text in HOSTILE_TEXTS:
        hostile = Workflow(id=_flat(text), steps=(CallStep(name="A1"),))
        store.save(hostile)
        before = _snapshot(store)
        result = _rows(store.query(_ID_QUERY, {"id": Literal(hostile.id)}), "bound id")
        _equal(result.column("wf"), [workflow_iri(hostile.id)], f"binding {text!r} matches")
        absent = _rows(store.query(_ID_QUERY, {"id": Literal(text + "-absent")}), "absent")
        _equal(len(absent), 0, "a bound absent value matches nothing")
        plain = _rows(store.query(_ID_QUERY, {"?id": text + "-absent"}), "plain")  # a literal
        _equal(len(plain), 0, "a plain str binding is a literal")
        _equal(_snapshot(store), before, f"querying with {text!r} changes nothing")
        store.delete(hostile.id, hostile.scope)


def check_query_forms(store: WorkflowStore) -> None:
    """ASK, CONSTRUCT and SELECT over the union of the store's graphs."""
    store.save_many(sample_workflows())
    asked = store.query("ASK { ?s <http://purl.org/dc/terms/identifier> ?id }", {"id": "wf-2"})
    _equal(asked, True, "ASK with a binding")
    graph = _graph(
        store.query(
            "CONSTRUCT { ?wf <urn:x:id> ?id } "
            "WHERE { ?wf <http://purl.org/dc/terms/identifier> ?id }"
        ),
        "CONSTRUCT",
    )
    objects = {str(o) for o in graph.objects()}
    _equal(objects, {"wf-1", "wf-2", "helpdesk/3 [x]|y"}, "CONSTRUCT over the union")
    count = store.backend.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    _equal(
        int(str(count.rows[0][0])),
        store.backend.count_triples(),
        "the default graph is the union of the store's named graphs",
    )


def check_query_restricted_to_scope(store: WorkflowStore) -> None:
    """A scoped query sees that scope's graphs only; FROM cannot widen it."""
    store.save_many(sample_workflows())
    rows = _rows(store.query(_ID_QUERY, scope="tenant-a"), "scoped")
    expected = [str(workflow_iri("wf-1")), str(workflow_iri("wf-2"))]
    _equal(sorted(str(w) for w in rows.column("wf")), expected, "scoped")
    graphs = _rows(
        store.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", scope="user/bob"),
        "GRAPH ?g",
    )
    bob = graph_iri("helpdesk/3 [x]|y", "user/bob")
    _equal(graphs.column("g"), [bob], "GRAPH ?g within the scope")
    escape = _ID_QUERY.replace("WHERE", f"FROM <{graph_iri('wf-1', 'tenant-a')}> WHERE")
    escaped = _rows(store.query(escape, scope="user/bob"), "FROM")
    _equal(escaped.column("wf"), [workflow_iri("helpdesk/3 [x]|y")], "FROM does not widen")
    _equal(len(_rows(store.query(_ID_QUERY, scope="nobody"), "nobody")), 0, "unknown scope")


def check_named_queries(store: WorkflowStore) -> None:
    """Named queries from provenance/queries/ with bindings and scope."""
    store.save_many(sample_workflows())
    using = _rows(store.query("workflows-using", {"tool": "A1"}), "workflows-using")
    _equal(
        sorted(str(w) for w in using.column("workflow")),
        ["helpdesk/3 [x]|y", "wf-2"],
        "workflows-using",
    )
    in_scope = _rows(store.query("workflows-using", {"tool": "A1"}, scope="tenant-a"), "scoped")
    _equal([str(w) for w in in_scope.column("workflow")], ["wf-2"], "workflows-using in scope")
    scopes = _rows(store.query("scopes"), "scopes")
    counted = {str(r["scope"]): int(str(r["workflows"])) for r in scopes.dicts()}
    _equal(counted, {"tenant-a": 2, "user/bob": 1}, "the scopes query")
    with _raises(QueryError, "unknown query 'no-such-query'", "an unknown named query"):
        store.query("no-such-query")


def check_query_errors(store: WorkflowStore) -> None:
    """Bad SPARQL, updates and bad bindings are QueryError naming the problem."""
    with _raises(QueryError, "SPARQL|expected", "bad SPARQL"):
        store.query("SELECT ?s WHERE { ?s ?p }")
    with _raises(QueryError, "expected a query", "an update through query()"):
        store.query("DELETE WHERE { ?s ?p ?o }")
    with _raises(QueryError, "SELECT", "select() of an ASK"):
        store.backend.select("ASK { ?s ?p ?o }")
    bad: list[tuple[dict[str, object], str]] = [
        ({"not a var": Literal("x")}, "variable name"),
        ({"id": BNode()}, "blank node"),
        ({"id": URIRef("http://example.org/a b")}, "IRI"),
        ({"id": object()}, "cannot bind"),
    ]
    for bindings, message in bad:
        with _raises(QueryError, message, f"bindings {bindings!r}"):
            store.query(_ID_QUERY, bindings)


def _every_family(store: WorkflowStore, scope: str) -> dict[str, URIRef]:
    """Write one graph of every scoped family for ``scope``, through the store layer's calls."""
    from provenance.stores.graph_families import JOURNAL, LIFECYCLE
    from provenance.stores.graph_writes import write_graphs

    record = LIFECYCLE.iri(scope, "workflow", "w")
    older = Workflow(id="w@v1", steps=(CallStep(name="A0"),), scope=scope)
    newest = Workflow(id="w", steps=(CallStep(name="A1"),), scope=scope)
    history = [
        (record, RDF.type, URIRef(f"{WF_NS}LifecycleRecord")),
        (record, URIRef(f"{WF_NS}scope"), Literal(scope)),
        (workflow_iri("w"), PROV.wasRevisionOf, workflow_iri("w@v1")),
    ]
    store.commit(saves=[older, newest], records=[(record, history)])
    suggested = store.record_suggestions(
        "s1", [{"text": "x", "tool": "A1"}], ["w"], scope=scope, time="2026-12-07T10:00:00"
    )
    journal = JOURNAL.iri(scope, "s1", "saved")
    write_graphs(store.backend, [(journal, [(journal, RDF.type, URIRef("urn:x:Saved"))])])
    return {
        "workflows": graph_iri("w", scope),
        "lifecycle": record,
        "suggestions": suggested,
        "journal": journal,
    }


def check_graph_families(store: WorkflowStore) -> None:
    """Every graph the store writes is of a registered family; erasing a scope takes them all."""
    from provenance.stores.graph_families import EMBEDDER, family_of
    from provenance.stores.graph_writes import write_graphs

    mine, theirs = _every_family(store, "tenant-a"), _every_family(store, "user/bob")
    write_graphs(store.backend, [(EMBEDDER.iri(), [_triple("fake-64")])])
    names = store.backend.graph_names()
    _equal([str(n) for n in names if family_of(n) is None], [], "graphs of no family")
    for family, name in mine.items():
        found = family_of(name)
        _equal(found.name if found else None, family, f"the family of <{name}>")
        _expect(name in names, f"a {family} graph is stored")
    store.delete_scope("tenant-a")
    left = set(store.backend.graph_names())
    _equal(sorted(n for n in mine.values() if n in left), [], "delete_scope erases every family")
    _expect(set(theirs.values()) <= left, "delete_scope leaves other scopes' graphs")
    _expect(EMBEDDER.iri() in left, "delete_scope leaves the store's embedder record")


def check_backup_round_trip(store: WorkflowStore) -> None:
    """A backup restores every backed-up family as it was, the embedder record included."""
    import tempfile
    from pathlib import Path

    from provenance.stores.backup import backup_text, read_backup, restore_backup
    from provenance.stores.graph_families import EMBEDDER
    from provenance.stores.graph_writes import write_graphs

    _every_family(store, "tenant-a")
    write_graphs(store.backend, [(EMBEDDER.iri(), [_triple("fake-64")])])
    before = _snapshot(store)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "backup.nq"
        path.write_text(backup_text(store), encoding="utf-8")
        store.delete_scope("tenant-a")
        write_graphs(store.backend, [(EMBEDDER.iri(), [])])
        _equal(restore_backup(store, read_backup(path)), (2, 4), "workflows and other graphs")
    _equal(_snapshot(store), before, "a restored backup is the store as it was")


def check_query_dataset(store: WorkflowStore) -> None:
    """Ad-hoc queries see the registry's dataset, with the standard prefixes (docs/sparql.md)."""
    from provenance.stores.graph_families import in_query_dataset

    graphs = _every_family(store, "tenant-a")
    _every_family(store, "user/bob")
    _equal(store.query("ASK { ?w prov:wasRevisionOf ?older }"), True, "a revision is seen")
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?r a wf:LifecycleRecord ; wf:scope ?scope }"
    _equal(_rows(store.query(count), "records").rows[0][0], Literal(2), "lifecycle records")
    scoped = _rows(store.query(count, scope="tenant-a"), "scoped records")
    _equal(scoped.rows[0][0], Literal(1), "a scope's lifecycle records")
    named = _rows(
        store.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", scope="tenant-a"), "?g"
    )
    expected = sorted(str(n) for n in graphs.values() if in_query_dataset(n)) + [
        str(graph_iri("w@v1", "tenant-a"))
    ]
    _equal(sorted(str(g) for g in named.column("g")), sorted(expected), "the named graphs")
    rounds = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a a wf:Suggestion } }"
    _equal(_rows(store.query(rounds), "rounds").rows[0][0], Literal(2), "suggestion rounds")
    store.record_suggestions("s1", [], [], scope="tenant-a", time="2026-12-07T11:00:00")
    _equal(_rows(store.query(rounds), "rounds").rows[0][0], Literal(3), "a new round is seen")


def check_closed_store_refuses_use(store: WorkflowStore) -> None:
    """After close(), use raises StoreError saying it is closed; closing twice is harmless."""
    store.close()
    with _raises(StoreError, "closed", "use after close"):
        store.ids()
    store.close()


#: Every check, in a stable order (closing comes last).
CHECKS: tuple[Check, ...] = tuple(
    Check(function.__name__.removeprefix("check_"), function)
    for function in (
        check_round_trip,
        check_replace_without_leftovers,
        check_repeated_id_in_batch,
        check_not_found,
        check_scopes_and_iteration,
        check_stats,
        check_delete,
        check_delete_scope,
        check_unstorable_batch_changes_nothing,
        check_graph_level_replace_and_drop,
        check_hostile_values,
        check_hostile_bindings,
        check_query_forms,
        check_query_restricted_to_scope,
        check_named_queries,
        check_query_errors,
        check_graph_families,
        check_backup_round_trip,
        check_query_dataset,
        check_closed_store_refuses_use,
    )
)


def run_contract(open_empty: Callable[[], WorkflowStore]) -> dict[str, str]:
    """Run every check, each on a fresh empty store, and return the failures.

    Args:
        open_empty: Returns an empty store of the backend under test; called once per check.
            Stores it returns are closed after their check.

    Returns:
        ``{check name: failure message}``, empty when the backend passes.
    """
    failures: dict[str, str] = {}
    for check in CHECKS:
        store = open_empty()
        try:
            check(store)
        except ContractFailure as exc:
            failures[check.name] = str(exc)
        except Exception as exc:  # noqa: BLE001 - an unexpected error is a failure of the check
            failures[check.name] = f"{type(exc).__name__}: {exc}"
        finally:
            store.close()
    return failures
