"""Session policy shared by the integrations: commands, autosave, suggestions, fault isolation."""

from __future__ import annotations

from em_plugin.session.controller import (
    AUTOSAVE_CHOICES,
    SEPARATOR,
    Judge,
    PolicyAttributes,
    SessionController,
    SessionPolicy,
    TurnOutcome,
    append_text,
)
from em_plugin.session.recall import prompt_block_text, recall_text

__all__ = [
    "AUTOSAVE_CHOICES",
    "SEPARATOR",
    "Judge",
    "PolicyAttributes",
    "SessionController",
    "SessionPolicy",
    "TurnOutcome",
    "append_text",
    "prompt_block_text",
    "recall_text",
]
