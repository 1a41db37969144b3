"""RDF vocabulary of the provenance layer: namespaces, terms and resource IRIs.

The project owns two namespaces, both described by ``provenance/ontology.ttl``:

* ``wf:`` (``https://w3id.org/em-plugin/ns#``) - project classes and properties (order, nesting,
  tools, scope, suggestions ...);
* ``pl:`` (``https://w3id.org/em-plugin/provlake#``) - the ProvLake class names. ProvLake publishes
  class names but no ontology IRI, so the project mints its own and declares each class under its
  PROV-O class (``docs/provenance-mapping.md``).

Resources live under ``https://w3id.org/em-plugin/id/``, one folder per kind::

    id/workflow/{id}            the saved workflow (a prov:Plan); its parts are fragments of it:
    id/workflow/{id}#run        the chat session that produced it (a prov:Activity)
    id/workflow/{id}#step-0.1   plan step at model path "0.1" (see Workflow.walk)
    id/workflow/{id}#exec-0.1   the execution of that step; failed calls exec-f{i}, revised
                                instructions exec-r{i}; values exec-...-arg-{n}, -output, -text
    id/graph/{id}               the named graph holding that workflow (default scope)
    id/graph/{scope}/{id}       the named graph holding that workflow (any other scope)
    id/changes/{scope}/{entry}  one entry of the scope's change log (see the stores)
    id/tool/{name}  id/agent/{name}  id/scope/{scope}
    id/suggestion/{session}/{time}   a suggestion activity (see suggestion_record.py)
    id/suggestions/{session}         the named graph of a session's suggestion activities
    id/suggestions/{scope}/{session} the same, for a session of a scope other than the default
    id/lifecycle/{scope}/...         versions, retirements, procedures (see lifecycle.py)

Graphs made by the mapping also bind ``this:`` to the workflow's own ``#`` namespace.

Ids are percent-encoded as one path segment (every character outside ``A-Za-z0-9-._~`` is
escaped, and so are the dot segments ``.`` and ``..``), so workflow ids such as
``tau2/telecom/[x]|y`` give valid IRIs and :func:`decode_segment` gives the id back.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import quote, unquote

from rdflib import Graph, Namespace, URIRef
from rdflib.namespace import DCTERMS, PROV, RDF, RDFS, XSD, DefinedNamespace

from provenance.model import DEFAULT_SCOPE

__all__ = [
    "BASE",
    "DCTERMS",
    "ID",
    "PL",
    "PL_NS",
    "PPLAN",
    "PPLAN_NS",
    "PREFIXES",
    "PROV",
    "RDF",
    "RDFS",
    "WF",
    "WF_NS",
    "XSD",
    "agent_iri",
    "bind_prefixes",
    "changes_graph_iri",
    "decode_segment",
    "encode_segment",
    "graph_iri",
    "scope_iri",
    "tool_iri",
    "workflow_iri",
]

WF_NS = "https://w3id.org/em-plugin/ns#"
PL_NS = "https://w3id.org/em-plugin/provlake#"
PPLAN_NS = "http://purl.org/net/p-plan#"
BASE = "https://w3id.org/em-plugin/id/"
ID = Namespace(BASE)


class WF(DefinedNamespace):
    """Project classes and properties (``wf:``); a typo raises ``AttributeError``."""

    _NS = Namespace(WF_NS)
    _fail = True

    # Classes
    InstructionStep: URIRef  # plan step: a user instruction
    FunctionCallStep: URIRef  # plan step: a tool call
    ChatSession: URIRef  # the session that produced a workflow
    InstructionExecution: URIRef  # the run of an instruction
    FunctionCall: URIRef  # the run of a tool call
    FailedCall: URIRef  # a tool call that failed (run only, no plan step)
    RevisedInstruction: URIRef  # an instruction a later one revised (run only)
    Instruction: URIRef  # the instruction text, as an entity
    Tool: URIRef
    Suggestion: URIRef  # the activity of suggesting next steps
    SuggestedStep: URIRef  # one suggested next step
    CrewDescription: URIRef  # what fallback suggestions derive from
    # Object properties
    tool: URIRef
    nextCall: URIRef
    inScope: URIRef
    # Datatype properties
    index: URIRef
    seq: URIRef
    depth: URIRef
    toolName: URIRef
    agentName: URIRef
    scope: URIRef
    sessionId: URIRef
    framework: URIRef
    crew: URIRef
    split: URIRef
    instructionText: URIRef
    argName: URIRef
    error: URIRef
    outcome: URIRef  # "success" | "failure" | "abandoned" on a run or a call
    parentPath: URIRef
    stepId: URIRef
    revisionOf: URIRef
    extra: URIRef
    createdText: URIRef
    startedText: URIRef
    endedText: URIRef
    rank: URIRef
    score: URIRef
    suggestedText: URIRef
    suggestedTool: URIRef
    suggestionSource: URIRef
    acceptance: URIRef  # what became of a suggestion: taken, accepted, dismissed, not-taken
    takenRank: URIRef  # the rank of a round's suggestion that was taken or accepted
    contextTools: URIRef  # a judged round's context: its workflow's last leaves' tools (JSON)
    nextTool: URIRef  # the tool a judged round's next turn called first, suggested or not
    # Lifecycle records (provenance/lifecycle.py): versions, retirement, procedures
    LifecycleRecord: URIRef
    Procedure: URIRef
    Revision: URIRef
    Retirement: URIRef
    Restoration: URIRef
    ProcedureMining: URIRef
    ProcedureAcceptance: URIRef
    ProcedureRetirement: URIRef
    status: URIRef
    reason: URIRef
    version: URIRef
    archivedVersion: URIRef
    leafCount: URIRef
    savedAt: URIRef
    toolSequence: URIRef
    support: URIRef
    uses: URIRef
    successes: URIRef
    successRate: URIRef


class PL(DefinedNamespace):
    """ProvLake class names in the project's namespace (``pl:``)."""

    _NS = Namespace(PL_NS)
    _fail = True

    Workflow: URIRef
    DataTransformation: URIRef
    Attribute: URIRef
    WorkflowExecution: URIRef
    DataTransformationExecution: URIRef
    AttributeValue: URIRef
    status: URIRef  # "FINISHED" | "ERRORED" (ProvLake client status strings)


