"""Per-scope storage of the step index: leaf codes, postings and the FAISS vector table.

A scope holds its workflows in *slots* (append-only; a removed or replaced workflow leaves a dead
slot that later compaction drops). Each slot's leaf sequence is stored as int32 *codes* in one
flat array: a call leaf is its tool id (``>= 0``), an instruction leaf is ``-(text id) - 1``.
Instruction texts are stored once per scope (paraphrase templates repeat a lot) in a FAISS
``IndexFlatIP``; postings map a tool id or a text id to the slots whose workflow uses it.

Each leaf also keeps what the suggestion models need (the workflow's
:class:`~em_plugin.state.episodes.Episode`): its instruction context and its call's args, as ids
into two string tables of the scope (``-1``: none). So the scope's suggestion state is rebuilt
from the index alone, never by reading the store.

Identical leaf sequences (same tools and same instruction texts in the same order, i.e. the same
codes) are indexed once in a *sequence table*: each distinct sequence has an id and a
multiplicity (how many live workflows of the scope have it), and each slot points to its
sequence. Saving N identical workflows makes one entry with count N; removing one decrements it.
The per-leaf arrays stay per slot because each workflow's contexts and args differ.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

import faiss
import numpy as np

from em_plugin.retrieval.reference import LeafSequence
from em_plugin.state.arrays import GrowArray, GrowRows, Postings, StringTable, gather_index
from em_plugin.state.episodes import Episode

__all__ = ["Embed", "ScopeIndex", "ScopeModels"]

Embed = Callable[[Sequence[str]], np.ndarray]


class ScopeModels(Protocol):
    """Indexes built over a scope's arrays (the suggestion models), told of every change."""

    def added(self, first_slot: int, count: int) -> None:
        """Index slots ``[first_slot, first_slot + count)``, just stored in the arrays."""
        ...

    def removed(self, workflow_id: str, slot: int) -> None:
        """Forget a workflow whose slot the arrays just marked dead."""
        ...


