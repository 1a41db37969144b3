"""``open_store`` picks a backend from a spec string through the registry, or refuses clearly;
backends from other packages register in code or through entry points."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from provenance.stores import (
    ENV_VAR,
    GraphStore,
    OxigraphStore,
    SparqlEndpointStore,
    StoreConfigError,
    backend_schemes,
    open_graph_store,
    open_store,
    register_backend,
    registry,
)
from provenance.stores.contract import run_contract


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


# -- the backend registry ----------------------------------------------------------------------


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test vanish after it; entry points are looked up afresh."""
    monkeypatch.setattr(registry, "_backends", dict(registry._backends))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)


class _Scratch(OxigraphStore):
    """A third-party backend: here an in-memory store that remembers its spec."""

    def __init__(self, spec: str, read_only: bool) -> None:
        super().__init__(None)
        self.spec = spec


def open_scratch(spec: str, *, update_url: str | None, read_only: bool) -> GraphStore:
    """An opener as a plugin would ship it (also the target of the fake entry point)."""
    if update_url is not None:
        raise StoreConfigError("scratch stores take no update_url")
    return _Scratch(spec, read_only)


@pytest.mark.usefixtures("clean_registry")
def test_a_registered_backend_opens_by_its_scheme_and_passes_the_contract() -> None:
    register_backend("scratch", open_scratch)
    assert "scratch" in backend_schemes()
    with open_store("scratch:one") as store:
        assert isinstance(store.backend, _Scratch) and store.backend.spec == "scratch:one"
    with pytest.raises(StoreConfigError, match="scratch stores take no update_url"):
        open_store("scratch:one", update_url="http://127.0.0.1:1/update")
    with pytest.raises(StoreConfigError, match=r"http\(s\)://host:port/query, or scratch:\.\.\."):
        open_store("nosuch:x")
    assert run_contract(lambda: open_store("scratch:contract")) == {}


@pytest.mark.usefixtures("clean_registry")
def test_registering_refuses_clashes_and_bad_names() -> None:
    register_backend("scratch", open_scratch)
    with pytest.raises(StoreConfigError, match="already registered; pass replace=True"):
        register_backend("scratch", open_scratch)
    register_backend("scratch", open_scratch, replace=True)
    with pytest.raises(StoreConfigError, match="already registered"):
        register_backend("http", open_scratch)  # built-ins too
    for bad in ("S3", "x", "has space", "", "9lives"):
        with pytest.raises(StoreConfigError, match="lower-case letters"):
            register_backend(bad, open_scratch)
    with pytest.raises(StoreConfigError, match="not callable"):
        register_backend("thing", "not a function")  # type: ignore[arg-type]


@pytest.mark.usefixtures("clean_registry")
def test_backends_come_from_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    points = [
        importlib.metadata.EntryPoint(
            "epstore", f"{__name__}:open_scratch", registry.ENTRY_POINT_GROUP
        ),
        importlib.metadata.EntryPoint("http", f"{__name__}:open_scratch", "em_plugin.stores"),
    ]
    monkeypatch.setattr(
        registry.importlib.metadata,
        "entry_points",
        lambda group: [p for p in points if p.group == group],
    )
    with open_store("epstore:x") as store:
        assert isinstance(store.backend, _Scratch)
    # An entry point never displaces a built-in or a backend registered in code.
    assert isinstance(open_graph_store("http://127.0.0.1:1/query"), SparqlEndpointStore)


@pytest.mark.usefixtures("clean_registry")
def test_a_broken_entry_point_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = importlib.metadata.EntryPoint("broken", "no_such_module:x", "em_plugin.stores")
    monkeypatch.setattr(registry.importlib.metadata, "entry_points", lambda group: [broken])
    with pytest.raises(StoreConfigError, match="'broken' from entry point 'no_such_module:x'"):
        open_store("broken:x")