class PPLAN(DefinedNamespace):
    """The P-Plan terms the mapping uses (``http://purl.org/net/p-plan#``)."""

    _NS = Namespace(PPLAN_NS)
    _fail = True

    Plan: URIRef
    Step: URIRef
    Variable: URIRef
    isStepOfPlan: URIRef
    isPrecededBy: URIRef
    correspondsToStep: URIRef


#: Prefixes bound on every graph the layer produces. One prefix per IRI folder keeps Turtle
#: readable and lets the ``prov`` package turn every IRI into a QName (docs/provenance-mapping.md).
PREFIXES: dict[str, str] = {
    "prov": str(PROV),
    "p-plan": PPLAN_NS,
    "dcterms": str(DCTERMS),
    "pl": PL_NS,
    "wf": WF_NS,
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
    "workflow": f"{BASE}workflow/",
    "graph": f"{BASE}graph/",
    "tool": f"{BASE}tool/",
    "agent": f"{BASE}agent/",
    "scope": f"{BASE}scope/",
    "suggestion": f"{BASE}suggestion/",
    "suggestions": f"{BASE}suggestions/",
    "lifecycle": f"{BASE}lifecycle/",
}


def encode_segment(value: str) -> str:
    """Percent-encode a string as one IRI path segment (reversible with :func:`decode_segment`)."""
    if value in (".", ".."):
        # Dot segments would be collapsed by IRI normalisation; escape them.
        return value.replace(".", "%2E")
    return quote(value, safe="")


def decode_segment(segment: str) -> str:
    """Return the string that :func:`encode_segment` encoded."""
    return unquote(segment, errors="strict")


def workflow_iri(workflow_id: str) -> URIRef:
    """Return the IRI of a workflow (its plan node)."""
    return URIRef(f"{BASE}workflow/{encode_segment(workflow_id)}")


def graph_iri(workflow_id: str, scope: str = DEFAULT_SCOPE) -> URIRef:
    """Return the IRI of the named graph that holds a workflow of a scope.

    Ids are per scope: the same id in two scopes names two graphs. The default scope keeps the
    short form ``graph/{id}``; any other scope is a path segment before the id,
    ``graph/{scope}/{id}`` (both segments percent-encoded, so the two forms never collide).

    Args:
        workflow_id: The workflow's id.
        scope: The workflow's scope.

    Returns:
        The graph IRI.
    """
    if scope == DEFAULT_SCOPE:
        return URIRef(f"{BASE}graph/{encode_segment(workflow_id)}")
    return URIRef(f"{BASE}graph/{encode_segment(scope)}/{encode_segment(workflow_id)}")


def changes_graph_iri(scope: str, entry: str | None = None) -> URIRef:
    """Return the IRI of the named graph holding one entry of a scope's change log.

    Args:
        scope: The scope.
        entry: The entry's local name (sequence and token, see the stores' change logs);
            ``None`` gives the IRI the scope's entries start with, ``changes/{scope}``.

    Returns:
        The graph IRI.
    """
    folder = f"{BASE}changes/{encode_segment(scope)}"
    return URIRef(folder if entry is None else f"{folder}/{encode_segment(entry)}")


@lru_cache(maxsize=4096)
def tool_iri(name: str) -> URIRef:
    """Return the IRI of a tool."""
    return URIRef(f"{BASE}tool/{encode_segment(name)}")


@lru_cache(maxsize=4096)
def agent_iri(name: str) -> URIRef:
    """Return the IRI of an agent."""
    return URIRef(f"{BASE}agent/{encode_segment(name)}")


@lru_cache(maxsize=4096)
def scope_iri(scope: str) -> URIRef:
    """Return the IRI of a scope."""
    return URIRef(f"{BASE}scope/{encode_segment(scope)}")


def bind_prefixes(graph: Graph) -> Graph:
    """Bind the layer's prefixes on ``graph`` and return it."""
    for prefix, namespace in PREFIXES.items():
        graph.bind(prefix, namespace, override=True, replace=True)
    return graph
