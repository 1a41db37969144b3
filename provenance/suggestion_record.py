"""Provenance of suggestions: which past workflows shaped which suggested next steps.

Each time the engine suggests next steps in a session it records one ``wf:Suggestion``
(a ``prov:Activity``) that ``prov:used`` the memory workflows it retrieved, and one
``wf:SuggestedStep`` (a ``prov:Entity``) per suggestion, ``prov:wasGeneratedBy`` the activity and
``prov:wasDerivedFrom`` the workflows of its evidence. The ``suggestion-sources`` named query reads
them back. A session's records go in the named graph :func:`suggestion_graph_iri`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rdflib import Graph, Literal, URIRef

from provenance.errors import MappingError
from provenance.model import DEFAULT_SCOPE
from provenance.vocab import (
    BASE,
    DCTERMS,
    PROV,
    RDF,
    WF,
    XSD,
    bind_prefixes,
    decode_segment,
    encode_segment,
    workflow_iri,
)

__all__ = [
    "ACCEPTANCE",
    "SuggestionRef",
    "acceptance_triples",
    "crew_iri",
    "parse_suggestion_id",
    "suggestion_graph_iri",
    "suggestion_id",
    "suggestion_iri",
    "suggestion_triples",
]

#: What became of a suggestion: ``taken`` (the session's next step matched it), ``accepted`` and
#: ``dismissed`` (said by a user or an app), ``not-taken`` (a round none of whose suggestions
#: the next step matched).
ACCEPTANCE = ("accepted", "dismissed", "not-taken", "taken")

_XSD_TIME = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-](?:(?:0\d|1[0-3]):[0-5]\d|14:00))?"
)


def _scoped(session_id: str, scope: str) -> str:
    # Session ids are per scope, like workflow ids: the default scope keeps the short form.
    session = encode_segment(session_id)
    return session if scope == DEFAULT_SCOPE else f"{encode_segment(scope)}/{session}"


def suggestion_graph_iri(session_id: str, scope: str = DEFAULT_SCOPE) -> URIRef:
    """Return the IRI of the named graph holding a session's suggestion records in a scope.

    Args:
        session_id: The chat session.
        scope: The scope of the memory that suggested; one graph per (scope, session).

    Returns:
        The graph IRI.
    """
    return URIRef(f"{BASE}suggestions/{_scoped(session_id, scope)}")


def suggestion_iri(session_id: str, time: str, scope: str = DEFAULT_SCOPE) -> URIRef:
    """Return the IRI of the suggestion activity of a session at a time (ISO 8601 text).

    Args:
        session_id: The chat session.
        time: ISO 8601 text.
        scope: The scope of the memory that suggested.

    Returns:
        The activity IRI.
    """
    return URIRef(f"{BASE}suggestion/{_scoped(session_id, scope)}/{encode_segment(time)}")


def crew_iri(crew: str | None) -> URIRef:
    """Return the IRI of a crew's description (what fallback suggestions derive from)."""
    return URIRef(f"{BASE}crew/{encode_segment(crew or 'crew')}")


