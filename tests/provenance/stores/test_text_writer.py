"""Workflows written straight to term text give exactly the mapping's triples."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from rdflib import Literal, URIRef

from provenance.mapping import workflow_to_triples
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow
from provenance.stores._terms import TermError, TriplesText, nquads, replace_update, term_text
from provenance.stores._text_writer import workflow_to_text
from provenance.vocab import graph_iri
from tests.strategies import workflows

_NASTY = [
    'quote " and \\" backslash \\ end\\',
    "line1\nline2\r\nline3\ttab\x0bvt\x0c",
    "naïve café — 日本語 🚀 \u2028\u2029 \ufeff",
    '}} GRAPH <urn:x> { <a> <b> "c" } . <x> <y> <z> .',
    "\x01\x1f\x7f control",
]


def _hostile() -> Workflow:
    call = CallStep(
        name='tool "x"\n\\',
        agent="agent\nsub",
        args={s: {"nested": [s, 1.5, None, True, -(2**53)]} for s in _NASTY},
        output={"text": _NASTY, "n": 1e-300},
        started="2026-01-02T03:04:05Z",  # rdflib rewrites Z: the text must follow it
        ended="2026-01-02",  # ISO 8601 but no xsd:dateTime: kept as text only
        id='call "1"',
        extra={"x": _NASTY[0]},
    )
    inner = CallStep(name="sub tool", agent="other", args={"k": "v"}, steps=())
    return Workflow(
        id='id "with" spaces/and#hash',
        scope='scope \\ with "quotes" ü',
        title=_NASTY[1],
        source=_NASTY[2],
        created="2026-11-21T10:00:00.5+14:00",
        extra={"meta": _NASTY},
        steps=(
            InstructionStep(text=_NASTY[0], id="i1", timestamp="2026-11-21T10:00:00"),
            CallStep(name="coordinator", agent="boss", steps=(call, inner)),
            InstructionStep(text=_NASTY[3], id="i2", revision_of="i1"),
        ),
        failed=(FailedCall(call=CallStep(name="broken", args={"a": _NASTY[4]}), error=_NASTY[3]),),
        revised=(InstructionStep(text=_NASTY[4], id="i0"),),
    )


def _check(workflow: Workflow) -> None:
    triples = workflow_to_triples(workflow)
    text = workflow_to_text(workflow)
    # The same tokens, in the same order, as serialising the mapping's rdflib triples.
    assert text.rows == [(term_text(s), term_text(p), term_text(o)) for s, p, o in triples]
    assert text.trusted
    # Read as triples, the text gives back the mapping's terms.
    assert list(text) == triples and len(text) == len(triples) and text[0] == triples[0]
    # And a store parses both documents into the same quads.
    name = graph_iri(workflow.id, workflow.scope)
    from_text = set(ox.parse(nquads([(name, text)]), ox.RdfFormat.N_QUADS))
    assert from_text == set(ox.parse(nquads([(name, triples)]), ox.RdfFormat.N_QUADS))
    assert len(from_text) == len(set(triples))
    assert replace_update([(name, text)], [name]) == replace_update([(name, triples)], [name])


def test_hostile_strings_give_the_same_triples() -> None:
    _check(_hostile())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow=workflows)
def test_any_workflow_gives_the_same_triples(workflow: Workflow) -> None:
    _check(workflow)


def test_triples_text_of_checks_terms() -> None:
    good = TriplesText.of([(URIRef("urn:a"), URIRef("urn:b"), Literal('x "y"\n'))])
    assert good.rows == [("<urn:a>", "<urn:b>", '"x \\"y\\"\\n"')] and not good.trusted
    assert list(good) == [(URIRef("urn:a"), URIRef("urn:b"), Literal('x "y"\n'))]
    with pytest.raises(TermError):
        TriplesText.of([(URIRef("not absolute"), URIRef("urn:b"), Literal("x"))])
