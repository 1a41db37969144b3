"""Suggesters: episodic, procedural (H-EPM), paper rule, LLM, the fallback, and their chains.

See docs/suggestions.md. Each returns structured :class:`~em_plugin.suggest.types.Suggestion`
objects (tool, text, args, score, source, evidence); :class:`SuggestionChain` merges them.

Names are imported on first use: the per-scope models in :mod:`em_plugin.state` cite their
evidence with :class:`~em_plugin.suggest.types.Evidence`, and the suggesters read those models,
so importing this package must not pull the suggesters in.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from em_plugin.suggest.base import BaseSuggester, ScopeView, Suggester, SuggestionRequest
    from em_plugin.suggest.chain import CHAINS, SuggestionChain, build_chain, default_chain
    from em_plugin.suggest.chat import ChatModel
    from em_plugin.suggest.episodic import EpisodicSuggester
    from em_plugin.suggest.fallback import FallbackSuggester
    from em_plugin.suggest.llm import LLMSuggester
    from em_plugin.suggest.paper import PaperSuggester
    from em_plugin.suggest.procedural import ProceduralSuggester

__all__ = [
    "CHAINS",
    "BaseSuggester",
    "ChatModel",
    "EpisodicSuggester",
    "FallbackSuggester",
    "LLMSuggester",
    "PaperSuggester",
    "ProceduralSuggester",
    "ScopeView",
    "Suggester",
    "SuggestionChain",
    "SuggestionRequest",
    "build_chain",
    "default_chain",
]

_WHERE = {
    "BaseSuggester": "em_plugin.suggest.base",
    "CHAINS": "em_plugin.suggest.chain",
    "ChatModel": "em_plugin.suggest.chat",
    "EpisodicSuggester": "em_plugin.suggest.episodic",
    "FallbackSuggester": "em_plugin.suggest.fallback",
    "LLMSuggester": "em_plugin.suggest.llm",
    "PaperSuggester": "em_plugin.suggest.paper",
    "ProceduralSuggester": "em_plugin.suggest.procedural",
    "ScopeView": "em_plugin.suggest.base",
    "Suggester": "em_plugin.suggest.base",
    "SuggestionChain": "em_plugin.suggest.chain",
    "SuggestionRequest": "em_plugin.suggest.base",
    "build_chain": "em_plugin.suggest.chain",
    "default_chain": "em_plugin.suggest.chain",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'em_plugin.suggest' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
