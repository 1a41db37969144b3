"""Deprecation helpers: one warning text, and lazy module attributes that warn on access.

Old spellings keep working for one release (docs/api.md, "Deprecated in this release"); each use
warns :class:`DeprecationWarning` with the new spelling. The helpers live in the lowest layer so
that every package (``provenance`` too) uses the same ones; ``em_plugin._deprecation`` re-exports
them.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated", "lazy_names", "moved_names"]


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``.

    Args:
        old: The old spelling, as the user wrote it (e.g. ``"EpisodicMemory(threshold=...)"``).
        new: The spelling to use instead.
        stacklevel: Frames between the caller of the deprecated API and this function, plus one.
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved_names(
    package: str, moved: Mapping[str, str], *, stacklevel: int = 3
) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that serves names dropped from ``__all__``, with a warning.

    The value is imported on each access and never cached in the package, so every use warns and
    the package's public names stay those of its ``__all__``.

    Args:
        package: The package's name, for messages.
        moved: Dropped name -> the module that defines it.
        stacklevel: As for :func:`deprecated` (3 when the result is the module's ``__getattr__``).

    Returns:
        The ``__getattr__`` function.
    """

    def __getattr__(name: str) -> Any:
        module = moved.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        internal = any(part.startswith("_") for part in module.split("."))
        new = f"{module}.{name}" + (" (internal: it may change without notice)" if internal else "")
        deprecated(f"importing {name} from {package}", new, stacklevel=stacklevel)
        return getattr(importlib.import_module(module), name)

    return __getattr__


def lazy_names(
    namespace: dict[str, Any],
    where: Mapping[str, str],
    *,
    package: str,
    moved: Mapping[str, str],
    stacklevel: int = 5,
) -> Callable[[str], Any]:
    """Return what a package's ``__getattr__`` does: import its public names on first use.

    A name of ``where`` is imported from its module and kept in ``namespace`` (the package's
    globals), so the next access costs nothing; a name of ``moved`` is served by
    :func:`moved_names`, with its warning; any other name is an ``AttributeError``.

    Args:
        namespace: The package's ``globals()``.
        where: Public name -> the module that defines it.
        package: The package's name, for messages.
        moved: As for :func:`moved_names`.
        stacklevel: As for :func:`deprecated` (5 when the package's ``__getattr__`` calls the
            result).

    Returns:
        The function for the package's ``__getattr__`` to call.
    """
    served_moved = moved_names(package, moved, stacklevel=stacklevel)

    def load(name: str) -> Any:
        module = where.get(name)
        if module is None:
            return served_moved(name)
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return load
