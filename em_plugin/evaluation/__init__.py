"""Evaluation (``docs/evaluation.md``): next-tool quality on split files, baselines, bench."""

from __future__ import annotations

from em_plugin.evaluation.protocol import DEFAULT_SWEEP, EVAL_SCOPE, evaluate, sweep

__all__ = ["DEFAULT_SWEEP", "EVAL_SCOPE", "evaluate", "sweep"]