def suggestion_triples(
    session_id: str,
    suggestions: Sequence[Mapping[str, Any]],
    workflow_ids: Sequence[str],
    time: str | datetime,
    scope: str | None = None,
    crew: str | None = None,
) -> Graph:
    """Return the provenance graph of one round of suggestions.

    Args:
        session_id: The chat session the suggestions were made in.
        suggestions: Suggestions in rank order, as ``Suggestion.to_json()`` dicts: ``text``,
            optional ``tool``, ``args``, ``score``, ``source`` and ``evidence`` (a list of
            ``{"workflow_id": ..., "position": ...}``). Each dict is also kept whole as JSON.
        workflow_ids: Ids of the memory workflows retrieved for this round (``prov:used``).
        time: When the suggestions were made (a datetime or ISO 8601 text); with the session
            it names the activity, so record each round at a distinct time.
        scope: The scope of the memory that suggested; recorded as ``wf:scope`` (so erasing a
            scope finds its records) and part of the IRIs. ``None``: the default scope,
            unrecorded.
        crew: The crew description's name: ``fallback`` suggestions (the crew's tools, no
            memory) are derived from it (:func:`crew_iri`), never from workflows.

    Returns:
        A graph to store in the named graph ``suggestion_graph_iri(session_id, scope)``.

    Raises:
        MappingError: When the time is not ISO 8601, or a suggestion is not a JSON object with
            a usable ``evidence`` list.
    """
    stamp = time.isoformat() if isinstance(time, datetime) else str(time)
    try:
        datetime.fromisoformat(stamp)
    except ValueError:
        raise MappingError(f"suggestion time {stamp!r} is not an ISO 8601 timestamp") from None
    activity = suggestion_iri(session_id, stamp, DEFAULT_SCOPE if scope is None else scope)
    graph = bind_prefixes(Graph(bind_namespaces="none"))
    add = graph.add
    add((activity, RDF.type, WF.Suggestion))
    add((activity, RDF.type, PROV.Activity))
    add((activity, WF.sessionId, Literal(session_id)))
    if scope is not None:
        add((activity, WF.scope, Literal(scope)))
    if _XSD_TIME.fullmatch(stamp):
        add((activity, PROV.startedAtTime, Literal(stamp, datatype=XSD.dateTime)))
    add((activity, WF.startedText, Literal(stamp)))
    for workflow_id in workflow_ids:
        add((activity, PROV.used, workflow_iri(workflow_id)))
    for rank, suggestion in enumerate(suggestions, start=1):
        _suggested_step(graph, activity, rank, suggestion)
        if isinstance(suggestion, Mapping) and suggestion.get("source") == "fallback":
            described = crew_iri(crew)
            add((URIRef(f"{activity}#{rank}"), PROV.wasDerivedFrom, described))
            add((described, RDF.type, PROV.Entity))
            add((described, RDF.type, WF.CrewDescription))
            add((described, DCTERMS.title, Literal(f"crew description ({crew or 'crew'})")))
    return graph


