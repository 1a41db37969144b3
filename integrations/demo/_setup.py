"""The demo's memory: its bootstrap workflows, its suggestion chain, its saved workflows' steps."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["bootstrap_path", "load_bootstrap", "store_label", "workflow_steps"]


def bootstrap_path() -> Path:
    """Return the bundled bootstrap workflows (``integrations/demo/pfas/data/bootstrap.jsonl``)."""
    return Path(str(resources.files("integrations.demo.pfas").joinpath("data", "bootstrap.jsonl")))


def load_bootstrap(memory: Any, store: Any) -> int:
    """Save the bootstrap workflows the store lacks, through the memory (index kept in sync).

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory` over ``store``.
        store: The :class:`~provenance.stores.WorkflowStore`.

    Returns:
        How many workflows were saved (0 when the store had them all).
    """
    from provenance.workflow_json import read_jsonl

    missing = [w for w in read_jsonl(bootstrap_path()) if w.id not in store]
    if not missing:
        return 0
    save_many = getattr(memory, "save_many", None)
    if callable(save_many):
        save_many(missing)
    else:
        for workflow in missing:
            memory.save(workflow)
    return len(missing)


def store_label(spec: str | None) -> str:
    """Name the store for the reader (the default store's path when ``spec`` is None)."""
    if spec:
        return spec
    import os

    from provenance.stores import DEFAULT_STORE, ENV_VAR

    return os.environ.get(ENV_VAR) or f"{DEFAULT_STORE.expanduser()} (default store)"


def workflow_steps(store: Any, workflow_id: str, query: str) -> tuple[list[str], list[dict]]:
    """Run a named query about one workflow; return its columns and rows as plain values.

    The workflow id is bound to the query's ``workflow`` parameter (never spliced into the text).

    Args:
        store: The :class:`~provenance.stores.WorkflowStore`.
        workflow_id: The saved workflow's id, e.g. ``"session/demo-langgraph"``.
        query: The named query, e.g. ``"workflow-steps"``.

    Returns:
        The column names and the rows (JSON-ready values).
    """
    from provenance.queries import load_query

    named = load_query(query)
    result = store.query(named.text, named.bindings(workflow=workflow_id))
    columns = list(named.columns) or [str(c) for c in result.columns]
    return columns, [{c: record.get(c) for c in columns} for record in result.records()]
