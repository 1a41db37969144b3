"""Progress bars for long commands: a rich bar on stderr when it is a terminal, silence otherwise.

Piped or redirected output (scripts, CI logs) stays clean; a person at a terminal sees how far
``validate``, ``import``, ``eval``, ``bench`` and ``reindex`` have come.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["ProgressCallback", "progress_bar", "stderr_is_terminal"]

ProgressCallback = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``."""


def stderr_is_terminal() -> bool:
    """Tell whether stderr is a terminal (where progress bars are shown)."""
    return sys.stderr.isatty()


@contextmanager
def progress_bar(label: str, total: int | None = None) -> Iterator[ProgressCallback]:
    """Show one progress bar while the block runs (only when stderr is a terminal).

    Args:
        label: What is being done, e.g. ``"validate"``.
        total: How many units, when known up front (the callback can change it).

    Yields:
        ``progress(stage, done, total)``; a no-op when stderr is not a terminal.
    """
    if not stderr_is_terminal():
        yield _silent
        return
    stream: TextIO = sys.stderr  # read now: click's test runner swaps it
    console = Console(file=stream, force_terminal=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)

        def update(stage: str, done: int, count: int) -> None:
            description = f"{label}: {stage}" if stage else label
            bar.update(task, completed=done, total=count, description=description)

        yield update


def _silent(stage: str, done: int, total: int) -> None:
    """The progress callback when no bar is shown."""
