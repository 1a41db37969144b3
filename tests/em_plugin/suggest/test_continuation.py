"""The continuation model: suffix agreement, Witten-Bell blending, context weights, updates."""

from __future__ import annotations

import numpy as np
import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.errors import ConfigurationError
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest.continuation import ContinuationConfig, ContinuationIndex, Query, _heaviest
from em_plugin.suggest.models import ContinuationModel
from provenance.model import CallStep, InstructionStep, Workflow

EMBEDDER = FakeEmbedder(64)


def wf(wid: str, *tools: str, text: str | None = None, args: dict | None = None) -> Workflow:
    calls = tuple(CallStep(t, args=args or {}) for t in tools)
    return Workflow(id=wid, steps=(InstructionStep(text, calls),) if text else calls)


def state_of(*workflows: Workflow, **config) -> ScopeMemory:
    """A scope holding ``workflows``, saved one by one (its continuation index follows it)."""
    model = ContinuationModel(ContinuationConfig(**config))
    state = ScopeMemory(EMBEDDER.dimension, EMBEDDER.embed, models=[model])
    for w in workflows:
        state.add_many([w])
    return state


def index_of(*workflows: Workflow, **config) -> ContinuationIndex:
    return state_of(*workflows, **config).model("continuation")


def query(*tools: str | None, text: str | None = None, **kw) -> Query:
    context = EMBEDDER.embed([text])[0] if text else None
    return Query(tuple(tools), context, **kw)


def test_longer_agreement_beats_frequency() -> None:
    # After "b", "x" is more frequent; after "a b" it is always "y".
    memory = [wf(f"f{i}", "c", "b", "x") for i in range(3)] + [wf("g", "a", "b", "y")]
    index = index_of(*memory)
    ranked = index.rank(query("a", "b"))
    assert [c.tool for c in ranked[:2]] == ["y", "x"]
    assert ranked[0].order == 2 and ranked[1].order == 1
    assert ranked[0].evidence[0].workflow_id == "g" and ranked[0].evidence[0].position == 2
    assert sum(c.probability for c in ranked) == pytest.approx(1.0)


def test_bigram_frequency_decides_without_longer_context() -> None:
    memory = [wf(f"f{i}", "c", "b", "x") for i in range(3)] + [wf("g", "a", "b", "y")]
    ranked = index_of(*memory).rank(query("q", "b"))
    assert [c.tool for c in ranked[:2]] == ["x", "y"]


def test_instruction_context_weights_votes() -> None:
    memory = [
        wf("p1", "lookup", "refund", text="I want a refund for my broken order"),
        wf("p2", "lookup", "refund", text="refund the damaged order please"),
        wf("e1", "lookup", "exchange", text="exchange my keyboard for a clicky one"),
        wf("e2", "lookup", "exchange", text="exchange the keyboard switches"),
        wf("e3", "lookup", "exchange", text="exchange keyboard color"),
    ]
    index = index_of(*memory)
    plain = index.rank(query("lookup"))
    assert plain[0].tool == "exchange"
    refund = index.rank(query("lookup", text="please refund my broken order"))
    assert refund[0].tool == "refund"
    off = index_of(*memory, context_weight=0.0).rank(query("lookup", text="refund my order"))
    assert off[0].tool == "exchange"


