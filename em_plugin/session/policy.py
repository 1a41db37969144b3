"""A session's memory settings: one frozen, validated :class:`SessionPolicy`.

Every integration takes it as ``policy=SessionPolicy(...)`` (``em_plugin.SessionPolicy``), so the
settings are declared, documented and validated once. The loose keywords of the previous release
(:class:`PolicyOptions`: ``strict=``, ``limit=``, ...) still work for one release and warn
(:func:`resolve_policy`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypedDict, cast

from em_plugin._deprecation import deprecated
from em_plugin.config import DEFAULT_TURN_BUDGET, TURN_BUDGET_ENV, turn_budget
from em_plugin.errors import ConfigurationError
from provenance.model import Workflow

__all__ = [
    "AUTOSAVE_CHOICES",
    "DEFAULT_TURN_BUDGET",
    "TURN_BUDGET_ENV",
    "Judge",
    "PolicyAttributes",
    "PolicyOptions",
    "SessionPolicy",
    "TurnOutcome",
    "default_turn_budget",
    "resolve_policy",
]

Autosave = Literal["off", "on_success"]
AUTOSAVE_CHOICES: tuple[str, ...] = ("off", "on_success")


def default_turn_budget() -> float | None:
    """Return the turn budget of policies that set none (see :func:`em_plugin.config.turn_budget`).

    Raises:
        ConfigurationError: When ``$EM_PLUGIN_TURN_BUDGET`` is neither a number nor ``none``.
    """
    return turn_budget()


@dataclass(frozen=True)
class TurnOutcome:
    """What a judge sees about the turn that just ended."""

    instruction: str | None
    """The turn's instruction text (``None`` when the turn had none)."""
    answer: str
    """The crew's answer, before suggestions."""
    failures: tuple[str, ...]
    """Error messages of the calls that failed during the turn."""
    calls: int
    """How many calls the turn started."""

    @property
    def succeeded(self) -> bool:
        """True when no call failed during the turn."""
        return not self.failures


Judge = Callable[[Workflow, TurnOutcome], bool]


class PolicyOptions(TypedDict, total=False):
    """The loose keywords the integrations took before ``policy=`` (deprecated).

    Each is a field of :class:`SessionPolicy`.
    """

    strict: bool
    autosave: str
    judge: Judge | None
    save_command: str
    suggest_command: str
    limit: int
    turn_budget: float | None


@dataclass(frozen=True)
class SessionPolicy:
    """The memory settings of a session, validated on construction: every integration's ``policy=``.

    Example:
        >>> from em_plugin import SessionPolicy
        >>> policy = SessionPolicy(autosave="on_success", limit=2)
        >>> policy.limit, policy.strict
        (2, False)

    Args:
        strict: Raise memory failures instead of logging them.
        autosave: ``"off"`` (save on ``/save`` only) or ``"on_success"``.
        judge: Decides, with ``autosave="on_success"``, whether a turn's workflow is saved.
        save_command: The command that saves the session.
        suggest_command: The command that shows suggestions for the session so far.
        limit: How many suggestions to show.
        turn_budget: Seconds of memory work (embedding, retrieval, saving) a turn may take
            before the crew's answer goes out without suggestions and with a warning; the
            unfinished work completes or is dropped in the background. ``None``: no limit.
            Default: ``$EM_PLUGIN_TURN_BUDGET``, else 0.5.

    Raises:
        ConfigurationError: On an unknown autosave mode, a judge without autosave, bad
            commands, a limit below 1 or a budget that is not a positive number (the message
            lists the valid choices).
    """

    strict: bool = False
    autosave: Autosave = "off"
    judge: Judge | None = None
    save_command: str = "/save"
    suggest_command: str = "/suggest"
    limit: int = 3
    turn_budget: float | None = field(default_factory=default_turn_budget)

    def __post_init__(self) -> None:
        if self.autosave not in AUTOSAVE_CHOICES:
            choices = ", ".join(map(repr, AUTOSAVE_CHOICES))
            raise ConfigurationError(f"autosave must be one of {choices}; got {self.autosave!r}")
        if self.judge is not None and not callable(self.judge):
            raise ConfigurationError("judge must be a callable (workflow, outcome) -> bool")
        if self.judge is not None and self.autosave != "on_success":
            raise ConfigurationError(
                "a judge needs autosave='on_success' (it decides what to save)"
            )
        for name in ("save_command", "suggest_command"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.startswith("/") or len(value.split()) != 1:
                raise ConfigurationError(
                    f"{name} must be one word starting with '/', got {value!r}"
                )
        if self.save_command == self.suggest_command:
            raise ConfigurationError("save_command and suggest_command must differ")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigurationError(f"limit must be an integer >= 1, got {self.limit!r}")
        budget = self.turn_budget
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int | float) or not budget > 0
        ):
            raise ConfigurationError(
                f"turn_budget must be a number of seconds > 0, or None; got {budget!r}"
            )

    @classmethod
    def from_options(cls, options: PolicyOptions | dict[str, Any]) -> SessionPolicy:
        """Build a policy from an integration's keyword options.

        Args:
            options: :class:`PolicyOptions` keys; absent keys keep their defaults.

        Returns:
            The validated policy.

        Raises:
            ConfigurationError: On an unknown option (the message lists the valid ones) or an
                invalid value.
        """
        valid = sorted(f.name for f in fields(cls))
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise ConfigurationError(
                f"unknown option(s) {', '.join(unknown)}; valid: {', '.join(valid)}"
            )
        return cls(**cast(dict[str, Any], options))

    def command_of(self, text: str) -> str | None:
        """Return ``"save"`` or ``"suggest"`` when ``text`` starts with one of the commands."""
        if not isinstance(text, str):
            return None
        word = text.strip().split(maxsplit=1)[0] if text.strip() else ""
        if word == self.save_command:
            return "save"
        if word == self.suggest_command:
            return "suggest"
        return None


