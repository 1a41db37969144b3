"""Capture: framework-neutral trajectory events, the session trajectory and the workflow compiler.

Integrations turn framework events into :mod:`~em_plugin.capture.events`; a
:class:`~em_plugin.capture.trajectory.Trajectory` collects them per session and
:func:`~em_plugin.capture.compiler.compile_workflow` turns them into a workflow
(``docs/workflow-json.md`` describes the result).
"""

from __future__ import annotations

from em_plugin.capture.compiler import compile_workflow
from em_plugin.capture.events import is_command, session_workflow_id
from em_plugin.capture.redaction import redact_workflow
from em_plugin.capture.trajectory import Trajectory

__all__ = ["Trajectory", "compile_workflow", "is_command", "redact_workflow", "session_workflow_id"]
