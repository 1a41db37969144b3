"""What the suggesters need from a workflow: its leaves, their instruction contexts, their args.

An :class:`Episode` is a workflow reduced to its leaf sequence (docs/retrieval.md) with, for
every leaf, its *instruction context*: the text of the innermost instruction it happened under (an
instruction leaf is its own context). Contexts are what H-EPM keeps on the edges of its
tool-transition graph, and what the episodic ranking compares with the current instruction.

A :class:`ContextTable` holds one scope's distinct context texts and their vectors, reference
counted so that deleting the last workflow that used a text also deletes its vector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from provenance.json_text import json_writer
from provenance.model import CallStep, InstructionStep, Workflow

__all__ = ["MAX_ARGS_CHARS", "ContextTable", "Episode", "episode_of", "nested_routes"]

#: Arguments longer than this (as JSON) are not kept as "typical args" of a suggestion.
MAX_ARGS_CHARS = 2_000

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Episode:
    """A workflow's leaf sequence with instruction contexts and call arguments."""

    workflow_id: str
    """The workflow's id."""
    tools: tuple[str | None, ...]
    """Tool name per leaf; ``None`` for an instruction leaf."""
    contexts: tuple[str | None, ...]
    """Innermost instruction text per leaf; ``None`` when a call is under no instruction."""
    args: tuple[str | None, ...]
    """Canonical JSON of each call's args; ``None`` for instructions, empty or oversized args."""
    routes: str | None = None
    """Canonical JSON of the workflow's handoff routes (:func:`nested_routes`); ``None`` when
    unknown (an index written before routes were kept)."""

    def __len__(self) -> int:
        return len(self.tools)

    @property
    def calls(self) -> int:
        """How many leaves are calls (the H-EPM trajectory length)."""
        return sum(t is not None for t in self.tools)

    def opens_instruction(self, position: int) -> bool:
        """Whether the leaf at ``position`` is the first one under its instruction context."""
        context = self.contexts[position]
        if context is None:
            return False
        return (
            position == 0
            or self.tools[position] is None
            or (self.contexts[position - 1] != context)
        )


#: The text of an argument record and of a routes map (keys sorted, so equal records match).
_args_text = json_writer(sort_keys=True, default=str)
_sorted_text = json_writer(sort_keys=True)


def _args_json(args: Mapping[str, Any]) -> str | None:
    if not args:
        return None
    text = _args_text(dict(args))
    return text if len(text) <= MAX_ARGS_CHARS else None


def episode_of(workflow: Workflow, *, use_text: bool = True) -> Episode:
    """Reduce a workflow to its :class:`Episode`.

    Args:
        workflow: The workflow.
        use_text: ``False`` replaces every instruction text by one constant (the eval ablation:
            instructions are still steps, but their words carry no information).

    Returns:
        The episode.
    """
    tools: list[str | None] = []
    contexts: list[str | None] = []
    args: list[str | None] = []

    # Per depth of the walk, the innermost instruction text at or above the step there.
    above: list[str | None] = []
    for path, step in workflow.walk():
        del above[path.count(".") :]
        context = above[-1] if above else None
        own = context
        if isinstance(step, InstructionStep):
            own = step.text if use_text else "instruction"
        above.append(own)
        if step.steps:
            continue
        if isinstance(step, CallStep):
            tools.append(step.name)
            contexts.append(context)
            args.append(_args_json(step.args))
        else:
            tools.append(None)
            contexts.append(own)
            args.append(None)

    routes = _sorted_text(nested_routes(workflow))
    return Episode(workflow.id, tuple(tools), tuple(contexts), tuple(args), routes)


def nested_routes(workflow: Workflow) -> dict[str, str]:
    """Map each tool that a workflow only calls under another call to the outermost such call.

    A crew without a description still shows its handoffs in what it did: a sub-agent's calls
    nest under the call that handed over to it. A tool also called at the top of an instruction
    is reachable directly and gets no route. The step index keeps each stored workflow's routes
    (:attr:`Episode.routes`), so suggesters never parse a stored workflow to learn them.

    Args:
        workflow: A workflow (the current one, or a memory workflow a suggestion cites).

    Returns:
        ``{nested tool: outermost call above it}``.
    """
    routes: dict[str, str] = {}
    direct: set[str] = set()

    # Per depth of the walk, the outermost call at or above the step there.
    outers: list[str | None] = []
    for path, step in workflow.walk():
        del outers[path.count(".") :]
        outer = outers[-1] if outers else None
        if isinstance(step, CallStep):
            if outer is None:
                direct.add(step.name)
            else:
                routes.setdefault(step.name, outer)
            outers.append(outer or step.name)
        else:
            outers.append(outer)
    return {tool: route for tool, route in routes.items() if tool not in direct}


class _Rows(Protocol):
    """Growable rows (:class:`~em_plugin.state.arrays.GrowRows`)."""

    size: int

    def view(self) -> np.ndarray:
        """Return the filled rows."""
        ...


#: Lookups a table built from a stored scope answers by scanning before it builds its dict.
_SCANS = 8


