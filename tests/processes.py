"""Server processes in tests: a free 127.0.0.1 port, waiting until one answers, stopping it.

Shared by the fixtures that start ``oxigraph serve``, Virtuoso, ``em-plugin serve``,
``langgraph dev``, the BeeAI servers and the memory panel (never another address than
127.0.0.1).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts(port: int) -> bool:
    """Tell whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def close_pipes(process: subprocess.Popen[Any]) -> None:
    """Close a child process's pipes (an unclosed one is a ResourceWarning, so an error here)."""
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def stop_process(process: subprocess.Popen[bytes], *, timeout: float = 30) -> None:
    """Stop a server process: SIGTERM (it may save its state on the way), SIGKILL after a wait."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def wait_until_ready(
    process: subprocess.Popen[bytes],
    ready: Callable[[], bool],
    *,
    what: str,
    timeout: float,
    interval: float = 0.2,
    detail: Callable[[], str] = lambda: "",
) -> None:
    """Wait until ``ready()`` while ``process`` runs; on a timeout stop it.

    Args:
        process: The server process.
        ready: Tells whether it answers.
        what: The server, for the messages.
        timeout: Seconds to wait at most.
        interval: Seconds between two checks.
        detail: What to add to a failure's message (its log).

    Raises:
        RuntimeError: When the process exits or does not answer within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}: {detail()}")
        if ready():
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    stop_process(process)
    raise RuntimeError(f"{what} did not answer within {timeout:.0f} s: {detail()}")


@contextmanager
def em_plugin_serve(store: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Run ``em-plugin serve --store STORE --port 0 [OPTIONS]`` in a child process.

    Yields:
        The process and the query URL it prints once it answers; it is stopped (SIGTERM)
        afterwards unless it already ended.
    """
    command = [sys.executable, "-m", "em_plugin", "serve", "--store", str(store), "--port", "0"]
    process = subprocess.Popen(
        [*command, *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()  # printed once the server answers
        if not url:
            pytest.fail(f"serve printed no URL: {process.stderr.read() if process.stderr else ''}")
        yield process, url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)
        close_pipes(process)


class ScriptWorker:
    """A Python child process running ``script`` that answers each line it reads with one word.

    The script prints ``ready`` once it can take lines. The repo root is its working directory
    and on its ``PYTHONPATH``.

    Args:
        script: The Python source to run (``python -c``).
        args: Its arguments (``sys.argv[1:]``).
    """

    def __init__(self, script: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            cwd=ROOT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.expect("ready")

    def send(self, line: str, *, answer: str) -> None:
        """Send one line and wait for the answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        self.expect(answer)

    def expect(self, word: str) -> None:
        """Read the next line; kill the process and fail unless it is ``word``."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if line != word:
            self.process.kill()
            error = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"worker said {line!r}, expected {word!r}: {error}")

    def close(self) -> None:
        """Close its input (the script ends) and wait for it."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)
        close_pipes(self.process)