def test_a_call_for_the_next_request_has_half_the_text_weight() -> None:
    # Two stored sessions began with the current instruction word for word, then the user asked
    # for a table; ten others, under similar instructions, classified next. The table answered
    # the user's next request: the current instruction's similarity weighs it at half strength
    # (exponent next_request_weight), and the ten outvote the two.
    extract = "Extract all ingredients from primer.pdf"
    table = InstructionStep("Show the results as a markdown table", (CallStep("table"),))
    memory = [
        Workflow(id=f"t{i}", steps=(InstructionStep(extract, (CallStep("extract"),)), table))
        for i in range(2)
    ]
    memory += [wf(f"c{i}", "extract", "classify", text=f"Get the ingredients of sds_{i}.pdf")
               for i in range(10)]  # fmt: skip
    memory += [wf(f"o{i}", "lookup", text=f"Look up order {i} for a refund") for i in range(10)]
    ranked = index_of(*memory).rank(query("extract", text=extract))
    assert [c.tool for c in ranked][:2] == ["classify", "table"]
    # At full strength (the state's weight, as a call for the same instruction) two beat ten.
    full = index_of(*memory, next_request_weight=1.0).rank(query("extract", text=extract))
    assert [c.tool for c in full][:2] == ["table", "classify"]
    # A call made under the matching instruction keeps its full weight: two beat ten.
    same = [wf(f"s{i}", "extract", "table", text=extract) for i in range(2)]
    ranked = index_of(*same, *memory[2:]).rank(query("extract", text=extract))
    assert [c.tool for c in ranked][:2] == ["table", "classify"]


def test_next_request_weight_is_checked() -> None:
    with pytest.raises(ConfigurationError, match="next_request_weight"):
        ContinuationConfig(next_request_weight=1.5)


def test_current_workflow_votes_for_its_own_repeats() -> None:
    index = index_of(wf("w", "a", "b"))
    ranked = index.rank(query("a", "z", "a", "z", "a"))
    top = ranked[0]
    assert top.tool == "z" and top.from_current  # never seen in memory, repeated in the session
    assert top.evidence == ()  # the current workflow is not a stored one
    off = index_of(wf("w", "a", "b"), include_current=False).rank(query("a", "z", "a", "z", "a"))
    assert off[0].tool == "b"


def test_typical_args_and_instruction_text_of_the_continuation() -> None:
    first = InstructionStep("extract the SDS", (CallStep("extract", {"file": "a.pdf"}),))
    second = InstructionStep("classify the ingredients", (CallStep("classify", {"n": 3}),))
    index = index_of(Workflow(id="w", steps=(first, second)))
    top = index.rank(query("extract"))[0]
    assert top.tool == "classify" and top.args == {"n": 3}
    assert top.instruction == "classify the ingredients"


def test_a_new_instruction_finds_the_first_calls_of_similar_instructions() -> None:
    index = index_of(
        wf("r", "lookup", "refund", text="I want a refund for my broken order"),
        wf("e", "search", "exchange", text="exchange my keyboard for a clicky one"),
    )
    ranked = index.rank(query(None, text="please exchange the keyboard"))
    assert ranked[0].tool == "search" and ranked[0].order == 1
    assert ranked[0].evidence[0].workflow_id == "e" and ranked[0].evidence[0].position == 0
    # Openings are not frequency votes: a tool-only query never sees them at agreement 0.
    assert [c.tool for c in index.rank(query("zzz"))] == ["refund", "exchange"]


def test_exclusion_and_removal() -> None:
    state = state_of(wf("w1", "a", "b"), wf("w2", "a", "c"))
    index = state.model("continuation")
    assert [c.tool for c in index.rank(query("a", exclude=frozenset({"w1"})))][0] == "c"
    state.remove("w2")
    assert [c.tool for c in index.rank(query("a")) if c.order >= 1] == ["b"]
    assert "w2" not in index and len(index) == 1


def test_compaction_keeps_results() -> None:
    state = state_of(*(wf(f"w{i}", "a", "b", "c") for i in range(1200)))
    index = state.model("continuation")
    for i in range(1, 1200):
        state.remove(f"w{i}")
    ranked = index.rank(query("a"))
    assert ranked[0].tool == "b" and ranked[0].evidence[0].workflow_id == "w0"


def test_empty_query_and_config_errors() -> None:
    assert index_of(wf("w", "a", "b")).rank(query()) == []
    with pytest.raises(ConfigurationError, match="max_order"):
        ContinuationConfig(max_order=0)
    with pytest.raises(ConfigurationError, match="context_weight"):
        ContinuationConfig(context_weight=-1)