class ContextTable:
    """Distinct instruction-context texts of one scope, with unit vectors and reference counts.

    Args:
        dimension: The embedding dimension.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        # Text -> id; ``None`` until first needed (a table built at once from a stored scope
        # answers its first lookups by a scan of ``_texts``: see :meth:`id_of`).
        self._lookup: dict[str, int] | None = {}
        self._scans = 0
        self._texts: list[str | None] = []
        self._refs: list[int] = []
        self._free: list[int] = []
        self._version = 0  # changes with every vector stored or released
        self._rewrites = 0  # released ids given another text's vector
        self._last: tuple[tuple[int, bytes], np.ndarray] | None = None
        self._vectors = np.zeros((0, dimension), dtype=np.float32)
        # The scope's own rows when the table follows a scope (one copy of the vectors, not
        # two: at a million contexts each copy is 1.5 GB); ``None``: ``_vectors`` holds them.
        self._rows: _Rows | None = None

    def __len__(self) -> int:
        if self._lookup is None:  # a text is held exactly when its id is not free
            return len(self._texts) - len(self._free)
        return len(self._lookup)

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and self.id_of(text) >= 0

    @property
    def _ids(self) -> dict[str, int]:
        """Text -> id of the held texts, in id order then insertion order (built on first use)."""
        if self._lookup is None:
            self._lookup = {t: i for i, t in enumerate(self._texts) if t is not None}
        return self._lookup

    @property
    def capacity(self) -> int:
        """Ids are in ``[0, capacity)`` (released ones included)."""
        return len(self._texts)

    def id_of(self, text: str | None) -> int:
        """Return the id of a stored text, or ``-1`` (``None`` or not stored)."""
        if text is None:
            return -1
        if self._lookup is None and self._scans < _SCANS:
            # A scan in C is far cheaper than hashing every text of a large scope, which a
            # process's first suggestions would otherwise pay for one lookup each. Held texts
            # are distinct, so the first match is the id the dict would give.
            self._scans += 1
            try:
                return self._texts.index(text)
            except ValueError:
                return -1
        return self._ids.get(text, -1)

    def text(self, context_id: int) -> str | None:
        """Return the text of an id (``None`` for ``-1`` or a released id)."""
        return self._texts[context_id] if context_id >= 0 else None

    def texts(self) -> list[str]:
        """Return every stored text."""
        return list(self._ids)

    def acquire(self, texts: Iterable[str | None], embed: Embed) -> list[int]:
        """Add one reference to each text (embedding the new ones in one call); return ids.

        ``None`` maps to ``-1`` and holds no reference.
        """
        texts = list(texts)
        new = list(dict.fromkeys(t for t in texts if t is not None and t not in self._ids))
        if new:
            vectors = np.asarray(embed(new), dtype=np.float32)
            for fresh, vector in zip(new, vectors, strict=True):
                self._insert(fresh, vector)
        ids = []
        for text in texts:
            if text is None:
                ids.append(-1)
                continue
            ids.append(self._ids[text])
            self._refs[self._ids[text]] += 1
        return ids

    def release(self, ids: Iterable[int]) -> list[str]:
        """Drop one reference per id; return the texts whose last reference went (now deleted)."""
        gone = []
        for context_id in ids:
            if context_id < 0 or self._texts[context_id] is None:
                continue
            self._refs[context_id] -= 1
            if self._refs[context_id] <= 0:
                text = self._texts[context_id]
                assert text is not None
                gone.append(text)
                del self._ids[text]
                self._texts[context_id] = None
                self._refs[context_id] = 0
                self._version += 1
                self._free.append(context_id)  # its vector no longer counts (nan cosine)
        return gone

    def extend(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Append texts at the next ids, unreferenced (the scope's context table grew).

        A table that follows a scope's context ids (:class:`~em_plugin.state.scope_memory.
        ScopeMemory`) never reuses a released id: it appends what the scope appends.
        """
        if not texts:
            return
        start = len(self._texts)
        end = start + len(texts)
        if self._rows is not None and self._rows.size < end:
            self._detach()  # the rows do not hold these vectors: keep a copy of our own
        if self._rows is not None:
            pass  # the scope's rows already hold the new vectors
        elif end > len(self._vectors):
            grown = np.zeros((max(16, end, 2 * len(self._vectors)), self.dimension), np.float32)
            grown[: len(self._vectors)] = self._vectors
            self._vectors = grown
        if self._rows is None:
            self._vectors[start:end] = np.asarray(vectors, dtype=np.float32)
        self._texts.extend([None] * len(texts))
        self._refs.extend([0] * len(texts))
        self._free.extend(range(start, end))
        self._version += 1  # the cosines kept for a query no longer cover every id

    def hold(self, ids: Iterable[int], texts: Sequence[str]) -> None:
        """Add one reference per id (``-1`` is skipped); ``texts[i]`` is id ``i``'s text."""
        revived: list[int] = []
        lookup = self._ids  # built before _texts changes: a revived text goes last, as always
        for context_id in ids:
            if context_id < 0:
                continue
            if self._refs[context_id] == 0:
                text = texts[context_id]
                self._texts[context_id] = text
                lookup[text] = context_id
                revived.append(context_id)
            self._refs[context_id] += 1
        if revived:
            self._version += 1
            gone = set(revived)
            self._free = [i for i in self._free if i not in gone]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with every id's vector; ``nan`` for released ids (read-only).

        The last answer is kept: a turn asks for the same query several times (continuation
        weights, the familiarity check, the procedural graph).
        """
        query = np.asarray(query, dtype=np.float32)
        key = (self._version, query.tobytes())
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        rows = self._table()[: len(self._texts)]
        # einsum, not BLAS: a matrix-vector product this small is memory-bound, and BLAS
        # threads on a busy machine made it 5-20x slower (measured; docs/state.md).
        sims = np.einsum("ij,j->i", rows, query).astype(np.float64)
        if self._free:  # released ids are exactly the free ones
            sims[self._free] = np.nan
        sims.flags.writeable = False
        self._last = (key, sims)
        return sims

    def similarities_of(self, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with the vectors of ``ids``: ``similarities(query)[ids]``, same bits.

        A few ids (the contexts of one tool's transitions) cost a product with their rows only,
        not with the whole table: under concurrent suggestions the kept answer of
        :meth:`similarities` is often another query's by the time they are asked for.
        """
        query = np.asarray(query, dtype=np.float32)
        ids = np.asarray(ids, dtype=np.int64)
        last = self._last
        if (last is not None and last[0] == (self._version, query.tobytes())) or (
            4 * len(ids) >= len(self._texts)
        ):
            return self.similarities(query)[ids]
        unique, inverse = np.unique(ids, return_inverse=True)
        # The same product of the same rows, row by row, as the whole table's (same bits).
        values = np.einsum("ij,j->i", self._table()[unique], query).astype(np.float64)
        if self._free:
            values[np.isin(unique, self._free)] = np.nan
        return values[inverse]

    def vector(self, context_id: int) -> np.ndarray:
        """Return the vector of an id."""
        return self._table()[context_id]

    def rows(self) -> np.ndarray:
        """Return the vectors by id, ``(capacity, dimension)``, released ids too (read-only)."""
        view = self._table()[: len(self._texts)].view()
        view.flags.writeable = False
        return view

    def live_ids(self) -> np.ndarray:
        """Return the ids held (not released), ascending."""
        held = np.ones(len(self._texts), dtype=bool)
        held[self._free] = False
        return np.flatnonzero(held)

    @property
    def rewrites(self) -> int:
        """How many times a released id was given another text's vector (ids kept otherwise)."""
        return self._rewrites

    @classmethod
    def from_arrays(
        cls,
        texts: Sequence[str],
        vectors: np.ndarray | None,
        refs: np.ndarray,
        *,
        rows: _Rows | None = None,
    ) -> ContextTable:
        """Build a table at once: id ``i`` is ``texts[i]`` with ``refs[i]`` references.

        Ids without a reference are free (as if released), so they never count as contexts.

        Args:
            texts: The texts, by id.
            vectors: Their unit vectors (copied), or ``None`` with ``rows``.
            refs: Their reference counts.
            rows: Growable rows holding the vectors, shared rather than copied (a scope's
                context vectors, which the scope appends to before :meth:`extend`).

        Raises:
            ValueError: When the lengths differ.
        """
        source = rows.view() if rows is not None else vectors
        if source is None:
            raise ValueError("from_arrays needs vectors or rows")
        table = cls(int(source.shape[1]) if source.ndim == 2 else 0)
        refs = np.asarray(refs, dtype=np.int64)
        if len(texts) != len(source) or len(refs) != len(texts):
            raise ValueError("texts, vectors and refs must have the same length")
        if rows is not None:
            table._rows = rows
        else:
            table._vectors = np.array(source, dtype=np.float32)
        table._refs = refs.tolist()
        held = refs > 0
        free = np.flatnonzero(~held).tolist()
        table._texts = list(texts)
        for context_id in free:
            table._texts[context_id] = None
        table._lookup = None  # built when first needed (see _ids)
        table._free = free[::-1]
        return table

    def _table(self) -> np.ndarray:
        return self._rows.view() if self._rows is not None else self._vectors

    def _detach(self) -> None:
        """Copy the shared rows into a table of our own (before writing a vector)."""
        if self._rows is not None:
            self._vectors = np.array(self._rows.view(), dtype=np.float32)
            self._rows = None

    def _insert(self, text: str, vector: np.ndarray) -> None:
        lookup = self._ids  # built before _texts changes (see hold)
        self._detach()
        self._version += 1
        if self._free:
            slot = self._free.pop()
            self._texts[slot] = text
            self._vectors[slot] = vector
            self._rewrites += 1
        else:
            slot = len(self._texts)
            self._texts.append(text)
            self._refs.append(0)
            if slot >= len(self._vectors):
                grown = np.zeros((max(16, 2 * slot), self.dimension), dtype=np.float32)
                grown[: len(self._vectors)] = self._vectors
                self._vectors = grown
            self._vectors[slot] = vector
        lookup[text] = slot
