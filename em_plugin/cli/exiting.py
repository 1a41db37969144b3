"""How the ``em-plugin`` program ends: Ctrl-C while it exits is reported, never a silent kill.

A command's work ends before the process does: pending background saves are flushed, worker
threads joined, telemetry exported, and the interpreter tears its modules down (a third of a
second after an import). Python restores the default SIGINT action for that teardown, so a
Ctrl-C there killed the process with no word. :func:`run_program` keeps a handler up to the very
end instead: after the command, Ctrl-C prints ``interrupted`` once, lets the exit work finish
(nothing is lost: the command's writes are done or being flushed), and the process exits with
status 130 (docs/cli.md). The interpreter's teardown is skipped (``os._exit``) once that work is
done, since the commands close their stores themselves and nothing else is left to write.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

__all__ = ["run_program"]

_EXIT_INTERRUPTED = 130


class _Ending:
    """The status the command ended with, and whether Ctrl-C came after it."""

    code: int | None = None
    interrupted = False


def run_program(run: Callable[[], object]) -> NoReturn:
    """Run a click program in standalone mode and end the process with its status.

    Args:
        run: Calls the click group's ``main`` (which prints errors and raises SystemExit).
    """
    # Registered before the command runs, so it runs after the exit work the command
    # registers (atexit is last in, first out): the background saves' flush, telemetry.
    atexit.register(_end)
    try:
        try:
            run()
            code = 0
        except SystemExit as exc:
            code = _status(exc.code)
        _watch()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        code = _EXIT_INTERRUPTED
        _Ending.interrupted = True
        _watch()
    _Ending.code = code
    sys.exit(code)


def _status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _watch() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _late_interrupt)


def _late_interrupt(_signum: int, _frame: FrameType | None) -> None:
    # Not raising: the exit work (flushing saves) must finish; only the status changes.
    if not _Ending.interrupted:
        _Ending.interrupted = True
        os.write(2, b"interrupted\n")


def _end() -> None:
    if _Ending.code is None:
        return  # the program did not get to its end through run_program
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: nothing more can be said there
    os._exit(_EXIT_INTERRUPTED if _Ending.interrupted else _Ending.code)
