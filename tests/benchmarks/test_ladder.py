"""``benchmarks/ladder.py`` runs end to end at a tiny size and prints every figure of a rung."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

from tests.benchmarks.agreement_lines import agreements

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "ladder.py"


def test_ladder_runs_tiny(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(SCRIPT), "--sizes", "60", "--calls", "8", "--reference", "2"]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(str(SCRIPT), run_name="__main__")
    out = capsys.readouterr().out
    assert "== 60 workflows" in out
    texts = re.search(r"distinct texts: ([\d,]+) of ([\d,]+) instruction leaves; ([\d,]+)", out)
    assert texts is not None
    # Task instructions name their ticket: as many distinct instructions as leaves lead to them
    # at most, and more than the default generator's few paraphrases would give.
    assert int(texts.group(3).replace(",", "")) > 60
    assert "fast matcher = reference on the sample: True" in out
    assert "continuation level 0: exact" in out
    assert re.search(r"ingest [\d,]+ wf/s, floor [\d,]+ wf/s: [\d.]+ of the floor", out)
    assert re.search(r"cold open \+ first suggestion \(new process\): [\d.]+ \+ [\d.]+", out)
    rows = {
        line[:22].strip(): line[22:].split()
        for line in out.splitlines()
        if re.match(r"^(save|retrieve|suggest|asuggest)", line)
    }
    expected = {"save", "retrieve", "suggest"} | {
        f"{op} x{c} threads" for op in ("save", "retrieve", "suggest") for c in (8, 64)
    }
    assert set(rows) == expected | {"asuggest x8 tasks", "asuggest x64 tasks"}
    for cells in rows.values():
        p50, p95, p99, rate = map(float, cells)
        assert 0 < p50 <= p95 <= p99 and rate > 0


def test_ladder_prints_the_approximation_against_the_exact_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(SCRIPT), "--sizes", "60", "--calls", "6", "--reference", "1", "--no-floor"]
    monkeypatch.setattr(sys, "argv", [*argv, "--approximate-from", "20"])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    out = capsys.readouterr().out
    found = agreements("continuation level 0: ", out)
    assert len(found) == 1, out
    clusters, queries, *shares = found[0]
    assert int(clusters) >= 2 and queries == "6"
    assert all(0.0 <= float(share) <= 1.0 for share in shares)
