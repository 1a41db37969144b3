"""``benchmarks/concurrency.py`` times suggest and retrieve from 1, 8 and 64 threads."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "concurrency.py"


def test_concurrency_runs_tiny(
    ladder_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ladder_store
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), str(store), "--queries", "10"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for name in ("suggest", "retrieve"):
        for threads in (1, 8, 64):
            p50, p99, rate = found[f"{name}@{threads}"]
            assert 0 < p50 <= p99 and rate > 0
