"""Per-scope derived state: one state object per scope, its suggestion models, their persistence.

Everything here is derived from the store and can be rebuilt from it. Each scope has one state,
:class:`~em_plugin.state.scope_index.ScopeIndex` (slots, tool vocabulary, FAISS over instruction
texts, contexts with vectors, args, routes); the suggestion models
(:mod:`~em_plugin.state.scope_memory`: whatever models the suggesters declare, through the
protocol of :mod:`~em_plugin.state.scope_models`) are indexes over its arrays. The step index
(:mod:`~em_plugin.state.step_index`) holds the scopes and journals their changes; the
:class:`~em_plugin.state.engine.MemoryEngine` keeps them in step with the store, with one
read-through cache of parsed workflows (:mod:`~em_plugin.state.workflow_cache`).
Saves that outlive their turn go through the writer of :mod:`~em_plugin.state.durability`.
"""
