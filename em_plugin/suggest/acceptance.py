"""Acceptance of shown suggestions: which rank a session's next step took, recorded as PROV.

The rule (docs/suggestions.md, "Acceptance"): a round of suggestions shown in a session is
judged by the session's *next turn*, the steps added after the round up to the next
instruction after them (the next instruction and the calls made for it, or the calls made
without one). The first of those steps that matches a shown suggestion decides: a call matches
a suggestion of the same tool; an instruction matches a suggestion whose text's embedding has a
cosine of at least the memory's threshold ``T`` with it. When the step matches several, the
best-ranked one is taken. A round whose next turn matches none is *not taken*. A user or an app
can also say it directly (:meth:`AcceptanceLog.say`: ``accepted`` or ``dismissed``).

Verdicts go into the round's own record graph (``provenance/suggestion_record.py``), so they
are backed up, erased and queried with it (named query ``suggestion-acceptance``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rdflib import URIRef

from em_plugin import telemetry
from em_plugin.errors import SuggestionError
from em_plugin.suggest.feedback import FeedbackStats, context_of
from em_plugin.suggest.types import Suggestion
from provenance.errors import MappingError
from provenance.model import CallStep, InstructionStep, Step, Workflow
from provenance.stores.graph_writes import write_graphs
from provenance.suggestion_record import (
    SuggestionRef,
    acceptance_triples,
    parse_suggestion_id,
    suggestion_graph_iri,
)
from provenance.vocab import RDF, WF, workflow_iri

__all__ = [
    "LAST_SESSIONS",
    "AcceptanceLog",
    "Taken",
    "acceptance_rates",
    "judge",
    "next_turn",
    "recent_suggestions",
    "store_stats",
]

#: Sessions (the most recent) that :func:`acceptance_rates` counts by default.
LAST_SESSIONS = 50

Similarity = Callable[[str, str], float]


@dataclass(frozen=True)
class Taken:
    """The verdict on one round: the rank taken (``None``: not taken) and the step that took it."""

    rank: int | None
    """1-based rank of the suggestion taken, ``None`` when none was."""
    path: str | None = None
    """The model path (``Workflow.walk``) of the step that took it."""


def next_turn(workflow: Workflow, seen: frozenset[str]) -> list[tuple[str, Step]]:
    """Return the steps of a session's next turn: the ones added after ``seen``, in order.

    The turn ends before the second instruction among them (the one after the next).

    Args:
        workflow: The session's workflow now.
        seen: The model paths its workflow had when the round was shown.

    Returns:
        ``(path, step)`` pairs in walk order.
    """
    out: list[tuple[str, Step]] = []
    for path, step in workflow.walk():
        if path in seen:
            continue
        # An instruction after the turn's own one, or after calls made without one, is the
        # turn after.
        if isinstance(step, InstructionStep) and out:
            break
        out.append((path, step))
    return out


def judge(
    shown: Sequence[Suggestion],
    turn: Sequence[tuple[str, Step]],
    similarity: Similarity | None,
    threshold: float,
) -> Taken:
    """Judge a round by the session's next turn (the module's rule).

    Args:
        shown: The round's suggestions, in rank order.
        turn: The next turn's steps (:func:`next_turn`).
        similarity: Cosine of two texts (``None``: instructions match nothing).
        threshold: The least cosine for an instruction to match a suggestion's text.

    Returns:
        The rank taken and the step that took it, or ``Taken(None)``.
    """
    for path, step in turn:
        for rank, suggestion in enumerate(shown, start=1):
            if isinstance(step, CallStep) and suggestion.tool and step.name == suggestion.tool:
                return Taken(rank, path)
            if (
                isinstance(step, InstructionStep)
                and similarity is not None
                and suggestion.text
                and similarity(step.text, suggestion.text) >= threshold
            ):
                return Taken(rank, path)
    return Taken(None)


@dataclass
class _Round:
    ref: SuggestionRef
    shown: tuple[Suggestion, ...]
    seen: frozenset[str]
    context: tuple[str, ...]


class AcceptanceLog:
    """A memory's record of what became of the suggestions it showed.

    Args:
        store: The memory's workflow store (its ``backend`` holds the record graphs).
        scope: The memory's scope.
        embed: Embeds texts (unit rows), for instructions that match a suggestion's text.
        threshold: Returns the memory's threshold ``T``.
        feedback: The scope's statistics that judged rounds feed (ranking uses them).
    """

    def __init__(
        self,
        store: Any,
        scope: str,
        embed: Callable[[list[str]], np.ndarray],
        threshold: Callable[[], float],
        feedback: FeedbackStats | None = None,
    ) -> None:
        self._store = store
        self._scope = scope
        self._embed = embed
        self._threshold = threshold
        self.feedback = feedback if feedback is not None else FeedbackStats()
        self._pending: dict[str, _Round] = {}
        self._lock = threading.Lock()

    @property
    def waiting(self) -> bool:
        """Whether a shown round waits for its session's next turn (only this log holds it)."""
        with self._lock:
            return bool(self._pending)

    def similarity(self, first: str, second: str) -> float:
        """Return the cosine of two texts' embeddings."""
        vectors = np.asarray(self._embed([first, second]), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        if norms.min() == 0:
            return 0.0
        return float(vectors[0] @ vectors[1] / (norms[0] * norms[1]))

    def shown(
        self,
        session_id: str,
        time: str,
        suggestions: Sequence[Suggestion],
        workflow: Workflow,
    ) -> Taken | None:
        """Note a round shown in a session; judge the session's previous round first.

        Args:
            session_id: The chat session.
            time: The ISO text naming the round (what ``record_suggestions`` returned).
            suggestions: The round, in rank order.
            workflow: The session's workflow when the round was shown.

        Returns:
            The verdict on the previous round, ``None`` when there was none pending.
        """
        verdict = self.observe(session_id, workflow)
        ref = SuggestionRef(self._scope, session_id, time, 1)
        seen = frozenset(path for path, _ in workflow.walk())
        with self._lock:
            self._pending[session_id] = _Round(ref, tuple(suggestions), seen, context_of(workflow))
        return verdict

    def observe(self, session_id: str, workflow: Workflow) -> Taken | None:
        """Judge a session's pending round by its workflow now, once its next turn began.

        Args:
            session_id: The chat session.
            workflow: The session's workflow now.

        Returns:
            The verdict, or ``None`` when no round is pending or the next turn has no step yet.
        """
        with self._lock:
            pending = self._pending.get(session_id)
        if pending is None:
            return None
        turn = next_turn(workflow, pending.seen)
        if not turn:
            return None
        with self._lock:
            if self._pending.get(session_id) is not pending:
                return None  # judged meanwhile
            del self._pending[session_id]
        taken = judge(pending.shown, turn, self.similarity, self._threshold())
        telemetry.record_acceptance(self._scope, taken.rank)
        calls = [step.name for _, step in turn if isinstance(step, CallStep)]
        tool = pending.shown[taken.rank - 1].tool if taken.rank else None
        next_tool = tool or (calls[0] if calls else None)
        self.feedback.note(pending.context, [s.tool for s in pending.shown], next_tool)
        # The round's record keeps what the counts learned, so a memory opened later (another
        # process, a restart) counts it too (em_plugin/suggest/feedback_history.py).
        context = pending.context
        if taken.rank is None:
            verdict = acceptance_triples(
                None, "not-taken", round_ref=pending.ref, context=context, next_tool=next_tool
            )
            self._write(verdict, pending.ref)
        else:
            ref = SuggestionRef(pending.ref.scope, session_id, pending.ref.time, taken.rank)
            step = URIRef(f"{workflow_iri(workflow.id)}#exec-{taken.path}")
            verdict = acceptance_triples(
                ref, "taken", step=step, context=context, next_tool=next_tool
            )
            self._write(verdict, ref)
        return taken

    def say(self, suggestion_id: str, verdict: str, *, step: URIRef | None = None) -> SuggestionRef:
        """Record a user's or an app's word on a shown suggestion.

        Args:
            suggestion_id: The suggestion's id (``[scope/]session/time#rank``) or IRI.
            verdict: ``"accepted"`` or ``"dismissed"``.
            step: The step that took it, when known.

        Returns:
            The suggestion.

        Raises:
            SuggestionError: When the id is malformed, names another scope or a suggestion
                that was never recorded, or the verdict is not one of the two.
        """
        if verdict not in ("accepted", "dismissed"):
            raise SuggestionError(f"verdict {verdict!r} is not one of accepted, dismissed")
        try:
            ref = parse_suggestion_id(suggestion_id, self._scope)
        except MappingError as exc:
            raise SuggestionError(str(exc)) from None
        if ref.scope != self._scope:
            raise SuggestionError(
                f"suggestion {suggestion_id!r} belongs to scope {ref.scope!r}, not {self._scope!r}"
            )
        self._write(acceptance_triples(ref, verdict, step=step), ref, must_exist=True)
        if verdict == "accepted":
            telemetry.record_acceptance(self._scope, ref.rank)
        return ref

    def dismissed_in(self, session_id: str) -> set[str]:
        """Return the tools (the texts, for suggestions without one) dismissed in a session."""
        graph = suggestion_graph_iri(session_id, self._scope)
        triples = [t for _, found in self._store.backend.read_graphs([graph]) for t in found]
        dismissed = {s for s, p, o in triples if p == WF.acceptance and str(o) == "dismissed"}
        tools = {s: str(o) for s, p, o in triples if s in dismissed and p == WF.suggestedTool}
        texts = {s: str(o) for s, p, o in triples if s in dismissed and p == WF.suggestedText}
        return {tools.get(s) or texts.get(s, "") for s in dismissed} - {""}

    def _write(self, graph: Any, ref: SuggestionRef, *, must_exist: bool = False) -> None:
        name = suggestion_graph_iri(ref.session_id, ref.scope)
        triples = [t for _, found in self._store.backend.read_graphs([name]) for t in found]
        if must_exist and (ref.iri, RDF.type, WF.SuggestedStep) not in set(triples):
            raise SuggestionError(
                f"no suggestion {ref.id!r} was recorded in scope {ref.scope!r} "
                "(ids are listed by: em-plugin query suggestion-acceptance)"
            )
        triples.extend(graph)
        write_graphs(self._store.backend, [(name, triples)])


def acceptance_rates(store: Any, *, last: int = LAST_SESSIONS) -> dict[str, dict[str, Any]]:
    """Return the online hit rate per scope: acceptance@1 and @3 over its last sessions.

    A judged round (taken, accepted, or not taken) counts; an undecided one does not.
    acceptance@k is the share of judged rounds whose taken rank is at most ``k``.

    Args:
        store: A workflow store (named query ``suggestion-acceptance``).
        last: How many of each scope's sessions, the most recent by their last round.

    Returns:
        Per scope: ``sessions``, ``rounds`` (judged), ``acceptance@1``, ``acceptance@3``
        (``None`` with no judged round), ``dismissed``.
    """
    rounds: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in store.query("suggestion-acceptance").dicts():
        key = (str(row.get("scope", "default")), str(row["session"]), str(row["time"]))
        found = rounds.setdefault(key, {"rank": None, "judged": False, "dismissed": 0})
        verdict = str(row.get("acceptance", ""))
        if row.get("taken_rank") is not None:
            rank = int(row["taken_rank"])
            found["rank"] = rank if found["rank"] is None else min(found["rank"], rank)
            found["judged"] = True
        elif verdict == "not-taken":
            found["judged"] = True
        found["dismissed"] += verdict == "dismissed"
    per_scope: dict[str, dict[str, dict[str, Any]]] = {}
    for (scope, session, stamp), found in rounds.items():
        per_scope.setdefault(scope, {}).setdefault(session, {})[stamp] = found
    out: dict[str, dict[str, Any]] = {}
    for scope, sessions in sorted(per_scope.items()):
        recent = sorted(sessions, key=lambda s: max(sessions[s]), reverse=True)[:last]
        judged = [r for s in recent for r in sessions[s].values() if r["judged"]]
        ranks = [r["rank"] for r in judged]
        count = len(judged)
        out[scope] = {
            "sessions": len(recent),
            "rounds": count,
            "acceptance@1": round(sum(r == 1 for r in ranks) / count, 4) if count else None,
            "acceptance@3": round(sum(r is not None and r <= 3 for r in ranks) / count, 4)
            if count
            else None,
            "dismissed": sum(r["dismissed"] for s in recent for r in sessions[s].values()),
        }
    return out


def recent_suggestions(store: Any, scope: str, *, limit: int = 10) -> list[dict[str, Any]]:
    """Return a scope's most recently shown suggestions with what became of them.

    Args:
        store: A workflow store (named query ``suggestion-acceptance``).
        scope: The scope.
        limit: How many rows.

    Returns:
        Rows of the query (``id``, ``session``, ``time``, ``rank``, ``tool``, ``text``,
        ``acceptance``, ...) as plain values, newest round first, then by rank.
    """
    rows = [
        {
            key: (value.toPython() if hasattr(value, "toPython") else value)
            for key, value in r.items()
        }
        for r in store.query("suggestion-acceptance").dicts()
        if str(r.get("scope", "default")) == scope
    ]
    rows.sort(key=lambda r: (str(r["time"]), -int(r["rank"])), reverse=True)
    return rows[:limit]


def store_stats(store: Any, *, last: int = LAST_SESSIONS) -> dict[str, Any]:
    """Return the store's counts per scope and, with shown suggestions on record, their hit rate.

    Args:
        store: A workflow store.
        last: How many of each scope's sessions :func:`acceptance_rates` counts.

    Returns:
        The store's ``stats()`` (workflows, triples, steps, tools, scopes), with
        ``acceptance`` (:func:`acceptance_rates`) added when any scope has shown suggestions.
    """
    data: dict[str, Any] = store.stats()
    rates = acceptance_rates(store, last=last)
    if rates:
        data["acceptance"] = rates
    return data
