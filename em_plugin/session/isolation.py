"""Fault isolation: a memory failure never breaks the host crew, unless strict.

One :class:`FaultIsolation` per integration object (or session) decides, for every failure of
the memory or of the capture glue, between raising (``strict=True``) and logging a warning that
says the crew's answer is unchanged.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["FaultIsolation"]

logger = logging.getLogger("em_plugin.session")


@dataclass(frozen=True)
class FaultIsolation:
    """Raise or log memory failures.

    Args:
        strict: Raise failures instead of logging them.
        log: The logger warnings go to.
    """

    strict: bool = False
    log: logging.Logger = field(default=logger)

    def failed(self, action: str, exc: BaseException) -> None:
        """Handle one failure: re-raise it (strict) or log a warning.

        Args:
            action: What failed, for the warning ("saving the workflow").
            exc: The failure.

        Raises:
            BaseException: ``exc`` itself, in strict mode.
        """
        if self.strict:
            raise exc
        self.log.warning(
            "episodic memory: %s failed (%s: %s); the crew's answer is unchanged",
            action,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )

    def slow(self, action: str, budget: float) -> None:
        """Warn that ``action`` overran the turn's time budget (never raises).

        Args:
            action: What was still running.
            budget: The budget in seconds.
        """
        self.log.warning(
            "episodic memory: %s exceeded the turn budget of %.3g s; the crew's answer went "
            "out unchanged and the work continues or is dropped in the background",
            action,
            budget,
        )

    @contextlib.contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """Run a block whose failure is handled by :meth:`failed`.

        Args:
            action: What the block does, for the warning.
        """
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            self.failed(action, exc)
