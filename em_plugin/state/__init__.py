"""Per-scope derived state: the step index, the suggestion models and their persistence.

Everything here is derived from the store and can be rebuilt from it: the step index
(:mod:`~em_plugin.state.step_index`), the per-scope suggestion state
(:mod:`~em_plugin.state.scope_memory`: continuation model and procedural graph), and the
:class:`~em_plugin.state.engine.MemoryEngine` that keeps them in step with the store.
"""
