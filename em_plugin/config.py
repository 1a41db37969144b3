"""Settings read from the environment, in one place: their names, defaults and parsing.

- ``EM_PLUGIN_STORE``: the store a memory or command opens (default ``~/.em-plugin/store``, disk);
- ``EM_PLUGIN_EMBEDDER``: the CLI's embedder, a model name or path, or ``fake`` / ``fake:N``
  for tests (default all-MiniLM-L6-v2);
- ``EM_PLUGIN_TORCH_THREADS``: torch threads of the default embedder (default: chosen per call,
  one for a turn's few texts);
- ``EM_PLUGIN_TURN_BUDGET``: seconds the memory may add to a turn, or ``none`` (default 0.5);
- ``EM_PLUGIN_WARM_UP_WAIT``: seconds after a memory is created during which the first turns
  wait for the embedder's background warm-up, outside the turn budget (default 60);
- ``EM_PLUGIN_LLM``: the demo's chat model, ``local``, ``ollama:<model>`` or ``openai:<model>``
  (default: none, the offline router);
- ``EM_PLUGIN_SCOPE_CACHE``: scopes a memory keeps loaded at most, least recently used out,
  or ``none`` for every scope (default 4096; docs/state.md, "Many scopes").

The default store itself is resolved by :func:`provenance.stores.open_store` (the layer below),
from the same variable. Every parser here raises :class:`~em_plugin.errors.ConfigurationError`
with the valid forms, so a bad setting fails when the memory or integration is built.
"""

from __future__ import annotations

import os

from em_plugin.errors import ConfigurationError
from provenance.stores.registry import DEFAULT_STORE
from provenance.stores.registry import ENV_VAR as STORE_ENV

__all__ = [
    "DEFAULT_SCOPE_CACHE",
    "DEFAULT_STORE",
    "DEFAULT_TURN_BUDGET",
    "DEFAULT_WARM_UP_WAIT",
    "EMBEDDER_ENV",
    "FAKE_EMBEDDER",
    "LLM_ENV",
    "SCOPE_CACHE_ENV",
    "STORE_ENV",
    "TORCH_THREADS_ENV",
    "TURN_BUDGET_ENV",
    "WARM_UP_WAIT_ENV",
    "scope_cache",
    "torch_threads",
    "turn_budget",
    "warm_up_wait",
]

EMBEDDER_ENV = "EM_PLUGIN_EMBEDDER"
LLM_ENV = "EM_PLUGIN_LLM"
SCOPE_CACHE_ENV = "EM_PLUGIN_SCOPE_CACHE"
TORCH_THREADS_ENV = "EM_PLUGIN_TORCH_THREADS"
TURN_BUDGET_ENV = "EM_PLUGIN_TURN_BUDGET"
WARM_UP_WAIT_ENV = "EM_PLUGIN_WARM_UP_WAIT"

#: The embedder alias of tests and benchmarks (``fake`` or ``fake:<dimension>``).
FAKE_EMBEDDER = "fake"
#: Scopes a memory keeps loaded at most: about 75 KB each for a scope of two workflows with its
#: suggestion models, so 4096 small scopes hold ~300 MB; a large scope costs what its workflows
#: cost (docs/state.md).
DEFAULT_SCOPE_CACHE = 4096
#: Seconds the memory may add to a turn when neither the policy nor the environment says.
DEFAULT_TURN_BUDGET = 0.5
#: Seconds the first turns wait for the embedder's warm-up (the default model loads in 2-9 s).
DEFAULT_WARM_UP_WAIT = 60.0


def torch_threads() -> int | None:
    """Return ``$EM_PLUGIN_TORCH_THREADS``, or ``None`` to let the embedder choose per call.

    Raises:
        ConfigurationError: When the variable is set but not a positive integer.
    """
    raw = os.environ.get(TORCH_THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigurationError(f"{TORCH_THREADS_ENV} must be a positive integer: {raw!r}")
    return int(raw)


def turn_budget() -> float | None:
    """Return ``$EM_PLUGIN_TURN_BUDGET`` in seconds, ``None`` for ``none``, else the default.

    Raises:
        ConfigurationError: When the variable is neither a number nor ``none``.
    """
    raw = os.environ.get(TURN_BUDGET_ENV, "").strip()
    if not raw:
        return DEFAULT_TURN_BUDGET
    if raw.lower() == "none":
        return None
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(
            f"{TURN_BUDGET_ENV} must be a number of seconds or 'none', got {raw!r}"
        ) from None


def warm_up_wait() -> float:
    """Return ``$EM_PLUGIN_WARM_UP_WAIT`` in seconds, else :data:`DEFAULT_WARM_UP_WAIT`.

    Raises:
        ConfigurationError: When the variable is not a number of seconds >= 0.
    """
    raw = os.environ.get(WARM_UP_WAIT_ENV, "").strip()
    if not raw:
        return DEFAULT_WARM_UP_WAIT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ConfigurationError(
            f"{WARM_UP_WAIT_ENV} must be a number of seconds >= 0, got {raw!r}"
        )
    return value


def scope_cache() -> int | None:
    """Return ``$EM_PLUGIN_SCOPE_CACHE``, ``None`` for ``none``, else the default.

    Raises:
        ConfigurationError: When the variable is neither a positive integer nor ``none``.
    """
    raw = os.environ.get(SCOPE_CACHE_ENV, "").strip()
    if not raw:
        return DEFAULT_SCOPE_CACHE
    if raw.lower() == "none":
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigurationError(
            f"{SCOPE_CACHE_ENV} must be a positive number of scopes or 'none', got {raw!r}"
        )
    return int(raw)
