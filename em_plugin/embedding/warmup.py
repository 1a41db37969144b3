"""Warm the embedder up in the background, and let the first turns wait for it once.

The default model takes seconds to load (8.6 s on a loaded 2-core machine), far past a turn's
budget of 0.5 s. ``EpisodicMemory`` therefore starts loading it in a daemon thread when it is
created, without blocking the crew; the memory work of a turn waits for that load first, outside
the turn's budget, until at most :data:`DEFAULT_WARM_UP_WAIT` seconds (``$EM_PLUGIN_WARM_UP_WAIT``)
after the memory was created. Embedders that load nothing (no ``warm_up`` method: the fake one,
a plain callable) are ready at once: a user's callable is never called just to warm it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["Warmup"]

log = logging.getLogger("em_plugin.memory")


class Warmup:
    """One background warm-up of an embedder.

    Args:
        embedder: The embedder; its ``warm_up()`` runs in a daemon thread when it has one.
        wait: Seconds after creation until which :meth:`wait` blocks at most.
    """

    def __init__(self, embedder: Any, *, wait: float) -> None:
        self._done = threading.Event()
        self._deadline = time.monotonic() + wait
        self.error: BaseException | None = None
        inner = getattr(embedder, "inner", embedder)  # a cache warms what it wraps
        warm = getattr(embedder, "warm_up", None)
        if not callable(warm) or not callable(getattr(inner, "warm_up", None)):
            self._done.set()
            return
        thread = threading.Thread(
            target=self._run, args=(warm,), name="episodic-memory-warm-up", daemon=True
        )
        thread.start()

    def _run(self, warm: Any) -> None:
        started = time.monotonic()
        try:
            warm()
            log.debug("embedder warmed up in %.2f s", time.monotonic() - started)
        except BaseException as exc:  # noqa: BLE001 - reported by the first turn's own embed
            self.error = exc
            log.warning("warming the embedder up failed: %s", exc)
        finally:
            self._done.set()

    @property
    def ready(self) -> bool:
        """Whether the warm-up has finished (or failed, or there was nothing to warm)."""
        return self._done.is_set()

    def wait(self) -> bool:
        """Block until the warm-up finished, or its bound (counted from creation) passed.

        Returns:
            Whether it finished.
        """
        if self._done.is_set():
            return True
        return self._done.wait(max(0.0, self._deadline - time.monotonic()))
