"""Export workflows as RDF (Turtle, TriG, JSON-LD) or W3C PROV (PROV-JSON, PROV-N).

RDF formats are written by rdflib; PROV-JSON and PROV-N by the ``prov`` package, which reads our
RDF through its PROV-O parser. Exports meet that parser's three conditions
(``docs/provenance-mapping.md``, "Exports"): every node is typed with a PROV class (as stored;
:func:`~provenance.mapping.entail_types` adds the P-Plan and ProvLake superclasses, and the PROV
classes of graphs written by earlier versions), every association is qualified (one per
activity, beside its ``prov:wasAssociatedWith`` shortcut), and every IRI falls under a bound
prefix.

In TriG and JSON-LD every workflow is its own named graph, and in PROV-JSON / PROV-N its own
bundle, both named by :func:`~provenance.vocab.graph_iri` (id and scope), so a re-import can
split them again. :func:`store_items` adds a store's lifecycle records (versions, retirements,
procedures: :mod:`provenance.lifecycle`), each in its own graph under its record's IRI, so an
export of a store holds the same PROV as the store's query dataset
(``provenance/stores/union.py``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rdflib import BNode, Dataset, Graph, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
from rdflib.namespace import NamespaceManager

from provenance.errors import MappingError, ProvenanceError
from provenance.lifecycle import is_lifecycle_graph
from provenance.mapping import entail_types, graph_to_workflow, workflow_to_graph
from provenance.model import DEFAULT_SCOPE, Workflow
from provenance.vocab import DCTERMS, PL, RDF, WF, bind_prefixes, graph_iri

if TYPE_CHECKING:  # prov is imported when a PROV format is used: most callers never need it
    from prov.model import ProvDocument

    from provenance.stores import WorkflowStore

__all__ = [
    "FORMATS",
    "STORE_FORMATS",
    "export",
    "export_store",
    "provjson_to_dataset",
    "provjson_to_graph",
    "provjson_to_workflows",
    "store_items",
    "to_dataset",
    "to_prov_document",
]

#: The formats :func:`export` writes.
FORMATS: tuple[str, ...] = ("ttl", "trig", "jsonld", "provjson", "provn")
#: The formats :func:`export_store` writes: Workflow JSON lines, :data:`FORMATS`, a backup.
STORE_FORMATS: tuple[str, ...] = ("jsonl", *FORMATS, "nq")
_RDFLIB_FORMATS = {"ttl": "turtle", "trig": "trig", "jsonld": "json-ld"}

Exportable = Workflow | Graph


def export(items: Exportable | Iterable[Exportable], format: str) -> str:
    """Serialize workflows (or their graphs) in one of :data:`FORMATS`.

    Args:
        items: A workflow, a workflow graph (from ``workflow_to_graph`` or a store), or an
            iterable of them.
        format: ``ttl``, ``trig`` (a named graph per workflow), ``jsonld``, ``provjson`` or
            ``provn`` (a PROV bundle per workflow).

    Returns:
        The serialized text.

    Raises:
        ProvenanceError: For an unknown format; the message lists the valid ones.
        MappingError: When a graph does not name its workflow.

    Example:
        >>> text = export([workflow], "provjson")
        >>> provjson_to_workflows(text) == [workflow]
        True
    """
    if format not in FORMATS:
        raise ProvenanceError(f"unknown export format {format!r}; valid: {', '.join(FORMATS)}")
    dataset = to_dataset(items)
    if format == "ttl":
        merged = bind_prefixes(Graph(bind_namespaces="none"))
        for graph in dataset.graphs():
            merged += graph
        return merged.serialize(format="turtle")
    if format in _RDFLIB_FORMATS:
        with warnings.catch_warnings():
            # rdflib's own TriG / JSON-LD writers call its deprecated Dataset.contexts().
            warnings.simplefilter("ignore", DeprecationWarning)
            return dataset.serialize(format=_RDFLIB_FORMATS[format])
    document = to_prov_document(dataset)
    text = document.serialize(format="json" if format == "provjson" else "provn")
    assert text is not None  # prov returns the text when given no destination
    return text


def store_items(store: WorkflowStore, *, scope: str | None = None) -> list[Exportable]:
    """Return what an export of a store holds: its workflows, then its lifecycle record graphs.

    ``export(store_items(store, scope=s), "trig")`` answers the PROV-O and P-Plan queries of
    docs/provenance-mapping.md as ``store.query`` does on that scope: the same workflow and
    lifecycle graphs, with no other graph.

    Args:
        store: The store to read.
        scope: One scope (``None``: every scope).

    Returns:
        The workflows (older versions ``ID@vN`` and retired ones included), then one graph per
        lifecycle record, named by the record's IRI, in IRI order.
    """
    scopes = store.scopes() if scope is None else [scope]
    items: list[Exportable] = list(store.iter_workflows(scope))
    names = [name for s in scopes for name in store.lifecycle_graphs(s)]
    for name, triples in sorted(store.read_records(names).items()):
        graph = Graph(identifier=name, bind_namespaces="none")
        for triple in triples:
            graph.add(triple)
        items.append(graph)
    return items


def export_store(store: WorkflowStore, *, format: str, scope: str | None = None) -> str:
    """Serialize a store (one scope, or all) in one of :data:`STORE_FORMATS`.

    ``jsonl`` gives back Workflow JSON lines (what ``em-plugin import`` reads); the RDF and PROV
    formats hold what an ad-hoc query's default graph merges, the workflows and the lifecycle
    records (:func:`store_items`), so the export answers PROV-O and P-Plan queries as the live
    store does; ``nq`` is a full backup (:func:`provenance.stores.backup.backup_text`).

    Args:
        store: The store.
        format: One of :data:`STORE_FORMATS`.
        scope: Only this scope (default: every scope).

    Returns:
        The text (for ``jsonl``, one line per workflow, each ending with a newline).

    Raises:
        ProvenanceError: For an unknown format (the message lists the valid ones).
    """
    if format == "nq":  # a full backup: every family the store backs up (docs/sparql.md)
        from provenance.stores.backup import backup_text

        return backup_text(store, scope)
    if format == "jsonl":
        from provenance.workflow_json import dumps_workflow

        return "".join(dumps_workflow(w) + "\n" for w in store.iter_workflows(scope))
    if format not in FORMATS:
        raise ProvenanceError(
            f"unknown export format {format!r}; valid: {', '.join(STORE_FORMATS)}"
        )
    return export(store_items(store, scope=scope), format)


def to_dataset(items: Exportable | Iterable[Exportable]) -> Dataset:
    """Return a Dataset holding each workflow in its named graph ``graph_iri(id)``.

    A Dataset given as ``items`` contributes each of its non-empty named graphs. Each graph gets
    the classes the stored graph leaves implicit (:func:`~provenance.mapping.entail_types`).

    Raises:
        MappingError: When a graph holds no workflow and has no IRI of its own to be named by.
    """
    if isinstance(items, Dataset):  # e.g. a store's dump: one item per non-empty named graph
        items = [g for g in items.graphs() if g.identifier != DATASET_DEFAULT_GRAPH_ID and len(g)]
    elif isinstance(items, Workflow | Graph):
        items = [items]
    dataset = _new_dataset()
    for number, item in enumerate(items, start=1):
        graph = workflow_to_graph(item) if isinstance(item, Workflow) else item
        name, node = _graph_name(graph)
        target = dataset.graph(name)
        target.addN((s, p, o, target) for s, p, o in graph)
        entail_types(target)
        if node is not None:
            # w1:, w2:, ... abbreviate each workflow's own nodes (fragments of its IRI).
            dataset.bind(f"w{number}", URIRef(f"{node}#"), override=True, replace=True)
    return dataset


def to_prov_document(items: Exportable | Iterable[Exportable] | Dataset) -> ProvDocument:
    """Read workflows into a ``prov`` ProvDocument, one bundle per workflow graph."""
    from prov.model import ProvDocument
    from prov.serializers.provrdf import ProvRDFSerializer

    dataset = items if isinstance(items, Dataset) else to_dataset(items)
    document = ProvDocument()
    with warnings.catch_warnings():
        # prov warns about every triple it cannot convert; a mapped graph has none, and an
        # unexpected one should not break an export.
        warnings.simplefilter("ignore", UserWarning)
        ProvRDFSerializer(document).decode_document(dataset, document)
    return document


def provjson_to_dataset(text: str) -> Dataset:
    """Re-import PROV-JSON through the ``prov`` package: a named graph per bundle.

    Raises:
        ProvenanceError: When the text is not PROV-JSON.
    """
    from prov.model import ProvDocument
    from prov.serializers.provrdf import ProvRDFSerializer

    try:
        json.loads(text)
        document = ProvDocument.deserialize(content=text, format="json")
    except Exception as exc:  # prov raises a variety of errors for malformed input
        raise ProvenanceError(f"not a PROV-JSON document: {exc}") from exc
    encoded = ProvRDFSerializer(document).encode_document(document)
    dataset = _new_dataset()
    for graph in encoded.graphs():
        name = graph.identifier
        is_default = isinstance(name, BNode) or name == DATASET_DEFAULT_GRAPH_ID
        target = dataset.default_graph if is_default else dataset.graph(name)
        target.addN((s, p, o, target) for s, p, o in graph)
    return dataset


def provjson_to_graph(text: str) -> Graph:
    """Re-import PROV-JSON as one graph (all bundles merged).

    For the export of a single workflow, ``graph_to_workflow(provjson_to_graph(text))`` gives
    the workflow back.
    """
    merged = bind_prefixes(Graph(bind_namespaces="none"))
    for graph in provjson_to_dataset(text).graphs():
        merged += graph
    return merged


def provjson_to_workflows(text: str) -> list[Workflow]:
    """Re-import the workflows of a PROV-JSON export, one per bundle, in bundle-name order.

    Bundles of lifecycle records (:func:`store_items`) hold no workflow and are skipped.

    Raises:
        MappingError: When a bundle does not describe a workflow.
    """
    dataset = provjson_to_dataset(text)
    graphs = [
        g
        for g in dataset.graphs()
        if g.identifier != DATASET_DEFAULT_GRAPH_ID
        and len(g)
        and not is_lifecycle_graph(g.identifier)
    ]
    return [graph_to_workflow(g) for g in sorted(graphs, key=lambda g: str(g.identifier))]


def _new_dataset() -> Dataset:
    dataset = Dataset()
    # Only the layer's prefixes: rdflib's ~25 defaults would all end up in PROV-JSON / PROV-N.
    dataset.namespace_manager = NamespaceManager(dataset, bind_namespaces="none")
    bind_prefixes(dataset)
    return dataset


def _graph_name(graph: Graph) -> tuple[URIRef, URIRef | None]:
    """Return the graph's name (``graph_iri(id, scope)``) and its workflow node, if any."""
    workflows = list(graph.subjects(RDF.type, PL.Workflow))
    if len(workflows) == 1:
        identifier = graph.value(workflows[0], DCTERMS.identifier)
        scope = graph.value(workflows[0], WF.scope)
        if identifier is not None:
            name = graph_iri(str(identifier), DEFAULT_SCOPE if scope is None else str(scope))
            return name, workflows[0]  # type: ignore[return-value]
    if isinstance(graph.identifier, URIRef):
        return graph.identifier, None
    raise MappingError(
        f"cannot name the graph of {len(workflows)} workflows: export one workflow graph per "
        "item, or give the graph an IRI identifier"
    )
