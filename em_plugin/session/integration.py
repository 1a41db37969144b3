"""The base every framework integration shares: its policy, its live sessions, fault isolation.

The LangGraph node and middleware and the BeeAI middleware and EM agent open the same way: check
the memory, take the one validated ``policy=`` (:class:`~em_plugin.session.policy.SessionPolicy`),
keep the live sessions in one :class:`~em_plugin.session.registry.SessionRegistry` (which holds
the fault isolation), and optionally journal each session in the memory's store. The settings
mean the same thing in every integration (docs/api.md):

- ``crew_name``: the crew's name recorded on saved workflows (a string); ``crew`` is the crew
  itself (an agent, runnable or graph) where an integration takes one;
- ``policy``: a :class:`~em_plugin.session.policy.SessionPolicy` (``strict``: memory failures
  raise instead of being logged; ``autosave``, ``judge``, ``limit``, ``turn_budget``, the two
  commands);
- ``max_sessions``: sessions kept open in this process.

This module knows no framework.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

from em_plugin._deprecation import deprecated
from em_plugin.session.journal import JournaledSessions, SessionJournal
from em_plugin.session.policy import PolicyAttributes, SessionPolicy, resolve_policy
from em_plugin.session.port import MemoryPort
from em_plugin.session.registry import DEFAULT_MAX_SESSIONS, SessionRegistry, require_memory
from provenance.stores import WorkflowStore

__all__ = ["CrewNameAlias", "MemoryIntegration", "journal_for"]


def journal_for(memory: MemoryPort) -> SessionJournal | None:
    """Return a journal in the memory's store, or ``None`` for a memory without a store."""
    store = memory.store
    return SessionJournal(store.backend) if isinstance(store, WorkflowStore) else None


class MemoryIntegration(PolicyAttributes):
    """Policy, live sessions and isolation of an integration class (call :meth:`open_sessions`).

    Subclasses call :meth:`open_sessions` first in their constructor and read ``policy``,
    ``sessions`` (with ``sessions.isolation``), ``journal`` and ``crew_name``; the read-only
    ``strict``, ``autosave``, ``limit``, ... attributes come from ``policy``. A session's calls
    are recorded on its controller's trajectory, or kept as :class:`~em_plugin.session.turns.Turn`
    records and replayed (:func:`~em_plugin.session.turns.replay`); docs/extending.md shows an
    adapter.
    """

    policy: SessionPolicy
    sessions: SessionRegistry
    journal: JournaledSessions | None
    crew_name: str | None

    def open_sessions(
        self,
        memory: MemoryPort,
        *,
        owner: str,
        framework: str,
        log: logging.Logger,
        policy: SessionPolicy | None = None,
        crew_name: str | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        journal: bool = False,
        deprecated_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Validate the settings and open the session registry.

        Args:
            memory: The memory (required).
            owner: The public class's name, for messages.
            framework: The framework recorded on the sessions' trajectories.
            log: The logger warnings go to.
            policy: The session policy (``None``: the defaults).
            crew_name: The crew's name recorded on saved workflows.
            max_sessions: How many sessions to keep open in this process.
            journal: Keep each session's capture in the memory's store (when it has one).
            deprecated_options: The constructor's deprecated keywords: the loose policy keywords
                (:class:`~em_plugin.session.policy.PolicyOptions`) and the ``crew`` (a name) of
                the node and middlewares. Each warns once.

        Raises:
            ConfigurationError: On a missing memory, an unknown keyword, ``policy=`` together
                with a deprecated policy keyword, or an invalid setting (the message lists the
                valid choices).
        """
        _open(self, memory, owner, policy, crew_name, dict(deprecated_options or {}), stacklevel=5)
        self.sessions = SessionRegistry(
            memory, self.policy, framework=framework, log=log, max_sessions=max_sessions
        )
        found = journal_for(memory) if journal else None
        self.journal = JournaledSessions(self.sessions, found) if found is not None else None

    def _open_sessions(self, memory: MemoryPort, **options: Any) -> None:
        """Deprecated: :meth:`open_sessions` (the recipe of the previous release called this)."""
        deprecated(f"{type(self).__name__}._open_sessions", "open_sessions", stacklevel=3)
        self.open_sessions(memory, **options)


def _open(
    integration: MemoryIntegration,
    memory: MemoryPort,
    owner: str,
    policy: SessionPolicy | None,
    crew_name: str | None,
    options: dict[str, Any],
    *,
    stacklevel: int,
) -> None:
    """Check the memory, resolve the policy and the crew's name (warnings point at the user)."""
    require_memory(memory)  # before the settings: the first error names the memory
    if "crew" in options:
        old = options.pop("crew")
        deprecated(f"{owner}(crew=<name>)", f"{owner}(crew_name=<name>)", stacklevel=stacklevel)
        crew_name = old if crew_name is None else crew_name
    integration.policy = resolve_policy(
        owner, policy, options, valid=_keywords(type(integration).__init__), stacklevel=stacklevel
    )
    integration.crew_name = crew_name


def _keywords(function: object) -> list[str]:
    """The keyword-only parameters of ``function`` (listed when a keyword is unknown)."""
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


class CrewNameAlias:
    """The deprecated ``crew`` attribute of classes where it meant the crew's name."""

    crew_name: str | None

    @property
    def crew(self) -> str | None:
        """Deprecated alias of ``crew_name``."""
        deprecated(f"{type(self).__name__}.crew", f"{type(self).__name__}.crew_name")
        return self.crew_name
