"""Thin sync and async executors for the session controller's plans, with the turn budget.

The controller writes each decision once, as a *plan*: a generator that yields the memory calls
it needs (:class:`MemoryCall`) and receives their results (or a :class:`Failure`). The two
executors here only run those calls — ``memory.save(...)`` or ``await memory.asave(...)`` — the
way httpx's ``BaseClient`` is shared by ``Client`` and ``AsyncClient``. Both apply the same fault
isolation and the same per-turn time budget:

- each call's failure is isolated on its own (a failed retrieval never drops the suggestions);
- once the turn's budget is spent, the call still running is left to finish in the background
  (sync: a worker thread; async: the memory's worker thread), a warning is logged, and the
  remaining calls of the plan are skipped, so the crew's answer goes out unchanged;
- the budget never drops a save: a save marked ``unbounded`` (``/save``) runs to its end before
  the reply, and any other save past the budget goes on through the memory's durable writer
  (``EpisodicMemory.save_in_background``: finished at ``close()``, at exit and on SIGTERM);
- the budget starts after the embedder's background warm-up (``EpisodicMemory.wait_ready``,
  bounded by ``$EM_PLUGIN_WARM_UP_WAIT``): a first turn waits for the model once instead of
  losing its suggestions to a model that is still loading.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from em_plugin.session.isolation import FaultIsolation
from em_plugin.session.port import MemoryPort

__all__ = ["Failure", "MemoryCall", "Plan", "run_async", "run_sync"]

T = TypeVar("T")
Method = Literal["save", "retrieve", "suggest", "record_suggestions"]


@dataclass(frozen=True)
class MemoryCall:
    """One memory call a plan needs.

    Args:
        action: What the call does, for warnings ("saving the workflow").
        method: The :class:`~em_plugin.session.port.MemoryPort` method (sync name).
        args: Positional arguments.
        kwargs: Keyword arguments.
    """

    action: str
    method: Method
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    unbounded: bool = False
    """Run to the end whatever the budget (a save the reply reports)."""


@dataclass(frozen=True)
class Failure:
    """What a plan receives instead of a result when a call failed, timed out or was skipped."""

    reason: str
    """``"<ErrorType>: <message>"``, or why the call did not run."""
    overran: bool = False
    """True when the call is still running in the background past the turn's budget."""


#: A controller decision: yields memory calls, receives results or failures, returns ``T``.
Plan = Generator[MemoryCall, object, T]


class _Clock:
    """The time left of one plan run."""

    def __init__(self, budget: float | None) -> None:
        self.budget = budget
        self.deadline = None if budget is None else time.monotonic() + budget
        self.spent = False

    def remaining(self) -> float:
        assert self.deadline is not None
        return max(0.0, self.deadline - time.monotonic())


_SKIPPED = Failure("skipped: the turn's time budget is spent")
_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _workers() -> ThreadPoolExecutor:
    # A few threads shared by all sessions: calls overrunning the budget keep one busy until
    # they finish; later calls queue behind them and are dropped if their turn is long over.
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="episodic-memory")
        return _pool


def _sync_method(memory: MemoryPort, method: Method) -> Callable[..., Any]:
    match method:
        case "save":
            return memory.save
        case "retrieve":
            return memory.retrieve
        case "suggest":
            return memory.suggest
        case "record_suggestions":
            return memory.record_suggestions


def _async_method(memory: MemoryPort, method: Method) -> Callable[..., Any]:
    match method:
        case "save":
            return memory.asave
        case "retrieve":
            return memory.aretrieve
        case "suggest":
            return memory.asuggest
        case "record_suggestions":
            return memory.arecord_suggestions


def _wait_ready(memory: MemoryPort) -> None:
    # Memories without a background warm-up (test doubles, other ports) are always ready.
    wait = getattr(memory, "wait_ready", None)
    if callable(wait) and not getattr(memory, "ready", True):
        wait()


def _durable_save(memory: MemoryPort, call: MemoryCall) -> Future[Any] | None:
    """Start a save on the memory's durable writer, when it has one (else ``None``)."""
    if call.method != "save":
        return None
    start = getattr(memory, "save_in_background", None)
    if not callable(start):
        return None
    future: Future[Any] = start(*call.args, **call.kwargs)
    return future


