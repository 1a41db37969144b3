"""Errors raised by the engine layer.

The tree::

    EpisodicMemoryError
    ├── ConfigurationError (ValueError)   bad constructor arguments or settings; raised at once
    │   ├── EmbedderMismatchError         the store was indexed with another embedder
    │   └── MissingExtraError             an optional extra (e.g. ``minilm``) is not installed
    ├── EmbedderError                     the embedding model could not load or embed
    ├── IndexStaleError                   the persisted step index does not fit the store/embedder
    ├── SuggestionError                   a suggester (e.g. the LLM) failed
    └── TrajectoryError (ValueError)      trajectory events that do not form a workflow

Errors from :mod:`provenance` (``ProvenanceError``) pass through unchanged: they already name the
workflow, line or store that is wrong.
"""

from __future__ import annotations


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
