"""``benchmarks/first_calls.py`` times a query's first retrieval, then retrieve and suggest."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "first_calls.py"


def test_first_calls_runs_tiny(
    ladder_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ladder_store
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), str(store), "--queries", "10", "--saves", "3"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for phase in ("retrieve_first", "retrieve", "suggest", "save", "suggest_after_save"):
        p50, p90, p99, mean = found[phase]
        assert 0 < p50 <= p90 <= p99 and mean > 0
