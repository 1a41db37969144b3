"""Read a workflow back from its PROV graph (the inverse of :mod:`provenance.mapping`).

Private: use :func:`provenance.mapping.graph_to_workflow`. The reader indexes the triples once
(subject -> predicate -> objects) and rebuilds the workflow from the *run* part of the graph:
executions nested by ``dcterms:isPartOf`` and ordered by ``wf:index``
(``docs/provenance-mapping.md``). It also reads graphs written before the mapping became lean
(``dcterms:hasPart`` links, ``prov:wasAssociatedWith`` agents, the tool on every execution).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rdflib import Graph, Literal, URIRef
from rdflib.term import Node

from provenance.errors import MappingError, WorkflowFormatError
from provenance.model import CallStep, FailedCall, InstructionStep, Step, Workflow
from provenance.vocab import DCTERMS, PL, PPLAN, PROV, RDF, WF

#: Workflow fields stored as plain literals on the workflow node (shared with the writer).
WORKFLOW_TEXT = (
    ("title", DCTERMS.title),
    ("session", WF.sessionId),
    ("framework", WF.framework),
    ("crew", WF.crew),
    ("source", DCTERMS.source),
    ("split", WF.split),
)

# Plain constants: DefinedNamespace attribute lookups are slow in the per-node loops below.
_TYPE, _HAS_PART, _USED, _VALUE = RDF.type, DCTERMS.hasPart, PROV.used, PROV.value
_IS_PART_OF, _CORRESPONDS = DCTERMS.isPartOf, PPLAN.correspondsToStep
_QUALIFIED, _AGENT, _ASSOCIATED = PROV.qualifiedAssociation, PROV.agent, PROV.wasAssociatedWith
_GENERATED_BY, _INDEX, _ARG_NAME = PROV.wasGeneratedBy, WF.index, WF.argName
_STEP_ID, _EXTRA, _TOOL, _TOOL_NAME = WF.stepId, WF.extra, WF.tool, WF.toolName
_OUTCOME = WF.outcome
_STARTED, _ENDED, _STARTED_TEXT, _ENDED_TEXT = (
    PROV.startedAtTime,
    PROV.endedAtTime,
    WF.startedText,
    WF.endedText,
)
_INSTRUCTION_EXEC, _CALL_EXEC, _INSTRUCTION = (
    WF.InstructionExecution,
    WF.FunctionCall,
    WF.Instruction,
)
# Types that mark the roots the reader collects in its first pass.
_ROOT_KINDS: dict[Node, str] = {
    PL.Workflow: "workflows",
    WF.FailedCall: "failed",
    WF.RevisedInstruction: "revised",
}
_PREFIXES = (
    ("wf:", str(WF)),
    ("pl:", str(PL)),
    ("prov:", str(PROV)),
    ("dcterms:", str(DCTERMS)),
    ("p-plan:", str(PPLAN)),
)

Index = dict[Node, dict[Node, list[Node]]]


def graph_to_workflow(graph: Graph) -> Workflow:
    """Read back the workflow that :func:`~provenance.mapping.workflow_to_graph` wrote.

    Args:
        graph: A graph holding exactly one workflow (one named graph of a store).

    Returns:
        The workflow: ``graph_to_workflow(workflow_to_graph(w)) == w``.

    Raises:
        MappingError: When the graph holds no workflow or several, or lacks a node or property
            the workflow needs; the message names the node and the property.
    """
    return triples_to_workflow(graph.triples((None, None, None)))


def triples_to_workflow(triples: Iterable[tuple[Node, Node, Node]]) -> Workflow:
    """Like :func:`graph_to_workflow`, from any iterable of rdflib triples.

    Raises:
        MappingError: As :func:`graph_to_workflow`.
    """
    index: Index = {}
    for s, p, o in triples:
        props = index.get(s)
        if props is None:
            index[s] = {p: [o]}
        else:
            values = props.get(p)
            if values is None:
                props[p] = [o]
            else:
                values.append(o)
    return _Reader(index).workflow()


class _Reader:
    """Rebuilds a Workflow from a subject -> predicate -> objects index."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.generated: dict[Node, Node] = {}  # execution -> its output entity
        self.parts: dict[Node, list[Node]] = {}  # parent -> nodes that are dcterms:isPartOf it
        roots: dict[str, list[Node]] = {"workflows": [], "failed": [], "revised": []}
        for subject, props in index.items():
            for type_ in props.get(_TYPE, ()):
                kind = _ROOT_KINDS.get(type_)  # a dict lookup: one __eq__ at most
                if kind is not None:
                    roots[kind].append(subject)
            for execution in props.get(_GENERATED_BY, ()):
                self.generated[execution] = subject
            for parent in props.get(_IS_PART_OF, ()):
                self.parts.setdefault(parent, []).append(subject)
        self.workflows, self.failed, self.revised = (
            roots["workflows"],
            roots["failed"],
            roots["revised"],
        )
        self.roots = set(self.failed) | set(self.revised)

    def workflow(self) -> Workflow:
        if not self.workflows:
            raise MappingError("the graph describes no workflow: no node is a pl:Workflow")
        if len(self.workflows) > 1:
            ids = sorted(str(self._text(w, DCTERMS.identifier, False)) for w in self.workflows)
            raise MappingError(
                f"the graph describes {len(ids)} workflows ({', '.join(ids)}); "
                "read one named graph at a time"
            )
        wf = self.workflows[0]
        run = self._one(wf, _GENERATED_BY)
        fields = {name: self._text(wf, predicate, False) for name, predicate in WORKFLOW_TEXT}
        extra = self._json(wf, WF.extra, {})
        if not isinstance(extra, dict):
            raise MappingError(f"wf:extra of {wf} must be a JSON object")
        try:
            return Workflow(
                id=self._text(wf, DCTERMS.identifier),
                steps=tuple(self._step(e) for e in self._children(run)),
                scope=self._text(wf, WF.scope),
                created=self._time(wf, DCTERMS.created, WF.createdText),
                outcome=self._text(run, _OUTCOME, False),
                failed=tuple(self._failed(e) for e in self._sorted(self.failed)),
                revised=tuple(self._revised(e) for e in self._sorted(self.revised)),
                extra=extra,
                **fields,
            )
        except WorkflowFormatError as exc:
            raise MappingError(f"the graph describes an invalid workflow: {exc}") from None

    def _step(self, exe: Node) -> Step:
        types = set(self._values(exe, _TYPE))
        steps = tuple(self._step(c) for c in self._children(exe))
        step_id = self._text(exe, _STEP_ID, False)
        extra = self._json(exe, _EXTRA, {})
        if _INSTRUCTION_EXEC in types:
            texts = [e for e in self._values(exe, _USED) if _INSTRUCTION in set(self._types(e))]
            if len(texts) != 1:
                raise MappingError(f"{exe} must use exactly one wf:Instruction, not {len(texts)}")
            return InstructionStep(
                text=self._text(texts[0], _VALUE),
                steps=steps,
                id=step_id,
                revision_of=self._text(exe, WF.revisionOf, False),
                timestamp=self._time(exe, _STARTED, _STARTED_TEXT),
                extra=extra,
            )
        if _CALL_EXEC not in types:
            raise MappingError(f"{exe} is neither a wf:InstructionExecution nor a wf:FunctionCall")
        agent = self._agent(exe)
        output = self.generated.get(exe)
        return CallStep(
            name=self._tool_name(exe),
            args=self._args(exe),
            output=None if output is None else self._json(output, _VALUE),
            agent=None if agent is None else self._text(agent, WF.agentName),
            steps=steps,
            id=step_id,
            started=self._time(exe, _STARTED, _STARTED_TEXT),
            ended=self._time(exe, _ENDED, _ENDED_TEXT),
            outcome=self._text(exe, _OUTCOME, False),
            extra=extra,
        )

    def _agent(self, exe: Node) -> Node | None:
        """The agent of a call: its qualified association's, else the shortcut's (old graphs)."""
        association = self._one(exe, _QUALIFIED, False)
        if association is not None:
            return self._one(association, _AGENT)
        return self._one(exe, _ASSOCIATED, False)

    def _tool_name(self, exe: Node) -> str:
        tool = self._one(exe, _TOOL, False)
        if tool is None:
            # Main-tree calls carry the tool on their plan step.
            step = self._one(exe, _CORRESPONDS, False)
            if step is None:
                raise MappingError(f"{exe} has no wf:tool and no p-plan:correspondsToStep")
            tool = self._one(step, _TOOL)
        return str(self._text(tool, _TOOL_NAME))

    def _failed(self, exe: Node) -> FailedCall:
        call = self._step(exe)
        if not isinstance(call, CallStep):
            raise MappingError(f"wf:FailedCall {exe} must be a wf:FunctionCall")
        parent = self._text(exe, WF.parentPath, False)
        return FailedCall(call=call, error=self._text(exe, WF.error), parent=parent)

    def _revised(self, exe: Node) -> InstructionStep:
        step = self._step(exe)
        if not isinstance(step, InstructionStep):
            raise MappingError(f"wf:RevisedInstruction {exe} must be a wf:InstructionExecution")
        return step

    def _args(self, exe: Node) -> dict[str, Any]:
        used = [e for e in self._values(exe, _USED) if _ARG_NAME in self.index.get(e, {})]
        if any(_INDEX not in self.index[e] for e in used):
            # The lean mapping orders arguments by their IRI (``...-arg-{n}``), not wf:index.
            used = sorted(used, key=_arg_number)
        else:
            used = self._sorted(used)  # graphs of earlier versions
        return {self._text(e, _ARG_NAME): self._json(e, _VALUE) for e in used}

    def _children(self, node: Node) -> list[Node]:
        children = self.parts.get(node, [])
        old = self._values(node, _HAS_PART)  # graphs written before the lean mapping
        if old:
            children = list(dict.fromkeys([*children, *old]))
        return self._sorted([c for c in children if c not in self.roots])

    def _sorted(self, nodes: list[Node]) -> list[Node]:
        if len(nodes) < 2:
            return nodes
        keyed = sorted((self._int(n, _INDEX), str(n), n) for n in nodes)
        for (a, _, first), (b, _, second) in zip(keyed, keyed[1:], strict=False):
            if a == b:
                raise MappingError(f"{first} and {second} share wf:index {a}")
        return [n for _, _, n in keyed]

    def _types(self, node: Node) -> list[Node]:
        return self.index.get(node, {}).get(_TYPE, [])

    def _values(self, node: Node, predicate: URIRef) -> list[Node]:
        return self.index.get(node, {}).get(predicate, [])

    def _one(self, node: Node, predicate: URIRef, required: bool = True) -> Any:
        values = self._values(node, predicate)
        if not values:
            if required:
                raise MappingError(f"{node} has no {_qname(predicate)}")
            return None
        if len(values) > 1 and len(set(values)) > 1:
            raise MappingError(f"{node} has {len(set(values))} values for {_qname(predicate)}")
        return values[0]

    def _text(self, node: Node, predicate: URIRef, required: bool = True) -> Any:
        value = self._one(node, predicate, required)
        if value is not None and not isinstance(value, Literal):
            raise MappingError(f"{_qname(predicate)} of {node} must be a literal, not {value}")
        return None if value is None else str(value)

    def _int(self, node: Node, predicate: URIRef) -> int:
        text = self._text(node, predicate)
        try:
            return int(text)
        except ValueError:
            raise MappingError(f"{_qname(predicate)} of {node} is not an integer") from None

    def _json(self, node: Node, predicate: URIRef, default: Any = ...) -> Any:
        text = self._text(node, predicate, default is ...)
        if text is None:
            return default
        try:
            return json.loads(text)
        except ValueError as exc:
            raise MappingError(f"{_qname(predicate)} of {node} is not JSON: {exc}") from None

    def _time(self, node: Node, typed: URIRef, text: URIRef) -> str | None:
        # The text as written; the typed literal is a fallback for graphs made elsewhere.
        raw = self._text(node, text, False)
        return raw if raw is not None else self._text(node, typed, False)


def _arg_number(node: Node) -> int:
    _, _, number = str(node).rpartition("-arg-")
    if not number.isdigit():
        raise MappingError(f"{node} has no wf:index and its IRI does not end in -arg-<n>")
    return int(number)


def _qname(predicate: URIRef) -> str:
    for prefix, namespace in _PREFIXES:
        if predicate.startswith(namespace):
            return prefix + predicate[len(namespace) :]
    return f"<{predicate}>"