class PolicyAttributes:
    """Read-only ``strict``, ``autosave``, ... attributes delegating to ``self.policy``.

    Mixed into :class:`~em_plugin.session.controller.SessionController` and the integrations'
    public classes, which keep their settings in one :class:`SessionPolicy`.
    """

    policy: SessionPolicy

    @property
    def strict(self) -> bool:
        """Raise memory failures instead of logging them."""
        return self.policy.strict

    @property
    def autosave(self) -> Autosave:
        """``"off"`` or ``"on_success"``."""
        return self.policy.autosave

    @property
    def judge(self) -> Judge | None:
        """With ``autosave="on_success"``, decides whether a turn's workflow is saved."""
        return self.policy.judge

    @property
    def save_command(self) -> str:
        """The command that saves the session."""
        return self.policy.save_command

    @property
    def suggest_command(self) -> str:
        """The command that shows suggestions for the session so far."""
        return self.policy.suggest_command

    @property
    def limit(self) -> int:
        """How many suggestions to show."""
        return self.policy.limit

    @property
    def turn_budget(self) -> float | None:
        """Seconds of memory work a turn may take (``None``: no limit)."""
        return self.policy.turn_budget


def resolve_policy(
    owner: str,
    policy: SessionPolicy | None,
    loose: Mapping[str, Any],
    *,
    valid: Sequence[str],
    stacklevel: int,
) -> SessionPolicy:
    """Return an integration's policy from ``policy=`` or the deprecated loose keywords.

    Each loose keyword (``strict=``, ``limit=``, ...) warns :class:`DeprecationWarning` once,
    naming its new spelling, and is still applied (for one release).

    Args:
        owner: The public class or function, for messages (``"EpisodicMemoryNode"``).
        policy: The ``policy=`` argument (``None``: the defaults).
        loose: The other keyword arguments the caller received.
        valid: The caller's own keyword parameters, listed when a keyword is unknown.
        stacklevel: What the caller would pass to :func:`em_plugin._deprecation.deprecated`
            (the warnings point at the user's line).

    Returns:
        The validated policy.

    Raises:
        ConfigurationError: On an unknown keyword (the message lists the valid ones), on
            ``policy=`` together with a loose keyword (the message names both), when ``policy``
            is not a :class:`SessionPolicy`, or on an invalid value.
    """
    fields_ = [f.name for f in fields(SessionPolicy)]
    unknown = sorted(set(loose) - set(fields_))
    if unknown:
        raise ConfigurationError(
            f"{owner} got unknown option(s) {', '.join(unknown)}; valid: "
            f"{', '.join(sorted(valid))}, with the session settings in "
            f"policy=SessionPolicy({', '.join(fields_)})"
        )
    if policy is not None and not isinstance(policy, SessionPolicy):
        raise ConfigurationError(
            f"{owner}(policy=...) must be an em_plugin.SessionPolicy, not {type(policy).__name__}"
        )
    if not loose:
        return policy if policy is not None else SessionPolicy()
    given = ", ".join(f"{name}=" for name in loose)
    if policy is not None:
        raise ConfigurationError(
            f"{owner} got both policy= and the deprecated {given}; pass one: move {given} "
            f"into policy=SessionPolicy(...)"
        )
    for name in loose:
        deprecated(
            f"{owner}({name}=...)",
            f"{owner}(policy=SessionPolicy({name}=...))",
            stacklevel=stacklevel + 1,
        )
    return SessionPolicy.from_options(dict(loose))
