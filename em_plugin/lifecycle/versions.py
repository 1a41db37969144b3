"""Versions and retirement of stored workflows: re-exported from :mod:`em_plugin.state.versions`.

The engine asks :class:`Versions` which ids are hidden on every write and catch-up, so the class
lives with the per-scope state (below this package); this module keeps its old import path.
"""

from __future__ import annotations

from em_plugin.state.versions import DEFAULT_AGENT, HiddenIds, SavePlan, Versions, leaf_key, now

__all__ = ["DEFAULT_AGENT", "HiddenIds", "SavePlan", "Versions", "leaf_key", "now"]
