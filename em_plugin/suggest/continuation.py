"""Ranking what comes next from memory: the episodic continuation model.

The paper votes, per retrieved workflow, for the step after the matched subsequence. On the
benchmark files that rule scores below a bigram (docs/evaluation.md): one alignment per
workflow, at most 10 workflows, and a subsequence whose last matched step may lie far from the
current one. This module keeps the idea (the steps that *follow* a match in past workflows, ranked
by support and similarity) and changes what a match is and how votes count:

* **Matches are windows over the most recent leaves.** Every position ``p`` of every stored
  workflow whose next leaf is a call is a candidate state. Its *agreement* with the current
  workflow is the number ``k`` of most recent current leaves that equal the leaves ending at
  ``p`` (same tool; any instruction leaf equals any instruction leaf, the text counts below),
  up to ``max_order``. That is the paper's rule with a window of the last ``k`` leaves and
  exact step similarity, evaluated at every position instead of one alignment per workflow.
* **Votes are blended across agreement levels by Witten-Bell interpolation**, the classic
  parameter-free smoothing of variable-order Markov models: with ``c_k`` the (weighted) votes of
  positions agreeing on ``k`` leaves, ``n_k`` their sum and ``u_k`` the number of distinct tools
  they vote for, ``P_k = (c_k + u_k * P_{k-1}) / (n_k + u_k)``, from ``P_-1`` uniform up to the
  longest agreement found. Long agreements decide when they are well supported; the statistics
  of shorter ones (down to plain tool frequency, ``k = 0``) take over when they are not.
* **Instruction text weighs the votes.** A position's vote is multiplied by
  ``exp(context_weight * z)`` where ``z`` is the z-score (over the scope's contexts, capped at
  ``z_cap``) of the cosine between the current instruction and the instruction of the stored
  state (the leaf before the voted call). The z-score makes the weight independent of how
  similar a scope's instructions are to each other overall. A call made for a later
  instruction (the user's next request) gets that factor raised to ``next_request_weight``
  (0.5: the geometric mean of the state's factor and the neutral 1): the current instruction
  tells how like the stored state ours is, not which request the user makes next. At full
  weight two stored sessions that began with the current instruction word for word outvote
  forty that continued otherwise; weighed by the request they answered instead, long sessions
  of many requests lose the agreement of their states (docs/suggestions.md).
* **A new instruction is a state too.** A stored call that opened an instruction is what
  followed "an instruction was given", so a current workflow ending in an instruction leaf
  (answered without tools) finds the first calls of similar past instructions.
* **The current workflow is an episode too.** Its own earlier steps vote like a stored workflow
  whose context equals the current one (weight ``exp(context_weight * z_cap)``): repeated tools
  and loops in the session are remembered before they are ever saved.

The defaults (``max_order=3``, ``context_weight=3``, ``z_cap=3``) and how they were chosen
are in docs/tuning.md. Ranking is deterministic: ties go to the tool first seen in memory.
"""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any

import numpy as np

from em_plugin.state.arrays import GrowArray, gather_index
from em_plugin.state.context_clusters import BackgroundClusters, ContextClusters
from em_plugin.state.episodes import ContextTable
from em_plugin.state.scope_index import ScopeIndex
from em_plugin.suggest.continuation_clusters import (
    ClusteredFactor,
    ClusterLayout,
    clustered_factor,
)
from em_plugin.suggest.continuation_keys import INSTRUCTION as _INSTRUCTION
from em_plugin.suggest.continuation_keys import KeyPostings
from em_plugin.suggest.continuation_types import Candidate, ContinuationConfig, Query
from em_plugin.types import Evidence

__all__ = ["Candidate", "ContinuationConfig", "ContinuationIndex", "Query"]


