"""provenance.json_text writes exactly what json.dumps writes, faster."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.json_text import json_text, json_writer

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_VALUES)
def test_json_text_is_json_dumps(value: object) -> None:
    assert json_text(value) == json.dumps(value, ensure_ascii=False)


@given(_VALUES)
def test_sorted_keys_and_default_are_json_dumps(value: object) -> None:
    write = json_writer(sort_keys=True, default=str)
    assert write(value) == json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    assert write({"b": object, "a": 1}) == '{"a": 1, "b": "<class \'object\'>"}'


@pytest.mark.parametrize("value", [True, False, 1.5, -0.0, 10**30, 'é\u2028\x00"\\'])
def test_scalars_that_look_alike_stay_apart(value: object) -> None:
    assert json_text(value) == json.dumps(value, ensure_ascii=False)


def test_strict_writer_refuses_what_json_dumps_refuses() -> None:
    strict = json_writer(allow_nan=False)
    with pytest.raises(ValueError, match="Out of range float"):
        strict([math.nan])
    with pytest.raises(TypeError, match="not JSON serializable"):
        strict({"a": object()})
    circular: list[object] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        json_text(circular)


@given(st.dictionaries(st.text(), _SCALARS, max_size=6))
def test_flat_records_are_json_dumps(value: dict[str, object]) -> None:
    for sort_keys in (False, True):
        write = json_writer(sort_keys=sort_keys)
        assert write(value) == json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)


def test_records_with_other_keys_or_nesting_go_to_the_encoder() -> None:
    for value in ({1: "a", "b": 2}, {"a": [1, 2]}, {"a": {"b": None}}, {"x": 0.1}):
        assert json_text(value) == json.dumps(value, ensure_ascii=False)
    with pytest.raises(TypeError):
        json_writer(sort_keys=True)({1: "a", "b": 2})
