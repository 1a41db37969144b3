"""The public API: a sorted ``__all__`` of about a dozen names, each importable."""

from __future__ import annotations

import importlib

import pytest

import em_plugin


def test_all_is_sorted_and_small() -> None:
    assert em_plugin.__all__ == sorted(em_plugin.__all__)
    assert 8 <= len(em_plugin.__all__) <= 16


@pytest.mark.parametrize("name", em_plugin.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(em_plugin, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        em_plugin.nope  # noqa: B018


def test_provenance_all_is_sorted() -> None:
    provenance = importlib.import_module("provenance")
    assert provenance.__all__ == sorted(provenance.__all__)
