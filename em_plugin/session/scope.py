"""Scope resolution: which scope a run reads and writes, and the memory view for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from em_plugin.session.port import MemoryPort

__all__ = ["field_of", "memory_for_scope", "resolve_scope"]


def field_of(source: Any, name: str) -> Any:
    """Return ``source[name]`` for a mapping, ``source.name`` for an object, else ``None``."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def resolve_scope(sources: Iterable[Any], memory: MemoryPort, default: str | None = None) -> str:
    """Return the first non-empty ``scope`` found in ``sources``.

    Else ``default``, else the memory's own scope.

    Args:
        sources: Run contexts or configuration mappings, most specific first.
        memory: The memory (its scope is the last resort).
        default: The integration's configured scope, if any.

    Returns:
        The scope.
    """
    for source in sources:
        value = field_of(source, "scope")
        if isinstance(value, str) and value.strip():
            return value
    return default or memory.scope


def memory_for_scope(memory: MemoryPort, scope: str) -> MemoryPort:
    """Return a view of ``memory`` that reads and writes ``scope``.

    Args:
        memory: The memory.
        scope: The scope.

    Returns:
        ``memory`` itself when its scope is ``scope``, else ``memory.with_scope(scope)``.
    """
    return memory if memory.scope == scope else memory.with_scope(scope)
