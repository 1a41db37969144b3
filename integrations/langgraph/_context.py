"""Where a run's session and scope come from.

- session: the LangGraph ``thread_id`` (``config["configurable"]["thread_id"]``);
- scope: ``scope`` on the run's context (``invoke(..., context=Ctx(scope=...))``, an attribute or a
  dict key), else ``config["configurable"]["scope"]``, else the memory's own scope.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.runnables import RunnableConfig

from em_plugin.session import MemoryPort, resolve_scope

logger = logging.getLogger("integrations.langgraph")

FRAMEWORK = "langgraph"


def thread_id_of(config: RunnableConfig | None) -> str | None:
    """Return the run's ``thread_id``, if any."""
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get("thread_id")
    return str(value) if value not in (None, "") else None


def scope_of(config: RunnableConfig | None, context: Any, memory: MemoryPort) -> str:
    """Return the run's scope: context, then configurable, then the memory's scope."""
    return resolve_scope((context, (config or {}).get("configurable") or {}), memory)


def runtime_context() -> Any:
    """Return the current run's context object, or ``None`` outside a LangGraph run."""
    try:
        from langgraph.runtime import get_runtime

        return get_runtime().context
    except Exception:  # noqa: BLE001 - outside a run, or a runtime without context
        return None
