"""Map a :class:`~provenance.model.Workflow` to W3C PROV RDF and back, losslessly.

The mapping is specified in ``docs/provenance-mapping.md``. One workflow becomes one graph with
two parts:

* the **plan** (prospective): the workflow node ``pl:Workflow`` and one ``wf:InstructionStep`` or
  ``wf:FunctionCallStep`` per step of the tree, with ``p-plan:isStepOfPlan``, ``wf:seq``
  (1-based global pre-order) and ``wf:depth`` (together they give the tree), ``wf:tool`` and
  ``wf:nextCall`` between consecutive call leaves (what "tool X followed by tool Y" queries
  use);
* the **run** (retrospective): the chat session ``wf:ChatSession`` and one
  ``wf:InstructionExecution`` or ``wf:FunctionCall`` per step (``p-plan:correspondsToStep``),
  nested by ``dcterms:isPartOf`` and ordered by ``wf:index``, with the instruction text,
  arguments (ordered by the ``-arg-{n}`` of their IRI) and output as entities carrying
  ``prov:value``. Each execution made by an agent has
  a ``prov:qualifiedAssociation`` with ``prov:agent`` and ``prov:hadPlan`` (the workflow: the
  plan the agent followed; the step it carried out is its ``p-plan:correspondsToStep``), and
  the ``prov:wasAssociatedWith`` shortcut beside it: the user (``#user``, a ``prov:Person``) for
  instructions, the named agent for calls; sub-agents ``prov:actedOnBehalfOf`` the agent they
  were handed off by. Failed calls and revised instructions exist only here. Outcomes are
  ``wf:outcome`` on the run and on calls.

Every node carries its most specific project class, its PROV-O classes (``prov:Activity``,
``prov:Entity``, ``prov:Plan``, ``prov:Agent``, ``prov:Association``) and its P-Plan class
(``p-plan:Plan`` on the workflow, ``p-plan:Step`` on plan steps, which are not ``prov:Plan``s:
docs/provenance-mapping.md, "Plans and steps"), so standard PROV-O and P-Plan queries answer on
stores without a reasoner; the ProvLake superclasses are left to the ontology, and
:func:`entail_types` adds them for exports. No inverse links are written.
:func:`graph_to_workflow` reads the run back. IRIs are deterministic (:mod:`provenance.vocab`),
so mapping a workflow twice gives the same triples, and values are compact JSON literals
(``rdf:JSON``), so floats, nesting and unicode survive.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from rdflib import Graph, Literal, URIRef
from rdflib.plugins.stores.memory import Memory
from rdflib.term import Node

from provenance._graph_reader import WORKFLOW_TEXT, graph_to_workflow, triples_to_workflow
from provenance.errors import MappingError
from provenance.json_text import json_text
from provenance.model import (
    DEFAULT_SCOPE,
    CallStep,
    FailedCall,
    InstructionStep,
    Step,
    Workflow,
    walk_steps,
)
from provenance.vocab import (
    BASE,
    DCTERMS,
    PL,
    PPLAN,
    PREFIXES,
    PROV,
    RDF,
    WF,
    XSD,
    agent_iri,
    decode_segment,
    encode_segment,
    graph_iri,
    tool_iri,
    workflow_iri,
)

__all__ = [
    "IMPLIED_TYPES",
    "Triple",
    "entail_types",
    "graph_iri",
    "graph_to_workflow",
    "scope_and_id_from_graph_iri",
    "triples_to_workflow",
    "workflow_id_from_graph_iri",
    "workflow_iri",
    "workflow_to_graph",
    "workflow_to_triples",
]

Triple = tuple[URIRef, URIRef, Node]

# Terms as plain module constants: DefinedNamespace attribute lookups cost microseconds each,
# and the writer makes a hundred of them per workflow.
_TYPE, _JSON, _DATETIME = RDF.type, RDF.JSON, XSD.dateTime
_IS_PART_OF = DCTERMS.isPartOf
_VALUE, _USED, _GENERATED_BY = PROV.value, PROV.used, PROV.wasGeneratedBy
_INFORMED_BY = PROV.wasInformedBy
_QUALIFIED, _AGENT, _HAD_PLAN = PROV.qualifiedAssociation, PROV.agent, PROV.hadPlan
_STARTED, _ENDED = PROV.startedAtTime, PROV.endedAtTime
_STEP_OF, _CORRESPONDS = PPLAN.isStepOfPlan, PPLAN.correspondsToStep
_INDEX, _SEQ, _DEPTH, _STATUS = WF.index, WF.seq, WF.depth, PL.status
_TOOL, _ARG_NAME, _STEP_ID, _EXTRA = WF.tool, WF.argName, WF.stepId, WF.extra
_INSTRUCTION_STEP, _CALL_STEP = WF.InstructionStep, WF.FunctionCallStep
_INSTRUCTION_EXEC, _CALL_EXEC = WF.InstructionExecution, WF.FunctionCall
_ERRORED = Literal("ERRORED")
# A valid xsd:dateTime (offset within +-14:00) also gets a typed literal for queries and PROV.
# The text as written is always kept in a wf:*Text property, because stores and the `prov`
# package rewrite typed literals (Oxigraph: "+00:00" -> "Z"; prov: "Z" -> "+00:00").
_XSD_TIME = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-](?:(?:0\d|1[0-3]):[0-5]\d|14:00))?"
)
_NAMESPACES = {prefix: URIRef(namespace) for prefix, namespace in PREFIXES.items()}
_PREFIX_OF = {namespace: prefix for prefix, namespace in _NAMESPACES.items()}

#: The classes a lean graph leaves implicit, by the class it writes (the ontology's
#: rdfs:subClassOf closure). :func:`entail_types` adds them.
IMPLIED_TYPES: dict[URIRef, tuple[URIRef, ...]] = {
    PL.Workflow: (PPLAN.Plan, PROV.Plan, PROV.Entity),
    WF.ChatSession: (PL.WorkflowExecution, PROV.Activity),
    _INSTRUCTION_STEP: (PL.DataTransformation, PPLAN.Step, PROV.Entity),
    _CALL_STEP: (PL.DataTransformation, PPLAN.Step, PROV.Entity),
    _INSTRUCTION_EXEC: (PL.DataTransformationExecution, PROV.Activity),
    _CALL_EXEC: (PL.DataTransformationExecution, PROV.Activity),
    WF.FailedCall: (_CALL_EXEC, PL.DataTransformationExecution, PROV.Activity),
    WF.RevisedInstruction: (_INSTRUCTION_EXEC, PL.DataTransformationExecution, PROV.Activity),
    WF.Instruction: (PL.AttributeValue, PROV.Entity),
    PROV.SoftwareAgent: (PROV.Agent,),
    PROV.Person: (PROV.Agent,),
}
#: Classes implied by a property (its rdfs:domain or range in the ontology and PROV-O).
_IMPLIED_BY_SUBJECT: dict[URIRef, tuple[URIRef, ...]] = {
    _ARG_NAME: (PL.AttributeValue, PROV.Entity),
    WF.toolName: (WF.Tool, PROV.Entity),
}
_IMPLIED_BY_OBJECT: dict[URIRef, tuple[URIRef, ...]] = {_QUALIFIED: (PROV.Association,)}


@lru_cache(maxsize=4096)
def _int(value: int) -> Literal:
    return Literal(value)


@lru_cache(maxsize=4096)
def _name(value: str) -> Literal:
    # Tool, agent and argument names repeat across steps and workflows.
    return Literal(value)


def _json(value: Any) -> Literal:
    return Literal(json_text(value), datatype=_JSON)


def workflow_to_graph(workflow: Workflow) -> Graph:
    """Return the PROV graph of a workflow (plan + run), with the layer's prefixes bound.

    For bulk loading into a store, :func:`workflow_to_triples` skips the cost of filling an
    rdflib Graph (most of this function's time).

    Example:
        >>> g = workflow_to_graph(Workflow(id="w1", steps=(CallStep(name="A1"),)))
        >>> graph_to_workflow(g) == Workflow(id="w1", steps=(CallStep(name="A1"),))
        True
    """
    store = _new_store()
    # "this:" abbreviates the workflow's own nodes (fragments of its IRI) in Turtle.
    store.bind("this", URIRef(f"{workflow_iri(workflow.id)}#"))
    graph = Graph(store=store, bind_namespaces="none")
    add = store.add  # Graph.addN re-checks every term; the triples are known to be good
    for triple in workflow_to_triples(workflow):
        add(triple, graph)
    return graph


def _new_store() -> Memory:
    store = Memory()
    try:
        # Memory.bind() costs more per prefix than the triples of a small workflow do, so fill
        # its (private) prefix tables directly; fall back to bind() if rdflib renames them.
        store._Memory__namespace.update(_NAMESPACES)  # type: ignore[attr-defined]
        store._Memory__prefix.update(_PREFIX_OF)  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - depends on the rdflib release
        for prefix, namespace in _NAMESPACES.items():
            store.bind(prefix, namespace)
    return store


def workflow_to_triples(workflow: Workflow) -> list[Triple]:
    """Return the triples of :func:`workflow_to_graph` as a list (for stores: no Graph cost)."""
    return _Writer(workflow).out


def workflow_id_from_graph_iri(iri: str) -> str:
    """Return the workflow id of a graph IRI made by :func:`graph_iri`.

    Both forms are read: ``graph/{id}`` (the default scope) and ``graph/{scope}/{id}``; use
    :func:`scope_and_id_from_graph_iri` for the scope too.

    Raises:
        MappingError: When ``iri`` is not such an IRI.
    """
    return scope_and_id_from_graph_iri(iri)[1]


def scope_and_id_from_graph_iri(iri: str) -> tuple[str, str]:
    """Return ``(scope, workflow id)`` of a graph IRI made by :func:`graph_iri`.

    Raises:
        MappingError: When ``iri`` is not such an IRI.
    """
    prefix = f"{BASE}graph/"
    text = str(iri)
    rest = text[len(prefix) :] if text.startswith(prefix) else ""
    segments = rest.split("/")
    decoded = [_decode_canonical(segment) for segment in segments]
    if (
        len(segments) > 2
        or any(d is None for d in decoded)
        or decoded[0] == DEFAULT_SCOPE
        and len(segments) == 2
    ):
        raise MappingError(
            f"{text} is not a workflow graph IRI; expected {prefix}<encoded id> or "
            f"{prefix}<encoded scope>/<encoded id>"
        )
    if len(decoded) == 1:
        return DEFAULT_SCOPE, str(decoded[0])
    return str(decoded[0]), str(decoded[1])


def _decode_canonical(segment: str) -> str | None:
    """The string a segment encodes, or None when it is empty or not :func:`encode_segment`'s."""
    try:
        value = decode_segment(segment)
    except UnicodeDecodeError:
        return None
    return value if segment and encode_segment(value) == segment else None


def entail_types(graph: Graph) -> Graph:
    """Add to ``graph`` the classes a workflow graph leaves implicit, and return it.

    On a graph of this mapping that is the P-Plan and ProvLake superclasses: its PROV-O classes
    are written already, so standard PROV queries answer the same before and after. On a graph
    written by an earlier version it also adds the PROV-O classes (``prov:Entity``,
    ``prov:Activity``, ``prov:Agent``, ``prov:Association``) that PROV tools expect.
    :func:`graph_to_workflow` reads the graph the same with or without them.
    """
    added: list[tuple[Node, URIRef]] = []  # (node, class)
    for s, p, o in graph:
        if p == _TYPE and isinstance(o, URIRef):
            added.extend((s, c) for c in IMPLIED_TYPES.get(o, ()))
        elif isinstance(p, URIRef) and p in _IMPLIED_BY_SUBJECT:
            added.extend((s, c) for c in _IMPLIED_BY_SUBJECT[p])
        elif isinstance(p, URIRef) and p in _IMPLIED_BY_OBJECT:
            added.extend((o, c) for c in _IMPLIED_BY_OBJECT[p])
        elif p == _GENERATED_BY and (o, _TYPE, _CALL_EXEC) in graph:
            added.extend([(s, PL.AttributeValue), (s, PROV.Entity)])
        elif p == _HAD_PLAN:
            added.append((o, PROV.Plan))
    for node, class_ in added:
        graph.add((node, _TYPE, class_))
    return graph


class _Writer:
    """Builds the triple list of one workflow in a single walk of its tree.

    The terms come from the class attributes and factory methods below (rdflib terms here);
    ``provenance/stores/_text_writer.py`` swaps in N-Triples term text for the same walk (what
    stores are written from), so the two outputs cannot drift apart. A new constant term goes
    in the upper-case class attributes, which the text writer converts by name.
    """

    # Constant terms, looked up on the instance so that a subclass can write them as text.
    TYPE: Any = _TYPE
    IS_PART_OF: Any = _IS_PART_OF
    VALUE: Any = _VALUE
    USED: Any = _USED
    GENERATED_BY: Any = _GENERATED_BY
    INFORMED_BY: Any = _INFORMED_BY
    QUALIFIED: Any = _QUALIFIED
    AGENT: Any = _AGENT
    HAD_PLAN: Any = _HAD_PLAN
    STARTED: Any = _STARTED
    ENDED: Any = _ENDED
    STEP_OF: Any = _STEP_OF
    CORRESPONDS: Any = _CORRESPONDS
    INDEX: Any = _INDEX
    SEQ: Any = _SEQ
    DEPTH: Any = _DEPTH
    STATUS: Any = _STATUS
    TOOL: Any = _TOOL
    ARG_NAME: Any = _ARG_NAME
    STEP_ID: Any = _STEP_ID
    EXTRA: Any = _EXTRA
    INSTRUCTION_STEP: Any = _INSTRUCTION_STEP
    CALL_STEP: Any = _CALL_STEP
    INSTRUCTION_EXEC: Any = _INSTRUCTION_EXEC
    CALL_EXEC: Any = _CALL_EXEC
    ERRORED: Any = _ERRORED
    WORKFLOW: Any = PL.Workflow
    IDENTIFIER: Any = DCTERMS.identifier
    SCOPE: Any = WF.scope
    CREATED: Any = DCTERMS.created
    CREATED_TEXT: Any = WF.createdText
    CHAT_SESSION: Any = WF.ChatSession
    REVISED_INSTRUCTION: Any = WF.RevisedInstruction
    INSTRUCTION_TEXT: Any = WF.instructionText
    INSTRUCTION: Any = WF.Instruction
    REVISION_OF: Any = WF.revisionOf
    STARTED_TEXT: Any = WF.startedText
    ENDED_TEXT: Any = WF.endedText
    FAILED_CALL: Any = WF.FailedCall
    ERROR: Any = WF.error
    OUTCOME: Any = WF.outcome
    PARENT_PATH: Any = WF.parentPath
    NEXT_CALL: Any = WF.nextCall
    TOOL_NAME: Any = WF.toolName
    PERSON: Any = PROV.Person
    SOFTWARE_AGENT: Any = PROV.SoftwareAgent
    AGENT_NAME: Any = WF.agentName
    ACTED_FOR: Any = PROV.actedOnBehalfOf
    REVISION_OF_ENTITY: Any = PROV.wasRevisionOf
    # PROV-O classes and the association shortcut, written so that standard PROV queries
    # answer without a reasoner (docs/provenance-mapping.md, "PROV-O types").
    ENTITY: Any = PROV.Entity
    ACTIVITY: Any = PROV.Activity
    AGENT_CLASS: Any = PROV.Agent
    PLAN: Any = PROV.Plan
    # P-Plan's classes of the plan, written for the same reason.
    PPLAN_PLAN: Any = PPLAN.Plan
    PPLAN_STEP: Any = PPLAN.Step
    ASSOCIATION: Any = PROV.Association
    ASSOCIATED: Any = PROV.wasAssociatedWith
    WORKFLOW_TEXT: tuple[tuple[str, Any], ...] = WORKFLOW_TEXT

    def __init__(self, workflow: Workflow) -> None:
        self.out: list[tuple[Any, Any, Any]] = []
        iri = workflow_iri(workflow.id)
        self.frag = f"{iri}#"
        self.wf = self.iri(str(iri))
        self.run = self.iri(self.frag + "run")
        self.user = self.iri(self.frag + "user")
        self.has_user = False
        self.seq = 0
        self.leaf_calls: list[Any] = []
        self.tools: set[str] = set()
        self.agents: set[str] = set()
        self.delegations: set[tuple[str, str]] = set()
        # Instruction id -> text entity, for prov:wasRevisionOf. Revised instructions are looked
        # up first: a revision points at a superseded instruction.
        self.texts: dict[str, Any] = {}
        self.revised_texts: dict[str, Any] = {}
        self.revisions: list[tuple[Any, str]] = []
        self.main_agents: dict[str, str | None] = {}  # main step path -> agent acting there
        self._workflow(workflow)

    # -- term factories (overridden by _TextWriter) -------------------------------------------

    @staticmethod
    def iri(text: str) -> Any:
        """A node of this workflow (its IRI is built from encoded segments, so it is valid)."""
        return URIRef(text)

    @staticmethod
    def literal(value: str) -> Any:
        return Literal(value)

    @staticmethod
    def name(value: str) -> Any:
        return _name(value)

    @staticmethod
    def integer(value: int) -> Any:
        return _int(value)

    @staticmethod
    def json(value: Any) -> Any:
        return _json(value)

    @staticmethod
    def datetime(value: str) -> Any:
        return Literal(value, datatype=_DATETIME)

    @staticmethod
    def tool(name: str) -> Any:
        return tool_iri(name)

    @staticmethod
    def agent(name: str) -> Any:
        return agent_iri(name)

    # -- the walk -----------------------------------------------------------------------------

    def _workflow(self, w: Workflow) -> None:
        add, wf, run = self.out.append, self.wf, self.run
        add((wf, self.TYPE, self.WORKFLOW))
        add((wf, self.TYPE, self.PPLAN_PLAN))
        add((wf, self.TYPE, self.PLAN))
        add((wf, self.TYPE, self.ENTITY))
        add((wf, self.IDENTIFIER, self.literal(w.id)))
        add((wf, self.SCOPE, self.name(w.scope)))
        add((wf, self.GENERATED_BY, run))
        for name, predicate in self.WORKFLOW_TEXT:
            value = getattr(w, name)
            if value is not None:
                add((wf, predicate, self.literal(value)))
        self._time(wf, w.created, self.CREATED, self.CREATED_TEXT)
        if w.extra:
            add((wf, self.EXTRA, self.json(dict(w.extra))))
        add((run, self.TYPE, self.CHAT_SESSION))
        add((run, self.TYPE, self.ACTIVITY))
        if w.outcome is not None:
            add((run, self.OUTCOME, self.name(w.outcome)))
        self._steps(w.steps, run, plan=True)
        for i, failed in enumerate(w.failed):
            self._failed(i, failed)
        for i, revised in enumerate(w.revised):
            stem = f"{self.frag}exec-r{i}"
            root = self.iri(stem)
            self._exec(revised, root, stem, run, i + 1, None, None, None, self.revised_texts)
            add((root, self.TYPE, self.REVISED_INSTRUCTION))
            self._steps(revised.steps, root, prefix=f"r{i}.")
        self._links()

    def _steps(
        self,
        steps: tuple[Step, ...],
        root: Any,
        *,
        plan: bool = False,
        prefix: str = "",
        agent: str | None = None,
    ) -> None:
        """Write a step tree under ``root``: executions, and plan steps with ``plan``.

        ``prefix`` starts every path; ``agent`` acts at the root (a failed call's own agent).
        """
        # By path: the execution and the agent acting there; by parent path: its latest child.
        execs: dict[str, Any] = {}
        agents: dict[str, str | None] = {}
        latest: dict[str, Any] = {}
        for path, step in walk_steps(steps, prefix=prefix):
            parent, _, position = path.rpartition(".")
            exe_text = f"{self.frag}exec-{path}"
            exe = self.iri(exe_text)
            parent_agent = agents.get(parent, agent)
            agents[path] = step.agent if isinstance(step, CallStep) else parent_agent
            node = None
            if plan:
                node = self._plan_step(step, path, path.count("."))
                self.out.append((exe, self.CORRESPONDS, node))
                self.main_agents[path] = agents[path]
            previous = latest.get(parent)
            index = int(position) + 1
            parent_exe = execs.get(parent, root)
            self._exec(
                step, exe, exe_text, parent_exe, index, previous, parent_agent, node, self.texts
            )
            execs[path] = exe
            latest[parent] = exe

    def _plan_step(self, step: Step, path: str, depth: int) -> Any:
        # No link to the parent step: wf:seq (pre-order) and wf:depth determine the plan tree,
        # and the executions carry the nesting (dcterms:isPartOf).
        node = self.iri(f"{self.frag}step-{path}")
        self.seq += 1
        out = self.out
        out += (
            (node, self.STEP_OF, self.wf),
            (node, self.SEQ, self.integer(self.seq)),
            (node, self.DEPTH, self.integer(depth)),
            # A step is not a prov:Plan: P-Plan keeps p-plan:Step apart from p-plan:Plan
            # (docs/provenance-mapping.md, "Plans and steps").
            (node, self.TYPE, self.PPLAN_STEP),
            (node, self.TYPE, self.ENTITY),
        )
        if isinstance(step, InstructionStep):
            out.append((node, self.TYPE, self.INSTRUCTION_STEP))
            out.append((node, self.INSTRUCTION_TEXT, self.literal(step.text)))
        else:
            out.append((node, self.TYPE, self.CALL_STEP))
            out.append((node, self.TOOL, self.tool(step.name)))
            if not step.steps:
                self.leaf_calls.append(node)
        return node

    def _exec(
        self,
        step: Step,
        exe: Any,
        stem: str,
        parent: Any,
        index: int,
        previous: Any,
        parent_agent: str | None,
        plan: Any,
        texts: dict[str, Any],
    ) -> None:
        # stem: the execution's IRI as a string, the stem of its entities' IRIs.
        self.out += (
            (exe, self.TYPE, self.ACTIVITY),
            (exe, self.IS_PART_OF, parent),
            (exe, self.INDEX, self.integer(index)),
        )
        if previous is not None:
            self.out.append((exe, self.INFORMED_BY, previous))
        if step.id is not None:
            self.out.append((exe, self.STEP_ID, self.literal(step.id)))
        if step.extra:
            self.out.append((exe, self.EXTRA, self.json(dict(step.extra))))
        if isinstance(step, InstructionStep):
            self._instruction(step, exe, stem, texts)
        else:
            self._call(step, exe, stem, parent_agent, plan)

    def _associate(self, exe: Any, stem: str, agent: Any) -> None:
        association = self.iri(f"{stem}-assoc")
        # Each activity has one association, qualified, and its shortcut beside it: the `prov`
        # package binds agents correctly when every association of an activity is qualified.
        # The plan the agent followed is the workflow, for failed calls and revised
        # instructions too; the step an execution carried out is its p-plan:correspondsToStep.
        self.out += (
            (exe, self.ASSOCIATED, agent),
            (exe, self.QUALIFIED, association),
            (association, self.TYPE, self.ASSOCIATION),
            (association, self.AGENT, agent),
            (association, self.HAD_PLAN, self.wf),
        )

    def _instruction(
        self, step: InstructionStep, exe: Any, stem: str, texts: dict[str, Any]
    ) -> None:
        text = self.iri(f"{stem}-text")
        self.out += (
            (exe, self.TYPE, self.INSTRUCTION_EXEC),
            (text, self.TYPE, self.INSTRUCTION),
            (text, self.TYPE, self.ENTITY),
            (text, self.VALUE, self.literal(step.text)),
            (exe, self.USED, text),
        )
        # The user gave the instruction: the user is the agent of its execution.
        self.has_user = True
        self._associate(exe, stem, self.user)
        if step.id is not None:
            texts.setdefault(step.id, text)
        if step.revision_of is not None:
            self.out.append((exe, self.REVISION_OF, self.literal(step.revision_of)))
            self.revisions.append((text, step.revision_of))
        self._time(exe, step.timestamp, self.STARTED, self.STARTED_TEXT)

    def _call(
        self, step: CallStep, exe: Any, stem: str, parent_agent: str | None, plan: Any
    ) -> None:
        add = self.out.append
        add((exe, self.TYPE, self.CALL_EXEC))
        if plan is None:
            # Failed calls and revised subtrees have no plan step to carry the tool.
            add((exe, self.TOOL, self.tool(step.name)))
        self.tools.add(step.name)
        if step.agent is not None:
            self._associate(exe, stem, self.agent(step.agent))
            self.agents.add(step.agent)
            if parent_agent is not None and parent_agent != step.agent:
                self.delegations.add((step.agent, parent_agent))
        for n, (name, value) in enumerate(step.args.items()):
            arg = self.iri(f"{stem}-arg-{n}")
            # Argument order is the n in the IRI: a wf:index would cost a quad per argument.
            self.out += (
                (arg, self.TYPE, self.ENTITY),
                (arg, self.ARG_NAME, self.name(name)),
                (arg, self.VALUE, self.json(value)),
                (exe, self.USED, arg),
            )
        if step.output is not None:
            out = self.iri(f"{stem}-output")
            add((out, self.TYPE, self.ENTITY))
            add((out, self.VALUE, self.json(step.output)))
            add((out, self.GENERATED_BY, exe))
        if step.outcome is not None:
            add((exe, self.OUTCOME, self.name(step.outcome)))
        self._time(exe, step.started, self.STARTED, self.STARTED_TEXT)
        self._time(exe, step.ended, self.ENDED, self.ENDED_TEXT)

    def _failed(self, i: int, failed: FailedCall) -> None:
        stem = f"{self.frag}exec-f{i}"
        root = self.iri(stem)
        parent, parent_agent = self.run, None
        if failed.parent is not None and failed.parent in self.main_agents:
            parent = self.iri(f"{self.frag}exec-{failed.parent}")
            parent_agent = self.main_agents[failed.parent]
        self._exec(failed.call, root, stem, parent, i + 1, None, parent_agent, None, self.texts)
        self.out += (
            (root, self.TYPE, self.FAILED_CALL),
            (root, self.STATUS, self.ERRORED),
            (root, self.ERROR, self.literal(failed.error)),
        )
        if failed.parent is not None:
            self.out.append((root, self.PARENT_PATH, self.literal(failed.parent)))
        self._steps(failed.call.steps, root, prefix=f"f{i}.", agent=failed.call.agent)

    def _links(self) -> None:
        """Write what needs the whole tree: next-call chain, tools, agents, revisions."""
        add, calls = self.out.append, self.leaf_calls
        self.out.extend([(a, self.NEXT_CALL, b) for a, b in zip(calls, calls[1:], strict=False)])
        for name in sorted(self.tools):
            tool = self.tool(name)
            add((tool, self.TYPE, self.ENTITY))
            add((tool, self.TOOL_NAME, self.name(name)))
        if self.has_user:
            add((self.user, self.TYPE, self.PERSON))
            add((self.user, self.TYPE, self.AGENT_CLASS))
        for name in sorted(self.agents):
            agent = self.agent(name)
            add((agent, self.TYPE, self.SOFTWARE_AGENT))
            add((agent, self.TYPE, self.AGENT_CLASS))
            add((agent, self.AGENT_NAME, self.name(name)))
        for sub, coordinator in sorted(self.delegations):
            # Both are agents of calls in this workflow, so both nodes are typed above.
            add((self.agent(sub), self.ACTED_FOR, self.agent(coordinator)))
        for text, target_id in self.revisions:
            target = self.revised_texts.get(target_id) or self.texts.get(target_id)
            if target is not None and target != text:
                add((text, self.REVISION_OF_ENTITY, target))

    def _time(self, node: Any, value: str | None, typed: Any, text: Any) -> None:
        if value is None:
            return
        if _XSD_TIME.fullmatch(value):
            self.out.append((node, typed, self.datetime(value)))
        self.out.append((node, text, self.literal(value)))
