"""``EpisodicMemory``: the facade that users and the integrations hold (docs/architecture.md).

It owns the workflow store (provenance), the embedder (cached by text hash), the step index
(retrieval by the paper's rule), and per scope the continuation index and the H-EPM graph
(suggestions). Everything is scoped: a memory reads and writes its ``scope``; retrieval and
suggestions never see another scope; :meth:`EpisodicMemory.forget` removes a scope's graphs,
vectors and suggestion records.

Example:
    >>> from em_plugin.memory import EpisodicMemory
    >>> from provenance.model import CallStep, InstructionStep, Workflow
    >>> memory = EpisodicMemory(store="memory:", embedder="fake", scope="team")
    >>> calls = (CallStep("product_extractor"), CallStep("pfas_classifier"))
    >>> _ = memory.save(Workflow(id="w1", steps=(InstructionStep("classify the SDS", calls),)))
    >>> current = Workflow(id="now", steps=(InstructionStep("classify this SDS", calls[:1]),))
    >>> [s.tool for s in memory.suggest(current)][:1]
    ['pfas_classifier']
    >>> memory.close()
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from concurrent.futures import Future
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from em_plugin import telemetry
from em_plugin._compat import legacy_memory_arguments, old_memory_attribute
from em_plugin._deprecation import deprecated
from em_plugin.capture.redaction import Redactor
from em_plugin.embedding.embedders import Embedder
from em_plugin.errors import ConfigurationError
from em_plugin.lifecycle import Lifecycle
from em_plugin.lifecycle.cache import LifecycleCache
from em_plugin.retrieval.reference import Match
from em_plugin.retrieval.window import retrieve_recent
from em_plugin.settings import RankingSettings, RetrievalSettings
from em_plugin.state.durability import BackgroundWriter
from em_plugin.state.engine import DEFAULT_POLL_INTERVAL, MemoryEngine
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.state.step_index import StepIndex
from em_plugin.suggest import SuggestionChain, SuggestionRequest, build_chain, default_chain
from em_plugin.suggest.acceptance import AcceptanceLog
from em_plugin.suggest.acceptance_logs import AcceptanceLogs, LastAsked
from em_plugin.suggest.crew import CrewDescription, coerce_crew
from em_plugin.suggest.feedback import FeedbackStats, context_of
from em_plugin.suggest.types import Suggestion
from provenance.errors import ProvenanceError, WorkflowFormatError
from provenance.model import DEFAULT_SCOPE, Workflow
from provenance.stores import WorkflowStore

log = logging.getLogger("em_plugin.memory")

__all__ = ["EpisodicMemory"]


def _ramp(batch_size: int) -> list[int]:
    """The sizes of a pipelined ``save_many``'s first batches (then ``batch_size``)."""
    return [batch_size // 8, batch_size // 4, batch_size // 2] if batch_size >= 128 else []


class EpisodicMemory:
    """Episodic memory of one scope: save workflows, retrieve similar ones, suggest next steps.

    Everything after ``store`` is keyword-only; the retrieval and ranking knobs are grouped in
    :class:`~em_plugin.settings.RetrievalSettings` and :class:`~em_plugin.settings.RankingSettings`
    (docs/api.md lists the spellings deprecated in this release).

    Args:
        store: A store spec (``memory:``, a directory, ``http(s)://...``; ``None`` for the
            default store) or an open :class:`~provenance.stores.WorkflowStore` (not closed by
            :meth:`close`).
        embedder: Anything :func:`~em_plugin.embedding.resolve_embedder` accepts.
        scope: The scope this memory reads and writes.
        retrieval: Which past workflows are retrieved (threshold ``T``, at most how many, a
            window on long sessions).
        ranking: How the suggestion models rank next steps (continuation model, H-EPM ``c``,
            edge similarity).
        llm: A :class:`~em_plugin.suggest.chat.ChatModel`, a LangChain or BeeAI chat model
            (adapted by its integration), or a callable; ``None`` keeps suggestions
            deterministic.
        chain: The suggestion chain: a name, ``"continuation"`` (the default without ``llm``),
            ``"llm"`` (the default with ``llm``) or ``"paper"`` (the paper's rule as written),
            or a custom :class:`~em_plugin.suggest.SuggestionChain` (overrides ``llm``).
        crew_description: The crew's agents and tools (a
            :class:`~em_plugin.suggest.crew.CrewDescription` or a mapping), for the fallback
            suggestions and the LLM's prompt.
        raise_suggester_errors: Let a failing suggester (e.g. the LLM) raise instead of falling
            back on the next one.
        validate: Check every saved workflow against the SHACL shapes (slower).
        redact_patterns: Extra regular expressions whose matches are redacted from every stored
            text, on top of the built-in credential formats
            (:class:`~em_plugin.capture.redaction.Redactor`).
        poll_interval: Seconds between checks of the store's change markers before reads, so
            that saves by other processes on the same store become visible (0: every read).
        on_suggestions: Called as ``on_suggestions(session_id, suggestions)`` each time an
            integration shows suggestions (:meth:`record_suggestions`), e.g. to display their
            evidence; an exception it raises propagates.
        warm_up: Start loading the embedder's model in the background while the crew starts
            (docs/architecture.md). A one-shot command that may embed nothing (delete, stats)
            passes ``False``: the model then loads on first use.

    Raises:
        ConfigurationError: On an invalid setting (the message names the valid values).
        StoreError: When the store cannot be opened.
    """

    @legacy_memory_arguments
    @telemetry.traced("create_memory_store")
    def __init__(
        self,
        store: str | Path | WorkflowStore | None = None,
        *,
        embedder: Any = None,
        scope: str = DEFAULT_SCOPE,
        retrieval: RetrievalSettings | None = None,
        ranking: RankingSettings | None = None,
        llm: Any = None,
        chain: SuggestionChain | str | None = None,
        crew_description: CrewDescription | Mapping[str, Any] | None = None,
        raise_suggester_errors: bool = False,
        validate: bool = False,
        redact_patterns: Sequence[str] = (),
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        on_suggestions: Callable[[str, Sequence[Suggestion]], None] | None = None,
        warm_up: bool = True,
        _use_text: bool = True,
    ) -> None:
        _check_scope(scope)
        self.scope = scope
        self.retrieval = RetrievalSettings() if retrieval is None else retrieval
        self.ranking = RankingSettings() if ranking is None else ranking
        self.crew_description = coerce_crew(crew_description)
        self.validate = validate
        raising = raise_suggester_errors
        if isinstance(chain, str):
            chain = build_chain(chain, llm, raise_suggester_errors=raising)
        self.chain = (
            chain if chain is not None else default_chain(llm, raise_suggester_errors=raising)
        )
        self.redactor = Redactor(redact_patterns)
        self.on_suggestions = on_suggestions
        # The lifecycle's state (hidden ids, active procedures), shared with this memory's scope
        # views (memory.lifecycle); the engine reads the hidden ids through it.
        self._lifecycle = LifecycleCache(poll_interval)
        self._engine = MemoryEngine(
            store, embedder, models=self.ranking.configure(self.chain.scope_models()),
            on_demand=self.ranking.built_in_models(), use_text=_use_text,
            poll_interval=poll_interval, warm_up=warm_up, hidden=self._lifecycle.hidden,
        )  # fmt: skip
        # The model loads in the background while the crew starts (docs/architecture.md).
        self._warmup = self._engine.embedding.warmup
        self._writer = BackgroundWriter()
        # What became of the suggestions shown, per scope (docs/suggestions.md, "Acceptance"),
        # shared with the scope views; the last workflow suggested for per (scope, session)
        # judges that session's previous round.
        self._learning = AcceptanceLogs(self._engine.scope_cache)
        self._asked = LastAsked()

    if not TYPE_CHECKING:  # the moved names are no part of the typed API

        def __getattr__(self, name: str) -> Any:
            # Only reached for names the class lacks: the ones moved in this release warn and
            # keep working (em_plugin/_compat.py).
            return old_memory_attribute(self, name)

    @property
    def acceptance(self) -> AcceptanceLog:
        """What became of this scope's shown suggestions (docs/suggestions.md, "Acceptance")."""
        return self._learning.get(
            self.scope,
            lambda: AcceptanceLog(
                self._engine.store,
                self.scope,
                self._engine.embedder.embed,
                lambda: self.threshold,
                FeedbackStats.from_store(self._engine.store, self.scope),
            ),
        )

    # ------------------------------------------------------------------------------ views

    @property
    def store(self) -> WorkflowStore:
        """The workflow store."""
        return self._engine.store

    @property
    def embedder(self) -> Embedder:
        """The (cached) embedder."""
        return self._engine.embedder

    @property
    def index(self) -> StepIndex:
        """The step index used for retrieval (read-only use: the memory keeps it current)."""
        return self._engine.index

    @property
    def threshold(self) -> float:
        """The retrieval threshold ``T`` (``retrieval.threshold``; settable)."""
        return self.retrieval.threshold

    @threshold.setter
    def threshold(self, value: float) -> None:
        self.retrieval = dataclasses.replace(self.retrieval, threshold=value)

    def with_scope(self, scope: str) -> EpisodicMemory:
        """Return a view of this memory that reads and writes ``scope`` (same store and index)."""
        if scope == self.scope:
            return self
        _check_scope(scope)
        view = copy.copy(self)  # the same settings, chain, crew and engine; another scope
        view.scope = scope
        return view

    def scope_memory(self, scope: str | None = None) -> ScopeMemory:
        """Return this scope's suggestion state, building it from the store on first use.

        ``scope=`` is deprecated: use ``memory.with_scope(scope).scope_memory()``.
        """
        if scope is None:
            scope = self.scope
        else:
            deprecated(
                "EpisodicMemory.scope_memory(scope)",
                "memory.with_scope(scope).scope_memory()",
                stacklevel=3,
            )
        self._engine.sync(scope)
        return self._engine.scope_memory(scope)

    # ------------------------------------------------------------------------------ writes

    def save(self, workflow: Workflow, *, validate: bool | None = None) -> Workflow:
        """Store a workflow and index it (one unit: on an index failure the store is restored).

        The workflow gets this memory's scope unless it has its own, and secrets are redacted
        first, wherever text is stored (:mod:`em_plugin.capture.redaction`).

        Args:
            workflow: The workflow; an existing id gets a new version, the previous one is
                kept as ``ID@vN`` (an unchanged save, or a save of the same session with only a
                prefix of its steps, keeps the stored one; docs/lifecycle.md).
            validate: Override the memory's ``validate`` setting for this call.

        Returns:
            The workflow as stored (scoped, redacted; the stored one when it was kept).

        Raises:
            WorkflowFormatError: When validation fails (nothing is stored).
            StoreOutcomeUnknown: When the store failed mid-write and cannot tell whether it
                committed (a server that died before answering). Whatever it committed is
                indexed at this memory's next read; saving the workflow again is safe (an
                unchanged save keeps the stored one).
            StoreError: Any other store failure: nothing is stored.
        """
        return self.save_many([workflow], validate=validate)[0]

    @telemetry.traced("upsert_memory")
    def save_many(
        self,
        workflows: Iterable[Workflow],
        *,
        validate: bool | None = None,
        batch_size: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> list[Workflow]:
        """Store and index workflows in batches (each batch is one store transaction).

        With more than one batch, the store writes batch k on a writer thread while batch k+1
        is prepared (redaction, embedding, versions, its RDF text) and batch k-1 indexed, with
        the outcome of saving the batches one after another (em_plugin/state/batch_writes.py).
        A call holds the memory's lock until its last batch is indexed.

        Args:
            workflows: The workflows (an iterable is read one batch at a time).
            validate: Override the memory's ``validate`` setting for this call.
            batch_size: Workflows per store transaction (a pipelined call starts with
                batches of 1/8, 1/4 and 1/2 of it when it is 128 or more).
            progress: Called with the number of workflows stored so far, after each batch.

        Returns:
            The workflows as stored, in order.

        Raises:
            WorkflowFormatError: When validation fails (the batches before are stored).
            StoreOutcomeUnknown: When the store failed mid-write and cannot tell whether the
                batch was committed (a server that died before answering): the batches before
                are stored, and whatever the store committed of that one is indexed at this
                memory's next read; saving the same workflows again is safe.
            StoreError: Any other store failure: the batches before are stored, not the
                failing one or those after it.
        """
        check = self.validate if validate is None else validate
        done = 0
        # More than one batch: the store writes each batch while the next is prepared
        # (em_plugin/state/batch_writes.py).
        pipelined = not (isinstance(workflows, Sized) and len(workflows) <= batch_size)

        def batches() -> Iterator[list[Workflow]]:
            # The first batch is prepared while nothing is written yet: smaller first batches
            # start the writer sooner.
            sizes = iter(_ramp(batch_size) if pipelined else ())
            size = next(sizes, batch_size)
            batch: list[Workflow] = []
            for workflow in workflows:
                batch.append(self._prepare(workflow, check))
                if len(batch) >= size:
                    yield batch
                    batch = []
                    size = next(sizes, batch_size)
            if batch:
                yield batch

        def indexed(saved: list[Workflow]) -> None:
            nonlocal done
            self._recount(saved)
            done += len(saved)
            if progress is not None:
                progress(done)

        return self._engine.write_many(batches(), on_batch=indexed, pipelined=pipelined)

    def _prepare(self, workflow: Workflow, validate: bool) -> Workflow:
        if not isinstance(workflow, Workflow):
            raise ConfigurationError(
                f"save() needs a provenance.model.Workflow, not {type(workflow).__name__}"
            )
        if workflow.scope == DEFAULT_SCOPE and self.scope != DEFAULT_SCOPE:
            workflow = workflow.replace(scope=self.scope)
        workflow = self.redactor.workflow(workflow)
        if validate:
            from provenance.mapping import workflow_to_graph
            from provenance.validation import validate_graph

            problems = validate_graph(workflow_to_graph(workflow))
            if problems:
                raise WorkflowFormatError(
                    f"workflow {workflow.id!r} violates the shapes: {'; '.join(problems[:5])}"
                )
        return workflow

    def _write(self, batch: list[Workflow]) -> list[Workflow]:
        saved = self._engine.write(batch)
        self._recount(saved)
        return saved

    def _recount(self, saved: list[Workflow]) -> None:
        # Each saved workflow is a use of the procedures it runs: recount them and retire
        # failing ones now, not at the next listing (docs/lifecycle.md).
        self.lifecycle.record_uses(saved)

    def save_in_background(
        self, workflow: Workflow, *, validate: bool | None = None
    ) -> Future[Workflow]:
        """Start :meth:`save` on the memory's writer thread and return at once.

        The save is durable: saves apply in submission order, and :meth:`close`, interpreter
        exit and SIGTERM wait for the unfinished ones (:mod:`em_plugin.state.durability`).

        Returns:
            The future of the stored workflow (its exception if the save failed).
        """
        return self._writer.submit(self.save, workflow, validate=validate)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for the saves started by :meth:`save_in_background`.

        Args:
            timeout: Seconds to wait at most (``None``: until they finish).

        Returns:
            True when none is left unfinished.
        """
        return self._writer.flush(timeout)

    @property
    def ready(self) -> bool:
        """Whether the embedder's background warm-up has finished."""
        return self._warmup.ready

    def wait_ready(self) -> bool:
        """Wait for the embedder's background warm-up.

        At most until ``$EM_PLUGIN_WARM_UP_WAIT`` seconds (default 60) after this memory was
        created; the integrations call it before a turn's memory work, outside the turn's budget.

        Returns:
            Whether the warm-up has finished.
        """
        return self._warmup.wait()

    def sync(self) -> None:
        """Catch up now with writes made to the store outside this memory.

        Another process's saves, a restored backup
        (:func:`em_plugin.state.backup.restore_to_memory`), a store written without em-plugin:
        the workflows that changed are reloaded into the step index. Reads do this by themselves
        at most every ``poll_interval`` seconds; call it to read them at once.
        """
        self._engine.sync(force=True)

    @telemetry.traced("delete_memory")
    def delete(self, workflow_id: str) -> bool:
        """Delete a workflow of this memory's scope (graph, index entries, vectors).

        Returns:
            Whether it existed in this scope.
        """
        return self._engine.delete(workflow_id, self.scope)

    @telemetry.traced("delete_memory_store")
    def forget(self, scope: str | None = None) -> list[str]:
        """Delete a whole scope.

        Its workflows, vectors, graphs, suggestion records and session journals.

        Args:
            scope: The scope; this memory's own by default.

        Returns:
            The deleted workflow ids, sorted.
        """
        scope = self.scope if scope is None else scope
        _check_scope(scope)
        deleted = self._engine.forget(scope)
        from em_plugin.session.journal import SessionJournal  # sessions need the engine, not back

        SessionJournal(self.store.backend).forget(scope)  # session journals hold its texts too
        return deleted

    def abandon_idle(self, *, older_than: timedelta | float, scope: str | None = None) -> list[str]:
        """Save every journaled session nobody saved, idle longer than ``older_than``.

        They are saved with outcome "abandoned" (a lifecycle job; docs/lifecycle.md).

        Covers the sessions in the store's session journal (BeeAI, engine-level); LangGraph
        keeps its sessions in the graph's checkpointed state instead.

        Args:
            older_than: The idle time (a timedelta, or seconds).
            scope: Only this scope's sessions (default: every scope).

        Returns:
            The ids of the workflows saved (``session/<session_id>``).

        Raises:
            ConfigurationError: On an invalid ``older_than``.
            StoreError: When the store fails (the sessions saved so far stay saved).
        """
        from em_plugin.session.abandon import abandon_idle  # sessions need the engine, not back
        from em_plugin.session.journal import SessionJournal

        if scope is not None:
            _check_scope(scope)
        journal = SessionJournal(self.store.backend)
        return abandon_idle(self, journal, older_than=older_than, scope=scope)

    # ------------------------------------------------------------------------------ reads

    def load(self, workflow_id: str) -> Workflow:
        """Return a stored workflow of this scope.

        Workflows read before, and a remote store's local copies, serve the read; the store's
        change marker is checked first (at most every ``poll_interval`` seconds), so another
        process's save or delete shows as it does in :meth:`ids`.

        Raises:
            WorkflowNotFound: When it is not stored in this scope.
        """
        self._engine.sync(self.scope)
        return self._engine.load(workflow_id, self.scope)

    def ids(self) -> list[str]:
        """Return the ids of this scope's workflows, sorted."""
        self._engine.sync(self.scope)
        return self._engine.index.ids(self.scope)

    def __len__(self) -> int:
        return len(self.ids())

    def __contains__(self, workflow_id: object) -> bool:
        self._engine.sync(self.scope)
        return (self.scope, workflow_id) in self._engine.index

    @telemetry.traced("search_memory")
    def retrieve(self, workflow: Workflow) -> list[Match]:
        """Retrieve this scope's workflows similar to ``workflow`` (paper's rule), best first."""
        return self._match(workflow, self.retrieval.match_config().window)

    def _match(self, workflow: Workflow, window: int | None) -> list[Match]:
        """The paper's rule on the last ``window`` leaves of ``workflow`` (``None``: all)."""
        config = self.retrieval.match_config()
        if window != config.window:
            config = dataclasses.replace(config, window=window)
        self._engine.sync(self.scope)
        with self._engine.lock.shared:  # reads run together; a save waits for them
            found = self._engine.index.match(workflow, scope=self.scope, config=config)
        return [m for m in found if m.workflow_id != workflow.id]

    def request(self, workflow: Workflow) -> SuggestionRequest:
        """Return what the suggesters see for ``workflow`` (retrieval included)."""
        self._engine.sync(self.scope)
        with self._engine.lock.shared:  # one consistent state for the models and the matches
            state = self.scope_memory()
            # A long workflow that matches nothing whole is matched by its recent leaves.
            found, window = retrieve_recent(
                partial(self._match, workflow),
                len(workflow.leaves()),
                window=self.retrieval.match_config().window,
            )
            query = state.query(workflow, exclude=(workflow.id,))
        return SuggestionRequest(
            workflow, tuple(found), state, query, self.crew_description, self._load_quiet,
            self._prefetch, threshold=self.threshold, window=window,
        )  # fmt: skip

    @telemetry.traced("search_memory")
    def suggest(self, workflow: Workflow, limit: int | None = 3) -> list[Suggestion]:
        """Suggest next steps for the current workflow.

        Args:
            workflow: The current workflow (retrieval uses this memory's scope).
            limit: How many suggestions (``None``: every candidate, as the evaluation uses).

        Returns:
            Structured suggestions, best first (see :class:`~em_plugin.suggest.types.Suggestion`).
        """
        with self._engine.using(self.scope):  # not unloaded by other scopes' turns meanwhile
            return self.suggest_from(self.request(workflow), limit)

    def suggest_from(self, request: SuggestionRequest, limit: int | None = 3) -> list[Suggestion]:
        """Run the suggestion chain on a request from :meth:`request`.

        This is what :meth:`suggest` does after retrieval; the evaluation uses both halves to also
        see the matches.

        An active procedure the current workflow has begun comes first (source
        ``"procedure"``, docs/lifecycle.md).
        """
        dismissed = self._asking(request.workflow)
        wanted = _wanted(limit, dismissed)
        # The suggesters read memory under the shared lock: suggestions run together.
        found = self.chain.suggest(request, wanted, guard=self._engine.lock.shared)
        return self._finish(request.workflow, found, dismissed, limit)

    def _asking(self, workflow: Workflow) -> set[str]:
        """Note the session's current workflow; return what was dismissed in the session."""
        session = workflow.session
        if not session:
            return set()
        self._asked.put(self.scope, session, workflow)
        return self.acceptance.dismissed_in(session)

    def _finish(
        self, workflow: Workflow, found: list[Suggestion], dismissed: set[str], limit: int | None
    ) -> list[Suggestion]:
        """Drop what was dismissed, rank by this scope's feedback, put procedures first."""
        if dismissed:
            found = [s for s in found if (s.tool or s.text) not in dismissed]
        found = self.acceptance.feedback.rerank(context_of(workflow), found)
        return self.lifecycle.put_first(workflow, found[:limit] if limit else found, limit=limit)

    # ------------------------------------------------------------------------------ lifecycle

    @property
    def lifecycle(self) -> Lifecycle:
        """Versions, retirement, outcomes and procedures of this memory's scope (docs/lifecycle.md).

        ``memory.with_scope(s).lifecycle`` is another scope's.
        """
        return Lifecycle(self._engine, self.scope, cache=self._lifecycle)

    # ------------------------------------------------------------------------------ provenance

    def record_suggestions(
        self,
        session_id: str,
        suggestions: Sequence[Suggestion],
        *,
        workflow_ids: Sequence[str] | None = None,
        time: datetime | None = None,
        workflow: Workflow | None = None,
    ) -> str | None:
        """Record a round of shown suggestions as PROV (which memory workflows shaped them).

        The session's previous round is judged first: which of its suggestions the steps since
        then took, if any (docs/suggestions.md, "Acceptance").

        Args:
            session_id: The chat session.
            suggestions: The suggestions shown, in rank order.
            workflow_ids: The retrieved workflows (``prov:used``); default: the evidence ones.
            time: When they were shown (default: now).
            workflow: The session's workflow when they were shown (default: the last workflow
                of this session, ``Workflow.session``, that this memory suggested for).

        Returns:
            The timestamp naming the record, or ``None`` when there was nothing to record.
        """
        if self.on_suggestions is not None:
            self.on_suggestions(str(session_id), tuple(suggestions))
        if not suggestions:
            self._asked.take(self.scope, str(session_id))  # nothing shown: no round to judge by it
            return None
        # Provenance cites only workflows stored when the suggestions were made: never the
        # session's own (unsaved, or saved later) workflow (docs/suggestions.md).
        stored = [
            dataclasses.replace(s, evidence=tuple(e for e in s.evidence if e.workflow_id in self))
            for s in suggestions
        ]
        if workflow_ids is None:
            seen = {e.workflow_id: None for s in stored for e in s.evidence}
            workflow_ids = list(seen)
        records = [self.redactor.suggestion(s.to_json()) for s in stored]
        crew = self.crew_description.name if self.crew_description is not None else None
        stamp = self._engine.record_suggestions(
            session_id, records, workflow_ids, self.scope, time, crew
        )
        asked = self._asked.take(self.scope, str(session_id))
        shown = workflow if workflow is not None else asked
        if shown is not None:
            self.acceptance.shown(str(session_id), stamp, suggestions, shown)
        return stamp

    def accept_suggestion(self, suggestion_id: str) -> str:
        """Record that a shown suggestion was accepted (said by a user or an app).

        Args:
            suggestion_id: Its id (``em-plugin query suggestion-acceptance`` lists them).

        Returns:
            The id.

        Raises:
            SuggestionError: For a malformed id or one this scope never recorded.
        """
        return self.acceptance.say(suggestion_id, "accepted").id

    def dismiss_suggestion(self, suggestion_id: str) -> str:
        """Record that a shown suggestion was dismissed; it is not suggested again in its session.

        Args:
            suggestion_id: Its id (``em-plugin query suggestion-acceptance`` lists them).

        Returns:
            The id.

        Raises:
            SuggestionError: For a malformed id or one this scope never recorded.
        """
        return self.acceptance.say(suggestion_id, "dismissed").id

    # ------------------------------------------------------------------------------ async

    async def asave(self, workflow: Workflow, *, validate: bool | None = None) -> Workflow:
        """Async twin of :meth:`save` (runs in a worker thread)."""
        return await asyncio.to_thread(self.save, workflow, validate=validate)

    async def asave_many(self, workflows: Iterable[Workflow], **kwargs: Any) -> list[Workflow]:
        """Async twin of :meth:`save_many`."""
        return await asyncio.to_thread(self.save_many, list(workflows), **kwargs)

    async def aretrieve(self, workflow: Workflow) -> list[Match]:
        """Async twin of :meth:`retrieve`."""
        return await asyncio.to_thread(self.retrieve, workflow)

    @telemetry.traced("search_memory")
    async def asuggest(self, workflow: Workflow, limit: int | None = 3) -> list[Suggestion]:
        """Async twin of :meth:`suggest`; an async chat model is awaited on the caller's loop."""
        with self._engine.using(self.scope):
            request = await asyncio.to_thread(self.request, workflow)
            dismissed = await asyncio.to_thread(self._asking, request.workflow)
            found = await self.chain.asuggest(
                request, _wanted(limit, dismissed), offload=self._locked
            )
        return await asyncio.to_thread(self._finish, request.workflow, found, dismissed, limit)

    async def arecord_suggestions(
        self, session_id: str, suggestions: Sequence[Suggestion], **kw: Any
    ) -> str | None:
        """Async twin of :meth:`record_suggestions`."""
        return await asyncio.to_thread(self.record_suggestions, session_id, suggestions, **kw)

    async def _locked(self, function: Callable[[], Any]) -> Any:
        def run() -> Any:
            with self._engine.lock.shared:
                return function()

        return await asyncio.to_thread(run)

    # ------------------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Finish background saves, persist the index and release the store.

        A store passed in stays open.
        """
        self._writer.flush()
        self._engine.close()

    def __enter__(self) -> EpisodicMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prefetch(self, workflow_ids: Sequence[str]) -> None:
        try:
            self._engine.load_many(workflow_ids, self.scope)
        except ProvenanceError as exc:  # the loads that follow report (or survive) it
            log.debug("prefetching cited workflows failed: %s", exc)

    def _load_quiet(self, workflow_id: str) -> Workflow | None:
        # The request was built after a catch-up with the store (request()): the suggesters
        # read the cited workflows as of then, without a store check per cited leaf.
        try:
            return self._engine.load(workflow_id, self.scope)
        except ProvenanceError:
            return None


def _check_scope(scope: Any) -> None:
    if not isinstance(scope, str) or not scope.strip():
        raise ConfigurationError(f"scope must be a non-empty string, got {scope!r}")


def _wanted(limit: int | None, dismissed: set[str]) -> int | None:
    # Asked for more than shown: dismissed ones leave, and what users keep taking here may
    # rank below the limit (docs/suggestions.md, "Learning from acceptance").
    return None if limit is None else 3 * limit + len(dismissed)
