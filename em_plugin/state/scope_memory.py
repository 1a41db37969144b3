"""One scope's suggestion models, built over the scope's own arrays.

A scope has one state: its :class:`~em_plugin.state.scope_index.ScopeIndex` holds the one slot
table, the one tool vocabulary, the context table with its vectors, the args and routes tables,
and is compacted as one. :class:`ScopeMemory` is the suggestion side of that state: the
continuation index and the procedural graph are indexes over those arrays (they read the
scope's slots, tools, per-leaf contexts and args and call counts, and keep only their positions,
postings and edge uses, keyed by the scope's slots and leaf offsets), and a
:class:`~em_plugin.state.episodes.ContextTable` keeps the reference counts and cosines of the
scope's contexts. Once attached, the scope tells it of every slot it adds or kills, so a save or
a delete is written once, to the scope (docs/state.md).

The models are built in one vectorised pass over the scope's live slots when the scope is first
used for suggestions; a compacted scope is a new object whose models are built again on first
use. Nothing is parsed, reduced or embedded again for that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from em_plugin.state.arrays import gather_index
from em_plugin.state.continuation import Candidate, ContinuationConfig, ContinuationIndex, Query
from em_plugin.state.episodes import ContextTable, Episode, episode_of
from em_plugin.state.procedural import DEFAULT_C, DEFAULT_SIMILARITY, ProceduralGraph, Transition
from em_plugin.state.scope_index import ScopeIndex
from provenance.model import Workflow

__all__ = ["ScopeMemory"]

Embed = Callable[[Sequence[str]], np.ndarray]

#: The one context of the ``use_text=False`` ablation.
_TEXTLESS = "instruction"


class ScopeMemory:
    """The suggestion models of one scope, over its arrays.

    Args:
        dimension: The embedding dimension.
        embed: Embeds texts (the memory's cached embedder).
        config: Continuation model parameters.
        c: H-EPM efficiency weight of the procedural graph.
        similarity_threshold: Context cosine from which a graph edge ranks by similarity.
        use_text: ``False`` treats every instruction as the same text (ablation).
        arrays: The scope's state to build over; ``None``: a new empty one of its own.
    """

    def __init__(
        self,
        dimension: int,
        embed: Embed,
        *,
        config: ContinuationConfig | None = None,
        c: float = DEFAULT_C,
        similarity_threshold: float = DEFAULT_SIMILARITY,
        use_text: bool = True,
        arrays: ScopeIndex | None = None,
    ) -> None:
        self.embed = embed
        self.use_text = use_text
        self.dimension = dimension
        self._config = config
        self._c = c
        self._similarity = similarity_threshold
        self._released: list[str] = []
        self.arrays = ScopeIndex(dimension) if arrays is None else arrays
        self._build()

    def _build(self) -> None:
        """Index the arrays' live slots in one vectorised pass and follow the arrays from now."""
        arrays = self.arrays
        live = np.flatnonzero(arrays.alive.view())
        index = gather_index(arrays.offsets.view()[live], arrays.lengths.view()[live])
        contexts = self._model_contexts(arrays.context_codes.view()[index])
        if self.use_text:
            if arrays.context_vectors.size != len(arrays.contexts):
                raise ValueError("the step index scope has no vectors for its contexts")
            texts = arrays.contexts.values
            refs = np.bincount(contexts[contexts >= 0], minlength=len(texts))
            # The scope's rows, shared: one copy of the vectors in memory, not two.
            self.contexts = ContextTable.from_arrays(texts, None, refs, rows=arrays.context_vectors)
        else:  # the ablation: every instruction is the same text
            texts = [_TEXTLESS]
            vectors = np.asarray(self.embed(texts), dtype=np.float32).reshape(1, -1)
            refs = np.bincount(contexts[contexts >= 0], minlength=len(texts))
            self.contexts = ContextTable.from_arrays(texts, vectors, refs)
        textless = not self.use_text
        self.continuation = ContinuationIndex(
            arrays, self.contexts, self._config, textless=textless
        )
        self.graph = ProceduralGraph(
            arrays,
            self.contexts,
            c=self._c,
            similarity_threshold=self._similarity,
            textless=textless,
        )
        arrays.models = self

    def _model_contexts(self, contexts: np.ndarray) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.int64)
        return contexts if self.use_text else np.where(contexts >= 0, 0, -1)

    # ------------------------------------------------------------------- what the arrays tell

    def added(self, first_slot: int, count: int) -> None:
        """Index the scope's slots ``[first_slot, first_slot + count)`` (just stored)."""
        arrays = self.arrays
        if count == 0:
            return
        if self.use_text and len(arrays.contexts) > self.contexts.capacity:
            known = self.contexts.capacity
            self.contexts.extend(
                arrays.contexts.values[known:], arrays.context_vectors.view()[known:]
            )
        # The new slots' leaves are the last ones stored.
        start = int(arrays.offsets.view()[first_slot])
        contexts = self._model_contexts(arrays.context_codes.view()[start:])
        texts = arrays.contexts.values if self.use_text else [_TEXTLESS]
        self.contexts.hold(contexts.tolist(), texts)
        self.continuation.added(first_slot, count)
        self.graph.added(first_slot, count)

    def removed(self, workflow_id: str, slot: int) -> None:
        """Forget a workflow whose slot the scope just marked dead."""
        start, end = self.arrays.span(slot)
        ids = self._model_contexts(self.arrays.context_codes.view()[start:end]).tolist()
        self.continuation.removed(slot)
        self.graph.removed(slot)
        self._released.extend(self.contexts.release(ids))

    # ------------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self.arrays)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self.arrays.id_slots

    def ids(self) -> list[str]:
        """Return the workflow ids held, sorted."""
        return sorted(self.arrays.id_slots)

    def episode(self, workflow_id: str) -> Episode | None:
        """Return a held workflow's episode."""
        slot = self.arrays.id_slots.get(workflow_id)
        if slot is None:
            return None
        episode = self.arrays.episode(slot)
        if self.use_text:
            return episode
        contexts = tuple(None if c is None else _TEXTLESS for c in episode.contexts)
        return Episode(episode.workflow_id, episode.tools, contexts, episode.args, episode.routes)

    def routes(self, workflow_id: str) -> dict[str, str] | None:
        """Return a held workflow's handoff routes (``None``: unknown, or not held)."""
        slot = self.arrays.id_slots.get(workflow_id)
        route = -1 if slot is None else int(self.arrays.route_codes.view()[slot])
        return dict(json.loads(self.arrays.routes.values[route])) if route >= 0 else None

    def version(self, workflow_id: str) -> tuple[int, int] | None:
        """Return a token that changes whenever the workflow is saved again (``None``: not held)."""
        return self.arrays.version(workflow_id)

    def query(self, workflow: Workflow, *, exclude: Iterable[str] = ()) -> Query:
        """Build the continuation query of a current workflow (embedding its last context)."""
        episode = episode_of(workflow, use_text=self.use_text)
        context = next((c for c in reversed(episode.contexts) if c is not None), None)
        vector = None
        if context is not None:
            found = self.contexts.id_of(context)
            vector = (
                self.contexts.vector(found).copy()
                if found >= 0
                else np.asarray(self.embed([context]), dtype=np.float32)[0]
            )
        return Query(episode.tools, vector, frozenset(exclude))

    # -- the suggesters' read-only view (em_plugin.suggest.base.ScopeView) ----------------------

    def continuations(self, query: Query) -> list[Candidate]:
        """Rank next tools for a query by the continuation model, best first."""
        return self.continuation.rank(query)

    def instruction_similarities(self, vector: np.ndarray) -> np.ndarray:
        """Return the cosine of ``vector`` with each context (``nan``: released)."""
        return self.contexts.similarities(vector)

    def next_tools(
        self, last: str | None, context: np.ndarray | None, *, k: int
    ) -> list[Transition]:
        """Rank the procedural graph's successors of ``last`` (``None``: no call yet)."""
        return self.graph.next_tools(last, context, k=k)

    def tool_scores(self) -> dict[str, float]:
        """Return each tool's incoming procedural weight."""
        return self.graph.tool_scores()

    def tools(self) -> list[str]:
        """Return the tools of the procedural graph."""
        return self.graph.tools()

    # ------------------------------------------------------------------- a state of its own

    def load_index(self, scope: ScopeIndex) -> None:
        """Build over another scope's arrays (replacing this state's own, which must be empty).

        Raises:
            ValueError: When the state is not empty, or the scope lacks context vectors.
        """
        if len(self):
            raise ValueError("load_index() needs an empty state")
        self.arrays = scope
        self._build()

    def add_many(self, workflows: Iterable[Workflow]) -> list[str]:
        """Add workflows to the scope (replacing same ids).

        Returns:
            Context texts released by replaced workflows (no longer used in this scope).
        """
        return self.add_episodes([episode_of(w) for w in workflows])

    def add_episodes(self, episodes: Iterable[Episode]) -> list[str]:
        """Add reduced workflows to the scope (replacing same ids).

        Returns:
            Context texts released by replaced workflows (no longer used in this scope).
        """
        self.arrays.add_episodes(list(episodes), self.embed)
        return self._drain()

    def remove(self, workflow_id: str) -> list[str]:
        """Remove a workflow; return the context texts no other workflow of the scope uses."""
        self.arrays.remove(workflow_id)
        return self._drain()

    def _drain(self) -> list[str]:
        released, self._released = self._released, []
        return [t for t in released if t not in self.contexts]
