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
PROVENANCE_DEPRECATED = {
    "LimitError": "provenance.errors",
    "MappingError": "provenance.errors",
    "StoreOutcomeUnknown": "provenance.errors",
    "workflow_from_json": "provenance.workflow_json",
    "workflow_to_json": "provenance.workflow_json",
}


@pytest.mark.parametrize("package", ["em_plugin", "provenance"])
def test_all_is_the_sorted_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == public_names(package)


def test_all_is_small() -> None:
    # About a dozen names, plus the five errors a user catches (the two roots, configuration,
    # store, not found), so that catching them needs no second package.
    assert 8 <= len(em_plugin.__all__) <= 21
    assert len(importlib.import_module("provenance").__all__) <= 15


def test_session_policy_is_imported_beside_the_memory() -> None:
    from em_plugin.session.policy import SessionPolicy

    assert em_plugin.SessionPolicy is SessionPolicy


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


@pytest.mark.parametrize("name", sorted(PROVENANCE_DEPRECATED))
def test_dropped_provenance_name_warns_and_still_imports(name: str) -> None:
    provenance = importlib.import_module("provenance")
    where = PROVENANCE_DEPRECATED[name]
    with pytest.deprecated_call(match=rf"{name} from provenance .* {where}\.{name}") as caught:
        exec(f"from provenance import {name}", {})
    assert all(w.filename == "<string>" for w in caught if w.category is DeprecationWarning)
    with pytest.deprecated_call():
        value = getattr(provenance, name)
    assert value is getattr(importlib.import_module(where), name)
    assert name not in vars(provenance)  # not cached: every use warns


def test_importing_em_plugin_loads_no_provenance_module_it_does_not_use() -> None:
    """The deprecation helpers live in provenance; ``import em_plugin`` stays light."""
    import subprocess
    import sys

    probe = "import sys, em_plugin; print(sorted(m for m in sys.modules if m.startswith('prov')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['provenance', 'provenance._deprecation']"
