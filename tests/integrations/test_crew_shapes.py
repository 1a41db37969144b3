"""The crew-shape suite: every shape captures exactly, keeps its model clean, streams the
suggestions and suggests from the saved session (real packages, scripted models)."""

from __future__ import annotations

import pytest
from crew_shapes import SHAPES, Shape, evaluate, leaked, rows


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_crew_shape(shape: Shape) -> None:
    result = evaluate(shape)
    outcome = result["outcome"]
    assert rows(outcome.saved) == shape.expected
    assert [f.call.name for f in outcome.saved.failed] == shape.failed
    assert leaked(outcome) == []
    assert outcome.streamed and outcome.streamed[0].startswith("Suggested next steps")
    assert result["cites saved workflow"], [s.evidence for s in outcome.suggestions]
    # Never a sub-agent's internal tool on its own: only what the coordinator can call.
    assert result["user-level suggestions"], [(s.source, s.tool) for s in outcome.suggestions]
