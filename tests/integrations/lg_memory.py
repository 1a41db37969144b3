"""Memory for the LangGraph tests: the real EpisodicMemory over an in-memory store, FakeEmbedder."""

from __future__ import annotations

from typing import Any

from em_plugin.embedding import FakeEmbedder
from em_plugin.matching import LeafSequence, Match, MatchConfig, leaf_texts, reference_match
from em_plugin.suggestions import Evidence, Suggestion
from provenance.model import CallStep, Workflow


class _TinyMemory:
    """A stand-in with EpisodicMemory's surface, used only until em_plugin.memory exists."""

    def __init__(self, scope: str = "default", shared: dict | None = None, **_: Any) -> None:
        self.scope = scope
        self.embedder = FakeEmbedder(64)
        self.shared = shared if shared is not None else {}
        self.recorded: list[tuple[str, list[Suggestion]]] = []

    def with_scope(self, scope: str) -> _TinyMemory:
        other = _TinyMemory(scope, self.shared)
        other.embedder, other.recorded = self.embedder, self.recorded
        return other

    def _seq(self, workflow: Workflow) -> LeafSequence:
        tools, texts = leaf_texts(workflow)
        vectors = self.embedder.embed([t or "" for t in texts])
        return LeafSequence(tools, texts, vectors)

    def save(self, workflow: Workflow) -> Workflow:
        self.shared[(self.scope, workflow.id)] = workflow.replace(scope=self.scope)
        return self.shared[(self.scope, workflow.id)]

    def load(self, workflow_id: str) -> Workflow:
        return self.shared[(self.scope, workflow_id)]

    def retrieve(self, workflow: Workflow) -> list[Match]:
        pool = [(k[1], self._seq(w)) for k, w in self.shared.items() if k[0] == self.scope]
        pool = [(i, s) for i, s in pool if i != workflow.id]
        return reference_match(self._seq(workflow), pool, MatchConfig())

    def suggest(self, workflow: Workflow, limit: int = 3) -> list[Suggestion]:
        out: list[Suggestion] = []
        for match in self.retrieve(workflow):
            leaves = self.load(match.workflow_id).leaves()
            if match.end + 1 < len(leaves):
                leaf = leaves[match.end + 1]
                name = leaf.name if isinstance(leaf, CallStep) else None
                text = f"Run {name}" if name else leaf.text
                ev = (Evidence(match.workflow_id, match.end + 1, match.score),)
                out.append(Suggestion(text, tool=name, score=match.score, evidence=ev))
        return out[:limit]

    def record_suggestions(self, session_id: str, suggestions: list[Suggestion], **_: Any) -> None:
        self.recorded.append((session_id, suggestions))

    async def asave(self, workflow: Workflow) -> Workflow:
        return self.save(workflow)

    async def aretrieve(self, workflow: Workflow) -> list[Match]:
        return self.retrieve(workflow)

    async def asuggest(self, workflow: Workflow, limit: int = 3) -> list[Suggestion]:
        return self.suggest(workflow, limit)

    def close(self) -> None:
        pass


def make_memory(**kwargs: Any) -> Any:
    """The real EpisodicMemory when it exists, else the stand-in."""
    try:
        from em_plugin.memory import EpisodicMemory
    except ImportError:
        return _TinyMemory(**kwargs)
    from provenance.stores import open_store

    kwargs.setdefault("embedder", FakeEmbedder(64))
    kwargs.setdefault("store", open_store("memory:"))
    return EpisodicMemory(**kwargs)
