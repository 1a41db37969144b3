"""The session journal: what a chat session captured, kept in the memory's store.

A server may answer each turn of a conversation in another worker process, and it restarts. The
session's capture (instructions, calls at every depth, agents, failures, times) therefore lives in
the store, keyed by (scope, session), not in one process: any worker on the same store (the
embedded disk store within one process, ``oxigraph serve`` across processes) replays it and
compiles the same workflow.

Layout (``docs/deploy.md``): each turn appends one **chunk**, a named graph
``{BASE}journal/{scope}/{session}/{base}-{time}-{token}`` holding the turn as the session record
every integration stores (:class:`~em_plugin.session.turns.Turn` JSON, predicate ``jn:turns``),
its position (``base``: how many trajectory events came before it) and its time; one write, so a
turn is journaled whole or not at all. Chunks of earlier releases hold trajectory events instead
(``jn:events``); they are read as turns too (:func:`~em_plugin.session.turns.turns_from_events`).

Saving the session writes its **saved mark**
``{BASE}journal/{scope}/{session}/saved`` (how many events the saved workflow covers); each scope
has one constant marker graph ``{BASE}journal/{scope}/journal``. Journal
graphs use their own vocabulary (:data:`JOURNAL_NS`) and graph namespace, so they are never listed
as workflows. They are the ``journal`` family of the store's registry
(:mod:`provenance.stores.graph_families`): the store layer writes and drops them
(:mod:`provenance.stores.graph_writes`), erasing a scope drops them with the scope, and a full
backup carries them.

Example:
    >>> from provenance.stores import open_store
    >>> from em_plugin.capture.trajectory import Trajectory
    >>> store = open_store("memory:")
    >>> journal = SessionJournal(store.backend)
    >>> t = Trajectory("chat-1", scope="team", framework="beeai")
    >>> _ = t.instruction("Extract the ingredients")
    >>> _ = journal.append("team", "chat-1", t.events, base=0)
    >>> journal.replay("team", "chat-1", framework="beeai").compile().steps[0].text
    'Extract the ingredients'
    >>> [s.session_id for s in journal.unsaved(scope="team")]
    ['chat-1']
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from rdflib import RDF, Literal, Namespace, URIRef
from rdflib.namespace import XSD

from em_plugin.capture.trajectory import (
    CallEnd,
    CallError,
    CallStart,
    FinalAnswer,
    Instruction,
    RunError,
    Trajectory,
    TrajectoryEvent,
)
from em_plugin.errors import ConfigurationError, TrajectoryError
from em_plugin.session.controller import SessionController
from em_plugin.session.registry import SessionRegistry
from em_plugin.session.turns import Turn, replay, turns_from_events
from provenance.stores.base import GraphStore
from provenance.stores.graph_families import JOURNAL
from provenance.stores.graph_writes import drop_scope_graphs, write_graphs
from provenance.vocab import encode_segment

__all__ = [
    "JOURNAL_NS",
    "JournalSession",
    "JournaledSessions",
    "SessionJournal",
    "conversation_digest",
    "journal_graph_prefix",
    "unsaved_sessions",
]

log = logging.getLogger("em_plugin.session.journal")

#: The vocabulary of journal graphs (never the workflow vocabulary: they are not workflows).
JOURNAL_NS = "https://w3id.org/em-plugin/journal#"
_JN = Namespace(JOURNAL_NS)
_KINDS: dict[str, type] = {
    "instruction": Instruction,
    "call_start": CallStart,
    "call_end": CallEnd,
    "call_error": CallError,
    "final_answer": FinalAnswer,
    "run_error": RunError,
}
_KIND_OF = {cls: kind for kind, cls in _KINDS.items()}
_PREFIX = f"PREFIX jn: <{JOURNAL_NS}>\n"
_CHUNKS = (
    _PREFIX
    + """SELECT ?c ?base ?end WHERE {
  GRAPH ?c { ?c a jn:Chunk ; jn:scope ?scope ; jn:session ?session ; jn:base ?base ; jn:end ?end }
}"""
)
_ACTIVITY = (
    _PREFIX
    + """SELECT ?scope ?session (MAX(?time) AS ?last) (MAX(?end) AS ?events) WHERE {
  GRAPH ?c { ?c a jn:Chunk ; jn:scope ?scope ; jn:session ?session ; jn:time ?time ; jn:end ?end }
} GROUP BY ?scope ?session"""
)
_SAVED = (
    _PREFIX
    + """SELECT ?scope ?session ?events ?time ?workflow WHERE {
  GRAPH ?m { ?m a jn:Saved ; jn:scope ?scope ; jn:session ?session ; jn:events ?events ;
               jn:time ?time ; jn:workflow ?workflow }
}"""
)
_LINK = (
    _PREFIX
    + """SELECT ?session ?time WHERE {
  GRAPH ?c { ?c a jn:Chunk ; jn:scope ?scope ; jn:session ?session ; jn:link ?link ; jn:time ?time }
} ORDER BY DESC(?time) LIMIT 1"""
)


def journal_graph_prefix(scope: str | None = None, session_id: str | None = None) -> str:
    """Return the IRI prefix of journal graphs (all, one scope's, or one session's).

    Args:
        scope: Narrow to one scope.
        session_id: Narrow to one session of ``scope``.

    Returns:
        The prefix, ending with ``/``.
    """
    prefix = JOURNAL.prefix(scope)
    if scope is not None and session_id is not None:
        prefix += f"{encode_segment(session_id)}/"
    return prefix


def conversation_digest(messages: Iterable[tuple[str, str]]) -> str:
    """Return a stable digest of a conversation's ``(role, text)`` messages.

    Deployments whose clients replay the whole history (OpenAI chat completions) have no
    conversation id: the digest of the history links a request to the session whose last turn
    ended with exactly that history.

    Args:
        messages: ``(role, text)`` pairs in order; texts are compared with blanks collapsed.

    Returns:
        A hex digest.
    """
    canonical = [(role, " ".join(text.split())) for role, text in messages]
    return hashlib.sha256(json.dumps(canonical, ensure_ascii=False).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class JournalSession:
    """One journaled session: how far it got and how much of it is saved."""

    scope: str
    """The session's scope."""
    session_id: str
    """The session (the deployment's conversation id)."""
    events: int
    """How many events the session has journaled."""
    last_activity: str
    """ISO 8601 time of its last journaled turn."""
    saved_events: int = 0
    """How many of its events the last save covered (0: never saved)."""
    saved_at: str | None = None
    """ISO 8601 time of the last save."""
    workflow_id: str | None = None
    """The id the session was saved under."""

    @property
    def saved(self) -> bool:
        """Whether the last save covers every journaled event."""
        return self.saved_events >= self.events


