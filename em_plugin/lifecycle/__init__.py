"""Workflow versions, retirement and procedures mined from repetition (docs/lifecycle.md)."""

from __future__ import annotations

from em_plugin.lifecycle.types import PROCEDURE_STATUSES, Procedure, WorkflowVersion

__all__ = ["PROCEDURE_STATUSES", "Procedure", "WorkflowVersion"]
