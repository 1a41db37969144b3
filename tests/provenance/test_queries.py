"""Named SPARQL queries: headers, loading, rdflib vs pyoxigraph, bindings, counts vs the JSON."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from rdflib import Dataset, Literal, URIRef
from rdflib.term import Node

from provenance import QueryError, Workflow, read_jsonl
from provenance.errors import MappingError
from provenance.mapping import graph_iri, workflow_to_triples
from provenance.queries import NamedQuery, list_queries, load_query, parse_query, query_text
from provenance.suggestion_record import suggestion_graph_iri, suggestion_triples
from provenance.workflow_json import loads_workflow
from tests.data_files import benchmark_file

GOLDEN = {
    path.stem: loads_workflow(json.dumps(json.loads(path.read_text(encoding="utf-8"))))
    for path in sorted((Path(__file__).parent / "golden").glob("*.json"))
}
REQUIRED = {
    "tool-usage",
    "tool-pairs",
    "workflow-steps",
    "workflows-using",
    "lineage",
    "failed-calls",
    "scopes",
    "workflows",
    "suggestion-sources",
}
SUGGESTIONS = [
    {
        "text": "Classify the ingredients as PFAS",
        "tool": "pfas_classifier",
        "score": 0.75,
        "evidence": [{"workflow_id": "session/sess-42", "position": 2}],
    },
    {"text": "Look up regulations", "tool": None, "score": 0.5, "evidence": []},
]
MEMORY = ["session/sess-42", "session/sess-43"]


def _graphs() -> list[tuple[URIRef, list[tuple[Any, Any, Any]]]]:
    workflows = [*GOLDEN.values(), *read_jsonl(benchmark_file("tau2_retail.jsonl"))[:2]]
    graphs = [(graph_iri(w.id), workflow_to_triples(w)) for w in workflows]
    suggestions = suggestion_triples("sess-50", SUGGESTIONS, MEMORY, "2025-06-05T08:00:00Z")
    graphs.append((suggestion_graph_iri("sess-50"), list(suggestions)))
    graphs.extend(_lifecycle_graphs())
    return graphs


def _lifecycle_graphs() -> list[tuple[URIRef, list[tuple[Any, Any, Any]]]]:
    """A revised and retired workflow and an active procedure (provenance/lifecycle.py)."""
    from provenance.lifecycle import (
        LifecycleEvent,
        ProcedureRecord,
        VersionRecord,
        WorkflowRecord,
        procedure_iri,
        procedure_triples,
        workflow_record_iri,
        workflow_record_triples,
    )

    time = "2025-06-05T09:00:00+00:00"
    revision = LifecycleEvent("Revision", time, "user", status="active", token="r1")
    retirement = LifecycleEvent(
        "Retirement", time, "ann", reason="stale", status="retired", token="r2"
    )
    versions = (VersionRecord(1, None, 3), VersionRecord(2, time, 5))
    record = WorkflowRecord("session/sess-42", "default", versions)
    triples = workflow_record_triples(record, (), revision)
    retired = WorkflowRecord(
        "session/sess-42", "default", versions, True, "stale", time, retirement.token
    )
    triples = workflow_record_triples(retired, triples, retirement)
    procedure = ProcedureRecord(
        "p-0123456789ab", "default", ("product_extractor", "pfas_classifier"), "active",
        name="PFAS intake", support=2, uses=2, successes=2, sources=tuple(MEMORY),
    )  # fmt: skip
    mined = LifecycleEvent("ProcedureMining", time, "em-plugin", status="candidate", token="m1")
    accepted = LifecycleEvent("ProcedureAcceptance", time, "ann", status="active", token="a1")
    return [
        (workflow_record_iri("session/sess-42", "default"), triples),
        (
            procedure_iri("p-0123456789ab", "default"),
            procedure_triples(procedure, (), [mined, accepted]),
        ),
    ]


def rdflib_dataset(graphs: list[tuple[URIRef, list[tuple[Any, Any, Any]]]]) -> Dataset:
    dataset = Dataset(default_union=True)
    for name, triples in graphs:
        target = dataset.graph(name)
        target.addN((s, p, o, target) for s, p, o in triples)
    return dataset


def oxigraph_store(graphs: list[tuple[URIRef, list[tuple[Any, Any, Any]]]]) -> ox.Store:
    store = ox.Store()
    store.extend(
        ox.Quad(_to_ox(s), _to_ox(p), _to_ox(o), ox.NamedNode(str(name)))
        for name, triples in graphs
        for s, p, o in triples
    )
    return store


@pytest.fixture(scope="module")
def graphs() -> list[tuple[URIRef, list[tuple[Any, Any, Any]]]]:
    return _graphs()


@pytest.fixture(scope="module")
def dataset(graphs: list[tuple[URIRef, list[tuple[Any, Any, Any]]]]) -> Dataset:
    return rdflib_dataset(graphs)


@pytest.fixture(scope="module")
def store(graphs: list[tuple[URIRef, list[tuple[Any, Any, Any]]]]) -> ox.Store:
    return oxigraph_store(graphs)


def run_oxigraph(store: ox.Store, query: NamedQuery, **values: Any) -> list[dict[str, Any]]:
    substitutions = {ox.Variable(k): _to_ox(v) for k, v in query.bindings(**values).items()}
    result = store.query(query.text, substitutions=substitutions, use_default_graph_as_union=True)
    assert [v.value for v in result.variables] == list(query.columns)  # type: ignore[union-attr]
    return [{c: _norm(row[c]) for c in query.columns} for row in result]  # type: ignore[union-attr]


def run_rdflib(dataset: Dataset, query: NamedQuery, **values: Any) -> list[dict[str, Any]]:
    return [{c: _norm(v) for c, v in row.items()} for row in query.execute(dataset, **values)]


# -- the catalogue -----------------------------------------------------------------------------


def test_catalogue_documents_every_query() -> None:
    queries = list_queries()
    assert REQUIRED <= {q.name for q in queries}
    for query in queries:
        assert query.text.startswith(f"# name: {query.name}\n")
        assert len(query.description) > 30 and query.columns
        assert set(query.parameter_names) <= set(query.columns)
        for parameter in query.parameters:
            assert f"?{parameter.name}" in query.text and parameter.description


def test_load_query_by_name_and_path(tmp_path: Path) -> None:
    query = load_query("tool-pairs")
    assert query.columns == ("tool", "next_tool", "count")
    assert query.parameter_names == ("tool", "next_tool")
    assert query_text("tool-pairs") == query.text
    path = tmp_path / "mine.rq"
    path.write_text(
        "# description: Every workflow id, for a test of loading from a path.\n"
        "# parameters:\n#   id (literal): one id\n# columns: id\n"
        "SELECT ?id WHERE { ?w <http://purl.org/dc/terms/identifier> ?id }\n"
    )
    mine = load_query(path)
    assert (mine.name, mine.columns, mine.parameters[0].kind) == ("mine", ("id",), "literal")
    assert load_query(str(path)).text == mine.text


def test_unknown_query_lists_the_valid_names() -> None:
    with pytest.raises(QueryError, match=r"unknown query 'tool-pair'; valid: .*tool-pairs"):
        load_query("tool-pair")
    with pytest.raises(QueryError, match="cannot read query file"):
        load_query("/nonexistent/x.rq")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("# columns: a\nSELECT ?a {}", "needs '# description:'"),
        ("# description: d\n# parameters:\n#   a: d\n# columns: a\n", "must read 'name"),
        ("# description: d\n# parameters:\n#   b (literal): d\n# columns: a\n", "must also be"),
    ],
)
def test_malformed_headers_are_refused(header: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_query(header)


def test_unknown_parameter_lists_the_valid_ones() -> None:
    with pytest.raises(QueryError, match="has no parameter 'tol'; valid: tool, next_tool"):
        load_query("tool-pairs").bindings(tol="x")


# -- running -----------------------------------------------------------------------------------


@pytest.mark.parametrize("query", list_queries(), ids=lambda q: q.name)
def test_every_query_agrees_on_rdflib_and_oxigraph(
    query: NamedQuery, dataset: Dataset, store: ox.Store
) -> None:
    rows = run_rdflib(dataset, query)
    assert rows, f"{query.name} returned nothing on the test data"
    assert _sorted(rows) == _sorted(run_oxigraph(store, query))
    # Binding a parameter gives exactly the rows that have that value, on both engines.
    for parameter in query.parameters:
        value = next(r[parameter.name] for r in rows if r[parameter.name] is not None)
        term = URIRef(value[1]) if parameter.kind == "iri" else Literal(value)
        expected = _sorted([r for r in rows if r[parameter.name] == value])
        assert _sorted(run_rdflib(dataset, query, **{parameter.name: term})) == expected
        assert _sorted(run_oxigraph(store, query, **{parameter.name: term})) == expected


def test_hostile_binding_values_are_just_values(dataset: Dataset, store: ox.Store) -> None:
    query = load_query("workflows-using")
    hostile = '"; DROP ALL ; SELECT * WHERE { ?s ?p ?o } #'
    assert query.execute(dataset, tool=hostile) == []
    assert run_oxigraph(store, query, tool=hostile) == []


def test_golden_answers(dataset: Dataset) -> None:
    steps = run_rdflib(dataset, load_query("workflow-steps"), workflow="session/sess-42")
    assert [(r["seq"], r["depth"], r["kind"], r["tool"] or r["text"]) for r in steps] == [
        (1.0, 0.0, "instruction", "Extract all ingredients from the SDS file"),
        (2.0, 1.0, "call", "handoff_to_sds_agent"),
        (3.0, 2.0, "call", "product_extractor"),
        (4.0, 0.0, "instruction", "Classify the ingredients as PFAS"),
        (5.0, 1.0, "call", "pfas_classifier"),
    ]
    assert steps[2]["agent"] == "sds_agent" and steps[2]["args"] == 'file="uploads/acme_sds.pdf"'

    (lineage,) = run_rdflib(dataset, load_query("lineage"), tool="product_extractor")
    assert lineage["instruction"] == "Extract all ingredients from the SDS file"
    assert (lineage["agent"], lineage["on_behalf_of"]) == ("sds_agent", "coordinator")
    assert lineage["value"][1].endswith("#exec-0.0.0-output")

    (failed,) = run_rdflib(dataset, load_query("failed-calls"))
    assert (failed["tool"], failed["agent"], failed["on_behalf_of"]) == (
        "pfas_classifier",
        "chem_agent",
        "coordinator",
    )
    assert failed["error"] == "ValueError: invalid SMILES 'PFOA'" and failed["parent"] == "0.0"

    (revision,) = run_rdflib(dataset, load_query("revisions"))
    assert revision["revises"] == "Suggest a recipe with chicken"

    sources = run_rdflib(dataset, load_query("suggestion-sources"), session="sess-50")
    assert sorted((r["rank"], r["workflow"]) for r in sources) == [
        (1.0, "session/sess-42"),
        (2.0, "session/sess-42"),
        (2.0, "session/sess-43"),
    ]


@pytest.mark.parametrize(
    ("suggestions", "time", "message"),
    [
        ([{"text": "x"}], "tomorrow", "not an ISO 8601 timestamp"),
        (["x"], "2025-01-01", "must be a mapping"),
        ([{"text": "x", "evidence": [{"position": 1}]}], "2025-01-01", "'workflow_id' string"),
        ([{"text": "x", "score": float("nan")}], "2025-01-01", "is not JSON"),
    ],
)
def test_bad_suggestion_records_are_refused(suggestions: Any, time: str, message: str) -> None:
    with pytest.raises(MappingError, match=message):
        suggestion_triples("s", suggestions, [], time)


def test_tool_counts_agree_with_the_json() -> None:
    workflows = read_jsonl(benchmark_file("tau2_retail.jsonl"))
    store = oxigraph_store([(graph_iri(w.id), workflow_to_triples(w)) for w in workflows])
    usage = {
        r["tool"]: (r["calls"], r["workflows"])
        for r in run_oxigraph(store, load_query("tool-usage"))
    }
    pairs = {
        (r["tool"], r["next_tool"]): r["count"]
        for r in run_oxigraph(store, load_query("tool-pairs"))
    }
    assert usage == _usage_from_json(workflows)
    assert pairs == _pairs_from_json(workflows)
    assert len(pairs) > 20


def _usage_from_json(workflows: list[Workflow]) -> dict[str, tuple[float, float]]:
    calls: Counter[str] = Counter()
    containing: Counter[str] = Counter()
    for workflow in workflows:
        names = [s.name for _, s in workflow.walk() if s.kind == "call"]  # type: ignore[union-attr]
        calls.update(names)
        containing.update(set(names))
    return {name: (float(calls[name]), float(containing[name])) for name in calls}


def _pairs_from_json(workflows: list[Workflow]) -> dict[tuple[str, str], float]:
    pairs: Counter[tuple[str, str]] = Counter()
    for workflow in workflows:
        leaves = [s.name for s in workflow.leaves() if s.kind == "call"]  # type: ignore[union-attr]
        pairs.update(zip(leaves, leaves[1:], strict=False))
    return {pair: float(n) for pair, n in pairs.items()}


# -- helpers -----------------------------------------------------------------------------------

_NUMERIC = {"integer", "double", "decimal", "float", "int", "long"}


def _norm(term: Node | ox.NamedNode | ox.Literal | None) -> Any:
    """One comparable value per cell, whichever engine produced it."""
    if term is None:
        return None
    if isinstance(term, URIRef | ox.NamedNode):
        return ("iri", str(term) if isinstance(term, URIRef) else term.value)
    if isinstance(term, Literal):
        text, datatype = str(term), str(term.datatype or "")
    else:
        text, datatype = term.value, term.datatype.value
    kind = datatype.rsplit("#", 1)[-1]
    if kind in _NUMERIC:
        return float(text)
    if kind == "dateTime":
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    return text or None  # an empty GROUP_CONCAT is "" in rdflib and unbound in Oxigraph


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _to_ox(term: Any) -> ox.NamedNode | ox.Literal:
    if isinstance(term, URIRef):
        return ox.NamedNode(str(term))
    assert isinstance(term, Literal)
    if term.datatype is not None:
        return ox.Literal(str(term), datatype=ox.NamedNode(str(term.datatype)))
    return ox.Literal(str(term))


def test_per_workflow_queries_match_inside_one_graph() -> None:
    # Tool and agent nodes recur in every workflow's graph; joined over the union default graph
    # each step meets every copy (helpdesk: 4 minutes instead of 0.5 s for tool-usage).
    cross_graph = {"suggestion-sources"}  # joins a session's records with the cited workflows
    for query in list_queries():
        if query.name not in cross_graph:
            assert "GRAPH ?graph {" in query.text, query.name
