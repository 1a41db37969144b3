"""One embedder per store: the store records the embedder its index was built with.

The step index and the embedding cache hold vectors of one model; a second model on the same
store would rebuild the index with its own vectors, and the first would rebuild it back on its
next open. So the store keeps a record, ``(name, dimension)``, in a graph of its own
(:data:`RECORD_GRAPH`, the ``embedder`` family of :mod:`provenance.stores.graph_families`: never
a workflow, never in a query's dataset, carried by a full backup). A memory writes it on its
first save to a store without one; a memory or command whose embedder differs is refused with
:class:`EmbedderMismatchError`, which names both and the ways out (the recorded embedder, or
``em-plugin reindex --embedder ... --force``).

The record is the store's, not a scope's: a crew that reaches the store through a scoped bearer
token (``em-plugin serve --token-file``) reads it but never writes it (docs/sparql.md), so
opening a memory there neither fails nor warns.

A store written before records existed falls back to what its persisted index says
(``DIR.em-index/steps/meta.json``). The CLI picks the recorded embedder when ``--embedder`` is
not given (:func:`cli_spec`), and takes ``--embedder module:function`` for a custom one
(:func:`load_function`).
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any

from rdflib import Literal, URIRef

from em_plugin.errors import ConfigurationError, EmbedderMismatchError
from provenance.stores.graph_families import EMBEDDER
from provenance.stores.graph_writes import may_write, write_graphs
from provenance.vocab import BASE, WF_NS

__all__ = [
    "RECORD_GRAPH",
    "EmbedderMismatchError",
    "EmbedderRecord",
    "check_embedder",
    "check_recorded",
    "cli_spec",
    "load_function",
    "parse_record",
    "read_record",
    "record_graph",
    "write_record",
]

#: The graph holding the store's embedder record.
RECORD_GRAPH = EMBEDDER.iri()
_SUBJECT = URIRef(f"{BASE}store")
_NAME = URIRef(f"{WF_NS}embedderName")
_DIMENSION = URIRef(f"{WF_NS}embedderDimension")


@dataclass(frozen=True)
class EmbedderRecord:
    """The embedder a store's index was built with."""

    name: str
    """The embedder's ``name`` (``sentence-transformers:all-MiniLM-L6-v2``, ``fake-64``, ...)."""
    dimension: int
    """Its vector dimension."""

    def matches(self, embedder: Any) -> bool:
        """Whether ``embedder`` (an :class:`~em_plugin.embedding.Embedder`) is this one."""
        return bool(embedder.name == self.name and int(embedder.dimension) == self.dimension)


def read_record(store: Any) -> EmbedderRecord | None:
    """Return the store's embedder record, else what its persisted index says, else ``None``."""
    for _, triples in store.backend.read_graphs([RECORD_GRAPH]):
        found = parse_record(triples)
        if found is not None:
            return found
    directory = store.derived_dir
    # A persisted index speaks for the store only while the store holds what it indexed: a
    # store emptied behind the cache (another tool, a wipe) may start on any embedder.
    if directory is None or len(store) == 0:
        return None
    try:
        meta = json.loads((directory / "steps" / "meta.json").read_text(encoding="utf-8"))
        return EmbedderRecord(str(meta["embedder"]), int(meta["dimension"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record_graph(record: EmbedderRecord) -> tuple[URIRef, list[Any]]:
    """Return the record's graph, ``(name, triples)``."""
    return RECORD_GRAPH, [
        (_SUBJECT, _NAME, Literal(record.name)),
        (_SUBJECT, _DIMENSION, Literal(record.dimension)),
    ]


def write_record(store: Any, embedder: Any) -> EmbedderRecord:
    """Record ``embedder`` as the store's embedder (replacing any earlier record).

    A store that may not hold it from here (read-only, or reached through a scoped token) is
    left as it is: the record is the operator's to write there.

    Returns:
        The record (written, or not writable from here).

    Raises:
        StoreError: When the backend fails.
    """
    record = EmbedderRecord(str(embedder.name), int(embedder.dimension))
    if may_write(store.backend, EMBEDDER):
        write_graphs(store.backend, [record_graph(record)])
    return record


def parse_record(triples: Any) -> EmbedderRecord | None:
    """Return the record that a record graph's triples hold (``None``: they hold none)."""
    values = {str(p): str(o) for _, p, o in triples}
    if str(_NAME) in values and str(_DIMENSION) in values:
        try:
            return EmbedderRecord(values[str(_NAME)], int(values[str(_DIMENSION)]))
        except ValueError:
            return None
    return None


def check_embedder(store: Any, embedder: Any) -> EmbedderRecord | None:
    """Refuse an embedder other than the one the store was indexed with.

    Returns:
        The store's record (``None`` when it has none: any embedder may start it).

    Raises:
        EmbedderMismatchError: The store records another embedder (the message names both).
    """
    record = read_record(store)
    if record is None or record.matches(embedder):
        return record
    raise _mismatch(record, embedder, "this store")


def check_recorded(triples: Any, embedder: Any, *, where: str) -> EmbedderRecord | None:
    """Refuse an embedder other than the one a record graph's triples name.

    Args:
        triples: The triples of an embedder record graph (a backup's, say).
        embedder: The embedder about to index what the record describes.
        where: What holds the record, for the message (``"this backup"``).

    Returns:
        The record (``None`` when the triples hold none).

    Raises:
        EmbedderMismatchError: The record names another embedder (the message names both).
    """
    record = parse_record(triples)
    if record is None or record.matches(embedder):
        return record
    raise _mismatch(record, embedder, where)


def _mismatch(record: EmbedderRecord, embedder: Any, where: str) -> EmbedderMismatchError:
    spec = cli_spec(record)
    use = f"embedder={spec!r}" if spec else "the same embedder callable"
    return EmbedderMismatchError(
        f"{where} was indexed with the embedder {record.name!r} (dimension "
        f"{record.dimension}), not {embedder.name!r} (dimension {embedder.dimension}); open "
        f"it with {use} (em-plugin: --embedder {spec or 'module:function'}), or rebuild its "
        "index for the new one with 'em-plugin reindex --embedder ... --force'"
    )


def cli_spec(record: EmbedderRecord) -> str | None:
    """Return the ``--embedder`` value that rebuilds the recorded embedder, if there is one.

    ``sentence-transformers:MODEL`` gives ``MODEL``, ``fake-N`` gives ``fake:N``; a custom
    callable (``callable:NAME``) gives ``None``: it needs ``--embedder module:function``.
    """
    if record.name.startswith("sentence-transformers:"):
        return record.name.partition(":")[2]
    if record.name.startswith("fake-") and record.name[5:].isdigit():
        return f"fake:{record.name[5:]}"
    return None


def load_function(spec: str) -> Any:
    """Import ``module:function`` and return it as an embedder.

    The object may be an :class:`~em_plugin.embedding.Embedder` or a ``list[str] -> array``
    callable (named ``callable:<function>``, as ``EpisodicMemory(embedder=function)`` names
    it, so the record of an app's store matches).

    Raises:
        ConfigurationError: When the module or the name cannot be imported, or is neither.
    """
    from em_plugin.embedding.embedders import CallableEmbedder, Embedder

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"--embedder {spec!r}: expected module:function")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"--embedder {spec!r}: cannot import it ({exc})") from exc
    if isinstance(found, Embedder):
        return found
    if not callable(found):
        raise ConfigurationError(
            f"--embedder {spec!r} is neither an Embedder nor a list[str] -> array callable"
        )
    return CallableEmbedder(found)
