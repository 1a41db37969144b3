"""A long workflow that matches nothing whole is matched by its recent leaves, and cited."""

from __future__ import annotations

from em_plugin.memory import EpisodicMemory
from em_plugin.retrieval.window import windows
from provenance.model import CallStep, InstructionStep, Workflow


def session(workflow_id: str, *requests: tuple[str, tuple[str, ...]]) -> Workflow:
    return Workflow(
        id=workflow_id,
        steps=tuple(
            InstructionStep(text, tuple(CallStep(tool) for tool in tools))
            for text, tools in requests
        ),
    )


def test_windows_halve_down_to_two_leaves() -> None:
    assert windows(12) == [6, 3]
    assert windows(5) == [2]
    assert windows(3) == []


def test_a_long_session_gets_cited_evidence_from_its_recent_leaves() -> None:
    # Stored: short sessions that change a booking and then pay. The current session did much
    # else first, so no stored workflow holds the whole of it above T; its recent leaves
    # (lookup, details, change) are what the stored sessions did before paying.
    stored = [
        session(f"s{i}", ("Change my booking", ("lookup", "details", "change", "pay")))
        for i in range(3)
    ]
    current = session(
        "c",
        ("Cancel my hotel", ("hotel_search", "hotel_cancel", "refund")),
        ("And the car", ("car_search", "car_cancel", "refund")),
        ("Change my booking", ("lookup", "details", "change")),
    )
    with EpisodicMemory(store="memory:", embedder="fake", scope="w") as memory:
        memory.save_many(stored)
        assert memory.retrieve(current) == []  # the paper's rule on the whole: nothing
        request = memory.request(current)
        # Of 9 leaves, the last 4 (refund, lookup, details, change) align with no stored
        # workflow leaving a step after them; the last 2 do.
        assert request.window == 2
        assert {m.workflow_id for m in request.matches} == {"s0", "s1", "s2"}
        assert all(m.score > memory.threshold for m in request.matches)
        top = memory.suggest_from(request, 3)[0]
        assert top.tool == "pay" and top.source == "episodic"
        assert {e.workflow_id for e in top.evidence} >= {"s0", "s1", "s2"}
        # A workflow that matches whole keeps the paper's rule as it is.
        short = session("d", ("Change my booking", ("lookup", "details")))
        assert memory.request(short).window is None and memory.request(short).matches
