"""``benchmarks/clusters.py`` ranks a kept store's queries both ways and prints how close."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from tests.benchmarks.agreement_lines import agreements

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "clusters.py"


def test_clusters_prints_the_agreement_per_probe_count(
    ladder_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(SCRIPT), str(ladder_store), "--queries", "5", "--probes", "2,64"]
    monkeypatch.setattr(sys, "argv", [*argv, "--approximate-from", "20"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    out = capsys.readouterr().out
    rows = agreements(r"probes (\d+): ", out)
    assert [r[0] for r in rows] == ["2", "64"], out
    # Every cluster probed: the exact ranking.
    assert rows[1][3:] == ("1.000", "1.000", "1.0000")
    assert "load average" in out


def test_clusters_says_when_the_store_ranks_exactly(
    ladder_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), str(ladder_store), "--queries", "2"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    assert "probes 16: exact (approximate_from unset or not reached)" in capsys.readouterr().out
