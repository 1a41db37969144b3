"""``benchmarks/save_python_work.py`` times each part of a save and puts the methods back."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from em_plugin.memory import EpisodicMemory
from em_plugin.state.batch_writes import BatchWrites

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "save_python_work.py"


def test_every_part_is_timed_and_the_sum_is_the_python_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (EpisodicMemory._prepare, BatchWrites._stage, BatchWrites._index)
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--workflows", "40", "--batch", "10"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    head, *lines = capsys.readouterr().out.splitlines()

    assert head == "40 workflows, batches of 10, CPU ms per workflow"
    rows = {line[:32].strip(): float(line[32:]) for line in lines}
    assert list(rows) == [
        "redaction",
        "staging",
        "indexing",
        "python work",
        "engine write (calling thread)",
    ]
    assert all(value > 0 for value in rows.values())
    parts = rows["redaction"] + rows["staging"] + rows["indexing"]
    assert rows["python work"] == pytest.approx(parts, abs=0.002)  # printed to 3 decimals
    assert (EpisodicMemory._prepare, BatchWrites._stage, BatchWrites._index) == before
