"""Suggesters: episodic, procedural (H-EPM), paper rule, LLM, the fallback, and their chains.

See docs/suggestions.md. Each returns structured :class:`~em_plugin.types.Suggestion` objects
(tool, text, args, score, source, evidence); :class:`SuggestionChain` merges them.
"""

from __future__ import annotations

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
