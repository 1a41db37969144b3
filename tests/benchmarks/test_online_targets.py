"""``benchmarks/online_targets.py`` traces a file's rounds, compares traces, bounds feedback."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "online_targets.py"


def call(name: str) -> dict:
    return {"kind": "call", "name": name}


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    return capsys.readouterr().out


def test_trace_compare_and_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Train: after "a" comes "b". Test: three sessions "a", "z": offline "z" is never first;
    # online the third session has two saved ones that voted "z" against the train's one "b".
    train = [{"id": "t0", "split": "train", "steps": [call("a"), call("b")]}]
    test = [{"id": f"q{i}", "split": "test", "steps": [call("a"), call("z")]} for i in range(3)]
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*train, *test]), encoding="utf-8")
    out = tmp_path / "trace.json"

    printed = _run(monkeypatch, capsys, "trace", str(path), str(out), "--embedder", "fake:32")

    assert printed.strip() == "f.jsonl: hits@1 offline 0, online 1"
    rounds = json.loads(out.read_text(encoding="utf-8"))
    assert [r["target"] for r in rounds["online"]] == ["z", "z", "z"]
    assert rounds["offline"][0]["ranked"][0] == "b" and rounds["online"][2]["ranked"][0] == "z"
    assert rounds["online"][0]["peer"][0] == "b"
    # A trace against itself: nothing won or lost. The judged majority after "a" is "z" from
    # the second round on: it fixes the second round's miss and breaks nothing.
    assert _run(monkeypatch, capsys, "compare", str(out), str(out)).splitlines() == [
        "offline: won 0, lost 0",
        "online: won 0, lost 0",
    ]
    assert "k=1: +1 / -0" in _run(monkeypatch, capsys, "bound", str(out))
    # Counted as votes, the first round's "z" makes the second round's first choice too.
    rules = _run(monkeypatch, capsys, "rules", str(out))
    assert "online 1, votes k=1 +1" in rules and "calibration k=1" in rules
