"""Deprecation helpers: one warning text, and lazy module attributes that warn on access.

They are defined in :mod:`provenance._deprecation`, the lowest layer, so that ``provenance`` warns
the same way; docs/api.md lists what is deprecated in this release.
"""

from __future__ import annotations

from provenance._deprecation import deprecated, lazy_names, moved_names

__all__ = ["deprecated", "lazy_names", "moved_names"]
