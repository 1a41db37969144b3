"""The crew-shape suite through the conformance kit (``integrations/conformance.py``): every
LangGraph and BeeAI shape runs the kit's scenario once, and each of the kit's checks is a test
(real packages, scripted models)."""

from __future__ import annotations

import pytest
from crew_shapes import SHAPES

from integrations.conformance import CHECKS, Check, Outcome, Shape, outcome_of

_OUTCOMES: dict[str, Outcome] = {}


def _outcome(shape: Shape) -> Outcome:
    # One scenario run per shape, shared by its checks.
    if shape.name not in _OUTCOMES:
        _OUTCOMES[shape.name] = outcome_of(shape)
    return _OUTCOMES[shape.name]


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_crew_shape(shape: Shape, check: Check) -> None:
    check(shape, _outcome(shape))
