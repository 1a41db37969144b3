"""``benchmarks/tenants.py`` runs end to end on a few tenants: evictions and latencies."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "tenants.py"


def test_tenants_runs_tiny(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(SCRIPT), "--scopes", "12", "--cache", "4", "--warm-sample", "3"]
    argv += ["--baseline-tenants", "3"]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(SCRIPT), run_name="__main__")
    captured = capsys.readouterr()
    out = captured.out
    assert "12 scopes x 2 workflows" in out
    # A long run shows where it is on stderr before it ends.
    assert "build done: {" in captured.err
    assert "visits: pass 2, 11 / 12 scopes" in captured.err
    assert "scope cache (scopes kept loaded): 4" in out
    visits = re.search(r"visits: (\d+) \(every scope twice\) \+ (\d+) warm", out)
    assert visits is not None and visits.groups() == (
        "24",
        "18",
    )  # 3 more at every 4th visit of both passes
    # Every visit past the first four of a pass finds its scope unloaded (two passes in order).
    evictions = re.search(r"evictions: ([\d,]+)\s+reloads: ([\d,]+)", out)
    assert evictions is not None and int(evictions.group(1)) >= 20
    assert int(evictions.group(2)) >= 12 - 4  # the second pass reads them back
    assert "the same 3 tenants, warm:" in out
    for row in (
        "cold scope (first suggestion)",
        "warm scope",
        "in the shared store",
        "each alone in a store",
    ):
        cells = re.search(re.escape(row) + r"\s+([\d.]+)\s+([\d.]+)", out)
        assert cells is not None and float(cells.group(2)) > 0
