"""The old spellings of ``EpisodicMemory``, kept for one release.

``EpisodicMemory("memory:", "fake", threshold=0.5, c=2.0, crew=..., strict=True)`` still works and
warns :class:`DeprecationWarning` naming the new spelling: everything after ``store`` is
keyword-only, the retrieval and ranking knobs moved into
:class:`~em_plugin.settings.RetrievalSettings` and :class:`~em_plugin.settings.RankingSettings`,
``crew`` is ``crew_description``, ``strict`` is ``raise_suggester_errors``, and ``use_text`` (the
evaluation's ablation) is passed by :mod:`em_plugin.evaluation` only (docs/api.md).

The methods that moved behind the objects owning them (``memory.history(...)`` is
``memory.lifecycle.history(...)``, ``memory.feedback`` is ``memory.acceptance.feedback``,
``memory.crew`` is ``memory.crew_description``, ``memory.config`` is
``memory.retrieval.match_config()``) are served by :func:`old_memory_attribute`, with a
warning, and are no longer public names of the class.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from em_plugin._deprecation import deprecated
from em_plugin.errors import ConfigurationError
from em_plugin.settings import RankingSettings, RetrievalSettings

__all__ = ["LIFECYCLE_METHODS", "legacy_memory_arguments", "old_memory_attribute"]

P = ParamSpec("P")
R = TypeVar("R")

#: ``EpisodicMemory`` methods that moved to ``memory.lifecycle`` (they took ``scope=`` too).
LIFECYCLE_METHODS = frozenset(
    {
        "accept_procedure",
        "history",
        "procedures",
        "restore",
        "retire",
        "retire_procedure",
        "set_outcome",
    }
)
# Old attribute -> (the object that owns it now, as a path from the memory; its new name).
_MOVED_ATTRIBUTES = {
    "config": "retrieval.match_config()",
    "crew": "crew_description",
    "feedback": "acceptance.feedback",
}

# The positional parameters after ``store``, in their old order.
_POSITIONAL = ("embedder", "scope", "threshold", "max_workflows", "llm", "crew")
_RETRIEVAL = ("threshold", "max_workflows", "window")
_RANKING = ("continuation", "c", "edge_similarity")
_RENAMED = {"crew": "crew_description", "strict": "raise_suggester_errors"}
# warnings.warn reports the caller: deprecated() <- _grouped() <- _translate() <- wrapper <- caller.
_STACK = 5


def legacy_memory_arguments(init: Callable[P, R]) -> Callable[P, R]:
    """Translate the old ``EpisodicMemory.__init__`` spellings into the new ones, with warnings.

    Args:
        init: The new ``__init__`` (keyword-only after ``store``).

    Returns:
        The wrapped ``__init__``; its signature is the new one.
    """

    @functools.wraps(init)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        if len(args) > 2 or kwargs.keys() & {*_RETRIEVAL, *_RANKING, *_RENAMED, "use_text"}:
            args, kwargs = _translate(args, kwargs)
        return init(*args, **kwargs)

    return cast(Callable[P, R], wrapper)


def _translate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    self_and_store, extra = args[:2], args[2:]
    if len(extra) > len(_POSITIONAL):
        raise TypeError(
            f"EpisodicMemory() takes store and keyword arguments; got {len(args) - 1} positional"
        )
    for name, value in zip(_POSITIONAL, extra, strict=False):
        if name in kwargs:
            raise TypeError(f"EpisodicMemory() got multiple values for argument {name!r}")
        deprecated(
            f"passing {name} to EpisodicMemory() by position",
            f"EpisodicMemory(store, {name}=...)",
            stacklevel=_STACK - 1,
        )
        kwargs[name] = value
    for old, new in _RENAMED.items():
        if old in kwargs:
            if new in kwargs:
                raise ConfigurationError(f"pass {new}= only (not also the deprecated {old}=)")
            deprecated(
                f"EpisodicMemory({old}=...)", f"EpisodicMemory({new}=...)", stacklevel=_STACK - 1
            )
            kwargs[new] = kwargs.pop(old)
    if "use_text" in kwargs:
        deprecated(
            "EpisodicMemory(use_text=...)",
            "em_plugin.evaluation.evaluate(use_text=False) (the ablation is an evaluation setting)",
            stacklevel=_STACK - 1,
        )
        kwargs["_use_text"] = kwargs.pop("use_text")
    _grouped(kwargs, "retrieval", RetrievalSettings, _RETRIEVAL)
    _grouped(kwargs, "ranking", RankingSettings, _RANKING)
    return self_and_store, kwargs


def _grouped(kwargs: dict[str, Any], group: str, settings: type, names: tuple[str, ...]) -> None:
    flat = {name: kwargs.pop(name) for name in names if name in kwargs}
    if not flat:
        return
    spelled = ", ".join(f"{name}=..." for name in flat)
    deprecated(
        f"EpisodicMemory({spelled})",
        f"EpisodicMemory({group}={settings.__name__}({spelled}))",
        stacklevel=_STACK,
    )
    base = kwargs.get(group)
    if base is None:
        kwargs[group] = settings(**flat)
    else:
        kwargs[group] = dataclasses.replace(base, **flat)


def old_memory_attribute(memory: Any, name: str) -> Any:
    """Serve an ``EpisodicMemory`` name that moved in this release, with its warning.

    Args:
        memory: The memory.
        name: The attribute asked for.

    Returns:
        The attribute's value (a moved method: a function that warns when called).

    Raises:
        AttributeError: When ``name`` is no moved name either.
    """
    if name in LIFECYCLE_METHODS:

        def call(*args: Any, scope: str | None = None, **kwargs: Any) -> Any:
            return getattr(_old_lifecycle(memory, name, scope), name)(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call
    moved = _MOVED_ATTRIBUTES.get(name)
    if moved is None:
        raise AttributeError(f"'EpisodicMemory' object has no attribute {name!r}")
    # warnings.warn reports the caller: deprecated() <- here <- __getattr__ <- caller.
    deprecated(f"EpisodicMemory.{name}", f"EpisodicMemory.{moved}", stacklevel=4)
    value = memory
    for part in moved.removesuffix("()").split("."):
        value = getattr(value, part)
    return value() if moved.endswith("()") else value


def _old_lifecycle(memory: Any, name: str, scope: str | None) -> Any:
    """The lifecycle a moved method delegates to, warned (for the caller of ``call``)."""
    if scope is None:
        deprecated(f"EpisodicMemory.{name}()", f"memory.lifecycle.{name}()", stacklevel=4)
        return memory.lifecycle
    deprecated(
        f"EpisodicMemory.{name}(scope=...)",
        f"memory.with_scope(scope).lifecycle.{name}()",
        stacklevel=4,
    )
    return memory.with_scope(scope).lifecycle
