"""How a chat model reaches the engine: the :class:`ChatModel` protocol and its adapters.

The engine knows no agent framework. It talks to a chat model through :class:`ChatModel`:
``complete(messages) -> str`` and its async twin ``acomplete``, where ``messages`` are
``(role, text)`` pairs with roles ``"system"`` and ``"human"``.

Anything else passed as ``EpisodicMemory(llm=...)`` is turned into a :class:`ChatModel` by
:func:`as_chat_model`, which tries, in order:

1. an object that already is a :class:`ChatModel`;
2. the adapters registered with :func:`register_chat_adapter`, then those of the
   ``em_plugin.chat_models`` entry-point group (``integrations.langgraph`` adapts LangChain chat
   models, ``integrations.beeai`` BeeAI ``ChatModel``\\ s; see pyproject.toml);
3. a plain callable ``messages -> str`` (or ``-> Awaitable[str]``).

An adapter is a function ``adapter(model) -> ChatModel | None`` (``None``: not mine). Every
failure of a call becomes :class:`~em_plugin.errors.SuggestionError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import inspect
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from em_plugin.errors import ConfigurationError, SuggestionError

__all__ = [
    "ENTRY_POINT_GROUP",
    "AsyncChatModel",
    "ChatAdapter",
    "ChatModel",
    "Messages",
    "ainvoke_chat",
    "as_chat_model",
    "invoke_chat",
    "register_chat_adapter",
]

#: ``(role, text)`` pairs; roles are ``"system"`` and ``"human"``.
Messages = Sequence[tuple[str, str]]

#: The entry-point group whose objects are chat adapters (``adapter(model) -> ChatModel | None``).
ENTRY_POINT_GROUP = "em_plugin.chat_models"

log = logging.getLogger(__name__)


@runtime_checkable
class ChatModel(Protocol):
    """A chat model as the engine calls it: messages in, the answer's text out."""

    def complete(self, messages: Messages) -> str:
        """Answer ``(role, text)`` messages with text.

        Raises:
            Exception: Any failure; the caller reports it as a SuggestionError.
        """
        ...

    async def acomplete(self, messages: Messages) -> str:
        """Async twin of :meth:`complete`."""
        ...


ChatAdapter = Callable[[Any], ChatModel | None]

_adapters: list[tuple[str, ChatAdapter]] = []
_entry_points_loaded = False
_lock = threading.Lock()


def register_chat_adapter(name: str, adapter: ChatAdapter) -> None:
    """Let :func:`as_chat_model` adapt another kind of chat model.

    Args:
        name: The adapter's name, for error messages (e.g. ``"langchain"``); registering a name
            again replaces its adapter.
        adapter: Returns a :class:`ChatModel` wrapping the object, or ``None`` when the object is
            not a model it knows.

    Raises:
        ConfigurationError: When ``adapter`` is not callable.
    """
    if not callable(adapter):
        raise ConfigurationError(f"the chat adapter {name!r} is not callable: {adapter!r}")
    with _lock:
        _adapters[:] = [(n, a) for n, a in _adapters if n != name]
        _adapters.append((name, adapter))


def as_chat_model(model: Any) -> ChatModel:
    """Return ``model`` as a :class:`ChatModel` (see the module doc for the order tried).

    Raises:
        ConfigurationError: When no adapter fits; the message names the protocol and the
            adapters available.
    """
    if isinstance(model, ChatModel):
        return model
    _load_entry_points()
    with _lock:
        adapters = list(_adapters)
    for _, adapter in adapters:
        adapted = adapter(model)
        if adapted is not None:
            return adapted
    if callable(model):
        return _CallableChat(model)
    names = ", ".join(n for n, _ in adapters) or "none installed"
    raise ConfigurationError(
        f"llm must be an em_plugin.suggest.ChatModel (complete/acomplete), a model one of the "
        f"chat adapters takes ({names}), or a callable messages -> str; got "
        f"{type(model).__name__} (install the integration for its framework, e.g. "
        f'pip install "em-plugin[langgraph]" or "em-plugin[beeai]")'
    )


def invoke_chat(model: ChatModel, messages: Messages) -> str:
    """Call ``model.complete`` and check that the answer is text.

    Raises:
        SuggestionError: When the model fails or answers something other than text.
    """
    try:
        answer = model.complete(messages)
    except Exception as exc:
        raise SuggestionError(f"chat model {_name(model)} failed: {exc}") from exc
    return _checked(model, answer)


async def ainvoke_chat(model: ChatModel, messages: Messages) -> str:
    """Async twin of :func:`invoke_chat`."""
    try:
        answer = await model.acomplete(messages)
    except Exception as exc:
        raise SuggestionError(f"chat model {_name(model)} failed: {exc}") from exc
    return _checked(model, answer)


def _checked(model: ChatModel, answer: object) -> str:
    if not isinstance(answer, str):
        raise SuggestionError(
            f"chat model {_name(model)} answered {type(answer).__name__}, not text"
        )
    return answer


def _name(model: object) -> str:
    inner = getattr(model, "model", None)
    return type(inner if inner is not None else model).__name__


class _CallableChat:
    """A plain callable ``messages -> str`` (or an awaitable of it) as a :class:`ChatModel`."""

    def __init__(self, function: Callable[[Messages], str | Awaitable[str]]) -> None:
        self.model = function

    def complete(self, messages: Messages) -> str:
        answer = self.model(list(messages))
        if inspect.isawaitable(answer):
            return _run_sync(answer)
        return answer

    async def acomplete(self, messages: Messages) -> str:
        answer = self.model(list(messages))
        return await answer if inspect.isawaitable(answer) else answer


def _run_sync(awaitable: Awaitable[Any]) -> Any:
    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # Called synchronously from inside an event loop: run on a private loop in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()


class AsyncChatModel(ABC):
    """A :class:`ChatModel` whose model is async only: :meth:`complete` runs :meth:`acomplete`.

    From synchronous code inside a running event loop, the call runs on a private loop in a
    worker thread.
    """

    def complete(self, messages: Messages) -> str:
        """Run :meth:`acomplete` to completion."""
        answer: str = _run_sync(self.acomplete(messages))
        return answer

    @abstractmethod
    async def acomplete(self, messages: Messages) -> str:
        """Answer ``(role, text)`` messages with text."""


def _load_entry_points() -> None:
    """Register the adapters of the ``em_plugin.chat_models`` entry points, once per process."""
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
        known = {n for n, _ in _adapters}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in known:
            continue  # registered in code (its package was imported): the same adapter
        try:
            adapter = entry.load()
        except ImportError as exc:  # the framework is not installed: none of its models exist
            log.debug("chat adapter %s not loaded: %s", entry.name, exc)
            continue
        register_chat_adapter(entry.name, adapter)
