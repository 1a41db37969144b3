"""One scope's suggestion state: contexts, the continuation index and the procedural graph.

:class:`ScopeMemory` keeps the three in step: a workflow is added to all of them or (on delete)
removed from all of them, and the vectors of instruction contexts that no stored workflow uses
any more are dropped with it.

It is derived data: a memory builds it when a scope is first used, in one vectorised pass over
the step index's arrays (:meth:`ScopeMemory.load_index`). The index's per-leaf context and args
ids and its context vectors, persisted with the index snapshot, become the state's own ids and
vectors, so nothing is parsed, reduced or embedded again (docs/state.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from em_plugin.state.continuation import Candidate, ContinuationConfig, ContinuationIndex, Query
from em_plugin.state.episodes import ContextTable, Episode, episode_of
from em_plugin.state.procedural import DEFAULT_C, DEFAULT_SIMILARITY, ProceduralGraph, Transition
from em_plugin.state.scope_index import ScopeIndex
from provenance.model import Workflow

__all__ = ["ScopeMemory"]

Embed = Callable[[Sequence[str]], np.ndarray]


class ScopeMemory:
    """The suggestion state of one scope.

    Args:
        dimension: The embedding dimension.
        embed: Embeds context texts (the memory's cached embedder).
        config: Continuation model parameters.
        c: H-EPM efficiency weight of the procedural graph.
        similarity_threshold: Context cosine from which a graph edge ranks by similarity.
        use_text: ``False`` treats every instruction as the same text (ablation).
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
    ) -> None:
        self.embed = embed
        self.use_text = use_text
        self.contexts = ContextTable(dimension)
        self.continuation = ContinuationIndex(self.contexts, config)
        self.graph = ProceduralGraph(self.contexts, c=c, similarity_threshold=similarity_threshold)

    def __len__(self) -> int:
        return len(self.continuation)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self.continuation

    def ids(self) -> list[str]:
        """Return the workflow ids held, sorted."""
        return self.continuation.ids()

    def load_index(self, scope: ScopeIndex) -> None:
        """Fill an empty state from a step-index scope in one vectorised pass.

        The scope's tools, context table (with its vectors) and args table become the state's
        own, so the result equals adding the scope's episodes one by one in save order.

        Raises:
            ValueError: When the state is not empty, or the scope lacks context vectors.
        """
        if len(self):
            raise ValueError("load_index() needs an empty state")
        ids, lengths, codes, contexts, args, routes = scope.live_leaves()
        tokens = np.where(codes >= 0, codes, -1).astype(np.int64)
        contexts = contexts.astype(np.int64)
        if self.use_text:
            if scope.context_vectors.size != len(scope.contexts):
                raise ValueError("the step index scope has no vectors for its contexts")
            texts, vectors = scope.contexts.values, scope.context_vectors.view()
        else:  # the ablation: every instruction is the same text
            contexts = np.where(contexts >= 0, 0, -1)
            texts = ["instruction"]
            vectors = np.asarray(self.embed(texts), dtype=np.float32).reshape(1, -1)
        refs = np.bincount(contexts[contexts >= 0], minlength=len(texts))
        self.contexts = ContextTable.from_arrays(texts, vectors, refs)
        self.continuation = ContinuationIndex(self.contexts, self.continuation.config)
        self.graph = ProceduralGraph(
            self.contexts, c=self.graph.c, similarity_threshold=self.graph.similarity_threshold
        )
        self.continuation.set_tables(scope.tools, scope.args.values, scope.routes.values)
        self.graph.set_tools(scope.tools)
        self.continuation.add_bulk(ids, tokens, lengths, contexts, args, routes)
        self.graph.add_bulk(ids, tokens, lengths, contexts)

    def add_many(self, workflows: Iterable[Workflow]) -> list[str]:
        """Add workflows (replacing same ids); embeds all new contexts in one call.

        Returns:
            Context texts released by replaced workflows (no longer used in this scope).
        """
        return self.add_episodes([episode_of(w, use_text=self.use_text) for w in workflows])

    def add_episodes(self, episodes: Iterable[Episode]) -> list[str]:
        """Add reduced workflows (as the step index keeps them), replacing same ids.

        Returns:
            Context texts released by replaced workflows (no longer used in this scope).
        """
        # A repeated id keeps its last episode.
        latest = {e.workflow_id: e for e in episodes}
        episodes = [e if self.use_text else _textless(e) for e in latest.values()]
        released: list[str] = []
        for episode in episodes:
            released.extend(self.remove(episode.workflow_id))
        new = [t for e in episodes for t in e.contexts if t is not None and t not in self.contexts]
        vectors = self.embed(list(dict.fromkeys(new))) if new else None
        table = dict(zip(dict.fromkeys(new), vectors, strict=True)) if vectors is not None else {}
        ids = [
            self.contexts.acquire(e.contexts, lambda texts: np.stack([table[t] for t in texts]))
            for e in episodes
        ]
        # One vectorised pass per batch, not one per workflow.
        self.continuation.add_many(episodes, ids)
        self.graph.add_many(episodes, ids)
        return [t for t in released if t not in self.contexts]

    def remove(self, workflow_id: str) -> list[str]:
        """Remove a workflow; return the context texts no other workflow of the scope uses."""
        if workflow_id not in self.continuation:
            return []
        ids = self.continuation.context_ids(workflow_id)
        self.continuation.remove(workflow_id)
        self.graph.remove(workflow_id)
        return self.contexts.release(ids)

    def episode(self, workflow_id: str) -> Episode | None:
        """Return a held workflow's episode."""
        return self.continuation.episode(workflow_id)

    def routes(self, workflow_id: str) -> dict[str, str] | None:
        """Return a held workflow's handoff routes (``None``: unknown, or not held)."""
        return self.continuation.routes(workflow_id)

    def version(self, workflow_id: str) -> tuple[int, int] | None:
        """Return a token that changes whenever the workflow is saved again (``None``: not held)."""
        return self.continuation.version(workflow_id)

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


def _textless(episode: Episode) -> Episode:
    # The use_text=False ablation: every instruction is the same text (see episode_of).
    contexts = tuple(None if c is None else "instruction" for c in episode.contexts)
    return Episode(episode.workflow_id, episode.tools, contexts, episode.args, episode.routes)
