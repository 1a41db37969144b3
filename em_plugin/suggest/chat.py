"""Calling a chat model without importing its framework (duck typing).

Three shapes are recognised, in this order:

* **LangChain** ``BaseChatModel`` (and anything with ``invoke``): called with
  ``[("system", ...), ("human", ...)]`` message tuples, which every LangChain chat model accepts;
  the answer's ``content`` (a string or a list of content blocks) is the text. ``ainvoke`` is
  used from async code when present.
* **BeeAI** ``ChatModel`` (anything with an async ``run`` or ``create``): called with its own
  ``SystemMessage``/``UserMessage`` objects, taken from the modules of the model's class
  hierarchy (already loaded, since the model exists); the answer's ``get_text_content()`` is the
  text.
* a plain **callable** ``messages -> str`` (messages as ``(role, text)`` tuples).

Every failure becomes :class:`~em_plugin.errors.SuggestionError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import sys
from typing import Any

from em_plugin.errors import ConfigurationError, SuggestionError

__all__ = ["ainvoke_chat", "check_chat_model", "invoke_chat"]

Messages = list[tuple[str, str]]


def _kind(model: Any) -> str:
    if callable(getattr(model, "invoke", None)):
        return "langchain"
    for name in ("run", "create"):
        method = getattr(model, name, None)
        if method is not None and _is_async(method):
            return "beeai"
    if callable(model):
        return "callable"
    return "unknown"


def _is_async(method: Any) -> bool:
    # BeeAI's ``run`` is wrapped by ``runnable_entry`` (returns an awaitable ``Run``); the
    # function it wraps is a coroutine function.
    return inspect.iscoroutinefunction(inspect.unwrap(method))


def check_chat_model(model: Any) -> None:
    """Raise :class:`ConfigurationError` unless ``model`` is a usable chat model."""
    if model is not None and _kind(model) == "unknown":
        raise ConfigurationError(
            f"llm must be a LangChain chat model (invoke), a BeeAI ChatModel (run/create) or a "
            f"callable messages -> str; got {type(model).__name__}"
        )


def _text(result: Any) -> str:
    if isinstance(result, str):
        return result
    getter = getattr(result, "get_text_content", None)
    if callable(getter):
        return str(getter())
    content = getattr(result, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(getattr(block, "text", None), str):
                parts.append(block.text)
        return "".join(parts)
    raise SuggestionError(f"cannot read text from a chat answer of type {type(result).__name__}")


def _beeai_messages(model: Any, messages: Messages) -> list[Any]:
    classes = {}
    modules = [sys.modules.get(c.__module__) for c in type(model).__mro__]
    modules.append(sys.modules.get("beeai_framework.backend.message"))
    for module in modules:
        for name in ("SystemMessage", "UserMessage"):
            if name not in classes and module is not None and hasattr(module, name):
                classes[name] = getattr(module, name)
    if len(classes) < 2:
        raise SuggestionError(
            f"{type(model).__name__} looks like a BeeAI ChatModel but its message classes "
            "(SystemMessage, UserMessage) are not loaded"
        )
    role = {"system": classes["SystemMessage"], "human": classes["UserMessage"]}
    return [role[r](text) for r, text in messages]


async def _beeai_call(model: Any, messages: Messages) -> Any:
    built = _beeai_messages(model, messages)
    run = getattr(model, "run", None)
    if run is not None:
        return await run(built)
    return await model.create(messages=built)


def _run_sync(coroutine: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # Called synchronously from inside an event loop: run on a private loop in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def invoke_chat(model: Any, messages: Messages) -> str:
    """Send ``(role, text)`` messages (roles ``system``/``human``) and return the answer text.

    Raises:
        SuggestionError: When the model fails or its answer has no text.
    """
    kind = _kind(model)
    try:
        if kind == "langchain":
            return _text(model.invoke(messages))
        if kind == "beeai":
            return _text(_run_sync(_beeai_call(model, messages)))
        if kind == "callable":
            return _text(model(messages))
    except SuggestionError:
        raise
    except Exception as exc:
        raise SuggestionError(f"chat model {type(model).__name__} failed: {exc}") from exc
    raise SuggestionError(f"{type(model).__name__} is not a chat model")


async def ainvoke_chat(model: Any, messages: Messages) -> str:
    """Async twin of :func:`invoke_chat`."""
    kind = _kind(model)
    try:
        if kind == "langchain":
            ainvoke = getattr(model, "ainvoke", None)
            if callable(ainvoke):
                return _text(await ainvoke(messages))
            return _text(await asyncio.to_thread(model.invoke, messages))
        if kind == "beeai":
            return _text(await _beeai_call(model, messages))
        if kind == "callable":
            result = model(messages)
            return _text(await result if inspect.isawaitable(result) else result)
    except SuggestionError:
        raise
    except Exception as exc:
        raise SuggestionError(f"chat model {type(model).__name__} failed: {exc}") from exc
    raise SuggestionError(f"{type(model).__name__} is not a chat model")