def _suggested_step(
    graph: Graph, activity: URIRef, rank: int, suggestion: Mapping[str, Any]
) -> None:
    if not isinstance(suggestion, Mapping):
        raise MappingError(f"suggestion {rank} must be a mapping, not {type(suggestion).__name__}")
    try:
        value = json.dumps(dict(suggestion), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MappingError(f"suggestion {rank} is not JSON: {exc}") from None
    node = URIRef(f"{activity}#{rank}")
    add = graph.add
    add((node, RDF.type, WF.SuggestedStep))
    add((node, RDF.type, PROV.Entity))
    add((node, PROV.wasGeneratedBy, activity))
    add((node, WF.rank, Literal(rank)))
    add((node, PROV.value, Literal(value, datatype=RDF.JSON)))
    if suggestion.get("text") is not None:
        add((node, WF.suggestedText, Literal(str(suggestion["text"]))))
    if suggestion.get("tool") is not None:
        add((node, WF.suggestedTool, Literal(str(suggestion["tool"]))))
    if isinstance(suggestion.get("score"), int | float):
        add((node, WF.score, Literal(float(suggestion["score"]), datatype=XSD.double)))
    if suggestion.get("source") is not None:
        add((node, WF.suggestionSource, Literal(str(suggestion["source"]))))
    evidence = suggestion.get("evidence") or []
    if not isinstance(evidence, Sequence) or isinstance(evidence, str):
        raise MappingError(f"suggestion {rank} evidence must be a list")
    for item in evidence:
        workflow_id = item.get("workflow_id") if isinstance(item, Mapping) else None
        if not isinstance(workflow_id, str):
            raise MappingError(f"suggestion {rank} evidence items need a 'workflow_id' string")
        add((node, PROV.wasDerivedFrom, workflow_iri(workflow_id)))


@dataclass(frozen=True)
class SuggestionRef:
    """One shown suggestion, by the round that showed it and its rank there."""

    scope: str
    """The scope of the memory that suggested."""
    session_id: str
    """The chat session."""
    time: str
    """The ISO 8601 text naming the round."""
    rank: int
    """1-based rank in the round."""

    @property
    def iri(self) -> URIRef:
        """The ``wf:SuggestedStep`` node of this suggestion."""
        return URIRef(f"{suggestion_iri(self.session_id, self.time, self.scope)}#{self.rank}")

    @property
    def id(self) -> str:
        """The suggestion's id (:func:`suggestion_id`)."""
        return suggestion_id(self.iri)


def suggestion_id(iri: str | URIRef) -> str:
    """Return the short id of a suggested step: its IRI after ``suggestion/``.

    Args:
        iri: The ``wf:SuggestedStep`` IRI (``.../suggestion/[scope/]session/time#rank``).

    Returns:
        ``[scope/]session/time#rank``, as ``em-plugin accept`` and ``dismiss`` take it.
    """
    return str(iri).split(f"{BASE}suggestion/", 1)[-1]


def parse_suggestion_id(text: str, scope: str = DEFAULT_SCOPE) -> SuggestionRef:
    """Read a suggestion id (or its full IRI) back.

    Args:
        text: ``[scope/]session/time#rank`` with percent-encoded segments, or the full IRI.
        scope: The scope an id without one belongs to.

    Returns:
        The suggestion it names.

    Raises:
        MappingError: When the text is not a suggestion id; the message shows the form.
    """
    tail = suggestion_id(text.strip())
    path, _, rank = tail.partition("#")
    parts = path.split("/")
    form = "[scope/]session/time#rank (e.g. s1/2026-12-07T10%3A00%3A00%2B00%3A00#1)"
    if not rank.isdigit() or int(rank) < 1 or len(parts) not in (2, 3) or not all(parts):
        raise MappingError(f"{text!r} is not a suggestion id; expected {form}")
    try:
        names = [decode_segment(part) for part in parts]
    except UnicodeDecodeError:
        raise MappingError(f"{text!r} is not a suggestion id; expected {form}") from None
    if len(names) == 3:
        scope = names.pop(0)
    return SuggestionRef(scope, names[0], names[1], int(rank))


def acceptance_triples(
    ref: SuggestionRef | None,
    verdict: str,
    *,
    round_ref: SuggestionRef | None = None,
    step: URIRef | None = None,
    context: Sequence[str] | None = None,
    next_tool: str | None = None,
) -> Graph:
    """Return the record of what became of a suggestion, for its round's record graph.

    ``taken`` and ``accepted`` mark the suggested step and its round (``wf:takenRank``);
    ``dismissed`` marks the step only; ``not-taken`` marks the round only. The step of the
    session that took the suggestion (its execution, a ``prov:Activity`` of the session's
    workflow) ``prov:used`` the suggested step.

    Args:
        ref: The suggestion (``None`` with ``not-taken``).
        verdict: One of :data:`ACCEPTANCE`.
        round_ref: Any suggestion of the round, for ``not-taken`` (its rank is ignored).
        step: The IRI of the step that took the suggestion, when one did.
        context: For a judged round (``taken`` or ``not-taken``), the tools of the last
            leaves of the workflow it was shown for (``wf:contextTools``, a JSON list); with
            ``next_tool`` (``wf:nextTool``, the tool the next turn took) it is what the memory's
            ranking learns from, read back when a memory opens the scope.
        next_tool: The tool the judged round's next turn took, suggested or not.

    Returns:
        A graph to add to ``suggestion_graph_iri(session_id, scope)``.

    Raises:
        MappingError: For an unknown verdict, or a missing suggestion.
    """
    if verdict not in ACCEPTANCE:
        raise MappingError(f"acceptance {verdict!r} is not one of {', '.join(ACCEPTANCE)}")
    named = ref or round_ref
    if named is None or (ref is None and verdict != "not-taken"):
        raise MappingError(f"acceptance {verdict!r} needs the suggestion it is about")
    activity = suggestion_iri(named.session_id, named.time, named.scope)
    graph = bind_prefixes(Graph(bind_namespaces="none"))
    if context is not None:
        graph.add(
            (activity, WF.contextTools, Literal(json.dumps(list(context)), datatype=RDF.JSON))
        )
    if next_tool:
        graph.add((activity, WF.nextTool, Literal(next_tool)))
    if verdict == "not-taken" or ref is None:
        graph.add((activity, WF.acceptance, Literal("not-taken")))
        return graph
    graph.add((ref.iri, WF.acceptance, Literal(verdict)))
    if verdict in ("taken", "accepted"):
        graph.add((activity, WF.acceptance, Literal(verdict)))
        graph.add((activity, WF.takenRank, Literal(ref.rank)))
    if step is not None:
        graph.add((step, RDF.type, PROV.Activity))
        graph.add((step, PROV.used, ref.iri))
    return graph
