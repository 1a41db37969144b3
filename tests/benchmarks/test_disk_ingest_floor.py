"""``benchmarks/disk_ingest_floor.py`` runs end to end on a tiny memory and prints its table."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "disk_ingest_floor.py"


def test_the_floor_benchmark_prints_every_write_with_its_ratio(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--workflows", "30", "--batch", "10"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()

    assert lines[0].startswith("30 workflows,") and "batches of 10" in lines[0]
    rows = {line[:34].strip(): line[34:].split() for line in lines[2:]}
    assert list(rows) == [
        "save_many (the product)",
        "bulk_load floor",
        "bulk_load, five fewer properties",
        "memory load (baseline)",
        "parse only",
    ]
    assert rows["bulk_load floor"][2] == "1.00"  # the ratios are against the floor itself
    for name, (rate, ms, _ratio, kb) in rows.items():
        assert float(rate) > 0 and float(ms) > 0
        assert (kb == "-") == (name in {"memory load (baseline)", "parse only"})
    lean, full = (
        float(rows["bulk_load, five fewer properties"][3]),
        float(rows["bulk_load floor"][3]),
    )
    assert 0 < lean < full  # fewer quads, fewer bytes
