"""One error tree for users: what they catch imports from ``em_plugin``, drawn in one docstring.

Every error class of the three packages sits under ``EpisodicMemoryError`` or
``ProvenanceError``, and no two share a name (the issue "The house, second pass", item 5).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import click
import pytest

import em_plugin
import em_plugin.errors
from em_plugin.errors import EpisodicMemoryError
from provenance.errors import ProvenanceError

PACKAGES = ("em_plugin", "provenance", "integrations")
# Kept outside on purpose: the CLI's exit statuses (click's own mechanism) and the assertion
# failures of the contract kits, which tests raise, not users.
NOT_USER_ERRORS = (click.ClickException, AssertionError)


def _error_classes(*, every: bool = False) -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            try:
                module = importlib.import_module(info.name)
            except ImportError:  # an optional extra that is not installed
                continue
            for _, value in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(value, Exception)
                    and value.__module__ == module.__name__
                    and (every or not issubclass(value, NOT_USER_ERRORS))
                ):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


ERRORS = _error_classes()
#: Errors of the servers and the access layer: drawn in the tree, imported from their package.
BESIDE_THEIR_CODE = (
    "em_plugin.access.tokens",
    "em_plugin.endpoint.oxigraph_process",
    "em_plugin.endpoint.protocol",
    "integrations.mcp.errors",
    "integrations.panel.web",
)
EVERY_ERROR = _error_classes(every=True)


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{e.__module__}.{e.__qualname__}")
def test_every_error_is_under_one_of_the_two_roots(error: type[BaseException]) -> None:
    assert issubclass(error, EpisodicMemoryError | ProvenanceError)


def test_no_two_errors_share_a_name() -> None:
    names = [e.__name__ for e in EVERY_ERROR]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_the_errors_users_catch_import_from_em_plugin() -> None:
    from em_plugin import (  # noqa: F401 - importing them is the test
        ConfigurationError,
        EpisodicMemoryError,
        ProvenanceError,
        StoreError,
        WorkflowNotFound,
    )

    tree = em_plugin.errors.__doc__ or ""
    for error in ERRORS:
        # Every public error is drawn in the tree; the engine's and the store's import from
        # em_plugin.errors. The servers' and the access layer's stay beside their code, which
        # imports em_plugin.errors (the tree names where they live).
        if error.__name__.startswith("_") or any(
            part.startswith("_") for part in error.__module__.split(".")
        ):
            continue  # private: caught where it is raised, never by users
        assert error.__name__ in tree, error
        if error.__module__ not in BESIDE_THEIR_CODE:
            assert getattr(em_plugin.errors, error.__name__) is error, error