class ContinuationIndex:
    """One scope's stored positions, indexed by the leaves that precede them.

    An index over the scope's arrays (:class:`~em_plugin.state.scope_index.ScopeIndex`): its
    slots, tools, contexts and args are the scope's own. It keeps only what ranking needs on top
    of them: per position the scope slot, the scope leaf it predicts and that leaf's tool, and
    postings by key (:mod:`~em_plugin.suggest.continuation_keys`). The scope's live slots are
    indexed in one vectorised pass at construction, and :meth:`added` appends a save without
    rebuilding anything.

    Args:
        scope: The scope's arrays.
        contexts: The scope's context table.
        config: Model parameters.
        textless: Treat every instruction as context 0 (the ``use_text=False`` ablation).
    """

    def __init__(
        self,
        scope: ScopeIndex,
        contexts: ContextTable,
        config: ContinuationConfig | None = None,
        *,
        textless: bool = False,
    ) -> None:
        self.scope = scope
        self.contexts = contexts
        self.config = config or ContinuationConfig()
        self.textless = textless
        self._grouping = threading.Lock()
        # A large scope's context clusters (docs/suggestions.md, "Large scopes"): built on a
        # thread when the scope first ranks at that size; ranking is exact until they are.
        self._clusters = BackgroundClusters()
        self._reset()
        self._index(np.flatnonzero(scope.alive.view()))

    def _reset(self) -> None:
        # Per position: its scope slot, the scope leaf (flat index) it predicts, that leaf's
        # tool, and whether it is an opening. Positions are in slot order: a slot's positions
        # are one run, found by binary search.
        self._pos = {name: GrowArray(np.int64) for name in ("slot", "leaf", "tool")}
        self._opening = GrowArray(np.bool_)
        self._keys = KeyPostings(self.config.max_order)
        self._cache: dict[Any, Any] = {}  # arrays, and the clusters' layout
        # Level 0's (tool, state context, later request, count) groups in key order; the
        # states appended since (saves) are merged into them at the next ranking instead of
        # sorting every live state again. ``None`` until the first ranking and after a removal.
        self._groups: np.ndarray | None = None
        self._appended: list[np.ndarray] = []
        self._dead_positions = 0

    def __len__(self) -> int:
        return len(self.scope)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self.scope.id_slots

    # ------------------------------------------------------------------------------ updates

    def added(self, first_slot: int, count: int) -> None:
        """Index the scope's slots ``[first_slot, first_slot + count)``, just stored."""
        self._index(np.arange(first_slot, first_slot + count, dtype=np.int64))

    def removed(self, slot: int) -> None:
        """Forget the positions of a slot the scope just marked dead."""
        start, end = self._span(slot)
        self._dead_positions += int(np.count_nonzero(~self._opening.view()[start:end]))
        self._cache.clear()
        self._groups, self._appended = None, []
        if self._dead_positions > max(1000, self._pos["slot"].size // 2):
            self._compact()

    def _index(self, slots: np.ndarray) -> None:
        """Index the positions of scope slots (ascending, after every slot indexed so far)."""
        count = len(slots)
        if count == 0:
            return
        scope = self.scope
        lengths = scope.lengths.view()[slots].astype(np.int64)
        index = gather_index(scope.offsets.view()[slots], lengths)
        codes = scope.codes.view()[index]
        tok = np.where(codes >= 0, codes, _INSTRUCTION).astype(np.int64)
        ctx = self._contexts(index).astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        slot_of = np.repeat(np.arange(count, dtype=np.int64), lengths)
        local = np.arange(len(tok), dtype=np.int64) - starts[slot_of]
        prev_tok = np.concatenate(([_INSTRUCTION], tok[:-1]))
        prev_ctx = np.concatenate(([-1], ctx[:-1]))
        # A stored call after leaf p is a state: posted under the leaves ending at p.
        follows = np.flatnonzero((local >= 1) & (tok != _INSTRUCTION))
        # A call that opened an instruction (not after an instruction leaf, posted above).
        opens = (tok != _INSTRUCTION) & (ctx >= 0) & ((local == 0) | (prev_ctx != ctx))
        opening = np.flatnonzero(opens & ((local == 0) | (prev_tok != _INSTRUCTION)))
        leaf = np.concatenate((follows, opening))
        kind = np.concatenate((np.zeros(len(follows), np.int64), np.ones(len(opening), np.int64)))
        # Positions are numbered per workflow: its states first, then its openings (the order
        # that breaks evidence ties).
        # Both parts are already in (workflow, leaf) order: a stable sort by workflow and kind
        # interleaves them.
        order = np.argsort(slot_of[leaf] * 2 + kind, kind="stable")
        leaf, kind = leaf[order], kind[order]
        position_base = self._pos["slot"].size
        positions = position_base + np.arange(len(leaf), dtype=np.int64)
        self._pos["slot"].extend(slots[slot_of[leaf]])
        self._pos["leaf"].extend(index[leaf])
        self._pos["tool"].extend(tok[leaf])
        self._opening.extend(kind.astype(np.bool_))
        if self._groups is not None:
            self._appended.append(positions[kind == 0])
        if self._keys.post(tok, local, leaf, kind, positions, len(scope.tools)):
            self._compact()  # folds the tail into the CSR (and drops dead workflows)
        self._cache.clear()

    def _compact(self) -> None:
        """Re-index the scope's live slots in one pass (drops dead positions, folds the tail)."""
        self._reset()
        self._index(np.flatnonzero(self.scope.alive.view()))

    def _contexts(self, leaves: np.ndarray) -> np.ndarray:
        """Return the model's context ids of scope leaves (every instruction is 0 if textless)."""
        codes = self.scope.context_codes.view()[leaves]
        return np.where(codes >= 0, 0, -1).astype(np.int32) if self.textless else codes

    def _context(self, leaf: int) -> int:
        """Return the model's context id of one scope leaf."""
        return int(self._contexts(np.array([leaf]))[0])

    def _span(self, slot: int) -> tuple[int, int]:
        """Return the run of positions of a scope slot."""
        slots = self._pos["slot"].view()
        return int(np.searchsorted(slots, slot)), int(np.searchsorted(slots, slot, "right"))

    def _token(self, tool: str | None) -> int:
        if tool is None:
            return _INSTRUCTION
        found = self.scope.tool_ids.get(tool)
        return -2 if found is None else found

    def _positions(self) -> dict[str, np.ndarray]:
        arrays = {name: grow.view() for name, grow in self._pos.items()}
        arrays["opening"] = self._opening.view()
        alive = self._cache.get("alive")
        if alive is None:
            alive = self._cache["alive"] = self.scope.alive.view()[arrays["slot"]]
        arrays["alive"] = alive
        return arrays

    def _posting(self, key: tuple[int, ...]) -> np.ndarray:
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._keys.get(key)
        return found

    # ------------------------------------------------------------------------------ ranking

    def rank(self, query: Query, *, exact: bool = False) -> list[Candidate]:
        """Rank next tools for the current state, best first (see the module doc).

        Args:
            query: The current leaves, instruction context and exclusions.
            exact: Weigh level 0 exactly even in a large scope (the reference its
                approximation is measured against).

        Returns:
            Every tool with a vote at any agreement level, by decreasing probability; the first
            ``config.detail`` carry evidence, typical args and instruction text.
        """
        n = len(query.tools)
        if n == 0:
            return []
        names = list(self.scope.tools)
        extra: dict[str, int] = {}
        tokens = []
        for tool in query.tools:
            token = self._token(tool)
            if token == -2:  # a tool memory has never seen: only the current workflow knows it
                token = extra.setdefault(tool, len(names) + len(extra))  # type: ignore[arg-type]
            tokens.append(token)
        names.extend(extra)
        factor, self_weight, sims = self._factor(query, exact=exact)
        held = self.scope.id_slots
        excluded = [held[w] for w in query.exclude if w in held]
        weigh = partial(self._weigh, factor=factor, excluded=excluded)
        counts, members = self._memory_counts(tokens, factor, excluded, weigh, len(names))
        # Before the current workflow's votes join the counts: per agreement level, the tools
        # stored positions vote for (every weight is > 0).
        levels = [c > 0 for c in counts]
        stored = np.any(levels, axis=0)
        current = self._add_current(counts, tokens, query, self_weight)
        ranked = self._interpolate(counts, members, levels, names, weigh, sims, n, current, stored)
        if not exact:  # a due build starts once this ranking is done, not competing with it
            self._ready_clusters()
        return ranked

    def _factor(self, query: Query, *, exact: bool = False) -> tuple[Any, float, Any]:
        """Return the vote factor per context id (and 1.0 for id -1), self weight, cosines.

        The factor is an array, or a :class:`ClusteredFactor` in a large scope (indexed alike).
        """
        beta, cap = self.config.context_weight, self.config.z_cap
        if query.context is None or beta == 0 or len(self.contexts) < 2:
            return np.ones(self.contexts.capacity + 1), 1.0, None
        clusters = None if exact else self._ready_clusters(start=False)
        if clusters is not None:
            approximate = clustered_factor(
                clusters,
                self.contexts,
                query.context,
                beta=beta,
                cap=cap,
                power=self.config.next_request_weight,
                probes=self.config.probes,
            )
            if approximate is not None:
                return approximate, float(np.exp(beta * cap)), _Cosines(approximate)
        sims = self.contexts.similarities(query.context)
        live = sims[~np.isnan(sims)]
        spread = float(live.std())
        if spread < 1e-9:
            return np.ones(len(sims) + 1), 1.0, sims
        # exp(beta * clip((sims - mean) / spread)) in one array, in place: a million contexts
        # are 8 MB a step, and the same operations in the same order give the same bits.
        factor = np.empty(len(sims) + 1)
        body = factor[:-1]
        np.copyto(body, sims)
        np.nan_to_num(body, copy=False)
        np.subtract(body, live.mean(), out=body)
        np.divide(body, spread, out=body)
        np.clip(body, -cap, cap, out=body)
        np.multiply(beta, body, out=body)
        np.exp(body, out=body)
        factor[-1] = 1.0
        return factor, float(np.exp(beta * cap)), sims

    def approximate_ready(self, timeout: float | None = None) -> bool:
        """Whether level 0 is approximated now, waiting up to ``timeout`` s for the clusters.

        Starts building them when the scope is large enough and they are not built yet
        (docs/suggestions.md, "Large scopes"). ``False`` below ``config.approximate_from``.
        """
        if self._ready_clusters() is not None:
            return True
        self._clusters.wait(timeout)
        return self._ready_clusters() is not None

    @property
    def cluster_count(self) -> int:
        """Context clusters that level 0 is approximated by now (0: it is exact)."""
        clusters = self._ready_clusters()
        return 0 if clusters is None else len(clusters)

    def _ready_clusters(self, *, start: bool = True) -> ContextClusters | None:
        """Return the clusters when level 0 is approximated (and start their build if due)."""
        threshold = self.config.approximate_from
        if threshold is None or self.textless or len(self.contexts) < threshold:
            return None
        return self._clusters.get(self.contexts, start=start)

    def _layout(self, factor: ClusteredFactor) -> ClusterLayout:
        """Return level 0's groups laid out by the factor's clusters (kept until a change)."""
        clusters = factor.clusters
        key = ("layout", id(clusters), len(factor.assignment))
        found: ClusterLayout | None = self._cache.get(key)
        if found is None:
            tools, before, later, sizes, _ = self._frequency()
            found = self._cache[key] = ClusterLayout.of(
                factor.assignment, len(clusters), tools, before, later, sizes
            )
        return found

    def _voted(self) -> tuple[np.ndarray, np.ndarray]:
        """Per position, its state's context id (``-1``: none) and whether it is a later request.

        A state's context is the instruction of the leaf before the voted call (an opening's,
        its own). The call answered a later request when it was made for another instruction
        than that leaf's: the user's next request, which the current workflow has not made.
        """
        found = self._cache.get("voted")
        if found is None:
            arrays = self._positions()
            answered = self._contexts(arrays["leaf"])
            before = np.where(
                arrays["opening"], answered, self._contexts(np.maximum(arrays["leaf"] - 1, 0))
            )
            found = self._cache["voted"] = np.stack((before, before != answered))
        return found[0], found[1].astype(np.bool_)

    def _vote_factor(self, factor: np.ndarray, before: np.ndarray, later: np.ndarray) -> np.ndarray:
        """Return the text factor of votes (docs/suggestions.md, "Instruction text").

        A vote's factor is its state's, tempered when its call answered a later request.
        """
        weights = factor[before]
        if later.any():  # the power of the later ones only (a million groups at 300k)
            weights[later] = weights[later] ** self.config.next_request_weight
        return weights

    def _weigh(
        self, positions: np.ndarray, *, factor: np.ndarray, excluded: list[int]
    ) -> np.ndarray:
        """Return vote weights: 0 if dead or excluded, else the text factor of the vote."""
        arrays = self._positions()
        slots = arrays["slot"][positions]
        before, later = self._voted()
        weights = self.scope.alive.view()[slots] * self._vote_factor(
            factor, before[positions], later[positions]
        )
        if excluded:
            weights[np.isin(slots, excluded)] = 0.0
        return weights

    def _keys_of(self, positions: np.ndarray, width: int) -> np.ndarray:
        """Return the (tool, state context, later request) group key of positions."""
        arrays = self._positions()
        before, later = self._voted()
        return _group_key(arrays["tool"][positions], before[positions], later[positions], width)

    def _frequency(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return the live stored states grouped by (tool, state context, later request).

        As ``(tools, contexts, later, counts, keys)``.

        Level 0 counts every live state; grouped, it costs one product per distinct triple
        instead of one per position. Rebuilt on the first ranking after a removal; the states
        saved since the last ranking are inserted into the groups.
        """
        width = self.contexts.capacity + 1  # part of the key: the keys are encoded with it
        found = self._cache.get(("frequency", width))
        if found is None:
            with self._grouping:  # readers rank together: one merges, the others wait for it
                found = self._cache.get(("frequency", width))
                if found is None:
                    found = self._cache[("frequency", width)] = self._group(width)
        return found[0], found[1], found[2].astype(np.bool_), found[3], found[4]

    def _group(self, width: int) -> np.ndarray:
        """Return level 0's groups with their keys for ``width`` (under ``_grouping``)."""
        if self._groups is None:
            arrays = self._positions()
            live = np.flatnonzero(arrays["alive"] & ~arrays["opening"])
            self._groups = _grouped(self._keys_of(live, width), width)
        elif self._appended:
            self._merge_groups(np.concatenate(self._appended))
        self._appended = []
        tools, contexts, later, sizes = self._groups
        # Key order is (tool, context, later) order whatever the width: only the encoding
        # changes when the context table grew.
        heads = _group_key(tools, contexts, later, width)
        return np.stack((tools, contexts, later, sizes, heads))

    def _merge_groups(self, states: np.ndarray) -> None:
        """Insert appended states (positions that are not openings; dead ones are skipped)."""
        assert self._groups is not None
        arrays = {name: grow.view() for name, grow in self._pos.items()}
        states = states[self.scope.alive.view()[arrays["slot"][states]]]
        if not len(states):
            return
        leaves = arrays["leaf"][states]
        answered = self._contexts(leaves)
        before = self._contexts(np.maximum(leaves - 1, 0))
        later = (before != answered).astype(np.int64)
        tools, contexts, old_later, sizes = self._groups
        # Wide enough for every context id of both, so that key order is (tool, context, later).
        width = int(max(self.contexts.capacity, contexts.max(initial=0), before.max())) + 2
        old_keys = _group_key(tools, contexts, old_later, width)
        new_keys = _group_key(arrays["tool"][states], before.astype(np.int64), later, width)
        # Inserted into the sorted keys (no sort of them all): a save adds a few groups.
        added, counts = np.unique(new_keys, return_counts=True)
        at = np.searchsorted(old_keys, added)
        known = at < len(old_keys)
        known[known] = old_keys[at[known]] == added[known]
        sizes = sizes.copy()
        sizes[at[known]] += counts[known]
        keys = np.insert(old_keys, at[~known], added[~known])
        sizes = np.insert(sizes, at[~known], counts[~known])
        self._groups = np.vstack((_group_fields(keys, width), sizes))

    def _states_of(self, tool: int) -> np.ndarray:
        """Return the stored states (not openings) voting for ``tool``, dead ones included.

        Kept until the next change: listing them reads every position (millions in a large
        scope), and the tools a ranking details recur from call to call.
        """
        key = ("states of", tool)
        found = self._cache.get(key)
        if found is None:
            arrays = self._positions()
            found = self._cache[key] = np.flatnonzero((arrays["tool"] == tool) & ~arrays["opening"])
        return found

    def _memory_counts(
        self,
        tokens: list[int],
        factor: np.ndarray,
        excluded: list[int],
        weigh: Any,
        size: int,
    ) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        """Per agreement level ``k``, the weighted votes per tool and the voting positions.

        Level 0 (every stored state) is counted from the (tool, context) groups without
        listing its positions (``None``): :meth:`_detail` lists them only for a candidate
        whose best level is 0.
        """
        tools, before, later, sizes, keys = self._frequency()
        arrays = self._positions()
        own_groups = []
        for slot in excluded:  # an excluded live workflow's own states do not vote
            if self.scope.alive.view()[slot]:
                own = np.arange(*self._span(slot))
                own = own[~arrays["opening"][own]]
                own_keys = self._keys_of(own, self.contexts.capacity + 1)
                own_groups.append(np.searchsorted(keys, own_keys))
        excluded_groups = np.concatenate(own_groups) if own_groups else None
        if excluded_groups is not None:
            sizes = sizes.copy()  # integer counts: an excluded vote leaves an exact 0
            np.subtract.at(sizes, excluded_groups, 1)
        if isinstance(factor, ClusteredFactor):
            layout = self._layout(factor)
            level0 = layout.counts(factor, size, excluded_groups)
            probed = layout.groups_of(factor.probed)
            weights = sizes[probed] * self._vote_factor(factor, before[probed], later[probed])
            level0 += np.bincount(tools[probed], weights=weights, minlength=size)
        else:
            weights = sizes * self._vote_factor(factor, before, later)
            level0 = np.bincount(tools, weights=weights, minlength=size)
        counts = [level0]
        members: list[np.ndarray | None] = [None]
        for k in range(1, min(self.config.max_order, len(tokens)) + 1):
            chosen = self._posting(tuple(tokens[len(tokens) - k :]))
            if isinstance(factor, ClusteredFactor) and len(chosen):
                factor.prefetch(self._voted()[0][chosen])
            weights = weigh(chosen) if len(chosen) else np.zeros(0)
            chosen, weights = chosen[weights > 0], weights[weights > 0]
            members.append(chosen)
            counts.append(np.bincount(arrays["tool"][chosen], weights=weights, minlength=size))
        return counts, members

    def _add_current(
        self, counts: list[np.ndarray], tokens: list[int], query: Query, weight: float
    ) -> np.ndarray:
        """Add the current workflow's own votes; return the tools it voted for at agreement >= 1."""
        support = np.zeros(len(counts[0]), dtype=bool)
        if not self.config.include_current:
            return support
        n = len(tokens)
        for p in range(n - 1):
            if query.tools[p + 1] is None:
                continue
            agree = 0
            while (
                agree < len(counts) - 1
                and p - agree >= 0
                and tokens[n - 1 - agree] == tokens[p - agree]
            ):
                agree += 1
            for k in range(agree + 1):
                counts[k][tokens[p + 1]] += weight
            support[tokens[p + 1]] |= agree >= 1
        return support

    def _interpolate(
        self,
        counts: list[np.ndarray],
        members: list[np.ndarray | None],
        levels: list[np.ndarray],
        names: list[str],
        weigh: Any,
        sims: np.ndarray | None,
        n: int,
        current: np.ndarray,
        stored: np.ndarray,
    ) -> list[Candidate]:
        size = len(names)
        voted = counts[0] > 0  # P_-1: uniform over the tools anything voted for
        probability = voted / max(int(voted.sum()), 1)
        order = np.full(size, -1)
        for k, c in enumerate(counts):
            total = float(c.sum())
            if total <= 0:
                break
            distinct = float(np.count_nonzero(c))
            probability = (c + distinct * probability) / (total + distinct)
            order[c > 0] = k
        known = np.flatnonzero(order >= 0)
        ranked = known[np.lexsort((known, -probability[known]))].tolist()
        out = []
        for rank, t in enumerate(ranked):
            candidate = Candidate(names[t], float(probability[t]), int(order[t]), bool(current[t]))
            if rank < self.config.detail and stored[t]:
                best = max(k for k, present in enumerate(levels) if present[t])
                chosen = members[best]
                if chosen is None:  # level 0: every live stored state of this tool
                    chosen = self._states_of(t)
                candidate = self._detail(candidate, t, chosen, best, weigh, sims, n)
            out.append(candidate)
        return out

    def _detail(
        self,
        candidate: Candidate,
        tool: int,
        members: np.ndarray,
        k: int,
        weigh: Any,
        sims: np.ndarray | None,
        n: int,
    ) -> Candidate:
        arrays = self._positions()
        chosen = members[arrays["tool"][members] == tool]
        weights = weigh(chosen)
        chosen, weights = chosen[weights > 0], weights[weights > 0]
        chosen, weights = _heaviest(chosen, weights, 200)
        agreement = min(k, n) / min(self.config.max_order, n)
        evidence: list[Evidence] = []
        votes: dict[str, float] = {}
        scope = self.scope
        offsets, arg_codes, values = scope.offsets.view(), scope.arg_codes.view(), scope.args.values
        for position, weight in zip(chosen.tolist(), weights.tolist(), strict=True):
            slot, leaf = int(arrays["slot"][position]), int(arrays["leaf"][position])
            arg = int(arg_codes[leaf])
            if arg >= 0:
                votes[values[arg]] = votes.get(values[arg], 0.0) + weight
            if len(evidence) < self.config.evidence:
                score = agreement
                # A state is weighed by the instruction before it, an opening by its own.
                context = self._context(leaf - 1 + int(arrays["opening"][position]))
                if sims is not None and context >= 0:
                    score = (agreement + max(float(sims[context]), 0.0)) / 2
                nxt = leaf - int(offsets[slot])
                evidence.append(Evidence(scope.slot_ids[slot] or "", nxt, round(score, 6)))
        instruction = None
        if len(chosen):
            slot, leaf = int(arrays["slot"][chosen[0]]), int(arrays["leaf"][chosen[0]])
            context = self._context(leaf)
            opens = context >= 0 and (
                leaf == int(offsets[slot])
                or scope.codes.view()[leaf] < 0
                or self._context(leaf - 1) != context
            )
            instruction = self.contexts.text(context) if opens else None
        args = json.loads(max(votes, key=votes.__getitem__)) if votes else None
        return Candidate(
            candidate.tool,
            candidate.probability,
            candidate.order,
            candidate.from_current,
            tuple(evidence),
            args,
            instruction,
        )


class _Cosines:
    """``cosines[id]`` of a clustered ranking: each exact, computed when first read."""

    def __init__(self, factor: ClusteredFactor) -> None:
        self._factor = factor

    def __getitem__(self, context_id: int) -> float:
        return self._factor.cosine(context_id)


def _heaviest(chosen: np.ndarray, weights: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``count`` heaviest positions, heaviest first (ties: the lower position first).

    The same as sorting them all and taking the first ``count``, which at level 0 of a large
    scope sorted every state of a tool (100,000 at 300,000 workflows) for each detailed tool:
    only the positions at least as heavy as the ``count``-th heaviest are sorted.
    """
    if len(weights) > count:
        kth = np.partition(weights, len(weights) - count)[len(weights) - count]
        keep = weights >= kth
        chosen, weights = chosen[keep], weights[keep]
    order = np.lexsort((chosen, -weights))[:count]
    return chosen[order], weights[order]


def _grouped(keys: np.ndarray, width: int) -> np.ndarray:
    """Return the distinct keys' ``(tools, contexts, later, counts)``, in key order."""
    keys = np.sort(keys)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))[: len(keys)])
    sizes = np.diff(np.append(starts, len(keys)))
    return np.vstack((_group_fields(keys[starts], width), sizes))


def _group_key(tools: Any, contexts: Any, later: Any, width: int) -> Any:
    """Return the level-0 group key of (tool, state context id, later request) triples.

    Keys sort in (tool, context, later) order for any ``width`` above every context id + 1.
    """
    return (tools * width + (contexts + 1)) * 2 + later


def _group_fields(keys: np.ndarray, width: int) -> np.ndarray:
    """Return the ``(tools, contexts, later)`` rows that :func:`_group_key` encoded."""
    pairs = keys // 2
    return np.stack((pairs // width, pairs % width - 1, keys % 2))
