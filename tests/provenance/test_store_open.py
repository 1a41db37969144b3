"""``open_store`` picks a backend from a spec string through one table, or refuses clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from provenance.stores import (
    ENV_VAR,
    OxigraphStore,
    SparqlEndpointStore,
    StoreConfigError,
    open_graph_store,
    open_store,
)


@pytest.mark.parametrize("spec", ["memory:", "memory://", ":memory:", " memory: "])
def test_memory_specs(spec: str) -> None:
    with open_store(spec) as store:
        assert isinstance(store.backend, OxigraphStore) and store.backend.path is None


def test_path_and_file_url_specs(tmp_path: Path) -> None:
    target = tmp_path / "a store"
    for spec in (target, str(target), target.as_uri()):
        backend = open_graph_store(spec)
        assert isinstance(backend, OxigraphStore) and backend.path == target
        backend.close()
    assert (target / "CURRENT").is_file()


def test_http_spec_and_update_url() -> None:
    backend = open_graph_store("https://example.org/ds/query", update_url="https://example.org/u")
    assert isinstance(backend, SparqlEndpointStore)
    assert (backend.query_url, backend.update_url) == (
        "https://example.org/ds/query",
        "https://example.org/u",
    )


def test_default_is_the_environment_then_the_home_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "from-env"))
    with open_store() as store:
        assert store.backend.path == tmp_path / "from-env"  # type: ignore[attr-defined]
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("HOME", str(tmp_path))
    with open_store() as store:
        assert store.backend.path == tmp_path / ".em-plugin" / "store"  # type: ignore[attr-defined]


@pytest.mark.parametrize("spec", ["ftp://host/store", "sqlite:store.db", "", "   ", "memory:x"])
def test_unknown_spec_lists_the_valid_forms(spec: str) -> None:
    with pytest.raises(StoreConfigError, match="memory:.*directory path.*http"):
        open_store(spec)


def test_options_that_do_not_fit_the_backend() -> None:
    with pytest.raises(StoreConfigError, match="update_url"):
        open_store("memory:", update_url="http://127.0.0.1:1/update")
    with pytest.raises(StoreConfigError, match="read-only"):
        open_store("memory:", read_only=True)
