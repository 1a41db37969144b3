"""One embedder per store: the store records it, the CLI uses it, a mismatch is refused."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.embedding import FakeEmbedder
from em_plugin.embedding.record import read_record
from em_plugin.errors import EmbedderMismatchError
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store

CALLS = (CallStep("product_extractor"), CallStep("pfas_classifier"))
PAST = Workflow(id="w1", steps=(InstructionStep("Extract the SDS", CALLS),))
NOW = {
    "id": "now",
    "steps": [
        {
            "kind": "instruction",
            "text": "Extract the SDS",
            "steps": [{"kind": "call", "name": "product_extractor"}],
        }
    ],
}


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An app's custom embedder, importable as ``appembed:embed`` (48-d)."""
    (tmp_path / "appembed.py").write_text(
        textwrap.dedent(
            """
            from em_plugin import FakeEmbedder

            _inner = FakeEmbedder(48)


            def embed(texts):
                return _inner.embed(texts)
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("appembed", None)
    return "appembed:embed"


def _app_store(tmp_path: Path) -> Path:
    from appembed import embed  # type: ignore[import-not-found]

    directory = tmp_path / "store"
    with EpisodicMemory(store=str(directory), embedder=embed) as memory:
        memory.save(PAST)
    return directory


def test_the_store_records_its_embedder_and_refuses_another(
    tmp_path: Path, app_module: str
) -> None:
    directory = _app_store(tmp_path)
    with open_store(str(directory), read_only=True) as store:
        record = read_record(store)
    assert record is not None and (record.name, record.dimension) == ("callable:embed", 48)
    with pytest.raises(EmbedderMismatchError, match="indexed with the embedder 'callable:embed'"):
        EpisodicMemory(store=str(directory), embedder=FakeEmbedder(64))
    # Refused before anything was rebuilt: the app opens its store as it left it.
    from appembed import embed  # type: ignore[import-not-found]

    with EpisodicMemory(store=str(directory), embedder=embed) as memory:
        assert memory.ids() == ["w1"]


def test_the_cli_uses_the_recorded_embedder_or_a_module_function(
    tmp_path: Path, app_module: str
) -> None:
    directory = _app_store(tmp_path)
    current = tmp_path / "now.json"
    current.write_text(json.dumps(NOW), encoding="utf-8")
    runner = CliRunner()
    base = ["suggest", str(current), "--store", str(directory), "--format", "json"]

    missing = runner.invoke(cli, base)
    assert missing.exit_code == 2
    assert "custom embedder 'callable:embed' (dimension 48)" in missing.output
    assert "--embedder module:function" in missing.output

    wrong = runner.invoke(cli, ["--embedder", "fake", *base])
    assert wrong.exit_code == 2 and "not 'fake-64' (dimension 64)" in wrong.output

    right = runner.invoke(cli, ["--embedder", app_module, *base])
    assert right.exit_code == 0, right.output
    assert [s["tool"] for s in json.loads(right.output)] == ["pfas_classifier"]

    refused = runner.invoke(cli, ["--embedder", "fake:32", "reindex", "--store", str(directory)])
    assert refused.exit_code == 2 and "reindex --embedder ... --force" in refused.output
    switched = runner.invoke(
        cli, ["--embedder", "fake:32", "reindex", "--force", "--store", str(directory)]
    )
    assert switched.exit_code == 0, switched.output
    with open_store(str(directory), read_only=True) as store:
        assert read_record(store).name == "fake-32"  # type: ignore[union-attr]
    # The recorded fake embedder needs no --embedder now.
    assert runner.invoke(cli, base).exit_code == 0


def test_a_missing_extra_exits_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )
    current = tmp_path / "now.json"
    current.write_text(json.dumps(NOW), encoding="utf-8")
    runner = CliRunner()
    for args in (
        ["import", str(current), "--store", str(tmp_path / "a")],
        ["reindex", "--store", str(tmp_path / "b")],
    ):
        result = runner.invoke(cli, ["--embedder", "default", *args])
        assert result.exit_code == 4, result.output
        assert "needs the 'minilm' extra" in result.output


def test_the_memory_embedder_is_callable() -> None:
    with EpisodicMemory(store="memory:", embedder="fake") as memory:
        vectors = memory.embedder(["a text", "another"])
    assert isinstance(vectors, np.ndarray) and vectors.shape == (2, 64)


def test_the_record_is_in_the_store_before_its_first_workflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process that opens the store between the two writes must find the record: with
    # workflows and no record it would trust whatever its cache last indexed at that address.
    memory = EpisodicMemory(store=str(tmp_path / "store"), embedder=FakeEmbedder(32))
    store = memory._engine.store
    seen: list[tuple[int, object]] = []
    commit = store.commit_staged

    def checked(staged: object) -> object:
        seen.append((len(store), read_record(store)))
        return commit(staged)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "commit_staged", checked)
    with memory:
        memory.save(PAST)
        memory.save_many([PAST.replace(id=f"w{i}") for i in range(2, 6)], batch_size=2)
    assert [count for count, _ in seen] == [0, 1, 3]  # one save, then two batches
    assert {(r.name, r.dimension) for _, r in seen if r is not None} == {("fake-32", 32)}
    assert all(record is not None for _, record in seen)
