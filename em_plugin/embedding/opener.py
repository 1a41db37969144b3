"""Open a store's embedder in one call: resolve, cache, check the store's record, warm up.

:func:`open_embedder` is the one place a memory's embedder is set up (docs/state.md):

1. the user's setting becomes an :class:`~em_plugin.embedding.Embedder`
   (:func:`~em_plugin.embedding.resolve_embedder`);
2. it is wrapped in the embedding cache, persisted in the store's ``derived_dir`` when there is
   one (:func:`~em_plugin.embedding.cache.open_cache`);
3. the store's embedder record is read, and another embedder than the recorded one refused
   (:mod:`em_plugin.embedding.record`);
4. the model starts loading in the background (:mod:`em_plugin.embedding.warmup`).

The :class:`StoreEmbedder` it returns writes the record once, at the store's first save
(:meth:`StoreEmbedder.record`). :func:`embedder_from_setting` turns a command-line setting
(``--embedder``, ``$EM_PLUGIN_EMBEDDER``) into what it takes.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from em_plugin.config import warm_up_wait
from em_plugin.embedding.cache import CachedEmbedder, open_cache
from em_plugin.embedding.embedders import resolve_embedder
from em_plugin.embedding.record import (
    check_embedder,
    cli_spec,
    load_function,
    read_record,
    write_record,
)
from em_plugin.embedding.warmup import Warmup
from em_plugin.errors import EmbedderMismatchError
from provenance.errors import StoreError

if TYPE_CHECKING:
    from provenance.stores import WorkflowStore

__all__ = ["StoreEmbedder", "embedder_from_setting", "open_embedder"]

log = logging.getLogger("em_plugin.memory")
_FUNCTION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass
class StoreEmbedder:
    """A store's embedder as a memory uses it: cached, checked, warming up, recorded once.

    Get one from :func:`open_embedder`.
    """

    embedder: CachedEmbedder
    """The cached embedder."""
    store: WorkflowStore
    """The store whose record it matches."""
    warmup: Warmup
    """Its background warm-up."""
    recorded: bool
    """Whether the store holds its record (or may not be written from here)."""

    def record(self) -> None:
        """Record the store's embedder, once (a failure is logged: see the comment)."""
        if self.recorded:
            return
        try:
            write_record(self.store, self.embedder)
        except StoreError as exc:
            # A tenant's token may write its scopes only (docs/observability.md): the
            # store-wide record is then the operator's to write; the mismatch check on open
            # still reads it.
            log.warning("could not record the store's embedder: %s", exc)
        self.recorded = True


def open_embedder(spec: Any, store: WorkflowStore, *, warm_up: bool = True) -> StoreEmbedder:
    """Resolve, cache, check against the store's record and warm up a memory's embedder.

    Args:
        spec: Anything :func:`~em_plugin.embedding.resolve_embedder` accepts.
        store: The store the embedder indexes (its ``derived_dir`` holds the cache file).
        warm_up: Start loading the model in the background. A one-shot command that may embed
            nothing (delete, stats) passes ``False``: the model then loads on first use, and no
            thread imports torch behind its back.

    Returns:
        The store's embedder.

    Raises:
        ConfigurationError: When ``spec`` is no embedder, or ``$EM_PLUGIN_WARM_UP_WAIT`` is not
            a number of seconds.
        EmbedderMismatchError: When the store records another embedder (the message names
            both and the ways out).
        EmbedderError: When the cache file cannot be opened.
    """
    wait = warm_up_wait()
    cached = open_cache(resolve_embedder(spec), store.derived_dir, read_only=store.read_only)
    try:
        # One embedder per store: refuse another before its index is rebuilt for this one.
        record = check_embedder(store, cached)
    except BaseException:
        cached.close()
        raise
    warmup = Warmup(cached if warm_up else None, wait=wait)
    return StoreEmbedder(cached, store, warmup, record is not None or store.read_only)


def embedder_from_setting(setting: str | None, store: WorkflowStore | None = None) -> Any:
    """Turn a command-line embedder setting into what :func:`open_embedder` takes.

    A model name or path, ``fake[:N]``, ``default`` (all-MiniLM-L6-v2) or ``module:function``
    (a custom embedder, imported here). Without a setting, the embedder ``store`` records
    (:mod:`em_plugin.embedding.record`), else the default model.

    Args:
        setting: The ``--embedder`` value (``$EM_PLUGIN_EMBEDDER``); ``None`` or empty when
            not given.
        store: The store whose recorded embedder is used when ``setting`` is not given.

    Returns:
        An embedder spec (a name, an imported embedder, or ``None`` for the default model).

    Raises:
        EmbedderMismatchError: The store records a custom embedder and ``setting`` is missing.
        ConfigurationError: ``module:function`` cannot be imported.
    """
    if setting in (None, ""):
        return _recorded(store) if store is not None else None
    if setting == "default":
        return None
    if (
        _FUNCTION.fullmatch(setting)
        and setting.split(":")[0] != "fake"
        and not Path(setting).exists()
    ):
        return load_function(setting)
    return setting


def _recorded(store: WorkflowStore) -> str | None:
    record = read_record(store)
    if record is None:
        return None
    spec = cli_spec(record)
    if spec is None:
        raise EmbedderMismatchError(
            f"this store was indexed with the custom embedder {record.name!r} (dimension "
            f"{record.dimension}); pass it as --embedder module:function"
        )
    return spec