class ScopeIndex:
    """Leaf sequences, postings and instruction vectors of one scope.

    Args:
        dimension: The embedding dimension.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.texts: list[str] = []
        self.text_ids: dict[str, int] = {}
        self.text_refs = GrowArray(np.int64)
        self.vectors = faiss.IndexFlatIP(dimension)
        self.tools: list[str] = []
        self.tool_ids: dict[str, int] = {}
        self.slot_ids: list[str | None] = []
        self.id_slots: dict[str, int] = {}
        self.offsets = GrowArray(np.int64)
        self.lengths = GrowArray(np.int32)
        # Per slot, its workflow's call leaves (H-EPM's efficiency term reads it).
        self.calls = GrowArray(np.int32)
        self.alive = GrowArray(np.bool_)
        self.codes = GrowArray(np.int32)
        self.tool_postings = Postings()
        self.text_postings = Postings()
        self.contexts = StringTable()
        self.context_vectors = GrowRows(dimension)
        self.args = StringTable()
        self.context_codes = GrowArray(np.int32)
        self.arg_codes = GrowArray(np.int32)
        # Per slot, its workflow's handoff routes (an id in `routes`; -1: unknown).
        self.routes = StringTable()
        self.route_codes = GrowArray(np.int32)
        # The sequence table: distinct leaf sequences (keyed by their codes' bytes), their
        # multiplicities among live workflows, and per slot its sequence id.
        self.sequence_ids: dict[bytes, int] = {}
        self.sequence_counts = GrowArray(np.int64)
        self.slot_sequences = GrowArray(np.int32)
        # Per slot, a stamp that changes whenever its id is saved again (see version()).
        self.token = uuid.uuid4().int
        self.stamps = GrowArray(np.int64)
        self.next_stamp = 0
        # The suggestion models over these arrays, when built (they follow every change).
        self.models: ScopeModels | None = None

    def __len__(self) -> int:
        return len(self.id_slots)

    def stats(self) -> dict[str, int]:
        """Return the counts of live workflows, their leaves, distinct texts and tools."""
        return {
            "workflows": len(self),
            "leaf_steps": int(self.lengths.view()[self.alive.view()].sum()),
            "texts": int((self.text_refs.view() > 0).sum()),
            "tools": len(self.tools),
        }

    @property
    def dead(self) -> int:
        """Slots held by removed or replaced workflows."""
        return len(self.slot_ids) - len(self.id_slots)

    def table(self) -> np.ndarray:
        """Return the instruction vectors as an array view of FAISS's storage.

        The view is only valid until the next text is added.
        """
        total = self.vectors.ntotal
        if total == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        flat = faiss.rev_swig_ptr(self.vectors.get_xb(), total * self.dimension)
        return flat.reshape(total, self.dimension)

    def live_texts(self) -> list[str]:
        """Return the texts some live workflow of the scope uses."""
        refs = self.text_refs.view()
        return [self.texts[i] for i in np.flatnonzero(refs > 0).tolist()]

    def new_texts(self, texts: Sequence[str | None]) -> list[str]:
        """Return the distinct instruction texts not stored yet, in first-seen order."""
        seen: dict[str, None] = {}
        for text in texts:
            if text is not None and text not in self.text_ids:
                seen.setdefault(text, None)
        return list(seen)

    def add_texts(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store new instruction texts with their unit-norm vectors."""
        if not texts:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        for text in texts:
            self.text_ids[text] = len(self.texts)
            self.texts.append(text)
        self.text_refs.extend(np.zeros(len(texts), dtype=np.int64))
        self.vectors.add(vectors)

    def new_contexts(self, contexts: Sequence[str | None]) -> list[str]:
        """Return the distinct contexts not stored yet, in first-seen order."""
        known = self.contexts.ids
        return list(dict.fromkeys(c for c in contexts if c is not None and c not in known))

    def add_contexts(self, contexts: Sequence[str], vectors: np.ndarray) -> None:
        """Store new instruction contexts (see :meth:`new_contexts`) with their unit vectors.

        The suggestion state shares this table: its context ids are these ids.
        """
        if contexts:
            self.contexts.encode(contexts)
            self.context_vectors.extend(vectors)

    def encode(self, tools: Sequence[str | None], texts: Sequence[str | None]) -> np.ndarray:
        """Return the codes of a leaf sequence whose texts are stored (new tools are added)."""
        codes = np.empty(len(tools), dtype=np.int32)
        for i, (tool, text) in enumerate(zip(tools, texts, strict=True)):
            if tool is None:
                codes[i] = -self.text_ids[text] - 1  # type: ignore[index]
            else:
                tool_id = self.tool_ids.get(tool)
                if tool_id is None:
                    tool_id = self.tool_ids[tool] = len(self.tools)
                    self.tools.append(tool)
                codes[i] = tool_id
        return codes

    def lookup_codes(self, leaves: LeafSequence) -> np.ndarray | None:
        """Return the codes of a leaf sequence, or ``None`` when a tool or text is unknown."""
        codes = np.empty(len(leaves), dtype=np.int32)
        for i, (tool, text) in enumerate(zip(leaves.tools, leaves.texts, strict=True)):
            code = self.tool_ids.get(tool) if tool is not None else self.text_ids.get(text or "")
            if code is None:
                return None
            codes[i] = code if tool is not None else -code - 1
        return codes

    def sequence_of(self, leaves: LeafSequence) -> int | None:
        """Return the id of a leaf sequence in the sequence table (``None``: never indexed)."""
        codes = self.lookup_codes(leaves)
        return None if codes is None else self.sequence_ids.get(codes.tobytes())

    def sequence_count(self, leaves: LeafSequence) -> int:
        """Return how many live workflows of the scope have exactly this leaf sequence."""
        sequence = self.sequence_of(leaves)
        return 0 if sequence is None else int(self.sequence_counts.view()[sequence])

    def sequences(self) -> list[tuple[np.ndarray, int]]:
        """Return the distinct live leaf sequences as ``(codes, multiplicity)``."""
        counts = self.sequence_counts.view()
        return [
            (np.frombuffer(key, dtype=np.int32), int(counts[i]))
            for key, i in self.sequence_ids.items()
            if counts[i] > 0
        ]

    def remove(self, workflow_id: str) -> bool:
        """Mark a workflow's slot dead; return whether it was stored."""
        slot = self.id_slots.pop(workflow_id, None)
        if slot is None:
            return False
        self.slot_ids[slot] = None
        self.alive.view()[slot] = False
        self.sequence_counts.view()[self.slot_sequences.view()[slot]] -= 1
        codes = self.slot_codes(slot)
        self.text_refs.view()[np.unique(-codes[codes < 0] - 1)] -= 1
        if self.models is not None:
            self.models.removed(workflow_id, slot)
        return True

    def version(self, workflow_id: str) -> tuple[int, int] | None:
        """Return a token that changes whenever the workflow is saved again (``None``: not held).

        Caches of parsed stored workflows key on it; compaction keeps it.
        """
        slot = self.id_slots.get(workflow_id)
        return None if slot is None else (self.token, int(self.stamps.view()[slot]))

    def add_episodes(self, episodes: Sequence[Episode], embed: Embed) -> None:
        """Store reduced workflows (replacing held ids; a repeated id keeps its last).

        Args:
            episodes: The episodes.
            embed: Embeds the new instruction texts and contexts, in one call.
        """
        latest = list({e.workflow_id: e for e in episodes}.values())
        texts = self.new_texts([t for e in latest for t in leaf_texts(e)])
        contexts = self.new_contexts([c for e in latest for c in e.contexts])
        distinct = list(dict.fromkeys([*texts, *contexts]))
        if distinct:
            vectors = np.asarray(embed(distinct), dtype=np.float32)
            row = {t: i for i, t in enumerate(distinct)}
            if texts:
                self.add_texts(texts, vectors[[row[t] for t in texts]])
            if contexts:
                self.add_contexts(contexts, vectors[[row[t] for t in contexts]])
        for episode in latest:
            self.remove(episode.workflow_id)
        if not latest:
            return
        self.add_bulk(
            [e.workflow_id for e in latest],
            np.concatenate([self.encode(e.tools, leaf_texts(e)) for e in latest]),
            np.array([len(e) for e in latest]),
            self.contexts.encode([c for e in latest for c in e.contexts]),
            self.args.encode([a for e in latest for a in e.args]),
            self.routes.encode([e.routes for e in latest]),
        )

    def slot_codes(self, slot: int) -> np.ndarray:
        """Return the leaf codes stored in a slot."""
        start = int(self.offsets.view()[slot])
        return self.codes.view()[start : start + int(self.lengths.view()[slot])]

    def leaves(self, slot: int) -> LeafSequence:
        """Return a slot's leaf sequence with its vectors (zero rows for calls)."""
        codes = self.slot_codes(slot)
        tools = tuple(self.tools[c] if c >= 0 else None for c in codes.tolist())
        texts = tuple(self.texts[-c - 1] if c < 0 else None for c in codes.tolist())
        vectors = np.zeros((len(codes), self.dimension), dtype=np.float32)
        instr = codes < 0
        vectors[instr] = self.table()[-codes[instr] - 1]
        return LeafSequence(tools, texts, vectors)

    def episode(self, slot: int) -> Episode:
        """Return the episode stored in a slot."""
        start = int(self.offsets.view()[slot])
        end = start + int(self.lengths.view()[slot])
        codes = self.codes.view()[start:end].tolist()
        route = int(self.route_codes.view()[slot])
        return Episode(
            self.slot_ids[slot] or "",
            tuple(self.tools[c] if c >= 0 else None for c in codes),
            self.contexts.decode(self.context_codes.view()[start:end]),
            self.args.decode(self.arg_codes.view()[start:end]),
            self.routes.values[route] if route >= 0 else None,
        )

    def episodes(self) -> list[Episode]:
        """Return the live workflows' episodes, in slot (save) order."""
        return [self.episode(slot) for slot in sorted(self.id_slots.values())]

    def add_bulk(
        self,
        workflow_ids: Sequence[str],
        codes: np.ndarray,
        lengths: np.ndarray,
        context_codes: np.ndarray,
        arg_codes: np.ndarray,
        route_codes: np.ndarray | None = None,
        *,
        stamps: np.ndarray | None = None,
    ) -> None:
        """Store many workflows at once (vectorised; ids must not be stored).

        Args:
            workflow_ids: The ids, one per workflow.
            codes: Their leaf codes, concatenated.
            lengths: Their leaf counts.
            context_codes: Per leaf, the id of its context in :attr:`contexts` (``-1``: none).
            arg_codes: Per leaf, the id of its args in :attr:`args` (``-1``: none).
            route_codes: Per workflow, the id of its routes in :attr:`routes` (``-1`` or
                ``None``: unknown).
            stamps: Per workflow, its version stamp (kept by compaction); default: new ones.
        """
        if stamps is None:
            stamps = self.next_stamp + np.arange(len(workflow_ids), dtype=np.int64)
            self.next_stamp += len(workflow_ids)
        self.stamps.extend(stamps)
        if route_codes is None:
            route_codes = np.full(len(workflow_ids), -1, dtype=np.int32)
        self.route_codes.extend(route_codes)
        self.context_codes.extend(context_codes)
        self.arg_codes.extend(arg_codes)
        first = len(self.slot_ids)
        count = len(workflow_ids)
        lengths = np.asarray(lengths, dtype=np.int64)
        self.slot_ids.extend(workflow_ids)
        self.id_slots.update(zip(workflow_ids, range(first, first + count), strict=True))
        self.offsets.extend(self.codes.size + np.concatenate(([0], np.cumsum(lengths)[:-1])))
        self.lengths.extend(lengths)
        self.alive.extend(np.ones(count, dtype=np.bool_))
        self.codes.extend(codes)
        self._add_sequences(codes, lengths)
        slot_of = np.repeat(np.arange(first, first + count, dtype=np.int64), lengths)
        self.calls.extend(np.bincount(slot_of[codes >= 0] - first, minlength=count))
        for postings, mask, keys in (
            (self.tool_postings, codes >= 0, codes),
            (self.text_postings, codes < 0, -codes.astype(np.int64) - 1),
        ):
            # Sort and drop repeats: numpy's hash-based unique was 3x slower on 1M pairs.
            pairs = np.sort(slot_of[mask] << 32 | keys[mask].astype(np.int64))
            pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))[: len(pairs)]]
            low, high = pairs & 0xFFFFFFFF, pairs >> 32
            postings.add_pairs(low.astype(np.int32), high.astype(np.int32))
            if postings is self.text_postings:
                refs = np.bincount(low, minlength=len(self.texts))
                self.text_refs.view()[:] += refs
        if self.models is not None:
            self.models.added(first, count)

    def _add_sequences(self, codes: np.ndarray, lengths: np.ndarray) -> None:
        """Point each new slot to its sequence, adding sequences not seen yet."""
        flat = np.ascontiguousarray(codes, dtype=np.int32)
        ends = np.cumsum(lengths)
        slots = np.empty(len(lengths), dtype=np.int32)
        fresh = 0
        for i, (start, end) in enumerate(
            zip((ends - lengths).tolist(), ends.tolist(), strict=True)
        ):
            key = flat[start:end].tobytes()
            sequence = self.sequence_ids.get(key)
            if sequence is None:
                sequence = self.sequence_ids[key] = len(self.sequence_ids)
                fresh += 1
            slots[i] = sequence
        self.slot_sequences.extend(slots)
        self.sequence_counts.extend(np.zeros(fresh, dtype=np.int64))
        np.add.at(self.sequence_counts.view(), slots, 1)

    def compacted(self) -> ScopeIndex:
        """Return a copy without dead slots and without texts no live workflow uses."""
        fresh = ScopeIndex(self.dimension)
        fresh.token, fresh.next_stamp = self.token, self.next_stamp
        live = np.flatnonzero(self.text_refs.view() > 0)
        fresh.add_texts([self.texts[i] for i in live.tolist()], self.table()[live])
        remap = np.full(len(self.texts), -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        fresh.tools = list(self.tools)
        fresh.tool_ids = dict(self.tool_ids)
        items = sorted(self.id_slots.items(), key=lambda item: item[1])
        codes = [self.slot_codes(slot) for _, slot in items]
        flat = np.concatenate(codes) if codes else np.zeros(0, np.int32)
        instr = flat < 0
        flat = flat.copy()
        flat[instr] = -remap[-flat[instr].astype(np.int64) - 1] - 1
        # The string tables are rebuilt from the live leaves: a removed workflow's contexts
        # and args leave the scope with it.
        spans = [self.span(slot) for _, slot in items]
        contexts = fresh.contexts.encode(
            self.contexts.decode(self.gather(self.context_codes, spans))
        )
        if self.context_vectors.size == len(self.contexts):
            old = self.contexts.ids
            rows = np.array([old[v] for v in fresh.contexts.values], dtype=np.int64)
            fresh.context_vectors.extend(self.context_vectors.view()[rows])
        args = fresh.args.encode(self.args.decode(self.gather(self.arg_codes, spans)))
        slots = np.array([slot for _, slot in items], dtype=np.int64)
        routes = fresh.routes.encode(self.routes.decode(self.route_codes.view()[slots]))
        fresh.add_bulk(
            [wid for wid, _ in items],
            flat,
            np.array([len(c) for c in codes]),
            contexts,
            args,
            routes,
            stamps=self.stamps.view()[slots],
        )
        return fresh

    def live_leaves(
        self,
    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return the live workflows in slot (save) order, as copies.

        Returns:
            ``(ids, lengths, codes, context_codes, arg_codes, route_codes)``: per workflow its
            id and leaf count, per leaf its code, context id and args id, per workflow its
            routes id.
        """
        live = np.flatnonzero(self.alive.view())
        lengths = self.lengths.view()[live].astype(np.int64)
        index = gather_index(self.offsets.view()[live], lengths)
        return (
            [self.slot_ids[s] or "" for s in live.tolist()],
            lengths,
            self.codes.view()[index],
            self.context_codes.view()[index],
            self.arg_codes.view()[index],
            self.route_codes.view()[live],
        )

    def span(self, slot: int) -> tuple[int, int]:
        """Return where a slot's leaves lie in the flat per-leaf arrays."""
        start = int(self.offsets.view()[slot])
        return start, start + int(self.lengths.view()[slot])

    @staticmethod
    def gather(array: GrowArray, spans: list[tuple[int, int]]) -> np.ndarray:
        """Return the concatenation of ``array``'s values over ``spans``."""
        view = array.view()
        parts = [view[a:b] for a, b in spans]
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def leaf_texts(episode: Episode) -> tuple[str | None, ...]:
    """The matcher's texts: an instruction leaf's own text (its context), ``None`` for calls."""
    pairs = zip(episode.tools, episode.contexts, strict=True)
    return tuple(c if t is None else None for t, c in pairs)
