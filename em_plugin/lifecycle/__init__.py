"""Workflow versions, retirement and procedures mined from repetition (docs/lifecycle.md).

A memory's lifecycle is :class:`Lifecycle`, reached as ``memory.lifecycle``.
"""

from __future__ import annotations

from em_plugin.lifecycle.facade import Lifecycle
from em_plugin.lifecycle.types import PROCEDURE_STATUSES, Procedure, WorkflowVersion

__all__ = ["PROCEDURE_STATUSES", "Lifecycle", "Procedure", "WorkflowVersion"]
