"""Every error a user of em-plugin catches, in one tree with two roots; import them from here.

``EpisodicMemoryError`` is the root of the engine's errors (and of the integrations' ones);
``ProvenanceError`` is the root of the store's and the workflow model's, re-exported here so one
import serves both (``from em_plugin.errors import WorkflowNotFound, ConfigurationError``; the
most common also import from :mod:`em_plugin` itself)::

    EpisodicMemoryError                   em_plugin and the integrations
    ├── ConfigurationError (ValueError)   bad constructor arguments or settings; raised at once
    │   ├── EmbedderMismatchError         the store was indexed with another embedder
    │   └── MissingExtraError             an optional extra (e.g. ``minilm``) is not installed
    ├── EmbedderError                     the embedding model could not load or embed
    ├── IndexStaleError                   the persisted step index does not fit the store/embedder
    ├── SuggestionError                   a suggester (e.g. the LLM) failed
    ├── TrajectoryError (ValueError)      trajectory events that do not form a workflow
    ├── AccessDenied                      a served store refused a token (em_plugin.access)
    ├── ServeError                        the SPARQL endpoint cannot start (em_plugin.endpoint)
    ├── ProtocolError                     a request the endpoint refuses, with its HTTP status
    ├── MemoryToolError                   an MCP tool call refused (integrations.mcp)
    ├── PanelError                        a request the memory panel refuses (integrations.panel)
    └── ScopeChoice                       a panel page that asks which scope (not a failure)

    ProvenanceError                       provenance: the workflow model and the stores
    ├── WorkflowFormatError (ValueError)  a malformed workflow (file and line when known)
    │   └── LimitError                    a workflow over a size limit
    ├── WorkflowNotFound (LookupError)    no workflow with that id (in that scope)
    ├── StoreError                        a store backend failed (the cause is chained)
    │   ├── StoreOutcomeUnknown           a write that may or may not have been committed
    │   └── StoreConfigError (ValueError) a store spec or option that cannot work
    ├── QueryError (ValueError)           bad SPARQL, an update where a query belongs, bad bindings
    │   └── TermError                     a value that cannot be one RDF term (an IRI, a tag)
    └── MappingError (ValueError)         RDF that does not map back to a workflow

Errors from :mod:`provenance` pass through the engine unchanged: they already name the
workflow, line or store that is wrong. The command line turns each into one ``error:`` line with
an exit status (docs/cli.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from provenance.errors import (
    LimitError,
    MappingError,
    ProvenanceError,
    QueryError,
    StoreError,
    StoreOutcomeUnknown,
    TermError,
    WorkflowFormatError,
    WorkflowNotFound,
)

if TYPE_CHECKING:
    from provenance.stores.base import StoreConfigError

__all__ = [
    "ConfigurationError",
    "EmbedderError",
    "EmbedderMismatchError",
    "EpisodicMemoryError",
    "IndexStaleError",
    "LimitError",
    "MappingError",
    "MissingExtraError",
    "ProvenanceError",
    "QueryError",
    "StoreConfigError",
    "StoreError",
    "StoreOutcomeUnknown",
    "SuggestionError",
    "TermError",
    "TrajectoryError",
    "WorkflowFormatError",
    "WorkflowNotFound",
]


class EpisodicMemoryError(Exception):
    """Root of every error raised by :mod:`em_plugin`."""


class ConfigurationError(EpisodicMemoryError, ValueError):
    """A setting is invalid; the message lists the valid choices."""


class EmbedderMismatchError(ConfigurationError):
    """The store was indexed with another embedder than the one given (the message names both)."""


class MissingExtraError(ConfigurationError):
    """An optional extra is not installed; the message names the extra and how to install it."""


class EmbedderError(EpisodicMemoryError):
    """The embedder could not be loaded or failed to embed."""


class IndexStaleError(EpisodicMemoryError):
    """The persisted step index was built for another store state, model or dimension."""


class SuggestionError(EpisodicMemoryError):
    """A suggester failed (for example the configured chat model raised)."""


class TrajectoryError(EpisodicMemoryError, ValueError):
    """Trajectory events are inconsistent (e.g. a call end without its start)."""


# Defined beside the code that raises it (a store's settings), served from here on first use:
# importing it eagerly would load the stores. AccessDenied stays in em_plugin.access and PanelError
# in integrations.panel, which import this module (it must not import them back).
_ELSEWHERE = {
    "StoreConfigError": "provenance.stores.base",
}


def __getattr__(name: str) -> type[Exception]:
    import importlib

    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'em_plugin.errors' has no attribute {name!r}")
    error: type[Exception] = getattr(importlib.import_module(module), name)
    return error
