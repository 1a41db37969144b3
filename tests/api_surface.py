"""What a package exposes: its public names, to compare with its ``__all__``."""

from __future__ import annotations
import __future__

import importlib
from types import ModuleType


def public_names(package: str) -> list[str]:
    """Return the package's public names, sorted: every attribute without a leading underscore,
    except submodules and the ``from __future__`` feature (names served lazily are loaded first).
    """
    module = importlib.import_module(package)
    for name in getattr(module, "__all__", ()):
        getattr(module, name)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and value is not __future__.annotations
    )
