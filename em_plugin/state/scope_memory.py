"""One scope's suggestion models, built over the scope's own arrays.

A scope has one state: its :class:`~em_plugin.state.scope_index.ScopeIndex` holds the one slot
table, the one tool vocabulary, the context table with its vectors, the args and routes tables,
and is compacted as one. :class:`ScopeMemory` is the suggestion side of that state: the models
the memory's suggesters declare (:class:`~em_plugin.state.scope_models.ScopeModelSpec`: the
continuation index and the procedural graph of the built-in chains, and any a new suggester
brings) are indexes over those arrays, and a :class:`~em_plugin.state.episodes.ContextTable`
keeps the reference counts and cosines of the scope's contexts, shared by the models. Once
attached, the scope tells it of every slot it adds or kills, and it tells every model, so a save
or a delete is written once, to the scope (docs/state.md). This module knows the models only
through their protocol (:mod:`em_plugin.state.scope_models`), never a suggester.

The models are built in one vectorised pass over the scope's live slots when the scope is first
used for suggestions; a compacted scope is a new object whose models are built again on first
use. Nothing is parsed, reduced or embedded again for that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from em_plugin._deprecation import deprecated
from em_plugin.errors import ConfigurationError
from em_plugin.state.arrays import gather_index
from em_plugin.state.episodes import ContextTable, Episode, episode_of
from em_plugin.state.scope_index import ScopeIndex
from em_plugin.state.scope_models import ModelScope, Query, ScopeModel, ScopeModelSpec
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
        models: The models to build and keep up to date, as the suggesters declare them
            (``SuggestionChain.scope_models()``); names must be distinct.
        on_demand: Models built only when :meth:`model` first asks for one (then kept up to
            date too): the built-in ones no suggester of the chain declared, which a suggester
            written before declarations existed may still read.
        use_text: ``False`` treats every instruction as the same text (ablation).
        arrays: The scope's state to build over; ``None``: a new empty one of its own.

    Raises:
        ConfigurationError: When two models share a name.
    """

    def __init__(
        self,
        dimension: int,
        embed: Embed,
        *,
        models: Sequence[ScopeModelSpec] = (),
        on_demand: Sequence[ScopeModelSpec] = (),
        use_text: bool = True,
        arrays: ScopeIndex | None = None,
    ) -> None:
        names = [spec.name for spec in models]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"model names must be distinct, got {names}")
        self.embed = embed
        self.use_text = use_text
        self.dimension = dimension
        self.specs = tuple(models)
        self._on_demand = {spec.name: spec for spec in on_demand if spec.name not in names}
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
        self._scope = ModelScope(arrays, self.contexts, textless=not self.use_text)
        self.models: dict[str, ScopeModel] = {
            spec.name: spec.build(self._scope) for spec in self.specs
        }
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
        for model in self.models.values():
            model.added(first_slot, count)

    def removed(self, workflow_id: str, slot: int) -> None:
        """Forget a workflow whose slot the scope just marked dead."""
        start, end = self.arrays.span(slot)
        ids = self._model_contexts(self.arrays.context_codes.view()[start:end]).tolist()
        for model in self.models.values():
            model.removed(slot)
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

    def model(self, name: str) -> Any:
        """Return the scope's model of that name (a suggester's declared model).

        Raises:
            ConfigurationError: When no suggester of the memory declared it (the message
                names the models held).
        """
        found = self.models.get(name)
        if found is None and name in self._on_demand:
            found = self.models[name] = self._on_demand[name].build(self._scope)
        if found is None:
            held = ", ".join(sorted(self.models)) or "none"
            raise ConfigurationError(
                f"this scope has no model {name!r} (it holds: {held}); a suggester that reads "
                "it declares it in scope_models, and the memory's chain must include it"
            )
        return found

    def instruction_similarities(self, vector: np.ndarray) -> np.ndarray:
        """Return the cosine of ``vector`` with each context (``nan``: released)."""
        return self.contexts.similarities(vector)

    def tools(self) -> list[str]:
        """Return the tools the scope's stored workflows called, in first-seen order."""
        arrays = self.arrays
        live = np.flatnonzero(arrays.alive.view())
        codes = arrays.codes.view()[
            gather_index(arrays.offsets.view()[live], arrays.lengths.view()[live])
        ]
        held = np.bincount(codes[codes >= 0], minlength=len(arrays.tools)) > 0
        return [arrays.tools[t] for t in np.flatnonzero(held).tolist()]

    # -- deprecated: the built-in models' questions, now asked of the model itself ------------

    def continuations(self, query: Query) -> list[Any]:
        """Deprecated: ``model("continuation").rank(query)``."""
        deprecated("ScopeView.continuations(query)", 'view.model("continuation").rank(query)')
        ranked: list[Any] = self.model("continuation").rank(query)
        return ranked

    def next_tools(self, last: str | None, context: np.ndarray | None, *, k: int) -> list[Any]:
        """Deprecated: ``model("procedural").next_tools(last, context, k=k)``."""
        deprecated("ScopeView.next_tools(...)", 'view.model("procedural").next_tools(...)')
        ranked: list[Any] = self.model("procedural").next_tools(last, context, k=k)
        return ranked

    @property
    def graph(self) -> Any:
        """Deprecated: ``model("procedural")``, the procedural graph."""
        deprecated("ScopeMemory.graph", 'scope_memory.model("procedural")')
        return self.model("procedural")

    @property
    def continuation(self) -> Any:
        """Deprecated: ``model("continuation")``, the continuation model."""
        deprecated("ScopeMemory.continuation", 'scope_memory.model("continuation")')
        return self.model("continuation")

    def tool_scores(self) -> dict[str, float]:
        """Deprecated: ``model("procedural").tool_scores()``."""
        deprecated("ScopeView.tool_scores()", 'view.model("procedural").tool_scores()')
        scores: dict[str, float] = self.model("procedural").tool_scores()
        return scores

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
