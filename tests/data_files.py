"""Benchmark data for tests: the shared copy when present, else the copies kept in the repo.

``notebooks/data/`` holds three τ²-bench files whole; ``tests/data/workflows/`` holds the first
workflows of the two large files (Galaxy IWC, Helpdesk).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "workflows"
VENDORED = ROOT / "notebooks" / "data"
SAMPLES = ROOT / "tests" / "data" / "workflows"


def benchmark_file(name: str) -> Path:
    """Return the path of a benchmark ``.jsonl`` file, or skip the test when it is not here.

    Args:
        name: The file name, e.g. ``"tau2_airline.jsonl"``.
    """
    for base in (SHARED, VENDORED, SAMPLES):
        if (base / name).is_file():
            return base / name
    pytest.skip(
        f"benchmark file {name} is not in this clone: put it in {VENDORED} or in {SHARED} "
        "(sources in notebooks/data/README.md)"
    )
