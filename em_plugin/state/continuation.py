"""Deprecated: the continuation model moved to :mod:`em_plugin.suggest.continuation`.

It lives beside the episodic suggester that reads it, and the state layer builds it only as a
declared per-scope model (:mod:`em_plugin.state.scope_models`). Its names still import from here
for one release, each with a ``DeprecationWarning`` (docs/api.md).
"""

from __future__ import annotations

from em_plugin._deprecation import moved_names

__all__: list[str] = []

# Served on access, never imported here: the state layer does not import the suggesters.
__getattr__ = moved_names(
    "em_plugin.state.continuation",
    {
        name: "em_plugin.suggest.continuation"
        for name in ("Candidate", "ContinuationConfig", "ContinuationIndex", "Query")
    },
)