class SessionJournal:
    """Per-(scope, session) event journals in a :class:`~provenance.stores.base.GraphStore`.

    Args:
        backend: The store (the memory's ``store.backend``); any backend that passes the store
            contract works.

    Raises:
        ConfigurationError: When ``backend`` is not a GraphStore.
    """

    def __init__(self, backend: GraphStore) -> None:
        if not isinstance(backend, GraphStore):
            raise ConfigurationError(
                f"a session journal needs a GraphStore backend, not {type(backend).__name__}"
            )
        self.backend = backend

    # -- writes ------------------------------------------------------------------------------

    def append(
        self,
        scope: str,
        session_id: str,
        events: Sequence[TrajectoryEvent],
        *,
        base: int,
        links: Sequence[str] = (),
    ) -> str:
        """Journal one turn's events in one write (all of them, or none).

        Args:
            scope: The session's scope.
            session_id: The session.
            events: The events the turn added, in order (stored as
                :class:`~em_plugin.session.turns.Turn` records).
            base: How many events of the session came before them.
            links: Conversation digests that lead to this session (:func:`conversation_digest`).

        Returns:
            The chunk's graph IRI.

        Raises:
            TrajectoryError: On an empty scope or session, or a negative ``base``.
            StoreError: When the backend fails (nothing is written).
        """
        _check_key(scope, session_id)
        if isinstance(base, bool) or not isinstance(base, int) or base < 0:
            raise TrajectoryError(f"base must be an integer >= 0, got {base!r}")
        stamp = _now()
        local = f"{base:010d}-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        name = JOURNAL.iri(scope, session_id, local)
        payload = json.dumps(
            [turn.to_json() for turn in turns_from_events(events)], ensure_ascii=False
        )
        triples = [
            (name, RDF.type, _JN.Chunk),
            (name, _JN.scope, Literal(scope)),
            (name, _JN.session, Literal(session_id)),
            (name, _JN.base, Literal(base)),
            (name, _JN.end, Literal(base + len(events))),
            (name, _JN.time, Literal(stamp, datatype=XSD.dateTime)),
            (name, _JN.turns, Literal(payload)),
            *((name, _JN.link, Literal(link)) for link in links),
        ]
        write_graphs(self.backend, [self._marker(scope), (name, triples)])
        return str(name)

    def _marker(self, scope: str) -> tuple[URIRef, list[tuple[URIRef, URIRef, Any]]]:
        """The scope's journal marker: constant triples, rewritten with every journal write.

        Rewriting identical triples is harmless when workers race, and a batch that replaces
        an existing graph is one small transaction on the embedded disk store, where a batch of
        new graphs only would be a bulk load (far costlier for one turn, docs/stores.md).
        """
        name = JOURNAL.iri(scope, "journal")
        return name, [(name, RDF.type, _JN.Journal), (name, _JN.scope, Literal(scope))]

    def mark_saved(self, scope: str, session_id: str, *, events: int, workflow_id: str) -> None:
        """Record that the session's first ``events`` events are saved as ``workflow_id``.

        Raises:
            StoreError: When the backend fails.
        """
        _check_key(scope, session_id)
        name = JOURNAL.iri(scope, session_id, "saved")
        triples = [
            (name, RDF.type, _JN.Saved),
            (name, _JN.scope, Literal(scope)),
            (name, _JN.session, Literal(session_id)),
            (name, _JN.events, Literal(int(events))),
            (name, _JN.time, Literal(_now(), datatype=XSD.dateTime)),
            (name, _JN.workflow, Literal(workflow_id)),
        ]
        write_graphs(self.backend, [self._marker(scope), (name, triples)])

    def forget(self, scope: str, session_id: str | None = None) -> int:
        """Drop the journal of a scope (or of one session of it), in one write.

        Returns:
            How many journal graphs were dropped.
        """
        under = "" if session_id is None else f"{encode_segment(session_id)}/"
        return drop_scope_graphs(self.backend, scope, JOURNAL, under=under)

    # -- reads -------------------------------------------------------------------------------

    def head(self, scope: str, session_id: str) -> tuple[str, ...]:
        """Return the session's chunk names in replay order (one small query)."""
        return tuple(name for name, _ in self._chunks(scope, session_id))

    def _chunks(self, scope: str, session_id: str) -> list[tuple[str, int]]:
        rows = self.backend.select(
            _CHUNKS, {"scope": Literal(scope), "session": Literal(session_id)}
        ).rows
        # Base first (where the turn continued from), then the time-ordered local name.
        chunks = sorted((int(str(b)), str(c), int(str(e))) for c, b, e in rows)
        return [(name, end) for _, name, end in chunks]

    def turns(self, scope: str, session_id: str) -> list[Turn]:
        """Return the session's journaled turns, in order (chunks of earlier releases too).

        Raises:
            StoreError: When the backend fails.
        """
        names = [URIRef(name) for name, _ in self._chunks(scope, session_id)]
        turns: list[Turn] = []
        legacy: list[TrajectoryEvent] = []  # consecutive old chunks: a call may span two
        for name, triples in self.backend.read_graphs(names):
            found = {p: v for _, p, v in triples if p in (_JN.turns, _JN.events)}
            if _JN.turns in found:
                turns.extend(turns_from_events(legacy))
                legacy = []
                items = json.loads(str(found[_JN.turns]))
                turns.extend(Turn.from_json(item) for item in items if isinstance(item, dict))
            elif _JN.events in found:
                legacy.extend(_event_of(item) for item in json.loads(str(found[_JN.events])))
            else:
                log.warning("journal chunk %s holds no turns; skipped", name)
        turns.extend(turns_from_events(legacy))
        return turns

    def events(self, scope: str, session_id: str) -> list[TrajectoryEvent]:
        """Return the events of the session's replayed trajectory, in order.

        Raises:
            StoreError: When the backend fails.
        """
        return list(self.replay(scope, session_id).events)

    def replay(
        self,
        scope: str,
        session_id: str,
        *,
        framework: str | None = None,
        turns: Sequence[Turn] | None = None,
    ) -> Trajectory:
        """Rebuild the session's :class:`Trajectory` from its journal.

        What two workers that answered one conversation at once journaled inconsistently is
        skipped (:func:`~em_plugin.session.turns.replay`).

        Args:
            scope: The session's scope.
            session_id: The session.
            framework: The framework recorded on the trajectory.
            turns: Turns already read with :meth:`turns` (default: read them).

        Returns:
            A trajectory that compiles to the workflow the session captured.
        """
        found = self.turns(scope, session_id) if turns is None else turns
        return replay(found, Trajectory(session_id, scope=scope, framework=framework))

    def sessions(self, *, scope: str | None = None) -> list[JournalSession]:
        """Return every journaled session (of one scope when given), most recent first."""
        bindings = None if scope is None else {"scope": Literal(scope)}
        saved: dict[tuple[str, str], tuple[int, str, str]] = {}
        for row in self.backend.select(_SAVED, bindings).rows:
            sc, sid, count, stamp, workflow = (str(v) for v in row)
            saved[(sc, sid)] = (int(count), stamp, workflow)
        found = []
        for row in self.backend.select(_ACTIVITY, bindings).rows:
            sc, sid, last, count = (str(v) for v in row)
            count_saved, saved_at, workflow_id = saved.get((sc, sid), (0, None, None))
            found.append(
                JournalSession(sc, sid, int(count), last, count_saved, saved_at, workflow_id)
            )
        return sorted(found, key=lambda s: (s.last_activity, s.scope, s.session_id), reverse=True)

    def unsaved(self, *, scope: str | None = None) -> list[JournalSession]:
        """Return the sessions with journaled events no save covers, most recent first.

        A lifecycle job may mark those idle for long "abandoned"; ``last_activity`` says when
        each last moved.
        """
        return [s for s in self.sessions(scope=scope) if not s.saved]

    def find_link(self, scope: str, digest: str) -> str | None:
        """Return the session whose last turn ended with the conversation ``digest``, if any."""
        rows = self.backend.select(_LINK, {"scope": Literal(scope), "link": Literal(digest)}).rows
        return str(rows[0][0]) if rows else None


