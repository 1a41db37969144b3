"""The ``oxigraph serve`` child process behind the endpoint without tokens."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from em_plugin.errors import EpisodicMemoryError, MissingExtraError

__all__ = ["OxigraphProcess", "ServeError", "free_port", "oxigraph_binary"]

_START_TIMEOUT_S = 30.0
# Probing our own server must not go through a proxy from the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServeError(EpisodicMemoryError):
    """The endpoint cannot start, or stopped: the store is held, a port taken, a binary missing."""


def oxigraph_binary() -> str | None:
    """Return the ``oxigraph`` server binary of the ``oxigraph`` PyPI package, if installed."""
    beside_python = Path(sys.executable).parent / "oxigraph"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("oxigraph")


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port free on ``host`` right now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class OxigraphProcess:
    """``oxigraph serve`` on a private 127.0.0.1 port over ``location`` (``None``: in memory).

    Args:
        location: The store directory.
        label: How to name the store in messages.

    Raises:
        MissingExtraError: The binary is missing (the ``serve`` extra is not installed).
        ServeError: The store is held by another process, or the server did not answer in
            time.
    """

    def __init__(self, location: Path | None, label: str) -> None:
        binary = oxigraph_binary()
        if binary is None:
            raise MissingExtraError(
                "the oxigraph server binary is missing (em-plugin serve without --token-file "
                "runs it); install the serve extra: pip install 'em-plugin[serve]'"
            )
        self.port = free_port()
        command = [binary, "serve", "--bind", f"127.0.0.1:{self.port}", "--union-default-graph"]
        if location is not None:
            command += ["--location", str(location)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self._wait_until_ready(label)
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self, label: str) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                error = self.stderr()
                if "lock" in error.lower():
                    # Oxigraph's own text is a Rust panic with a backtrace: say what it means.
                    raise ServeError(
                        f"the store {label} is in use by another process (a crew or a CLI "
                        "command holding it for writing); stop it, start serve first, and point "
                        "the crew at the endpoint instead"
                    )
                raise ServeError(f"the oxigraph server exited: {error}")
            if self._answers():
                return
            time.sleep(0.05)
        raise ServeError(f"the oxigraph server did not answer on port {self.port} in time")

    def _answers(self) -> bool:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/query",
            data=b"query=ASK%20%7B%7D",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            method="POST",
        )
        try:
            with _LOCAL.open(request, timeout=1) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def running(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def stderr(self) -> str:
        """The end of what the process wrote to stderr (once it ended)."""
        stream = self.process.stderr
        text = stream.read().decode(errors="replace") if stream and not stream.closed else ""
        return " ".join(text.split())[-500:] or f"exit status {self.process.returncode}"

    def stop(self) -> None:
        """Stop the process (SIGTERM, SIGKILL after 10 s) and close its pipe."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process.stderr:
            self.process.stderr.close()
