"""The framework adapters above the engine: LangGraph, BeeAI, the demo crews, the panel.

See docs/architecture.md.
"""
