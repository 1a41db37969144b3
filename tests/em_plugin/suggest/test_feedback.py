"""Ranking learns from acceptance: an ignored first suggestion gives way, per scope, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.feedback import (
    MIN_ROUNDS,
    SIGNIFICANCE,
    FeedbackStats,
    context_of,
    sign_test,
)
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, InstructionStep, Workflow

SHOWN = [Suggestion("Classify", "classifier"), Suggestion("Table", "table")]


def test_an_ignored_first_suggestion_gives_way_to_what_users_took() -> None:
    stats = FeedbackStats()
    context = ("extractor",)
    for _ in range(MIN_ROUNDS - 1):
        stats.note(context, ["classifier", "table"], "table")
    assert [s.tool for s in stats.rerank(context, SHOWN)] == ["classifier", "table"]  # too few
    stats.note(context, ["classifier", "table"], "table")
    ranked = stats.rerank(context, SHOWN)
    assert [s.tool for s in ranked] == ["table", "classifier"]
    assert ranked[0].why == f"taken {MIN_ROUNDS} of {MIN_ROUNDS} times after this step here"
    assert ranked[1].why == f"ignored {MIN_ROUNDS} of {MIN_ROUNDS} times after this step here"
    # Another context is untouched.
    assert [s.tool for s in stats.rerank(("other",), SHOWN)] == ["classifier", "table"]


def test_a_first_suggestion_taken_often_enough_stays_first() -> None:
    stats = FeedbackStats()
    context = ("extractor",)
    for taken in ["classifier", "classifier", "table", "table", "table", "table"]:
        stats.note(context, ["classifier", "table"], taken)
    ranked = stats.rerank(context, SHOWN)
    assert [s.tool for s in ranked] == ["classifier", "table"]  # taken 2 of 6: a third
    assert ranked[0].why == "taken 2 of 6 times after this step here"


def test_the_sign_test_decides_how_much_evidence_moves_a_suggestion() -> None:
    assert sign_test(5, 0) == pytest.approx(1 / 32)
    assert sign_test(6, 1) == pytest.approx(8 / 128)
    assert sign_test(7, 1) == pytest.approx(9 / 256)
    assert sign_test(5, 0) < SIGNIFICANCE < sign_test(6, 1) and sign_test(7, 1) < SIGNIFICANCE
    stats = FeedbackStats()
    context = ("extractor",)
    for taken in ["classifier"] + ["table"] * 6:
        stats.note(context, ["classifier", "table"], taken)
    assert [s.tool for s in stats.rerank(context, SHOWN)] == ["classifier", "table"]  # 6 to 1
    stats.note(context, ["classifier", "table"], "table")
    ranked = stats.rerank(context, SHOWN)
    assert [s.tool for s in ranked] == ["table", "classifier"]  # 7 to 1
    assert ranked[1].why == "ignored 7 of 8 times after this step here"
    assert stats.promotions == 1


def test_only_rounds_with_the_same_first_suggestion_are_compared() -> None:
    # "table" was taken often, but in rounds where "table" itself was shown first: that says
    # nothing about users ignoring "classifier", which was never shown first here.
    stats = FeedbackStats()
    context = ("extractor",)
    for _ in range(8):
        stats.note(context, ["table", "classifier"], "table")
    ranked = stats.rerank(context, SHOWN)
    assert [s.tool for s in ranked] == ["classifier", "table"]
    assert ranked[1].why == "taken 8 of 8 times after this step here"
    assert stats.promotions == 0


#: Three workflows call the classifier after the extractor, one the table: the classifier is
#: suggested first until feedback says otherwise.
PAST = [
    Workflow(id=wid, steps=(InstructionStep("Extract", (CallStep("extractor"), CallStep(tool))),))
    for wid, tool in [
        ("p0", "classifier"),
        ("p1", "classifier"),
        ("p2", "classifier"),
        ("q", "table"),
    ]
]


def test_feedback_never_leaves_its_scope() -> None:
    with EpisodicMemory(store="memory:", embedder="fake", scope="a") as a:
        a.save_many(PAST)
        b = a.with_scope("b")  # a view: the same store, engine and settings
        b.save_many(PAST)
        current = Workflow(id="c", steps=(InstructionStep("Extract", (CallStep("extractor"),)),))
        assert a.suggest(current)[0].tool == b.suggest(current)[0].tool == "classifier"
        for _ in range(MIN_ROUNDS):
            a.acceptance.feedback.note(context_of(current), ["classifier", "table"], "table")
        assert a.suggest(current)[0].tool == "table"
        assert "after this step here" in (a.suggest(current)[0].why or "")
        assert b.suggest(current)[0].tool == "classifier"  # scope b never saw a's feedback
        assert b.acceptance.feedback is not a.acceptance.feedback


def test_a_reopened_memory_ranks_by_the_rounds_judged_before(tmp_path: Path) -> None:
    # Users of scope "a" keep taking the table after an extraction, ignoring the classifier
    # shown first; the counts are read back from the round records by the next process.
    store = tmp_path / "store"
    with EpisodicMemory(store=store, embedder="fake", scope="a") as memory:
        memory.save_many(PAST)
        for n in range(MIN_ROUNDS):
            current = Workflow(
                id=f"session/s{n}",
                session=f"s{n}",
                steps=(InstructionStep("Extract", (CallStep("extractor"),)),),
            )
            shown = memory.suggest(current)
            assert shown[0].tool == "classifier"
            memory.record_suggestions(f"s{n}", shown)
            later = Workflow(
                id=current.id,
                session=current.session,
                steps=(
                    InstructionStep("Extract", (CallStep("extractor"),)),
                    InstructionStep("Tabulate", (CallStep("table"),)),
                ),
            )
            memory.record_suggestions(f"s{n}", memory.suggest(later))
        learned = memory.acceptance.feedback.rounds()
    assert learned == MIN_ROUNDS
    current = Workflow(id="c", steps=(InstructionStep("Extract", (CallStep("extractor"),)),))
    with EpisodicMemory(store=store, embedder="fake", scope="a") as again:
        assert again.acceptance.feedback.rounds() == learned
        ranked = again.suggest(current)
        assert ranked[0].tool == "table"
        assert ranked[0].why == f"taken {MIN_ROUNDS} of {learned} times after this step here"
        # Another scope of the same store learned nothing.
        assert again.with_scope("b").acceptance.feedback.rounds() == 0
