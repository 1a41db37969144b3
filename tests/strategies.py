"""Hypothesis strategies for workflows, shared by the round-trip tests."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from provenance.model import OUTCOMES, CallStep, FailedCall, InstructionStep, Workflow

# Text that stresses escaping: SPARQL syntax, quotes, newlines, non-ASCII, surrogate-free unicode.
_HOSTILE = st.sampled_from(
    [
        '"; DROP ALL ; SELECT * WHERE { ?s ?p ?o } #',
        "line1\nline2\r\n\ttab",
        "}} GRAPH <urn:x> { <a> <b> <c> } '''",
        "naïve café — 日本語 🚀",
        "\\u0022 backslash \\",
        "<http://example.org/not-an-iri>",
    ]
)
texts = st.one_of(
    _HOSTILE,
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
        max_size=40,
    ).filter(lambda s: s.strip()),
)
names = st.one_of(
    st.sampled_from(["product_extractor", "pfas_classifier", "A1", "tool with spaces", "t'ool\"x"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-.:/", min_size=1, max_size=12).filter(
        lambda s: s.strip()
    ),
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    texts,
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(texts, children, max_size=3)
    ),
    max_leaves=6,
)
args = st.dictionaries(texts, json_values, max_size=3)
ids = st.text(alphabet="abcdefghij0123456789-_/:#[]|", min_size=1, max_size=12)
times = st.sampled_from([None, "2026-11-21T10:00:00+00:00", "2026-01-02T03:04:05.123456"])
outcomes = st.none() | st.sampled_from(OUTCOMES)


def calls(depth: int = 0) -> st.SearchStrategy[CallStep]:
    """Call steps, with sub-agent calls nested up to two levels."""
    children = st.lists(calls(depth + 1), max_size=2) if depth < 2 else st.just([])
    return st.builds(
        CallStep,
        name=names,
        args=args,
        output=json_values.filter(lambda v: v is not None) | st.none(),
        agent=st.none() | st.sampled_from(["coordinator", "extractor", "chemist agent"]),
        steps=children.map(tuple),
        id=st.none() | ids,
        started=times,
        ended=times,
        outcome=outcomes,
    )


instructions = st.builds(
    InstructionStep,
    text=texts,
    steps=st.lists(calls(), max_size=3).map(tuple),
    id=st.none() | ids,
    revision_of=st.none() | ids,
    timestamp=times,
)

workflows = st.builds(
    Workflow,
    id=ids,
    steps=st.lists(st.one_of(instructions, calls()), min_size=1, max_size=4).map(tuple),
    title=st.none() | texts,
    scope=st.sampled_from(["default", "tenant-a", "user/alice"]),
    session=st.none() | ids,
    created=times,
    framework=st.none() | st.sampled_from(["langgraph", "beeai"]),
    crew=st.none() | st.just("pfas-crew"),
    source=st.none() | texts,
    split=st.none() | st.sampled_from(["train", "test"]),
    outcome=outcomes,
    failed=st.lists(
        st.builds(
            FailedCall,
            # A failed call's outcome is "failure" (None is read as that).
            call=calls(2).map(lambda c: dataclasses.replace(c, outcome=None)),
            error=texts,
            parent=st.none() | st.just("0"),
        ),
        max_size=2,
    ).map(tuple),
    revised=st.lists(instructions, max_size=1).map(tuple),
    extra=st.dictionaries(
        st.sampled_from(["x_note", "tags", "synthetic"]), json_values, max_size=2
    ),
)
