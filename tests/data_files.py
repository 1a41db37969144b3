"""Benchmark data for tests: the shared copy when present, else the copy vendored in the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "workflows"
VENDORED = ROOT / "notebooks" / "data"


def benchmark_file(name: str) -> Path:
    """Return the path of a benchmark ``.jsonl`` file, or skip the test when it is not here.

    Args:
        name: The file name, e.g. ``"tau2_airline.jsonl"``.
    """
    for base in (SHARED, VENDORED):
        if (base / name).is_file():
            return base / name
    pytest.skip(f"benchmark file {name} is not available on this machine")