@dataclass
class _Cursor:
    head: tuple[str, ...] = ()
    persisted: int = 0
    saved: object = None  # the controller's last_saved that the journal has marked


def unsaved_sessions(store: Any, *, scope: str | None = None) -> list[JournalSession]:
    """Return a store's journaled sessions that no save covers, most recent first.

    Args:
        store: The :class:`~provenance.stores.WorkflowStore` (read-only is enough).
        scope: Only this scope's sessions (``None``: every scope's).

    Returns:
        The sessions, as :meth:`SessionJournal.unsaved` gives them.

    Raises:
        ConfigurationError: When the store's backend is not a GraphStore.
    """
    return SessionJournal(store.backend).unsaved(scope=scope)


class JournaledSessions:
    """Keep a :class:`SessionRegistry`'s sessions in step with a :class:`SessionJournal`.

    An integration calls :meth:`open` when a turn starts (the session's trajectory is replayed
    from the journal when another worker moved it, or this process has never seen it) and
    :meth:`commit` when the turn ends (its new events become one chunk; a save is marked).

    Args:
        registry: The integration's live sessions.
        journal: The store-backed journal.
    """

    def __init__(self, registry: SessionRegistry, journal: SessionJournal) -> None:
        self.registry = registry
        self.journal = journal
        self._cursors: weakref.WeakKeyDictionary[SessionController, _Cursor] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _cursor(self, controller: SessionController) -> _Cursor:
        with self._lock:
            cursor = self._cursors.get(controller)
            if cursor is None:
                cursor = self._cursors[controller] = _Cursor()
            return cursor

    def open(self, session_id: str, *, scope: str, crew: str | None) -> SessionController:
        """Return the session's controller, its trajectory caught up with the journal.

        Raises:
            StoreError: When the journal cannot be read (the caller isolates it).
        """
        controller = self.registry.get(session_id, scope=scope, crew=crew)
        self.sync(controller)
        return controller

    def sync(self, controller: SessionController) -> None:
        """Replay the controller's session from the journal when the journal moved.

        Events recorded here but never committed (a turn that died half way) are dropped: the
        journal is the session.
        """
        trajectory = controller.trajectory
        cursor = self._cursor(controller)
        head = self.journal.head(trajectory.scope, trajectory.session_id)
        if head == cursor.head and len(trajectory) == cursor.persisted:
            return
        controller.trajectory = self.journal.replay(
            trajectory.scope, trajectory.session_id, framework=trajectory.framework
        )
        cursor.head, cursor.persisted = head, len(controller.trajectory)

    def commit(self, controller: SessionController, *, links: Sequence[str] = ()) -> None:
        """Journal the events the controller's session added since the last commit.

        Also marks a save that happened since.

        Raises:
            StoreError: When the journal cannot be written (the events stay to commit later).
        """
        trajectory = controller.trajectory
        cursor = self._cursor(controller)
        events = trajectory.events
        fresh = events[cursor.persisted :]
        if fresh or links:
            name = self.journal.append(
                trajectory.scope,
                trajectory.session_id,
                fresh,
                base=cursor.persisted,
                links=links,
            )
            cursor.persisted = len(events)
            cursor.head = (*cursor.head, name)
        saved = controller.last_saved
        if saved is not None and saved is not cursor.saved:
            self.journal.mark_saved(
                trajectory.scope, trajectory.session_id, events=len(events), workflow_id=saved.id
            )
            cursor.saved = saved


def _check_key(scope: str, session_id: str) -> None:
    for name, value in (("scope", scope), ("session_id", session_id)):
        if not isinstance(value, str) or not value.strip():
            raise TrajectoryError(f"{name} must be a non-empty string, got {value!r}")


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _event_json(event: TrajectoryEvent) -> dict[str, Any]:
    kind = _KIND_OF.get(type(event))
    if kind is None:
        raise TrajectoryError(f"not a trajectory event: {type(event).__name__}")
    data = asdict(event)
    if isinstance(event, CallStart):
        data["args"] = dict(event.args)
    return {"kind": kind, **data}


def _event_of(item: Mapping[str, Any]) -> TrajectoryEvent:
    fields = dict(item)
    kind = fields.pop("kind", None)
    cls = _KINDS.get(str(kind))
    if cls is None:
        raise TrajectoryError(
            f"unknown journal event kind {kind!r}; valid kinds: {', '.join(sorted(_KINDS))}"
        )
    event: TrajectoryEvent = cls(**fields)
    return event
