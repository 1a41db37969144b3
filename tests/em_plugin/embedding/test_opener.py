"""``open_embedder``: one call resolves, caches, checks the store's record and warms up."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin.embedding import CachedEmbedder, CallableEmbedder, FakeEmbedder
from em_plugin.embedding.opener import embedder_from_setting, open_embedder
from em_plugin.embedding.record import read_record, write_record
from em_plugin.errors import ConfigurationError, EmbedderMismatchError
from provenance.stores import open_store


class _Warming(FakeEmbedder):
    """A fake embedder with a model to load (counts its warm-ups)."""

    def __init__(self) -> None:
        super().__init__(16)
        self.warmed = 0

    def warm_up(self) -> None:
        self.warmed += 1


def test_a_disk_store_gets_a_persisted_cache_and_its_record_at_first_write(
    tmp_path: Path,
) -> None:
    with open_store(str(tmp_path / "store")) as store:
        opened = open_embedder("fake:24", store)
        try:
            assert isinstance(opened.embedder, CachedEmbedder)
            assert opened.embedder.path == store.derived_dir / "embeddings.sqlite"
            assert opened.warmup.wait()  # nothing to load: ready at once
            assert read_record(store) is None  # written at the first save, not at open
            opened.record()
            record = read_record(store)
            assert record is not None and (record.name, record.dimension) == ("fake-24", 24)
        finally:
            opened.embedder.close()


def test_another_embedder_than_the_recorded_one_is_refused_and_its_cache_closed(
    tmp_path: Path,
) -> None:
    with open_store(str(tmp_path / "store")) as store:
        write_record(store, FakeEmbedder(32))
        with pytest.raises(EmbedderMismatchError, match="not 'fake-8'"):
            open_embedder("fake:8", store)
        opened = open_embedder("fake:32", store)  # the recorded one opens
        opened.embedder.close()


def test_the_warm_up_runs_only_when_asked() -> None:
    with open_store("memory:") as store:
        idle = _Warming()
        assert open_embedder(idle, store, warm_up=False).warmup.ready
        assert idle.warmed == 0
        warming = _Warming()
        assert open_embedder(warming, store).warmup.wait()
        assert warming.warmed == 1


def test_a_command_line_setting_becomes_an_embedder_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "appembed2.py").write_text(
        "from em_plugin import FakeEmbedder\n_inner = FakeEmbedder(48)\n\n\n"
        "def embed(texts):\n    return _inner.embed(texts)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert embedder_from_setting(None) is None and embedder_from_setting("default") is None
    assert embedder_from_setting("fake:16") == "fake:16"  # a name is passed on as it is
    assert embedder_from_setting("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    custom = embedder_from_setting("appembed2:embed")
    assert isinstance(custom, CallableEmbedder) and custom.name == "callable:embed"
    with pytest.raises(ConfigurationError, match="cannot import it"):
        embedder_from_setting("nowhere_module:embed")
    with open_store(str(tmp_path / "store")) as store:
        assert embedder_from_setting("", store) is None  # nothing recorded: the default model
        write_record(store, FakeEmbedder(32))
        assert embedder_from_setting(None, store) == "fake:32"  # the recorded one
        assert embedder_from_setting("fake:8", store) == "fake:8"  # the setting wins
        write_record(store, custom)
        with pytest.raises(EmbedderMismatchError, match="custom embedder 'callable:embed'"):
            embedder_from_setting(None, store)
