"""Where a run's session and scope come from, and how memory is reached for a scope.

- session: the LangGraph ``thread_id`` (``config["configurable"]["thread_id"]``);
- scope: ``scope`` on the run's context (``invoke(..., context=Ctx(scope=...))``, an attribute or a
  dict key), else ``config["configurable"]["scope"]``, else the memory's own scope.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

logger = logging.getLogger("integrations.langgraph")


def thread_id_of(config: RunnableConfig | None) -> str | None:
    """Return the run's ``thread_id``, if any."""
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get("thread_id")
    return str(value) if value not in (None, "") else None


def scope_of(config: RunnableConfig | None, context: Any, default: str) -> str:
    """Return the run's scope: context, then configurable, then ``default``."""
    for source in (context, (config or {}).get("configurable") or {}):
        value = _field(source, "scope")
        if isinstance(value, str) and value.strip():
            return value
    return default


def _field(source: Any, name: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def runtime_context() -> Any:
    """Return the current run's context object, or ``None`` outside a LangGraph run."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except Exception:  # noqa: BLE001 - outside a run, or a runtime without context
        return None


def memory_for_scope(memory: Any, scope: str) -> Any:
    """Return a view of ``memory`` that reads and writes ``scope``.

    Uses ``memory.with_scope(scope)`` when the memory offers it and the scope differs.
    """
    if getattr(memory, "scope", scope) == scope:
        return memory
    with_scope = getattr(memory, "with_scope", None)
    return with_scope(scope) if callable(with_scope) else memory
