"""The public API: a sorted ``__all__`` equal to the package's public names, each importable;
names dropped from ``__all__`` in this release still import, with a DeprecationWarning."""

from __future__ import annotations

import importlib

import pytest

import em_plugin
from tests.api_surface import public_names

DEPRECATED = {
    "Trajectory": "em_plugin.capture.trajectory",
    "format_suggestions": "em_plugin.suggest.types",
}


@pytest.mark.parametrize("package", ["em_plugin", "provenance"])
def test_all_is_the_sorted_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == public_names(package)


def test_all_is_small() -> None:
    assert 8 <= len(em_plugin.__all__) <= 16


@pytest.mark.parametrize("name", em_plugin.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(em_plugin, name) is not None


@pytest.mark.parametrize("name", sorted(DEPRECATED))
def test_dropped_name_warns_and_still_imports(name: str) -> None:
    with pytest.deprecated_call(match=rf"{name} from em_plugin .* {DEPRECATED[name]}\.{name}"):
        value = getattr(em_plugin, name)
    assert value is getattr(importlib.import_module(DEPRECATED[name]), name)
    assert name not in vars(em_plugin)  # not cached: every use warns


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        em_plugin.nope  # noqa: B018