def _drive(plan: Plan[T], step: Callable[[MemoryCall], object]) -> T:
    try:
        call = next(plan)
        while True:
            call = plan.send(step(call))
    except StopIteration as stop:
        return stop.value


def run_sync(
    plan: Plan[T], memory: MemoryPort, isolation: FaultIsolation, budget: float | None
) -> T:
    """Run a plan with the memory's sync methods.

    Args:
        plan: The controller's plan.
        memory: The memory.
        isolation: Decides between raising and logging failures.
        budget: Seconds the whole plan may take (``None``: no limit, calls run inline).

    Returns:
        The plan's result.
    """
    _wait_ready(memory)
    clock = _Clock(budget)

    def step(call: MemoryCall) -> object:
        if clock.spent and not call.unbounded:
            return _SKIPPED
        function = _sync_method(memory, call.method)
        try:
            if clock.deadline is None or call.unbounded:
                return function(*call.args, **call.kwargs)
            background = _durable_save(memory, call)
            if background is not None:
                return background.result(timeout=clock.remaining())
            return _in_worker(clock, call, function, isolation).result(timeout=clock.remaining())
        except FutureTimeout:
            clock.spent = True
            isolation.slow(call.action, budget or 0.0)
            return Failure(f"still running after the turn budget of {budget:.3g} s", True)
        except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
            isolation.failed(call.action, exc)
            return Failure(f"{type(exc).__name__}: {exc}")

    return _drive(plan, step)


def _in_worker(
    clock: _Clock, call: MemoryCall, function: Callable[..., Any], isolation: FaultIsolation
) -> Future[Any]:
    deadline = clock.deadline
    context = contextvars.copy_context()

    def work() -> Any:
        # Queued behind calls that overran their budget: a turn long over drops its work (never
        # a save: what the user was told about must reach the store).
        late = deadline is not None and time.monotonic() > deadline + 10 * (clock.budget or 0.0)
        if late and call.method != "save":
            isolation.slow(f"{call.action} (dropped, its turn is long over)", clock.budget or 0.0)
            return None
        return context.run(function, *call.args, **call.kwargs)

    return _workers().submit(work)


async def run_async(
    plan: Plan[T], memory: MemoryPort, isolation: FaultIsolation, budget: float | None
) -> T:
    """Run a plan with the memory's async methods (same rules as :func:`run_sync`).

    Args:
        plan: The controller's plan.
        memory: The memory.
        isolation: Decides between raising and logging failures.
        budget: Seconds the whole plan may take (``None``: no limit).

    Returns:
        The plan's result.
    """
    if not getattr(memory, "ready", True):
        await asyncio.to_thread(_wait_ready, memory)
    clock = _Clock(budget)
    try:
        call = next(plan)
        while True:
            result: object
            if clock.spent and not call.unbounded:
                result = _SKIPPED
            else:
                function = _async_method(memory, call.method)
                try:
                    background = None if call.unbounded else _durable_save(memory, call)
                    if background is not None:
                        # Shielded: the budget's timeout must not cancel a save still queued.
                        awaitable = asyncio.shield(asyncio.wrap_future(background))
                    else:
                        awaitable = function(*call.args, **call.kwargs)
                    if clock.deadline is None or call.unbounded:
                        result = await awaitable
                    else:
                        result = await asyncio.wait_for(awaitable, clock.remaining())
                except TimeoutError as exc:
                    if clock.deadline is None or clock.remaining() > 0:
                        isolation.failed(call.action, exc)  # the memory's own timeout
                        result = Failure(f"{type(exc).__name__}: {exc}")
                        call = plan.send(result)
                        continue
                    clock.spent = True
                    isolation.slow(call.action, budget or 0.0)
                    reason = f"still running after the turn budget of {budget:.3g} s"
                    result = Failure(reason, True)
                except Exception as exc:  # noqa: BLE001 - isolation boundary: the crew never breaks
                    isolation.failed(call.action, exc)
                    result = Failure(f"{type(exc).__name__}: {exc}")
            call = plan.send(result)
    except StopIteration as stop:
        return stop.value