def test_keys_too_wide_to_pack_rank_the_same() -> None:
    # max_order=30 cannot pack a key into an int64: postings go through the row fallback.
    # With queries of at most 3 leaves, order 3 and order 30 count the same agreements.
    memory = [
        wf(f"w{i}", *tools, text=text)
        for i, (tools, text) in enumerate(
            [
                (("a", "b", "c"), "book a flight"),
                (("a", "b", "d"), "book a train"),
                (("x", "b", "c", "c"), "book a flight now"),
                (("a", "c"), None),
            ]
            * 3
        )
    ]
    packed, rows = index_of(*memory), index_of(*memory, max_order=30)
    assert rows._keys._csr_keys.size == 0 and rows._keys._tail_size > 0  # the fallback was taken
    for tools, text in [(("a", "b"), "book a flight"), (("b",), None), (("x", "b", "c"), None)]:
        left, right = packed.rank(query(*tools, text=text)), rows.rank(query(*tools, text=text))
        assert [(c.tool, c.order, c.evidence, c.args) for c in left] == [
            (c.tool, c.order, c.evidence, c.args) for c in right
        ]
        assert [c.probability for c in left] == pytest.approx([c.probability for c in right])


def test_the_heaviest_evidence_positions_are_those_a_full_sort_picks() -> None:
    rng = np.random.default_rng(7)
    for size in (0, 5, 200, 201, 5_000):
        chosen = np.sort(rng.choice(100_000, size=size, replace=False))
        weights = rng.choice([0.5, 1.0, 2.0, 3.5], size=size)  # many ties, at the cut too
        order = np.lexsort((chosen, -weights))[:200]
        picked, picked_weights = _heaviest(chosen, weights, 200)
        assert np.array_equal(picked, chosen[order])
        assert np.array_equal(picked_weights, weights[order])


def test_level_0_groups_merged_after_saves_are_those_built_at_once() -> None:
    texts = ["refund my order", "where is my parcel", "change my address", "cancel it"]
    memory = [
        wf(f"w{i}", *["lookup", "refund", "ship", "cancel"][i % 3 : i % 3 + 2 + i % 2],
           text=f"{texts[i % 4]} {i % 5}")
        for i in range(40)
    ]  # fmt: skip
    state = state_of(*memory[:10])
    merged = state.model("continuation")
    merged.rank(query("lookup", text="refund my order 1"))  # groups built, then merged
    for start in range(10, 40, 7):
        state.add_many(memory[start : start + 3])  # new contexts: the key width grows
        state.add_many(memory[start + 3 : start + 7])  # two saves, merged at the next ranking
        fresh = ContinuationIndex(merged.scope, merged.contexts, merged.config)
        for left, right in zip(merged._frequency(), fresh._frequency(), strict=True):
            assert np.array_equal(left, right)
        q = query("lookup", "refund", text="where is my parcel 2")
        assert merged.rank(q) == fresh.rank(q)


def test_packed_postings_equal_the_unpacked_ones() -> None:
    from em_plugin.suggest.continuation_keys import KeyPostings, _unpack

    rng = np.random.default_rng(7)
    for _ in range(50):
        lengths = rng.integers(1, 10, int(rng.integers(1, 20)))
        vocabulary = int(rng.integers(1, 30))
        tok = rng.integers(-1, vocabulary, int(lengths.sum())).astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        local = np.arange(len(tok)) - np.repeat(starts, lengths)
        leaf = np.flatnonzero(rng.random(len(tok)) < 0.6)
        kind = rng.integers(0, 2, len(leaf)).astype(np.int64)
        positions = np.arange(len(leaf), dtype=np.int64)
        width = int(rng.integers(1, 5))
        packed, rows = KeyPostings(width), KeyPostings(width)
        packed.post(tok, local, leaf, kind, positions, vocabulary)
        rows._post_rows(tok, local, leaf, kind, positions)  # the reference: key tuples
        keys = _unpack(packed._csr_keys, packed._csr_bits, width)
        ends = packed._csr_ptr.tolist()
        got = {key: packed._posted[ends[i] : ends[i + 1]].tolist() for i, key in enumerate(keys)}
        assert got == rows._tail
